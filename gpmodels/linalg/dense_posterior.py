"""Dense Gaussian-posterior factors: B = I + Vᵀ K V by Cholesky, log|B|, R = V B⁻¹ Vᵀ, Σ = K - K R K.

Rasmussen & Williams (2006), Alg. 3.1 (lines 2, 7) and Alg. 5.1 (lines 7-9): for a prior covariance
K (n x n, dense) and a Gaussian (or Gaussian-bounded) site precision W = V Vᵀ,

    B = I + Vᵀ K V = L Lᵀ,         log|B| = 2 Σ_i log L_ii = log|I + K W|,
    R = V B⁻¹ Vᵀ = W (I + K W)⁻¹ = (K + W⁻¹)⁻¹,
    Σ = (K⁻¹ + W)⁻¹ = K - K R K,   diag Σ = diag K - Σ_rows (L⁻¹ Vᵀ K)∘(L⁻¹ Vᵀ K).

With a diagonal V = W^½ (factorised likelihoods, R&W's B = I + W^½ K W^½) pass its diagonal; any
other factor (the softmax's V, nC x nC) as a matrix.  The same factor serves the Laplace MLM
(W the likelihood Hessian at the mode), VB (W = Γ⁻¹, Nickisch & Seeger 2011, Sec. 2.3: R = (K + Γ)⁻¹
and diag Σ the marginal variances z) and the MKL Newton systems ((2K⁻¹ + W)⁻¹ = ½ Σ with W/2 = V Vᵀ).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np
import scipy.linalg as sla

from gpmodels.errors import InputError

__all__ = ["DensePosterior"]


class DensePosterior:
    """The Cholesky factor of B = I + Vᵀ K V and what it gives (see the module docstring).

    ``K``: (n, n) symmetric positive semidefinite; ``v``: (n,) the diagonal of V (entries >= 0), or
    (n, m) the matrix V; ``blas``: the BLAS-thread context of the factorisation and the triangular solves
    (a factory; the plan's :func:`~gpmodels.inference.execution_plan.dense_blas`).  Raises
    :class:`numpy.linalg.LinAlgError` when B is not numerically positive definite.
    """

    def __init__(self, K, v, blas: Callable = contextlib.nullcontext):
        K = np.asarray(K, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        n = K.shape[0]
        if K.shape != (n, n) or v.shape[0] != n or v.ndim not in (1, 2):
            raise InputError(f"Dimension mismatch: K must be (n, n) and v (n,) or (n, m); got {K.shape} and {v.shape}")
        self.K, self.v, self.diagonal, self._blas = K, v, v.ndim == 1, blas
        if self.diagonal:
            B = v[:, None] * K * v[None, :]  # W^½ K W^½   (R&W Alg. 3.1 line 2)
            B[np.diag_indices(n)] += 1.0
        else:
            B = np.eye(v.shape[1]) + v.T @ K @ v
        with blas():
            self.L = sla.cholesky(B, lower=True)
        self.logdet = 2.0 * float(np.sum(np.log(np.diag(self.L))))  # log|B|   (R&W Alg. 3.1 line 10)
        self._R = None

    def _Vt(self, X):
        """Vᵀ X for X (n, k)."""
        return self.v[:, None] * X if self.diagonal else self.v.T @ X

    def _V(self, X):
        """V X for X (m, k)."""
        return self.v[:, None] * X if self.diagonal else self.v @ X

    @property
    def R(self) -> np.ndarray:
        """(n, n) R = V B⁻¹ Vᵀ = (L⁻¹ Vᵀ)ᵀ (L⁻¹ Vᵀ)   (R&W Alg. 5.1 line 7)."""
        if self._R is None:
            Vt = np.diag(self.v) if self.diagonal else self.v.T
            with self._blas():
                Li = sla.solve_triangular(self.L, Vt, lower=True)
                self._R = Li.T @ Li
        return self._R

    def sigma_diag(self) -> np.ndarray:
        """(n,) diag Σ = diag K - column sums of (L⁻¹ Vᵀ K)²   (R&W Alg. 5.1 lines 8-9)."""
        with self._blas():
            C = sla.solve_triangular(self.L, self._Vt(self.K), lower=True)
        return np.diag(self.K) - np.sum(C * C, axis=0)

    def sigma(self) -> np.ndarray:
        """(n, n) Σ = K - K R K."""
        return self.K - self.K @ self.R @ self.K

    def solve_B(self, x) -> np.ndarray:
        """B⁻¹ x for x (m,) or (m, k)."""
        with self._blas():
            return sla.cho_solve((self.L, True), x)

    def apply_R(self, x) -> np.ndarray:
        """R x = V B⁻¹ Vᵀ x for x (n,) or (n, k), by two triangular solves (no R formed)."""
        x = np.asarray(x, dtype=np.float64)
        X = x[:, None] if x.ndim == 1 else x
        out = self._V(self.solve_B(self._Vt(X)))
        return out[:, 0] if x.ndim == 1 else out

    def apply_sigma(self, x) -> np.ndarray:
        """Σ x = K x - K R K x for x (n,) or (n, k)."""
        Kx = self.K @ x
        return Kx - self.K @ self.apply_R(Kx)
