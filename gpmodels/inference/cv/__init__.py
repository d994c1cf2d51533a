"""Cross-validation hyperparameter learning (Seeger 2008, Sec. 4, 5.2): Ψ, ∇Ψ, learning, one-vs-rest."""

from gpmodels.inference.cv.criterion import cv_criterion
from gpmodels.inference.cv.learn import LearnOptions, fit_learned, learn_hyperparameters
from gpmodels.inference.cv.one_vs_rest import fit_one_vs_rest, learn_one_vs_rest
from gpmodels.inference.cv.options import CVOptions

__all__ = [
    "cv_criterion",
    "CVOptions",
    "learn_hyperparameters",
    "fit_learned",
    "LearnOptions",
    "learn_one_vs_rest",
    "fit_one_vs_rest",
]
