"""Inner tolerances that follow the outer optimiser's progress (Seeger 2008, Sec. 4, 5.2).

Every Ψ evaluation solves two kinds of inner problems per fold: the refit of α[J] by Newton–CG
(stopped at a per-point gradient RMS ``grad_tol``) and the accumulation solve of Sec. 5.2 (CG
stopped at relative residual ``accumulation_tol`` or k3 steps).  Their accuracy only has to match
what the outer quasi-Newton method can use:

- far from the optimum Ψ falls by tens of percent per outer iteration, and a gradient with a few
  percent relative error still gives a descent direction; an error of Ψ far below the decrease
  does not change which trial step is accepted;
- near the optimum the decreases shrink to ``ftol`` and both errors must shrink with them.

Measured on digits (mc-sep, n = 1198, C = 10, 5 folds, one evaluation at separated kernels):
the error of Ψ grows about linearly with the refits' ``grad_tol`` (relative error ≈ grad_tol / 3:
1.6e-5, 2.6e-4, 5.3e-3 absolute at Ψ = 152 for 1e-6, 1e-5, 1e-4) and the relative error of ∇Ψ
with the accumulation tolerance (5e-6, 5e-3, 8e-2 for 1e-6, 1e-3, 1e-2); MVMs of the evaluation
767 (1e-6 / 1e-6) -> 456 (1e-4 / 1e-3) -> 406 (1e-4 / 1e-2).

Rule (:func:`scheduled_options`): with ρ the relative decrease of the best Ψ at its last
improvement (ρ = ∞ before any), the evaluation uses

    grad_tol = clip(0.01 ρ, floor, 1e-4),      accumulation_tol = clip(ρ, floor, 1e-2),

the floors being the configured (tight) ``CVOptions`` values.  So Ψ's error stays about 1 % of the
last decrease, ∇Ψ's error a few percent far out and ρ-relative near the optimum, and the failure
threshold ``fail_tol`` (1e-3 by default) stays ≥ 10 times the loosest refit tolerance: an
evaluation still fails only where the refits cannot converge, not because the schedule is loose.
"""

from __future__ import annotations

import math

import attrs

from gpmodels.inference.cv.options import CVOptions

__all__ = ["INNER_TOLERANCES", "GRAD_TOL_CEILING", "ACCUMULATION_TOL_CEILING", "scheduled_options", "ProgressTracker"]

INNER_TOLERANCES = ("adaptive", "fixed")
GRAD_TOL_CEILING = 1e-4
ACCUMULATION_TOL_CEILING = 1e-2


def scheduled_options(options: CVOptions, rho: float) -> CVOptions:
    """``options`` with the refits' ``grad_tol`` and the ``accumulation_tol`` loosened for the outer
    progress ρ (module docstring); never tighter than the configured values."""
    grad_floor, acc_floor = options.newton.grad_tol, options.accumulation_tol
    grad_tol = min(max(0.01 * rho, grad_floor), max(GRAD_TOL_CEILING, grad_floor))
    acc_tol = min(max(rho, acc_floor), max(ACCUMULATION_TOL_CEILING, acc_floor))
    return attrs.evolve(options, accumulation_tol=acc_tol, newton=attrs.evolve(options.newton, grad_tol=grad_tol))


@attrs.define
class ProgressTracker:
    """ρ: the relative decrease of the best successful Ψ at its last improvement (∞ before one)."""

    best: float = math.inf
    rho: float = math.inf

    def update(self, psi: float) -> None:
        if math.isfinite(psi) and psi < self.best:
            if math.isfinite(self.best):
                self.rho = (self.best - psi) / max(1.0, abs(psi))
            self.best = psi
