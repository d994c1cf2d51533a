"""Preconditioned linear conjugate gradients (Saad 1996) on arrays of any shape.

Solves A x = b for symmetric positive definite A given as a function x -> A x, with an optional
preconditioner: a diagonal one (an array of the inverse diagonal) or any symmetric positive
definite r -> M^{-1} r (``precondition``; e.g. the per-point block-Jacobi of Newton–CG).  Used
for the Newton systems (5) of Seeger 2008 (Alg. 1) and the CV accumulation systems (Sec. 5.2).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np

__all__ = ["CGResult", "cg"]


@attrs.frozen
class CGResult:
    """Outcome of one CG run.  ``matvecs`` counts applications of A (1 extra for a nonzero x0)."""

    x: np.ndarray
    iterations: int
    residual: float  # ||b - A x|| / ||b||
    converged: bool
    matvecs: int


def cg(apply_A: Callable[[np.ndarray], np.ndarray], b: np.ndarray, *, x0: np.ndarray | None = None,
       inv_diag: np.ndarray | None = None, tol: float = 1e-6, forcing: float = 0.0, max_iter: int = 100,
       precondition: Callable[[np.ndarray], np.ndarray] | None = None,
       forcing_map: Callable[[np.ndarray], np.ndarray] | None = None) -> CGResult:
    """Preconditioned CG from x0; stops when ||r|| <= max(tol ||b||, forcing ||r_0||) or after
    ``max_iter`` steps.  ``forcing`` relative to the initial residual r_0 = b - A x0 is the
    truncated-Newton forcing term: with x0 the current point, r_0 is proportional to the gradient.
    ``precondition`` (r -> M^{-1} r) takes the place of ``inv_diag`` when given.  ``forcing_map``
    measures the forcing test on ||map(r)|| instead of ||r|| (e.g. the residual mapped to α-space
    by V in Newton–CG); the ``tol`` floor stays on ||r||."""

    def apply_M(r):
        if precondition is not None:
            return precondition(r)
        return r * inv_diag if inv_diag is not None else r

    bnorm = float(np.linalg.norm(b))
    if bnorm == 0.0:
        return CGResult(np.zeros_like(b), 0, 0.0, True, 0)
    matvecs = 0
    if x0 is None or not np.any(x0):
        x = np.zeros_like(b)
        r = b.copy()
    else:
        x = x0.copy()
        r = b - apply_A(x)
        matvecs += 1
    z = apply_M(r)
    p = z.copy()
    rz = float(np.vdot(r, z))
    res = float(np.linalg.norm(r)) / bnorm
    if forcing_map is None:
        def forced(res, r):
            return res <= max(tol, forcing * res0)
        res0 = res
    else:
        def forced(res, r):
            return res <= tol or float(np.linalg.norm(forcing_map(r))) <= forcing * fres0
        fres0 = float(np.linalg.norm(forcing_map(r)))
    it = 0
    while not forced(res, r) and it < max_iter:
        Ap = apply_A(p)
        matvecs += 1
        pAp = float(np.vdot(p, Ap))
        if pAp <= 0.0 or not np.isfinite(pAp):
            break  # loss of positive definiteness by round-off: keep the current iterate
        step = rz / pAp
        x += step * p
        r -= step * Ap
        it += 1
        res = float(np.linalg.norm(r)) / bnorm
        if forced(res, r):
            break
        z = apply_M(r)
        rz_new = float(np.vdot(r, z))
        p *= rz_new / rz
        p += z
        rz = rz_new
    return CGResult(x, it, res, bool(forced(res, r)), matvecs)
