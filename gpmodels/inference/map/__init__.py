"""MAP estimation (Seeger 2008, Sec. 4.1, Alg. 1, App. B, C): Newton–CG, exact Newton, preconditioners, EM."""

from gpmodels.inference.map.em import EMOptions, EMResult, fit_em, penalised_log_likelihood
from gpmodels.inference.map.exact_newton import ExactNewton, exact_newton, exact_newton_solve
from gpmodels.inference.map.line_search import LineSearchResult, objective, pair_line_search
from gpmodels.inference.map.model import MAPModel, fit_map
from gpmodels.inference.map.newton import (
           NewtonDiagnostics,
           NewtonOptions,
           NewtonPoint,
           NewtonProblem,
           NewtonResult,
           NewtonSolver,
           NewtonStep,
           StepResult,
           gradient_rms,
           line_search_step,
           newton_loop,
           project_start,
)
from gpmodels.inference.map.newton_cg import (
           NewtonCG,
           NewtonSystem,
           SystemSolution,
           is_stall,
           newton_cg,
           newton_direction,
           newton_step_with_restarts,
           newton_system,
           solve_weighted_system,
)
from gpmodels.inference.map.preconditioners import (
           PRECONDITIONERS,
           BlockJacobiPreconditioner,
           DiagonalPreconditioner,
           LowRankBlockPreconditioner,
           LowRankPreconditioner,
           Preconditioner,
           make_preconditioner,
           randomized_eigh,
)
from gpmodels.inference.map.predictive import (
           PREDICTIVE_METHODS,
           PREDICTIVES,
           PROBA_METHODS,
           LatentPredictive,
           laplace_predict_proba,
           latent_predictive,
           predictive_proba,
)
from gpmodels.inference.map.solvers import SOLVER_NAMES, SOLVERS, make_solver

__all__ = ["EMOptions", "EMResult", "fit_em", "penalised_log_likelihood", "ExactNewton", "exact_newton",
           "exact_newton_solve", "LineSearchResult", "pair_line_search", "objective", "MAPModel", "fit_map",
           "NewtonOptions", "NewtonDiagnostics", "NewtonResult", "NewtonStep", "NewtonSolver", "NewtonProblem",
           "NewtonPoint", "StepResult", "newton_loop", "NewtonCG", "NewtonSystem", "SystemSolution",
           "solve_weighted_system", "newton_cg", "gradient_rms", "PRECONDITIONERS", "project_start", "newton_system",
           "newton_direction", "line_search_step", "is_stall", "newton_step_with_restarts", "randomized_eigh",
           "Preconditioner", "DiagonalPreconditioner", "BlockJacobiPreconditioner", "LowRankPreconditioner",
           "LowRankBlockPreconditioner", "make_preconditioner", "SOLVERS", "SOLVER_NAMES", "make_solver",
           "LatentPredictive",
           "latent_predictive", "predictive_proba", "PREDICTIVE_METHODS", "PROBA_METHODS",
           "laplace_predict_proba", "PREDICTIVES"]
