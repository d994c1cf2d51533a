"""Preconditioned linear conjugate gradients (Saad 1996) on arrays of any shape.

Solves A x = b for symmetric positive definite A given as a function x -> A x, with an optional
preconditioner: a diagonal one (an array of the inverse diagonal) or any symmetric positive
definite r -> M^{-1} r (``precondition``; e.g. the per-point block-Jacobi of Newton–CG).  Used
for the Newton systems (5) of Seeger 2008 (Alg. 1) and the CV accumulation systems (Sec. 5.2).

The iteration's vector work goes through a :class:`Vectors` strategy: :data:`HOST_VECTORS` for numpy
arrays (updates in place into one scratch array, no allocation per step), :class:`ArrayVectors` for the
arrays of any array-API namespace, e.g. a GPU's, where A, the preconditioner and the iterates stay on
the device and only the step's scalars (p^T A p, r^T z, ||r||) come back to the host.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import attrs
import numpy as np

__all__ = ["CGResult", "cg", "Vectors", "HostVectors", "ArrayVectors", "HOST_VECTORS"]


class Vectors(Protocol):
    """The vector operations of CG on one kind of array."""

    def norm(self, x) -> float: ...

    def dot(self, x, y) -> float: ...

    def is_zero(self, x) -> bool: ...

    def zeros_like(self, x): ...

    def copy(self, x): ...

    def scratch(self, x):
        """An array like x for :meth:`add_scaled` to write its temporaries into (None: it allocates)."""

    def add_scaled(self, y, a: float, x, scratch):
        """y += a x in place; returns y."""

    def scale_add(self, p, b: float, z):
        """p = b p + z in place (the search direction's update); returns p."""


class HostVectors:
    """numpy arrays: BLAS norms and dots, updates through one scratch array (the same numbers as y += a x)."""

    def norm(self, x) -> float:
        return float(np.linalg.norm(x))

    def dot(self, x, y) -> float:
        return float(np.vdot(x, y))

    def is_zero(self, x) -> bool:
        return not np.any(x)

    def zeros_like(self, x):
        return np.zeros_like(x)

    def copy(self, x):
        return x.copy()

    def scratch(self, x):
        return np.empty_like(x)

    def add_scaled(self, y, a, x, scratch):
        y += np.multiply(x, a, out=scratch)
        return y

    def scale_add(self, p, b, z):
        p *= b
        p += z
        return p


#: the vector operations of numpy arrays on the host
HOST_VECTORS = HostVectors()


@attrs.frozen
class ArrayVectors:
    """The arrays of an array-API namespace ``xp`` (a device's): every product and update runs there, each
    scalar (a norm, a dot) is one reduction brought to the host."""

    xp: object

    def norm(self, x) -> float:
        return math.sqrt(self.dot(x, x))

    def dot(self, x, y) -> float:
        return float(self.xp.sum(x * y))

    def is_zero(self, x) -> bool:
        return not bool(self.xp.any(x != 0.0))

    def zeros_like(self, x):
        return self.xp.zeros_like(x)

    def copy(self, x):
        return self.xp.asarray(x, copy=True)

    def scratch(self, x):
        return None

    def add_scaled(self, y, a, x, scratch):
        y += x * a
        return y

    scale_add = HostVectors.scale_add  # in-place operators: the same code on any namespace


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


def _initial_residual(apply_A, b, x0, vectors: Vectors) -> tuple:
    """(x, r = b - A x, matvecs) at the start: x = 0 (no product) when ``x0`` is None or zero."""
    if x0 is None or vectors.is_zero(x0):
        return vectors.zeros_like(b), vectors.copy(b), 0
    x = vectors.copy(x0)
    return x, b - apply_A(x), 1


def _stopping_test(res0: float, r0, tol: float, forcing: float, forcing_map, vectors: Vectors):
    """(res, r) -> stop: ||r|| / ||b|| <= max(tol, forcing res0), or with ``forcing_map`` the ``tol`` floor
    on ||r|| / ||b|| or ||map(r)|| <= forcing ||map(r_0)||."""
    if forcing_map is None:

        def forced(res, r):
            return res <= max(tol, forcing * res0)

        return forced
    fres0 = vectors.norm(forcing_map(r0))

    def forced(res, r):
        return res <= tol or vectors.norm(forcing_map(r)) <= forcing * fres0

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
    vectors: Vectors = HOST_VECTORS,
) -> CGResult:
    """Preconditioned CG from x0; stops when ||r|| <= max(tol ||b||, forcing ||r_0||) or after
    ``max_iter`` steps.  ``forcing`` relative to the initial residual r_0 = b - A x0 is the
    truncated-Newton forcing term: with x0 the current point, r_0 is proportional to the gradient.
    ``precondition`` (r -> M^{-1} r) takes the place of ``inv_diag`` when given.  ``forcing_map``
    measures the forcing test on ||map(r)|| instead of ||r|| (e.g. the residual mapped to α-space
    by V in Newton–CG); the ``tol`` floor stays on ||r||.  ``vectors``: the vector operations of the
    arrays b, x0 and the maps take and return (module docstring)."""
    apply_M = _preconditioner(inv_diag, precondition)
    bnorm = vectors.norm(b)
    if bnorm == 0.0:
        return CGResult(vectors.zeros_like(b), 0, 0.0, True, 0)
    x, r, matvecs = _initial_residual(apply_A, b, x0, vectors)
    z = apply_M(r)
    p = vectors.copy(z)
    rz = vectors.dot(r, z)
    res = vectors.norm(r) / bnorm
    forced = _stopping_test(res, r, tol, forcing, forcing_map, vectors)
    scratch = vectors.scratch(r)  # step p and step A p
    it = 0
    while not forced(res, r) and it < max_iter:
        Ap = apply_A(p)
        matvecs += 1
        pAp = vectors.dot(p, Ap)
        if pAp <= 0.0 or not math.isfinite(pAp):
            break  # loss of positive definiteness by round-off: keep the current iterate
        step = rz / pAp
        x = vectors.add_scaled(x, step, p, scratch)
        r = vectors.add_scaled(r, -step, Ap, scratch)
        it += 1
        res = vectors.norm(r) / bnorm
        if forced(res, r):
            break
        z = apply_M(r)
        rz_new = vectors.dot(r, z)
        p = vectors.scale_add(p, rz_new / rz, z)
        rz = rz_new
    return CGResult(x, it, res, bool(forced(res, r)), matvecs)
