"""Priors: factories from training inputs to operators, and the registry that names them in specs."""

from .anova import ANOVAPrior
from .coupled import COUPLING_INITS, CoupledPrior, coupling_init
from .independent import IndependentGP
from .registry import (BUILTIN_PRIORS, PriorContext, register_prior, registered_priors, resolve_prior,
                       unregister_prior)

__all__ = ["IndependentGP", "ANOVAPrior", "CoupledPrior", "coupling_init", "COUPLING_INITS", "PriorContext",
           "register_prior", "unregister_prior", "registered_priors", "resolve_prior", "BUILTIN_PRIORS"]
