"""Marginal-likelihood criteria (Nickisch & Seeger 2011): Laplace MLM and the VB double loop."""

from gpmodels.inference.marginal.laplace import (
    LAPLACE_PATHS,
    MODE_OPTIONS,
    LaplaceObjective,
    LaplaceOptions,
    LaplaceResult,
    laplace_mlm,
    laplace_objective,
    learn_laplace,
)
from gpmodels.inference.marginal.vb import (
    GammaBound,
    VBObjective,
    VBOptions,
    VBResult,
    check_vb_likelihood,
    gamma_bound,
    learn_vb,
    vb_criterion,
    vb_objective,
)

__all__ = ["LaplaceOptions", "LaplaceResult", "laplace_mlm", "laplace_objective", "LaplaceObjective", "learn_laplace",
           "LAPLACE_PATHS", "MODE_OPTIONS", "VBOptions", "VBResult", "GammaBound", "gamma_bound", "vb_criterion",
           "vb_objective", "VBObjective", "learn_vb", "check_vb_likelihood"]
