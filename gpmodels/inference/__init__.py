"""Algorithms over the operator and likelihood protocols."""

from .cg import CGResult, cg
from .checkpoint import read_checkpoint, write_checkpoint
from .cv import CVEvaluation, CVOptions, CVState, cv_criterion
from .exact_newton import exact_newton
from .line_search import pair_line_search
from .learn import Checkpointing, LearnOptions, LearnResult, fit_learned, learn_hyperparameters
from .map import MAPModel, fit_map
from .newton_cg import NewtonDiagnostics, NewtonOptions, NewtonResult, newton_cg
from .one_vs_rest import OneVsRestModel, learn_one_vs_rest
from .outer import OuterOptions, OuterState, minimize_outer

__all__ = ["cg", "CGResult", "newton_cg", "NewtonOptions", "NewtonResult", "NewtonDiagnostics", "exact_newton",
           "pair_line_search", "fit_map", "MAPModel",
           # CV hyperparameter learning (Seeger 2008, Sec. 4, 5.2)
           "cv_criterion", "CVOptions", "CVState", "CVEvaluation", "minimize_outer", "OuterOptions", "OuterState",
           "learn_hyperparameters", "fit_learned", "LearnOptions", "LearnResult", "Checkpointing", "read_checkpoint",
           "write_checkpoint", "learn_one_vs_rest", "OneVsRestModel"]
