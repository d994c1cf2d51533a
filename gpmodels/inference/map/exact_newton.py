"""Exact Newton for the flat softmax model: O(n^3 C) time, O(n^2 C) memory (Seeger 2008, App. C).

The Newton system (I + W K̃) α' = W u - g, with W = D - Π Π^T (Π stacks the D_c), is solved
exactly with one Cholesky factor per class and the Sherman–Morrison–Woodbury formula.  We use the
form of Rasmussen & Williams (2006), Alg. 3.3, which is the same identity written without D^{-1/2}
(so it stays finite when some π_ic underflow):

    A_c = I + D_c^{1/2} K̃_c D_c^{1/2} = L_c L_c^T,      E_c = D_c^{1/2} A_c^{-1} D_c^{1/2},
    M M^T = Σ_c E_c,    b = W u - g,    c = E K̃ b,
    α' = b - c + E R (M M^T)^{-1} R^T c,    R = stacked identities (R^T x = Σ_c x_c).

The step α' - α then goes through the same pair line search and the same outer loop as Newton–CG
(:func:`~gpmodels.inference.map.newton.newton_loop`; :class:`ExactNewton` supplies the step).  This
is the reference that Newton–CG is tested against; it needs a class-diagonal operator (flat prior)
and a likelihood whose Hessian has the multinomial form (``hessian_form == "multinomial"``: the
softmax).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import attrs
import numpy as np
import scipy.linalg as sla

from gpmodels.errors import InputError
from gpmodels.inference.map.newton import (
    NewtonOptions,
    NewtonPoint,
    NewtonProblem,
    NewtonResult,
    NewtonStep,
    StepResult,
    line_search_step,
    newton_loop,
)
from gpmodels.inference.map.newton_cg import SystemSolution
from gpmodels.likelihoods.base import HessianFactor, Likelihood
from gpmodels.operators.base import Operator
from gpmodels.validation import instance_of

__all__ = ["ExactNewton", "exact_newton", "exact_newton_solve"]


def exact_newton_solve(blocks: list[np.ndarray], pi: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """α' = (I + W K̃)^{-1} rhs for block-diagonal K̃ = diag(blocks), W = D - Π Π^T at π.

    E_c is applied as D_c^{1/2} L_c^{-T} L_c^{-1} D_c^{1/2} (two triangular solves), never through an
    explicit A_c^{-1}: c = E K̃ b must nearly cancel b when K̃ is large (variance 1e12), and the
    solves keep that cancellation backward stable, where an explicit inverse has an error of
    eps cond(A_c) ||A_c^{-1}|| that K̃ then multiplies (the step would be garbage).  The small
    system M M^T = Σ_c E_c (bounded entries) may use E_c formed by the same solves.
    """
    n, C = pi.shape
    factors, E_sum = [], np.zeros((n, n))
    for c in range(C):
        sd = np.sqrt(pi[:, c])
        A = sd[:, None] * blocks[c] * sd[None, :]
        A[np.diag_indices(n)] += 1.0
        L, info = sla.lapack.dpotrf(A, lower=1, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"Cholesky of I + D^1/2 K D^1/2 failed for class {c} (info {info})")
        factors.append((sd, (L, True)))
        V = sla.solve_triangular(L, np.diag(sd), lower=True)
        E_sum += V.T @ V  # E_c = D^{1/2} A^{-1} D^{1/2} = V^T V with V = L^{-1} D^{1/2}

    def apply_E(c, x):
        sd, F = factors[c]
        return sd * sla.cho_solve(F, sd * x)

    Mchol = sla.cho_factor(E_sum, lower=True)
    c_vec = np.column_stack([apply_E(c, blocks[c] @ rhs[:, c]) for c in range(C)])
    z = sla.cho_solve(Mchol, c_vec.sum(axis=1))
    return rhs - c_vec + np.column_stack([apply_E(c, z) for c in range(C)])


class _ClassBlocks:
    """K̃ of a class-diagonal operator as its C dense blocks K̃_c (n x n): V -> [K̃_c V_c]_c, counted."""

    def __init__(self, op: Operator):
        self.blocks = [op.class_block(c) for c in range(op.n_classes)]
        self.count = 0

    def __call__(self, V):
        self.count += 1
        return np.column_stack([self.blocks[c] @ V[:, c] for c in range(len(self.blocks))])


class _ExactStepper:
    """Exact Newton's state for one fit: the class blocks of K̃ (App. C)."""

    truncated = False  # exact steps: only the gradient ends the fit
    precond_basis = None

    def __init__(self, op: Operator):
        self.mvm = _ClassBlocks(op)

    def step(self, problem: NewtonProblem, point: NewtonPoint) -> StepResult:
        hf = problem.likelihood.exact_hessian_factor(point.u, problem.Y)
        # App. C: α' = (I + W K̃)^{-1} (W u - g); its K̃ b is one more MVM
        new_alpha = exact_newton_solve(self.mvm.blocks, hf.multinomial_pi(), hf.W(point.u) - point.g)
        self.mvm.count += 1
        ls, s, s_tilde = line_search_step(problem, point, new_alpha)
        return StepResult(ls, s, s_tilde)


@attrs.frozen
class ExactNewton:
    """Exact Newton (Seeger 2008, App. C): a class-diagonal (flat) operator and a likelihood with the
    multinomial Hessian form (the softmax); O(n^3 C) time, O(n^2 C) memory."""

    options: NewtonOptions = attrs.field(factory=NewtonOptions, validator=instance_of(NewtonOptions))
    name: ClassVar[str] = "exact"

    @staticmethod
    def supports(op: Operator, likelihood: Likelihood) -> bool:
        """Whether App. C applies: a class-diagonal operator, W_i = diag π_i - π_i π_i^T."""
        return bool(op.is_class_diagonal) and likelihood.hessian_form == "multinomial"

    def check(self, op: Operator, likelihood: Likelihood) -> None:
        """Raise :class:`InputError` naming what App. C needs when ``op`` or ``likelihood`` lacks it."""
        if not op.is_class_diagonal:
            raise InputError("exact Newton (App. C) needs a block-diagonal (flat) prior; use the newton-cg solver for "
                             "coupled or hierarchical priors")
        if likelihood.hessian_form != "multinomial":
            raise InputError("exact Newton (App. C) needs a likelihood whose Hessian has the multinomial form "
                             "W_i = diag π_i - π_i π_i^T "
                             f"(the softmax); {type(likelihood).__name__}'s is {likelihood.hessian_form!r}: use the "
                             "newton-cg solver")

    def fit(self, op: Operator, likelihood: Likelihood, Y, *, alpha0=None, precond_start=None,
            on_iteration: Callable[[NewtonStep], None] | None = None) -> NewtonResult:
        """α̂ = argmin Φ by exact Newton steps from ``alpha0`` (None: 0); ``precond_start`` is
        ignored (no CG)."""
        self.check(op, likelihood)
        Y = likelihood.check_targets(Y, op.n_points, op.n_classes)
        stepper = _ExactStepper(op)
        return newton_loop(NewtonProblem(likelihood, Y, stepper.mvm, self.options), stepper, alpha0,
                           on_iteration=on_iteration)

    def solve_weighted(self, op: Operator, hf: HessianFactor, b: np.ndarray, *, x0=None, tol: float = 0.0,
                       max_iter: int = 0) -> SystemSolution:
        """z = (I + W K̃)^{-1} W b by Cholesky factors and Woodbury (App. C); ``x0``, ``tol`` and
        ``max_iter`` are for iterative solvers and ignored."""
        blocks = [op.class_block(c) for c in range(op.n_classes)]
        return SystemSolution(exact_newton_solve(blocks, hf.multinomial_pi(), hf.W(b)))


def exact_newton(op: Operator, likelihood: Likelihood, Y, options: NewtonOptions | None = None, *,
                 alpha0=None, on_iteration: Callable[[NewtonStep], None] | None = None) -> NewtonResult:
    """Fit α̂ by exact Newton steps with line search (App. C): ``ExactNewton(options).fit``; same
    result type as ``newton_cg``."""
    return ExactNewton(options or NewtonOptions()).fit(op, likelihood, Y, alpha0=alpha0, on_iteration=on_iteration)
