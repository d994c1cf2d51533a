"""The per-example reduced problem of the Crammer–Singer dual and its two solvers.

Crammer & Singer (2001), eq. (34): with D ∈ R^k,

    min_ν ||ν||²   s.t.   ν ≤ D,   Σ_r ν_r = Σ_r D_r − 1.

Its solution is ν*_r = min(θ*, D_r) where θ* is the unique root of (37),
Σ_r min(θ, D_r) = Σ_r D_r − 1 (Theorem 1).

- :func:`solve_fixed_point` — Fig. 3: iterate θ_{l+1} = F(θ_l) = (1/k) Σ_r max(θ_l, D_r) − 1/k
  (eq. 39) from θ_1 ≤ max_r D_r until |θ_l − θ_{l+1}| / |θ_l| ≤ tol.  Theorem 2: the iterates
  approach θ* from below at rate at least 1 − 1/k.
- :func:`solve_exact` — the sorting solution: with D sorted decreasingly, θ* = (Σ_{r≤s} D_r − 1)/s
  (eq. 42) for the largest s whose candidate still lies below D_s.

Feasibility.  Stopping Fig. 3 early leaves θ_l < θ*, so ν = min(θ_l, D) misses the equality
constraint by ρ = Σ D − 1 − Σ ν > 0 (the dual problem (15) needs Σ_r τ_r = 0 exactly, or the
duality gap is meaningless).  We repair it in closed form: the coordinates at θ (ν_r < D_r) have
room D_r − θ adding up to ρ + 1 > ρ, and each receives the share ρ (D_r − θ)/(ρ + 1) — feasible
(ν ≤ D, the sum exact) and within O(ρ) of ν*.  This is our addition; the paper returns ν as is.
"""

from __future__ import annotations

import attrs
import numpy as np

__all__ = ["FixedPointResult", "fixed_point_list", "solve_fixed_point", "solve_exact", "theta_exact", "tau_from_nu"]

#: below this many classes the fixed point runs on Python floats (numpy call overhead dominates)
_SMALL_K = 48


@attrs.frozen
class FixedPointResult:
    """ν (shape (k,)), the last θ, the number of fixed-point steps."""

    nu: np.ndarray
    theta: float
    iterations: int


def theta_exact(D: np.ndarray) -> float:
    """θ* of eq. (37) by sorting (eq. 42).  # shape: D (k,)"""
    d = np.sort(np.asarray(D, dtype=np.float64))[::-1]
    cums = np.cumsum(d) - 1.0
    s = np.arange(1, d.size + 1)
    cand = cums / s
    # θ* = cand_s for the largest s with cand_s < d_s (the s largest D_r sit at θ*); cand_1 < d_1
    ok = np.flatnonzero(cand < d)
    return float(cand[ok[-1]])


def solve_exact(D: np.ndarray) -> np.ndarray:
    """The exact minimiser ν* = min(θ*, D) of (34).  # shape: D (k,) -> (k,)"""
    D = np.asarray(D, dtype=np.float64)
    return np.minimum(theta_exact(D), D)


def _seqsum(xs) -> float:
    """Left-to-right sum (Python >= 3.12's ``sum`` compensates float round-off; the compiled
    Crammer–Singer loop sums left to right, and the two engines are meant to agree bit for bit)."""
    s = 0.0
    for x in xs:
        s += x
    return s


def fixed_point_list(d: list, theta: float, tol: float, max_iter: int = 1000) -> tuple[list, float, int]:
    """:func:`solve_fixed_point` on Python floats (small k: no numpy call overhead); (ν, θ, steps).

    The operation order is the reference for the compiled loop (``_cs_core.c``), which repeats it.
    """
    k = len(d)
    th = float(theta)
    it = 0
    while it < max_iter:
        it += 1
        s = -1.0
        for v in d:
            s += v if v > th else th
        new = s / k  # eq. (39)
        done = abs(th - new) <= tol * abs(th)
        th = new
        if done:
            break
    nu = [v if v < th else th for v in d]
    rho = (_seqsum(d) - 1.0) - _seqsum(nu)
    if rho > 0.0:
        room = [v - n for v, n in zip(d, nu)]
        f = rho / _seqsum(room)
        nu = [n + r * f for n, r in zip(nu, room)]
    elif rho < 0.0:  # only by round-off past θ*: move the coordinates at θ down together
        at = [i for i in range(k) if d[i] > nu[i]]
        if at:
            share = rho / len(at)
            for i in at:
                nu[i] += share
    return nu, th, it


def solve_fixed_point(D: np.ndarray, theta: float, tol: float, max_iter: int = 1000) -> FixedPointResult:
    """Fig. 3 with a feasibility repair (module docstring).  # shape: D (k,)

    ``theta`` must be ≤ max_r D_r (Theorem 2); Fig. 4 passes θ_2 = mean(D) − 1/k, the image of
    the recommended θ_1 = min_r D_r.  Stops when |θ_l − θ_{l+1}| ≤ tol |θ_l| or after ``max_iter``
    steps.
    """
    D = np.asarray(D, dtype=np.float64)
    k = D.size
    if k <= _SMALL_K:
        nu, th, it = fixed_point_list(D.tolist(), theta, tol, max_iter)
        return FixedPointResult(np.array(nu), th, it)
    th = float(theta)
    it = 0
    while it < max_iter:
        it += 1
        new = (np.maximum(th, D).sum() - 1.0) / k
        done = abs(th - new) <= tol * abs(th)
        th = float(new)
        if done:
            break
    nu = np.minimum(th, D)
    room = D - nu
    rho = (D.sum() - 1.0) - nu.sum()
    if rho > 0.0:
        nu = nu + room * (rho / room.sum())
    elif rho < 0.0:
        at = room > 0
        nu[at] += rho / max(int(at.sum()), 1)
    return FixedPointResult(nu, th, it)


def tau_from_nu(nu: np.ndarray, D: np.ndarray, y: int) -> np.ndarray:
    """τ = ν − B/A = ν − D + 1_y (eq. 33).  # shape: nu, D (k,)"""
    tau = nu - D
    tau[y] += 1.0
    return tau
