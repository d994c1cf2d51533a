"""A fitted MAP model: the operator, the likelihood and α̂; prediction at new points.

u_* = K̃_{*,.} α̂ (Seeger 2008, Sec. 2: û_c(x) = Σ_i α̂_ic (K^(c)(x, x_i) + σ²)), probabilities by
plugging u_* into the likelihood.
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.inference.map.exact_newton import exact_newton
from gpmodels.inference.map.newton_cg import NewtonOptions, NewtonResult, newton_cg
from gpmodels.likelihoods.base import Likelihood
from gpmodels.operators.base import Operator
from gpmodels.operators.intercept import Intercept

__all__ = ["MAPModel", "fit_map"]


@attrs.frozen
class MAPModel:
    """Fitted α̂ with its operator and likelihood."""

    operator: Operator
    likelihood: Likelihood
    result: NewtonResult

    @property
    def alpha(self) -> np.ndarray:
        return self.result.alpha

    @property
    def intercepts(self) -> np.ndarray | None:
        """b_c = σ² Σ_i α_ic when the prior has an intercept, else None."""
        return self.operator.intercepts(self.alpha) if isinstance(self.operator, Intercept) else None

    def latent(self, X_new) -> np.ndarray:
        """u_* = K̃_{*,.} α̂, shape (m, C)."""
        return self.operator.cross_test(X_new).mvm(self.alpha)

    def predict_proba(self, X_new) -> np.ndarray:
        return self.likelihood.predict(self.latent(X_new))

    def predict(self, X_new) -> np.ndarray:
        """Most probable class per point (argmax rule)."""
        return np.argmax(self.predict_proba(X_new), axis=1)


def fit_map(operator: Operator, likelihood: Likelihood, Y, options: NewtonOptions | None = None, *,
            method: str = "newton_cg", alpha0=None, on_iteration=None) -> MAPModel:
    """Fit the MAP dual vector by ``newton_cg`` (Alg. 1) or ``exact`` Newton (App. C);
    ``on_iteration(NewtonStep)`` reports progress."""
    if method == "newton_cg":
        result = newton_cg(operator, likelihood, Y, options, alpha0=alpha0, on_iteration=on_iteration)
    elif method == "exact":
        result = exact_newton(operator, likelihood, Y, options, alpha0=alpha0, on_iteration=on_iteration)
    else:
        from gpmodels.errors import InputError

        raise InputError(f"method must be 'newton_cg' or 'exact'; got {method!r}")
    return MAPModel(operator, likelihood, result)
