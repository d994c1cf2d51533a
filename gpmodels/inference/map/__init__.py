"""MAP estimation (Seeger 2008, Sec. 4.1, Alg. 1, App. B, C): Newton–CG, exact Newton, preconditioners, EM."""

from gpmodels.inference.map.em import EMOptions, EMResult, fit_em, penalised_log_likelihood
from gpmodels.inference.map.exact_newton import exact_newton, exact_newton_solve
from gpmodels.inference.map.line_search import LineSearchResult, pair_line_search, objective
from gpmodels.inference.map.model import MAPModel, fit_map
from gpmodels.inference.map.newton_cg import NewtonOptions, NewtonDiagnostics, NewtonResult, NewtonStep, newton_cg, gradient_rms, PRECONDITIONERS, FORCING_NORMS
from gpmodels.inference.map.preconditioners import randomized_eigh, Preconditioner, make_preconditioner, PRECONDITIONERS

__all__ = ['EMOptions', 'EMResult', 'fit_em', 'penalised_log_likelihood', 'exact_newton', 'exact_newton_solve', 'LineSearchResult', 'pair_line_search', 'objective', 'MAPModel', 'fit_map', 'NewtonOptions', 'NewtonDiagnostics', 'NewtonResult', 'NewtonStep', 'newton_cg', 'gradient_rms', 'PRECONDITIONERS', 'FORCING_NORMS', 'randomized_eigh', 'Preconditioner', 'make_preconditioner']

# Laplace predictive distribution (R&W 2006, Sec. 3.4.2, 3.5)
from gpmodels.inference.map.predictive import (  # noqa: E402
    PREDICTIVE_METHODS,
    PROBA_METHODS,
    LatentPredictive,
    latent_predictive,
    predictive_proba,
)

__all__ += ["LatentPredictive", "latent_predictive", "predictive_proba", "PREDICTIVE_METHODS", "PROBA_METHODS"]
