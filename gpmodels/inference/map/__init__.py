"""MAP estimation (Seeger 2008, Sec. 4.1, Alg. 1, App. B, C): Newton–CG, exact Newton, preconditioners, EM."""

from gpmodels.inference.map.em import EMOptions, fit_em
from gpmodels.inference.map.exact_newton import ExactNewton, exact_newton
from gpmodels.inference.map.model import MAPModel, fit_map
from gpmodels.inference.map.newton import NewtonOptions, NewtonSolver
from gpmodels.inference.map.newton_cg import NewtonCG, newton_cg
from gpmodels.inference.map.predictive import laplace_predict_proba, latent_predictive, predictive_proba
from gpmodels.inference.map.solvers import make_solver

__all__ = [
    "fit_map",
    "MAPModel",
    "NewtonCG",
    "ExactNewton",
    "NewtonSolver",
    "make_solver",
    "NewtonOptions",
    "newton_cg",
    "exact_newton",
    "fit_em",
    "EMOptions",
    "latent_predictive",
    "predictive_proba",
    "laplace_predict_proba",
]
