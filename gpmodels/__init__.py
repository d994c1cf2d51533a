"""gpmodels: kernel and Gaussian-process classification with many, structured classes.

Compose a likelihood, a prior and an objective; every objective reaches the prior only through
the MVM operator protocol (:class:`gpmodels.operators.Operator`).
"""

from . import metrics
from .errors import (CheckpointError, ConvergenceError, DataError, GPModelsError, HierarchyError, InputError,
                     SpecError)
from .inference import MAPModel, NewtonOptions, exact_newton, fit_map, newton_cg
from .inference import (CVOptions, LearnOptions, cv_criterion, fit_learned, learn_hyperparameters,
                        learn_one_vs_rest)
from .kernels import ARD, RBF, Linear, Polynomial, Precomputed, RepresentationConfig
from .likelihoods import Softmax
from .operators import BlockDiagonal, Intercept, Operator
from .priors import IndependentGP

__version__ = "0.1.0"

__all__ = [
    "metrics", "GPModelsError", "InputError", "DataError", "SpecError", "HierarchyError", "ConvergenceError",
    "CheckpointError", "MAPModel", "NewtonOptions", "exact_newton", "fit_map", "newton_cg", "RBF", "ARD", "Linear",
    "Polynomial", "Precomputed", "RepresentationConfig", "Softmax", "BlockDiagonal", "Intercept", "Operator",
    "IndependentGP", "cv_criterion", "CVOptions", "LearnOptions", "learn_hyperparameters", "fit_learned",
    "learn_one_vs_rest",
]
