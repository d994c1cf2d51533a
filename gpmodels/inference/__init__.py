"""Algorithms over the operator and likelihood protocols."""

from gpmodels.inference.cv.criterion import CVEvaluation, CVOptions, CVState, cv_criterion
from gpmodels.inference.cv.learn import Checkpointing, LearnOptions, LearnResult, fit_learned, learn_hyperparameters
from gpmodels.inference.cv.one_vs_rest import OneVsRestModel, fit_one_vs_rest, learn_one_vs_rest
from gpmodels.inference.map.em import EMOptions, EMResult, fit_em
from gpmodels.inference.map.exact_newton import ExactNewton, exact_newton
from gpmodels.inference.map.line_search import pair_line_search
from gpmodels.inference.map.model import MAPModel, fit_map
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonDiagnostics, NewtonOptions, NewtonResult, newton_cg
from gpmodels.inference.map.preconditioners import make_preconditioner
from gpmodels.inference.map.predictive import (
    LatentPredictive,
    laplace_predict_proba,
    latent_predictive,
    predictive_proba,
)
from gpmodels.inference.marginal.laplace import LaplaceOptions, LaplaceResult, laplace_mlm, learn_laplace
from gpmodels.inference.marginal.vb import VBOptions, VBResult, learn_vb, vb_criterion
from gpmodels.inference.mkl.algorithms import KernelLearningResult, MKLOptions, algorithm1, alternating, criterion_at
from gpmodels.linalg.cg import CGResult, cg
from gpmodels.optimize.checkpoint import read_checkpoint, write_checkpoint
from gpmodels.optimize.driver import OptimizeResult, minimize
from gpmodels.optimize.lbfgs import OuterOptions, OuterState, minimize_outer

__all__ = ["cg", "CGResult", "NewtonCG", "ExactNewton", "newton_cg",
           "NewtonOptions", "NewtonResult", "NewtonDiagnostics", "exact_newton",
           "pair_line_search", "fit_map", "MAPModel", "OptimizeResult", "minimize", "LaplaceOptions", "LaplaceResult",
           "laplace_mlm", "learn_laplace", "KernelLearningResult", "MKLOptions", "algorithm1", "alternating",
           "criterion_at", "VBOptions", "VBResult", "learn_vb", "vb_criterion", "fit_em", "EMOptions",
           "EMResult", "make_preconditioner",
           # CV hyperparameter learning (Seeger 2008, Sec. 4, 5.2)
           "cv_criterion", "CVOptions", "CVState", "CVEvaluation", "minimize_outer", "OuterOptions", "OuterState",
           "learn_hyperparameters", "fit_learned", "LearnOptions", "LearnResult", "Checkpointing", "read_checkpoint",
           "write_checkpoint", "learn_one_vs_rest", "fit_one_vs_rest", "OneVsRestModel",
           # Laplace predictive distribution (R&W 2006, Sec. 3.4.2, 3.5)
           "LatentPredictive", "latent_predictive", "predictive_proba", "laplace_predict_proba"]
