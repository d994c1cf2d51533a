"""The incomplete-Cholesky (pivoted) approximation with the diagonal correction of Sec. 7.4.3:
M ≈ diag(M) + L L^T - diag(L L^T).  With the pivot set fixed it is the Nyström form
K_{.,I} K_{I,I}^{-1} K_{I,.} plus that correction, which is what ``with_kernel`` recomputes and
``grad_contract`` differentiates (:class:`LowRankGram`, its blocks :class:`LowRankCross`,
:func:`incomplete_cholesky`)."""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from gpmodels.errors import InputError
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.representation_base import CrossRepresentation, Representation, take_rows

__all__ = ["LowRankGram", "LowRankCross", "incomplete_cholesky"]


class LowRankCross(CrossRepresentation):
    """L1 L2^T plus the diagonal correction of Sec. 7.4.3 where a row point is a column point.

    ``match``: (rows, cols, values) of the correction entries (one per matched point pair), or None.
    """

    def __init__(self, L1, L2, match: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None):
        self.L1, self.L2 = L1, L2
        self.shape = (L1.shape[0], L2.shape[0])
        self.match = match if match is not None and len(match[0]) else None

    def mvm(self, B):
        return self._apply(self.L1, self.L2, B, transpose=False)

    def rmvm(self, B):
        return self._apply(self.L2, self.L1, B, transpose=True)

    def _apply(self, La, Lb, B, *, transpose: bool):
        """La Lb^T B plus the matched entries (rows, cols, vals) of the block, or of its transpose."""
        out = La @ (Lb.T @ B)
        if self.match is not None:
            rows, cols, vals = self.match
            if transpose:
                rows, cols = cols, rows
            out[rows] += vals[:, None] * B[cols]
        return out

    def dense(self):
        out = self.L1 @ self.L2.T
        if self.match is not None:
            rows, cols, vals = self.match
            out[rows, cols] += vals
        return out


def incomplete_cholesky(X, kernel: Kernel, max_rank: int, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Pivoted incomplete Cholesky of M(X, X): L (n, d) and the pivot indices (d,).

    Greedy pivoting on the largest residual diagonal; stops at ``max_rank`` columns or when the
    largest residual diagonal falls below ``tol`` times the largest diagonal.  Only d columns of M
    and its diagonal are ever evaluated (Bach & Jordan 2002; Seeger 2008, Sec. 7.4.3).
    """
    n = X.shape[0]
    d = kernel.diag(X).astype(np.float64).copy()
    scale = max(float(d.max(initial=0.0)), np.finfo(float).tiny)
    L = np.zeros((n, min(max_rank, n)))
    pivots = []
    for j in range(L.shape[1]):
        p = int(np.argmax(d))
        if d[p] <= tol * scale:
            break
        col = kernel.gram(X, take_rows(X, slice(p, p + 1)))[:, 0]
        L[:, j] = (col - L[:, :j] @ L[p, :j]) / np.sqrt(d[p])
        d -= L[:, j] ** 2
        d[p] = 0.0
        pivots.append(p)
    return np.ascontiguousarray(L[:, : len(pivots)]), np.array(pivots, dtype=np.intp)


class LowRankGram(Representation, LowRankCross):
    """M ≈ diag(M) + L L^T - diag(L L^T) with L from a pivoted incomplete Cholesky (Sec. 7.4.3).

    With fixed pivot points X_p, L L^T = K_{.,p} K_{p,p}^{-1} K_{p,.}: the Nyström form that
    ``with_kernel`` recomputes for new kernel parameters (the pivot choice does not depend on them)
    and that ``grad_contract`` differentiates.
    """

    def __init__(self, X, kernel: Kernel, Xp, L: np.ndarray | None = None, jitter: float = 1e-10):
        self.X, self.kernel, self.Xp, self.jitter = X, kernel, Xp, jitter
        Kpp = kernel.gram(Xp, Xp)
        Kpp[np.diag_indices_from(Kpp)] += jitter * max(1.0, float(np.mean(np.diag(Kpp))))
        self.R = sla.cholesky(Kpp, lower=True)  # Kpp = R R^T
        if L is None:
            L = sla.solve_triangular(self.R, kernel.gram(Xp, X), lower=True).T  # L = K_{.,p} R^{-T}
        self._set_factor(np.ascontiguousarray(L), kernel.diag(X), None)

    def _set_factor(self, L: np.ndarray, full_diag: np.ndarray, dcorr: np.ndarray | None) -> None:
        """L, diag M and the correction diag(M) - diag(L L^T) on the diagonal of the (X, X) block."""
        self.L = self.L1 = self.L2 = L
        self._full_diag = full_diag
        self.dcorr = np.maximum(full_diag - np.einsum("ij,ij->i", L, L), 0.0) if dcorr is None else dcorr
        diagonal = np.arange(L.shape[0])
        self.match = (diagonal, diagonal, self.dcorr) if diagonal.size else None

    @classmethod
    def from_icf(cls, X, kernel: Kernel, max_rank: int = 200, tol: float = 1e-8) -> LowRankGram:
        L, piv = incomplete_cholesky(X, kernel, max_rank, tol)
        if piv.size == 0:
            raise InputError("incomplete Cholesky found no pivot: the kernel diagonal is zero")
        return cls(X, kernel, take_rows(X, piv))

    @property
    def rank(self) -> int:
        return self.L.shape[1]

    def diag(self):
        return self._full_diag

    def restrict(self, J):
        out = object.__new__(LowRankGram)
        out.X, out.kernel, out.Xp, out.jitter, out.R = take_rows(self.X, J), self.kernel, self.Xp, self.jitter, self.R
        out._set_factor(self.L[J], self._full_diag[J], self.dcorr[J])
        return out

    def cross(self, I, J):
        pos = {int(j): b for b, j in enumerate(J)}
        rows, cols = [], []
        for a, i in enumerate(I):
            b = pos.get(int(i))
            if b is not None:
                rows.append(a)
                cols.append(b)
        rows, cols = np.array(rows, dtype=np.intp), np.array(cols, dtype=np.intp)
        return LowRankCross(self.L[I], self.L[J], (rows, cols, self.dcorr[np.asarray(I, dtype=np.intp)[rows]]))

    def cross_test(self, X_new):
        Lnew = sla.solve_triangular(self.R, self.kernel.gram(self.Xp, X_new), lower=True).T
        return LowRankCross(Lnew, self.L)

    def _Z(self) -> np.ndarray:
        """Z = K_pp^{-1} K_{p,.} = R^{-T} L^T, shape (d, n)."""
        return sla.solve_triangular(self.R, self.L.T, lower=True, trans="T")

    def grad_contract(self, E, F):
        k = self.kernel
        if k.params.size == 0:
            return np.zeros(0)
        Z = self._Z()
        ZE, ZF = Z @ E, Z @ F
        g = np.einsum("aj,aj->a", E, F)
        # d(K_np Z) terms: dK_np Z + Z^T dK_pn - Z^T dK_pp Z  (Nyström derivative)
        total = k.grad_contract(self.X, self.Xp, E @ ZF.T)
        total += k.grad_contract(self.X, self.Xp, F @ ZE.T)
        total -= k.grad_contract(self.Xp, self.Xp, ZE @ ZF.T)
        # diagonal correction: d diag(M) - d diag(Q), weighted by g
        total += k.diag_grad_contract(self.X, g)
        total -= k.grad_contract(self.X, self.Xp, 2.0 * g[:, None] * Z.T)
        total += k.grad_contract(self.Xp, self.Xp, (Z * g) @ Z.T)
        return total

    def with_kernel(self, kernel):
        if kernel.key() == self.kernel.key():
            return self
        return LowRankGram(self.X, kernel, self.Xp, None, self.jitter)

    @property
    def nbytes(self):
        return self.L.nbytes
