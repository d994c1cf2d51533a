"""Stochastic Lanczos quadrature and Hutchinson probes.

For a symmetric positive definite A (given as a function on arrays (n, C, k)) and k right-hand
sides B, :func:`~gpmodels.linalg.cg.cg` with ``Systems(columns=True)`` runs k independent CG
recursions side by side (one batched A-MVM per step, per-column step sizes) and, with ``record``,
keeps the CG coefficients of each column: the Lanczos tridiagonal T_j of A started at
b_j / ||b_j|| (:meth:`~gpmodels.linalg.cg.CGResult.lanczos`).  Stochastic Lanczos quadrature
(Ubaru, Chen & Saad 2017) then estimates log|A| = tr log A from Rademacher probes z_j:

  z^T log(A) z ≈ ||z||² Σ_l τ_l² log λ_l,   λ_l, τ_l: eigenvalues and first eigenvector
  components of T,   log|A| ≈ (1/m) Σ_j z_j^T log(A) z_j.

Hutchinson (1990): tr(M) ≈ (1/m) Σ_j z_j^T M z_j, and per-point blocks of M by
(1/m) Σ_j (M z_j)_i (z_j)_i^T.  Probes come from an explicit, seeded numpy Generator.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from gpmodels.linalg.cg import CGResult

__all__ = ["rademacher", "slq_logdet", "hutchinson_blocks"]


def rademacher(rng: np.random.Generator, shape) -> np.ndarray:
    """Entries ±1 with probability 1/2 each (Hutchinson probes)."""
    return rng.integers(0, 2, size=shape).astype(np.float64) * 2.0 - 1.0


def slq_logdet(result: CGResult, Z: np.ndarray, columns=None) -> float:
    """log|A| by stochastic Lanczos quadrature from the recorded CG run on probes Z (columns of the run)."""
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
