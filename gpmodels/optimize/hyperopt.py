"""Hyperparameter learning by a quasi-Newton outer loop over one flat log-space vector.

The criteria of this package (Laplace MLM, φ_VB, the Gaussian MLM) are plain functions
x -> (value, gradient) of the joint vector x = (operator parameters, likelihood parameters), so the
outer optimiser is interchangeable.  Here it is scipy's L-BFGS-B (Byrd, Lu, Nocedal & Zhu 1995);
the CV issue's optimiser (failed-evaluation bracketing, Seeger 2008 Sec. 5.2) can replace
``minimize_lbfgs`` without touching the criteria.
"""

from __future__ import annotations

import time
from typing import Callable

import attrs
import numpy as np
from scipy.optimize import minimize

from gpmodels.errors import InputError

__all__ = ["HyperResult", "JointParams", "minimize_lbfgs", "DEFAULT_BOX"]

#: default half-width of the box around the start, in log units (e^10 ≈ 2.2e4).
DEFAULT_BOX = 10.0


@attrs.frozen
class HyperResult:
    """Outcome of the outer loop: x (log space) with names, criterion value and gradient, trace."""

    x: np.ndarray
    names: tuple[str, ...]
    fun: float
    grad: np.ndarray
    iterations: int
    evaluations: int
    success: bool
    message: str
    seconds: float
    trace: tuple[float, ...]  # criterion after each evaluation

    def describe(self) -> dict:
        """Hyperparameters by name, natural units for ``log_`` names."""
        out = {}
        for name, v in zip(self.names, self.x):
            last = name.split(".")[-1]
            out[name.replace("log_", "") if last.startswith("log_") else name] = float(np.exp(v) if last.startswith("log_") else v)
        return out


class JointParams:
    """The joint vector (operator params, likelihood params) and its inverse ``build``."""

    def __init__(self, op, lik):
        self.op, self.lik = op, lik
        self.n_op = op.params.size

    @property
    def x0(self) -> np.ndarray:
        return np.concatenate([self.op.params, self.lik.params])

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.op.param_names) + tuple(self.lik.param_names)

    def build(self, x):
        x = np.asarray(x, dtype=np.float64)
        if x.shape != self.x0.shape:
            raise InputError(f"the joint hyperparameter vector has {self.x0.size} entries {self.names}; got {x.shape}")
        op = self.op.with_params(x[: self.n_op]) if self.n_op else self.op
        lik = self.lik.with_params(x[self.n_op:]) if x.size > self.n_op else self.lik
        return op, lik


def minimize_lbfgs(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0, names, *, bounds=None,
                   max_iter: int = 100, tol: float = 1e-6) -> HyperResult:
    """Minimise ``fun`` (value, gradient) by L-BFGS-B from x0 within ``bounds`` (default x0 ± 10)."""
    x0 = np.asarray(x0, dtype=np.float64)
    if bounds is None:
        bounds = [(v - DEFAULT_BOX, v + DEFAULT_BOX) for v in x0]
    trace = []
    t0 = time.perf_counter()

    def wrapped(x):
        v, g = fun(x)
        trace.append(float(v))
        return float(v), np.asarray(g, dtype=np.float64)

    res = minimize(wrapped, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": int(max_iter), "ftol": tol, "gtol": tol * 1e-2})
    return HyperResult(np.asarray(res.x), tuple(names), float(res.fun), np.asarray(res.jac), int(res.nit),
                       int(res.nfev), bool(res.success), str(res.message), time.perf_counter() - t0, tuple(trace))
