"""gpmodels: kernel and Gaussian-process classification with many, structured classes.

Compose a likelihood, a prior and an objective; every objective reaches the prior only through
the MVM operator protocol (:class:`gpmodels.operators.Operator`).
"""

from gpmodels.errors import (
    CheckpointError,
    ConvergenceError,
    DataError,
    GPModelsError,
    HierarchyError,
    InputError,
    SpecError,
)

# structured priors and targets (Seeger 2008, Sec. 3, 6.1, 7.4.1, 7.4.2)
from gpmodels.hierarchy import ClassTree
from gpmodels.inference import (
    CVOptions,
    ExactNewton,
    LaplaceOptions,
    LearnOptions,
    MAPModel,
    MKLOptions,
    NewtonCG,
    NewtonOptions,
    VBOptions,
    algorithm1,
    alternating,
    cv_criterion,
    exact_newton,
    fit_learned,
    fit_map,
    fit_one_vs_rest,
    laplace_mlm,
    latent_predictive,
    learn_hyperparameters,
    learn_laplace,
    learn_one_vs_rest,
    learn_vb,
    newton_cg,
    predictive_proba,
    vb_criterion,
)
from gpmodels.inference.map.em import EMOptions, fit_em
from gpmodels.kernels import ARD, RBF, Linear, Polynomial, Precomputed, RepresentationConfig, make_kernel
from gpmodels.likelihoods import Gaussian, Laplace, Logistic, SmoothedHinge, Softmax, StudentT
from gpmodels.likelihoods.uncertain import PseudoTargets, coarsen_labels
from gpmodels.linalg.blas_threads import configure_openblas
from gpmodels.operators import ANOVA, BlockDiagonal, Coupled, Intercept, Operator, Sum
from gpmodels.priors import ANOVAPrior, CoupledPrior, IndependentGP, PriorContext, coupling_init, register_prior
from gpmodels.scoring import decisions, metrics, multilabel

__version__ = "0.1.0"

__all__ = [
    "metrics",
    "multilabel",
    "GPModelsError",
    "InputError",
    "DataError",
    "SpecError",
    "HierarchyError",
    "ConvergenceError",
    "CheckpointError",
    "MAPModel",
    "NewtonOptions",
    "NewtonCG",
    "ExactNewton",
    "exact_newton",
    "fit_map",
    "newton_cg",
    "RBF",
    "ARD",
    "Linear",
    "Polynomial",
    "Precomputed",
    "make_kernel",
    "RepresentationConfig",
    "Softmax",
    "BlockDiagonal",
    "Intercept",
    "Operator",
    "IndependentGP",
    "Logistic",
    "Gaussian",
    "Laplace",
    "StudentT",
    "SmoothedHinge",
    "Sum",
    "LaplaceOptions",
    "MKLOptions",
    "VBOptions",
    "algorithm1",
    "alternating",
    "laplace_mlm",
    "learn_laplace",
    "learn_vb",
    "vb_criterion",
    "decisions",
    "ClassTree",
    "ANOVA",
    "Coupled",
    "ANOVAPrior",
    "CoupledPrior",
    "coupling_init",
    "PseudoTargets",
    "coarsen_labels",
    "EMOptions",
    "fit_em",
    "cv_criterion",
    "CVOptions",
    "LearnOptions",
    "learn_hyperparameters",
    "fit_learned",
    "learn_one_vs_rest",
    "fit_one_vs_rest",
    "register_prior",
    "PriorContext",
    "latent_predictive",
    "predictive_proba",
    "configure_openblas",
]
