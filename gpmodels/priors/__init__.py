"""Priors: factories from training inputs to operators."""

from .anova import ANOVAPrior
from .coupled import COUPLING_INITS, CoupledPrior, coupling_init
from .independent import IndependentGP

__all__ = ["IndependentGP", "ANOVAPrior", "CoupledPrior", "coupling_init", "COUPLING_INITS"]
