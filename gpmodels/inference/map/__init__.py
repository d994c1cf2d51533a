"""MAP estimation (Seeger 2008, Sec. 4.1, Alg. 1, App. B, C): Newton–CG, exact Newton, preconditioners, EM."""

from gpmodels.inference.map.em import EMOptions, EMResult, fit_em, penalised_log_likelihood
from gpmodels.inference.map.exact_newton import exact_newton, exact_newton_solve
from gpmodels.inference.map.line_search import LineSearchResult, objective, pair_line_search
from gpmodels.inference.map.model import MAPModel, fit_map
from gpmodels.inference.map.newton_cg import (
           FORCING_NORMS,
           PRECONDITIONERS,
           NewtonDiagnostics,
           NewtonOptions,
           NewtonResult,
           NewtonStep,
           gradient_rms,
           is_stall,
           line_search_step,
           newton_cg,
           newton_direction,
           newton_step_with_restarts,
           newton_system,
           project_start,
)
from gpmodels.inference.map.preconditioners import Preconditioner, make_preconditioner, randomized_eigh
from gpmodels.inference.map.predictive import (
           PREDICTIVE_METHODS,
           PREDICTIVES,
           PROBA_METHODS,
           LatentPredictive,
           laplace_predict_proba,
           latent_predictive,
           predictive_proba,
)

__all__ = ["EMOptions", "EMResult", "fit_em", "penalised_log_likelihood", "exact_newton", "exact_newton_solve",
           "LineSearchResult", "pair_line_search", "objective", "MAPModel", "fit_map", "NewtonOptions",
           "NewtonDiagnostics", "NewtonResult", "NewtonStep", "newton_cg", "gradient_rms", "PRECONDITIONERS",
           "FORCING_NORMS", "project_start", "newton_system", "newton_direction", "line_search_step", "is_stall",
           "newton_step_with_restarts", "randomized_eigh", "Preconditioner", "make_preconditioner", "LatentPredictive",
           "latent_predictive", "predictive_proba", "PREDICTIVE_METHODS", "PROBA_METHODS",
           "laplace_predict_proba", "PREDICTIVES"]
