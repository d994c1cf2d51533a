"""gpmodels: kernel and Gaussian-process classification with many, structured classes.

Compose a likelihood, a prior and an objective; every objective reaches the prior only through
the MVM operator protocol (:class:`gpmodels.operators.Operator`).
"""

from . import metrics, multilabel
from .errors import (CheckpointError, ConvergenceError, DataError, GPModelsError, HierarchyError, InputError,
                     SpecError)
from .inference import MAPModel, NewtonOptions, exact_newton, fit_map, newton_cg
from .kernels import ARD, RBF, Linear, Polynomial, Precomputed, RepresentationConfig
from .likelihoods import Softmax
from .operators import BlockDiagonal, Intercept, Operator
from .priors import IndependentGP

__version__ = "0.1.0"

__all__ = [
    "metrics", "multilabel", "GPModelsError", "InputError", "DataError", "SpecError", "HierarchyError", "ConvergenceError",
    "CheckpointError", "MAPModel", "NewtonOptions", "exact_newton", "fit_map", "newton_cg", "RBF", "ARD", "Linear",
    "Polynomial", "Precomputed", "RepresentationConfig", "Softmax", "BlockDiagonal", "Intercept", "Operator",
    "IndependentGP",
]
