"""Algorithms over the operator and likelihood protocols."""

from gpmodels.inference.cv.criterion import cv_criterion
from gpmodels.inference.cv.learn import LearnOptions, fit_learned, learn_hyperparameters
from gpmodels.inference.cv.one_vs_rest import fit_one_vs_rest, learn_one_vs_rest
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.map.em import EMOptions, fit_em
from gpmodels.inference.map.exact_newton import ExactNewton, exact_newton
from gpmodels.inference.map.model import MAPModel, fit_map
from gpmodels.inference.map.newton import NewtonOptions
from gpmodels.inference.map.newton_cg import NewtonCG, newton_cg
from gpmodels.inference.map.predictive import laplace_predict_proba, latent_predictive, predictive_proba
from gpmodels.inference.map.solvers import make_solver
from gpmodels.inference.marginal.laplace import LaplaceOptions, laplace_mlm, learn_laplace
from gpmodels.inference.marginal.vb import VBOptions, learn_vb, vb_criterion
from gpmodels.inference.mkl.algorithms import MKLOptions, algorithm1, alternating, criterion_at

__all__ = [
    "fit_map",
    "MAPModel",
    "NewtonCG",
    "ExactNewton",
    "make_solver",
    "NewtonOptions",
    "newton_cg",
    "exact_newton",
    "fit_em",
    "EMOptions",
    "cv_criterion",
    "CVOptions",
    "learn_hyperparameters",
    "fit_learned",
    "LearnOptions",
    "learn_one_vs_rest",
    "fit_one_vs_rest",
    "laplace_mlm",
    "learn_laplace",
    "LaplaceOptions",
    "vb_criterion",
    "learn_vb",
    "VBOptions",
    "algorithm1",
    "alternating",
    "criterion_at",
    "MKLOptions",
    "latent_predictive",
    "predictive_proba",
    "laplace_predict_proba",
]
