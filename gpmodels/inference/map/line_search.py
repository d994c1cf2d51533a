"""Pair-optimisation line search (Seeger 2008, Sec. 5.1.2).

Along a Newton direction s in α with s̃ = K̃ s (one MVM), Φ is treated as a function of the pair
(u, α) = (u0 + λ s̃, α0 + λ s):

    Φ(λ) = (1/2) α_λ^T u_λ + Φ_lh(u_λ),     dΦ/dλ = s̃^T (α_λ + g(u_λ)),

so every evaluation costs O(nC) and no further MVM.  Φ(λ) is convex along the segment for a
log-concave likelihood; the search accepts the full Newton step λ = 1 when it satisfies the
Armijo condition, and otherwise locates the minimiser in (0, 1) by safeguarded secant steps on
dΦ/dλ (bisection fallback).

Near the optimum the decrease of Φ falls below its round-off (|Φ| times machine epsilon) while
the gradient is still well above any tolerance; Φ values then cannot judge a step.  There the
search uses the approximate Wolfe conditions of Hager & Zhang (2005): a step whose Φ is within
round-off of Φ(0) is accepted when the slope has dropped, |Φ'(λ)| <= 0.9 |Φ'(0)|.
"""

from __future__ import annotations

import attrs
import numpy as np

__all__ = ["LineSearchResult", "NewtonPoint", "pair_line_search", "objective"]


def objective(likelihood, Y, alpha, u) -> float:
    """Φ = (1/2) α^T u + Φ_lh(u) with u = K̃ α (Seeger 2008, eq. 1)."""
    return 0.5 * float(np.vdot(alpha, u)) + likelihood.value(u, Y)


@attrs.frozen(eq=False)
class NewtonPoint:
    """The current iterate: α and u = K̃ α (n, C), Φ there and g = ∇_u Φ_lh (n, C)."""

    alpha: np.ndarray
    u: np.ndarray
    phi: float
    g: np.ndarray


@attrs.frozen
class LineSearchResult:
    step: float  # λ; 0 when no acceptable step was found
    phi: float
    evaluations: int

    @property
    def success(self) -> bool:
        return self.step > 0.0


def pair_line_search(
    likelihood, Y, point: NewtonPoint, s, s_tilde, *, armijo: float = 1e-4, max_evals: int = 30, values=None
) -> LineSearchResult:
    """Minimise (or sufficiently decrease) Φ on α + λ s, λ in (0, 1], from ``point`` (α, u, Φ there)
    with s̃ = K̃ s; Φ(λ) and Φ'(λ) by ``values`` (the fit's plan's, :meth:`ExecutionPlan.line_values`; None:
    the likelihood's ``pair_line_values``)."""
    alpha, u, phi0 = point.alpha, point.u, point.phi
    values = values or likelihood.pair_line_values

    def evaluate(lam):
        return values(alpha, s, u, s_tilde, Y, lam)

    d0 = evaluate(0.0)[1]
    if not d0 < 0.0:
        return LineSearchResult(0.0, phi0, 0)
    roundoff = 64.0 * np.finfo(float).eps * max(1.0, abs(phi0))

    def approx_wolfe(phi, d, curvature):
        return phi <= phi0 + roundoff and abs(d) <= curvature * abs(d0)

    phi1, d1 = evaluate(1.0)
    evals = 1
    if np.isfinite(phi1) and (phi1 <= phi0 + armijo * d0 or (d1 <= 0.0 and phi1 < phi0) or approx_wolfe(phi1, d1, 0.9)):
        return LineSearchResult(1.0, phi1, evals)
    best_lam, best_phi = (1.0, phi1) if np.isfinite(phi1) and phi1 < phi0 else (0.0, phi0)
    lo, dlo, hi, dhi = 0.0, d0, 1.0, d1 if np.isfinite(d1) else np.inf
    while evals < max_evals:
        width = hi - lo
        if np.isfinite(dhi) and dhi > dlo:
            lam = lo - dlo * width / (dhi - dlo)
            lam = min(max(lam, lo + 0.01 * width), hi - 0.01 * width)
        else:
            lam = lo + 0.5 * width
        phi, d = evaluate(lam)
        evals += 1
        if np.isfinite(phi) and phi < best_phi:
            best_lam, best_phi = lam, phi
        if np.isfinite(phi) and (
            (phi <= phi0 + armijo * lam * d0 and abs(d) <= 0.1 * abs(d0)) or approx_wolfe(phi, d, 0.1)
        ):
            return LineSearchResult(lam, phi, evals)
        if np.isfinite(d) and d < 0.0:
            lo, dlo = lam, d
        else:
            hi, dhi = lam, d if np.isfinite(d) else np.inf
        if width < 1e-12:
            break
    return LineSearchResult(best_lam, best_phi, evals)
