"""A fitted MAP model: the operator, the likelihood and α̂; prediction at new points.

u_* = K̃_{*,.} α̂ (Seeger 2008, Sec. 2: û_c(x) = Σ_i α̂_ic (K^(c)(x, x_i) + σ²)), probabilities by
plugging u_* into the likelihood.
"""

from __future__ import annotations

from operator import attrgetter

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.inference.execution_plan import ExecutionPlan
from gpmodels.inference.map.newton import NewtonResult, NewtonSolver
from gpmodels.inference.map.newton_cg import NewtonCG
from gpmodels.likelihoods.base import Likelihood
from gpmodels.operators.base import Operator

__all__ = ["MAPModel", "fit_map"]


@attrs.frozen
class MAPModel:
    """Fitted α̂ with its operator and likelihood."""

    operator: Operator
    likelihood: Likelihood
    result: NewtonResult
    plan: ExecutionPlan | None = None  # where and how the fit ran (None: not recorded, e.g. a loaded model)

    alpha = property(attrgetter("result.alpha"))

    @property
    def intercepts(self) -> np.ndarray | None:
        """b_c = σ² Σ_i α_ic when the prior has an intercept, else None."""
        return self.operator.intercepts(self.alpha)

    def latent(self, X_new) -> np.ndarray:
        """u_* = K̃_{*,.} α̂, shape (m, C)."""
        return self.operator.cross_test(X_new).mvm(self.alpha)

    def predict_proba(self, X_new) -> np.ndarray:
        return self.likelihood.predict(self.latent(X_new))

    def predict(self, X_new) -> np.ndarray:
        """Most probable class per point (argmax rule)."""
        return np.argmax(self.predict_proba(X_new), axis=1)


def fit_map(
    operator: Operator, likelihood: Likelihood, Y, solver: NewtonSolver | None = None, *, alpha0=None, on_iteration=None
) -> MAPModel:
    """Fit the MAP dual vector with ``solver``: ``NewtonCG(options)`` (Alg. 1; the default) or
    ``ExactNewton(options)`` (App. C), under the solver's execution plan for ``operator`` (``solver.plan``,
    decided here once and kept on the model); ``on_iteration(NewtonStep)`` reports progress."""
    solver = NewtonCG() if solver is None else solver
    if not callable(getattr(solver, "fit", None)):
        raise InputError(
            f"solver must be a MAP solver such as NewtonCG(options) or ExactNewton(options); got "
            f"{type(solver).__name__}"
        )
    plan = solver.plan(operator)
    result = solver.fit(operator, likelihood, Y, alpha0=alpha0, on_iteration=on_iteration, plan=plan)
    return MAPModel(operator, likelihood, result, plan)
