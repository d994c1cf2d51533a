"""Priors: factories from training inputs to operators."""

from .independent import IndependentGP

__all__ = ["IndependentGP"]
