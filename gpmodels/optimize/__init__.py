"""Outer (hyperparameter) optimisation: one projected L-BFGS with failed-evaluation brackets, one
result type, checkpoints and progress for every learner (CV, Laplace, VB, MKL weights)."""

from gpmodels.optimize.checkpoint import Checkpointing
from gpmodels.optimize.driver import minimize
from gpmodels.optimize.lbfgs import OuterOptions
from gpmodels.optimize.objective import FunctionObjective, as_objective

__all__ = ["minimize", "as_objective", "FunctionObjective", "OuterOptions", "Checkpointing"]
