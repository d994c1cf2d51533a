"""Batched CG with Lanczos coefficients, stochastic Lanczos quadrature and Hutchinson probes.

For a symmetric positive definite A (given as a function on arrays (n, C, k)) and k right-hand
sides B, ``batched_cg`` runs k independent CG recursions side by side (one batched A-MVM per
step, per-column step sizes), and records the CG coefficients of each column.  Those give the
Lanczos tridiagonal T_j of A started at b_j / ||b_j|| (Saad 2003, Sec. 6.7.3; Gardner et al. 2018,
"mBCG"):

  T[0, 0] = 1/a_0,  T[i, i] = 1/a_i + b_{i-1}/a_{i-1},  T[i, i+1] = √b_i / a_i,

with a_i the step lengths and b_i = ||r_{i+1}||² / ||r_i||².  Stochastic Lanczos quadrature
(Ubaru, Chen & Saad 2017) then estimates log|A| = tr log A from Rademacher probes z_j:

  z^T log(A) z ≈ ||z||² Σ_l τ_l² log λ_l,   λ_l, τ_l: eigenvalues and first eigenvector
  components of T,   log|A| ≈ (1/m) Σ_j z_j^T log(A) z_j.

Hutchinson (1990): tr(M) ≈ (1/m) Σ_j z_j^T M z_j, and per-point blocks of M by
(1/m) Σ_j (M z_j)_i (z_j)_i^T.  Probes come from an explicit, seeded numpy Generator.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np
import scipy.linalg as sla

__all__ = ["BatchedCGResult", "batched_cg", "rademacher", "slq_logdet", "hutchinson_blocks"]


@attrs.frozen
class BatchedCGResult:
    """Solutions X (same shape as B), per-column iterations, residuals, CG coefficients."""

    x: np.ndarray
    iterations: np.ndarray  # (k,)
    residual: np.ndarray  # (k,) ||b - A x|| / ||b||
    alphas: tuple  # per column, the step lengths a_i
    betas: tuple  # per column, b_i
    matvecs: int

    @property
    def converged(self) -> bool:
        return bool(np.all(self.residual <= self._tol))

    _tol: float = 0.0

    def lanczos(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """(diagonal, off-diagonal) of the Lanczos tridiagonal T_j of column j."""
        a = np.asarray(self.alphas[j])
        b = np.asarray(self.betas[j])
        m = a.size
        d = 1.0 / a
        d[1:] += b[: m - 1] / a[: m - 1]
        e = np.sqrt(b[: m - 1]) / a[: m - 1]
        return d, e


def _dot(X, Y):
    return np.einsum("ak,ak->k", X.reshape(-1, X.shape[-1]), Y.reshape(-1, Y.shape[-1]))


def batched_cg(
    apply_A: Callable[[np.ndarray], np.ndarray], B: np.ndarray, *, tol: float = 1e-8, max_iter: int = 200
) -> BatchedCGResult:
    """Solve A X = B column by column (last axis), all columns in one MVM per step, from X = 0."""
    B = np.asarray(B, dtype=np.float64)
    k = B.shape[-1]
    X = np.zeros_like(B)
    R = B.copy()
    P = R.copy()
    bnorm = np.sqrt(_dot(B, B))
    bnorm_safe = np.where(bnorm > 0, bnorm, 1.0)
    rr = _dot(R, R)
    active = bnorm > 0
    its = np.zeros(k, dtype=int)
    alphas = [[] for _ in range(k)]
    betas = [[] for _ in range(k)]
    res = np.sqrt(rr) / bnorm_safe
    matvecs = 0
    for _ in range(max_iter):
        active &= res > tol
        if not active.any():
            break
        AP = apply_A(P)
        matvecs += 1
        pAp = _dot(P, AP)
        ok = active & (pAp > 0) & np.isfinite(pAp)
        a = np.where(ok, rr / np.where(ok, pAp, 1.0), 0.0)
        X += a * P
        R -= a * AP
        rr_new = _dot(R, R)
        b = np.where(ok, rr_new / np.where(rr > 0, rr, 1.0), 0.0)
        for j in np.flatnonzero(ok):
            alphas[j].append(a[j])
            betas[j].append(b[j])
            its[j] += 1
        P = R + b * P
        rr = np.where(ok, rr_new, rr)
        res = np.where(ok, np.sqrt(rr) / bnorm_safe, res)
        active &= ok
    return BatchedCGResult(X, its, res, tuple(map(tuple, alphas)), tuple(map(tuple, betas)), matvecs, tol)


def rademacher(rng: np.random.Generator, shape) -> np.ndarray:
    """Entries ±1 with probability 1/2 each (Hutchinson probes)."""
    return rng.integers(0, 2, size=shape).astype(np.float64) * 2.0 - 1.0


def slq_logdet(result: BatchedCGResult, Z: np.ndarray, columns=None) -> float:
    """log|A| by stochastic Lanczos quadrature from the CG run on probes Z (columns of the run)."""
    cols = range(Z.shape[-1]) if columns is None else columns
    est = []
    for j in cols:
        zz = float(np.sum(Z[..., j] ** 2))
        if not result.alphas[j]:
            est.append(0.0)
            continue
        d, e = result.lanczos(j)
        lam, U = sla.eigh_tridiagonal(d, e)
        lam = np.maximum(lam, np.finfo(float).tiny)
        est.append(zz * float(np.sum(U[0] ** 2 * np.log(lam))))
    return float(np.mean(est))


def hutchinson_blocks(MZ: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """Per-point C x C blocks of M from MZ = M Z and probes Z, both (n, C, m): (n, C, C), symmetrised."""
    S = np.einsum("icm,idm->icd", MZ, Z) / Z.shape[-1]
    return 0.5 * (S + np.swapaxes(S, 1, 2))
