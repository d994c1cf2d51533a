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


def _preconditioner(
    inv_diag: np.ndarray | None, precondition: Callable[[np.ndarray], np.ndarray] | None
) -> Callable[[np.ndarray], np.ndarray]:
    """r -> M^{-1} r: ``precondition`` when given, else the diagonal ``inv_diag``, else the identity."""

    def apply_M(r):
        if precondition is not None:
            return precondition(r)
        return r * inv_diag if inv_diag is not None else r

    return apply_M


def _initial_residual(apply_A, b: np.ndarray, x0: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, int]:
    """(x, r = b - A x, matvecs) at the start: x = 0 (no product) when ``x0`` is None or zero."""
    if x0 is None or not np.any(x0):
        return np.zeros_like(b), b.copy(), 0
    x = x0.copy()
    return x, b - apply_A(x), 1


def _stopping_test(res0: float, r0: np.ndarray, tol: float, forcing: float, forcing_map):
    """(res, r) -> stop: ||r|| / ||b|| <= max(tol, forcing res0), or with ``forcing_map`` the ``tol`` floor
    on ||r|| / ||b|| or ||map(r)|| <= forcing ||map(r_0)||."""
    if forcing_map is None:

        def forced(res, r):
            return res <= max(tol, forcing * res0)

        return forced
    fres0 = float(np.linalg.norm(forcing_map(r0)))

    def forced(res, r):
        return res <= tol or float(np.linalg.norm(forcing_map(r))) <= forcing * fres0

    return forced


def cg(
    apply_A: Callable[[np.ndarray], np.ndarray],
    b: np.ndarray,
    *,
    x0: np.ndarray | None = None,
    inv_diag: np.ndarray | None = None,
    tol: float = 1e-6,
    forcing: float = 0.0,
    max_iter: int = 100,
    precondition: Callable[[np.ndarray], np.ndarray] | None = None,
    forcing_map: Callable[[np.ndarray], np.ndarray] | None = None,
) -> CGResult:
    """Preconditioned CG from x0; stops when ||r|| <= max(tol ||b||, forcing ||r_0||) or after
    ``max_iter`` steps.  ``forcing`` relative to the initial residual r_0 = b - A x0 is the
    truncated-Newton forcing term: with x0 the current point, r_0 is proportional to the gradient.
    ``precondition`` (r -> M^{-1} r) takes the place of ``inv_diag`` when given.  ``forcing_map``
    measures the forcing test on ||map(r)|| instead of ||r|| (e.g. the residual mapped to α-space
    by V in Newton–CG); the ``tol`` floor stays on ||r||."""
    apply_M = _preconditioner(inv_diag, precondition)
    bnorm = float(np.linalg.norm(b))
    if bnorm == 0.0:
        return CGResult(np.zeros_like(b), 0, 0.0, True, 0)
    x, r, matvecs = _initial_residual(apply_A, b, x0)
    z = apply_M(r)
    p = z.copy()
    rz = float(np.vdot(r, z))
    res = float(np.linalg.norm(r)) / bnorm
    forced = _stopping_test(res, r, tol, forcing, forcing_map)
    scaled = np.empty_like(r)  # step p and step A p: the updates allocate nothing (same numbers as x += step p)
    it = 0
    while not forced(res, r) and it < max_iter:
        Ap = apply_A(p)
        matvecs += 1
        pAp = float(np.vdot(p, Ap))
        if pAp <= 0.0 or not np.isfinite(pAp):
            break  # loss of positive definiteness by round-off: keep the current iterate
        step = rz / pAp
        x += np.multiply(p, step, out=scaled)
        r -= np.multiply(Ap, step, out=scaled)
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
