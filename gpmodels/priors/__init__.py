"""Priors: factories from training inputs to operators, and the registry that names them in specs."""

from gpmodels.priors.anova import ANOVAPrior
from gpmodels.priors.coupled import CoupledPrior, coupling_init
from gpmodels.priors.independent import IndependentGP
from gpmodels.priors.registry import PriorContext, register_prior, registered_priors, unregister_prior

__all__ = [
    "IndependentGP",
    "ANOVAPrior",
    "CoupledPrior",
    "coupling_init",
    "PriorContext",
    "register_prior",
    "unregister_prior",
    "registered_priors",
]
