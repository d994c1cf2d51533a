"""Priors: factories from training inputs to operators, and the registry that names them in specs."""

from gpmodels.priors.anova import ANOVAPrior
from gpmodels.priors.coupled import COUPLING_INITS, CoupledPrior, coupling_init
from gpmodels.priors.independent import IndependentGP
from gpmodels.priors.registry import (
                       BUILTIN_PRIORS,
                       PriorContext,
                       register_prior,
                       registered_priors,
                       resolve_prior,
                       unregister_prior,
)

__all__ = ["IndependentGP", "ANOVAPrior", "CoupledPrior", "coupling_init", "COUPLING_INITS", "PriorContext",
           "register_prior", "unregister_prior", "registered_priors", "resolve_prior", "BUILTIN_PRIORS"]
