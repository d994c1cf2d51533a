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
    SteppedSolver,
    StepResult,
    block_point,
    line_search_step,
)
from gpmodels.inference.map.newton_cg import SystemSolution
from gpmodels.likelihoods.base import HessianFactor, Likelihood
from gpmodels.operators.base import Operator
from gpmodels.validation import instance_of

__all__ = [
    "ClassBlocks",
    "ExactNewton",
    "SoftmaxNewtonFactors",
    "exact_newton",
    "exact_newton_solve",
    "softmax_newton_factors",
]


@attrs.frozen(eq=False)
class SoftmaxNewtonFactors:
    """The factors of I + W K̃ at one π for a class-diagonal K̃ (R&W 2006, Alg. 3.3 lines 5-9):
    per class ``sd`` = D_c^{1/2} and the lower Cholesky factor ``L`` of A_c = I + D_c^{1/2} K̃_c D_c^{1/2};
    ``E`` the explicit E_c = D_c^{1/2} A_c^{-1} D_c^{1/2} (None unless asked for); ``M`` the lower factor of
    Σ_c E_c; ``logdet`` = log|I + K̃ W| = 2 Σ_c Σ_i log L_c,ii + 2 Σ_i log M_ii."""

    sd: list
    L: list
    E: list | None
    M: np.ndarray
    logdet: float

    def apply_E(self, c: int, x: np.ndarray) -> np.ndarray:
        """E_c x = D_c^{1/2} L_c^{-T} L_c^{-1} D_c^{1/2} x by two triangular solves (backward stable)."""
        return self.sd[c] * sla.cho_solve((self.L[c], True), self.sd[c] * x, check_finite=False)

    def solve(self, blocks: list[np.ndarray], rhs: np.ndarray) -> np.ndarray:
        """(I + W K̃)^{-1} rhs = b - c + E R (M M^T)^{-1} R^T c with c = E K̃ b (App. C; R&W Alg. 3.3
        lines 10-12, R^T x = Σ_c x_c)."""
        C = len(blocks)
        c_vec = np.column_stack([self.apply_E(c, blocks[c] @ rhs[:, c]) for c in range(C)])
        z = sla.cho_solve((self.M, True), c_vec.sum(axis=1), check_finite=False)
        return rhs - c_vec + np.column_stack([self.apply_E(c, z) for c in range(C)])


def softmax_newton_factors(blocks: list[np.ndarray], pi: np.ndarray, *, keep_E: bool = False) -> SoftmaxNewtonFactors:
    """:class:`SoftmaxNewtonFactors` for K̃ = diag(blocks) and W = D - Π Π^T at π (n, C): R&W Alg. 3.3
    lines 5-9, with the complete determinant |I + K̃ W| = Π_c |A_c| · |Σ_c E_c|.

    E_c is formed from L_c by LAPACK's inverse from a Cholesky factor (potri, (2/3) n³ flops, a third
    of two triangular solves and a product), lower triangle only unless ``keep_E``: it feeds the small
    system M M^T = Σ_c E_c (bounded entries, A_c ⪰ I) and, kept, the gradient's R;
    :meth:`SoftmaxNewtonFactors.solve` applies E_c by triangular solves.  Raises
    :class:`numpy.linalg.LinAlgError` when a factor fails."""
    n, C = pi.shape
    sds, Ls, Es, E_sum, logdet = [], [], [], np.zeros((n, n)), 0.0
    for c in range(C):
        sd = np.sqrt(pi[:, c])
        A = sd[:, None] * blocks[c] * sd[None, :]
        A[np.diag_indices(n)] += 1.0
        L, info = sla.lapack.dpotrf(A, lower=1, clean=1, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"Cholesky of I + D^1/2 K D^1/2 failed for class {c} (info {info})")
        inv, info = sla.lapack.dpotri(L, lower=1)  # lower triangle of A_c^{-1}; the upper stays 0 (clean L)
        if info != 0:
            raise np.linalg.LinAlgError(f"inverse of I + D^1/2 K D^1/2 failed for class {c} (info {info})")
        E = sd[:, None] * inv * sd[None, :]
        E_sum += E
        if keep_E:
            E += E.T
            E[np.diag_indices(n)] *= 0.5
            Es.append(E)
        sds.append(sd)
        Ls.append(L)
        logdet += 2.0 * float(np.sum(np.log(np.diag(L))))
    M, info = sla.lapack.dpotrf(E_sum, lower=1, clean=1, overwrite_a=1)  # reads the lower triangle
    if info != 0:
        raise np.linalg.LinAlgError(f"Cholesky of the sum of the E_c failed (info {info})")
    logdet += 2.0 * float(np.sum(np.log(np.diag(M))))
    return SoftmaxNewtonFactors(sds, Ls, Es if keep_E else None, M, logdet)


def exact_newton_solve(blocks: list[np.ndarray], pi: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """α' = (I + W K̃)^{-1} rhs for block-diagonal K̃ = diag(blocks), W = D - Π Π^T at π.

    E_c is applied as D_c^{1/2} L_c^{-T} L_c^{-1} D_c^{1/2} (two triangular solves), never through an
    explicit A_c^{-1}: c = E K̃ b must nearly cancel b when K̃ is large (variance 1e12), and the
    solves keep that cancellation backward stable, where an explicit inverse has an error of
    eps cond(A_c) ||A_c^{-1}|| that K̃ then multiplies (the step would be garbage).  The small
    system M M^T = Σ_c E_c (bounded entries) uses the explicit E_c (:func:`softmax_newton_factors`).
    """
    return softmax_newton_factors(blocks, pi).solve(blocks, rhs)


class ClassBlocks:
    """K̃ of a class-diagonal operator as its C dense blocks K̃_c (n x n): V -> [K̃_c V_c]_c, counted."""

    def __init__(self, op: Operator):
        self.blocks = [op.class_block(c) for c in range(op.n_classes)]
        self.count = 0

    @property
    def counts(self) -> np.ndarray:
        """``count`` as the products of one block, (1,) (the Newton loop's per-block counts)."""
        return np.array([self.count])

    def __call__(self, V):
        self.count += 1
        return np.column_stack([self.blocks[c] @ V[:, c] for c in range(len(self.blocks))])


class _ExactStepper:
    """Exact Newton's state for one fit: the class blocks of K̃ (App. C)."""

    truncated = False  # exact steps: only the gradient ends the fit
    precond_basis = None
    offsets = None  # one block

    def __init__(self, op: Operator):
        self.mvm = ClassBlocks(op)

    def step(self, problem: NewtonProblem, point: NewtonPoint, active: np.ndarray) -> dict[int, StepResult]:
        point = block_point(point, 0, slice(None))
        hf = problem.likelihood.exact_hessian_factor(point.u, problem.Y)
        # App. C: α' = (I + W K̃)^{-1} (W u - g); its K̃ b is one more MVM
        new_alpha = exact_newton_solve(self.mvm.blocks, hf.multinomial_pi(), hf.W(point.u) - point.g)
        self.mvm.count += 1
        ls, s, s_tilde = line_search_step(problem, point, new_alpha)
        return {0: StepResult(ls, s, s_tilde)}


@attrs.frozen
class ExactNewton(SteppedSolver):
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
            raise InputError(
                "exact Newton (App. C) needs a block-diagonal (flat) prior; use the newton-cg solver for "
                "coupled or hierarchical priors"
            )
        if likelihood.hessian_form != "multinomial":
            raise InputError(
                "exact Newton (App. C) needs a likelihood whose Hessian has the multinomial form "
                "W_i = diag π_i - π_i π_i^T "
                f"(the softmax); {type(likelihood).__name__}'s is {likelihood.hessian_form!r}: use the "
                "newton-cg solver"
            )

    def stepper(self, op: Operator, precond_start, plan, *, blocks: bool = False) -> _ExactStepper:
        """Exact Newton's state for one fit (one block); ``precond_start`` and the plan's CG placement are
        ignored (no CG)."""
        if blocks and op.row_blocks is not None:
            raise InputError("exact Newton (App. C) fits one block; use the newton-cg solver for row blocks")
        return _ExactStepper(op)

    def solve_weighted(
        self, op: Operator, hf: HessianFactor, b: np.ndarray, *, x0=None, tol: float = 0.0, max_iter: int = 0, plan=None
    ) -> SystemSolution:
        """z = (I + W K̃)^{-1} W b by Cholesky factors and Woodbury (App. C); ``x0``, ``tol``, ``max_iter``
        and ``plan`` are for iterative solvers and ignored."""
        blocks = [op.class_block(c) for c in range(op.n_classes)]
        return SystemSolution(exact_newton_solve(blocks, hf.multinomial_pi(), hf.W(b)))


def exact_newton(
    op: Operator,
    likelihood: Likelihood,
    Y,
    options: NewtonOptions | None = None,
    *,
    alpha0=None,
    on_iteration: Callable[[NewtonStep], None] | None = None,
) -> NewtonResult:
    """Fit α̂ by exact Newton steps with line search (App. C): ``ExactNewton(options).fit``; same
    result type as ``newton_cg``."""
    return ExactNewton(options or NewtonOptions()).fit(op, likelihood, Y, alpha0=alpha0, on_iteration=on_iteration)
