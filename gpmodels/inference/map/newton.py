"""The Newton outer loop shared by every MAP solver (Seeger 2008, Alg. 1 and App. C).

Both solvers minimise Φ(α) = (1/2) α^T K̃ α + Φ_lh(u), u = K̃ α, by the same iteration:

1. start at α projected onto ran W with u = K̃ α (:func:`project_start`);
2. at (α, u) with g = ∇_u Φ_lh: stop when the per-point RMS of ∇_u Φ = α + g (Sec. 5.1.2) is below
   ``grad_tol``, when a truncated step decreased Φ by less than ``phi_rtol`` (relative), or after k1
   iterations;
3. otherwise the solver's step: a Newton point α' and the pair line search along s = α' − α
   with s̃ = K̃ s (Sec. 5.1.2); α += λ s, u += λ s̃.

What differs between solvers is step 3's Newton point: Newton–CG solves eq. (5) by preconditioned
CG (Alg. 1, :class:`~gpmodels.inference.map.newton_cg.NewtonCG`), exact Newton by Cholesky factors
and Woodbury (App. C, :class:`~gpmodels.inference.map.exact_newton.ExactNewton`).  A solver gives
:func:`newton_loop` a :class:`Stepper` for one fit; the loop owns the stopping rules, the traces
and the progress calls.

Block axis: F independent problems on separate rows (``NewtonProblem.offsets``, an operator's
``row_blocks``: the CV folds' refits, Sec. 4) have Φ(α) = Σ_k Φ_k(α_k) and advance together, each block
with its own Φ, line search, stall restarts, stopping rules and traces, while the stepper shares each step's
calls (one CG over all rows, :func:`~gpmodels.inference.map.newton_cg.block_newton_step`); a block that has
stopped sits out the later steps.  F = 1 is the ordinary fit (``SteppedSolver.fit``), F > 1
``SteppedSolver.fit_blocks``.

Progress: ``on_iteration(NewtonStep)`` (one block only) is called with the state at the start (iteration 0) and
after every Newton iteration; the fit itself never prints.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable
from typing import Protocol

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.inference.execution_plan import ExecutionPlan, plan_for
from gpmodels.inference.map.line_search import LineSearchResult, NewtonPoint, objective, pair_line_search
from gpmodels.likelihoods.base import Likelihood
from gpmodels.operators.base import Operator
from gpmodels.validation import MAX_SIZE, integer, nonnegative_int, nonnegative_number, number, one_of, positive_int

__all__ = [
    "NewtonOptions",
    "NewtonDiagnostics",
    "NewtonResult",
    "NewtonStep",
    "NewtonProblem",
    "NewtonPoint",
    "StepResult",
    "BlockFits",
    "Stepper",
    "block_rows",
    "block_point",
    "NewtonSolver",
    "SteppedSolver",
    "gradient_rms",
    "project_start",
    "line_search_step",
    "block_line_search",
    "newton_loop",
    "stop_rule",
    "no_decrease",
    "ROUNDOFF_GRAD",
    "PRECONDITIONER_NAMES",
]

#: names of the CG preconditioners (:mod:`gpmodels.inference.map.preconditioners`), as the spec writes them
PRECONDITIONER_NAMES = ("diagonal", "block", "lowrank", "lowrank_block", "auto")
#: a line search that finds no decrease at a gradient RMS below this is round-off at the optimum
ROUNDOFF_GRAD = 1e-9


@attrs.frozen
class NewtonOptions:
    """Settings of the Newton loop (k1, k2 and tolerances of Seeger 2008, Sec. 2 and 6).

    The CG settings (``cg_*``, ``max_stall_restarts``, ``stall_step``, ``preconditioner``,
    ``precond_*``) are read by Newton–CG only; exact Newton ignores them."""

    max_iter: int = attrs.field(default=30, validator=positive_int())  # k1
    cg_max_iter: int = attrs.field(default=50, validator=positive_int())  # k2
    cg_tol: float = attrs.field(default=1e-10, validator=nonnegative_number())  # relative to ||rhs||
    cg_forcing: float = attrs.field(default=0.1, validator=nonnegative_number())  # max. relative to the 1st residual
    grad_tol: float = attrs.field(default=1e-6, validator=nonnegative_number())  # per-point RMS of α + g
    phi_rtol: float = attrs.field(default=1e-12, validator=nonnegative_number())
    max_stall_restarts: int = attrs.field(default=2, validator=nonnegative_int())
    stall_step: float = attrs.field(default=0.1, validator=number(0, 1))  # a line-search step λ below it is a stall
    armijo: float = attrs.field(default=1e-4, validator=number(0, 1, open_high=True))  # c1 of the Armijo condition
    line_search_evals: int = attrs.field(default=30, validator=positive_int())
    preconditioner: str = attrs.field(default="diagonal", validator=one_of(PRECONDITIONER_NAMES))
    precond_rank: int = attrs.field(default=8, validator=integer(1, MAX_SIZE))  # lowrank: eigenpairs of the kernel
    precond_seed: int = attrs.field(default=0, validator=nonnegative_int())  # lowrank: randomised eigensolver seed


@attrs.frozen
class NewtonDiagnostics:
    """What a fit did: Φ and gradient per iteration (index 0 = start), CG steps, MVMs, time."""

    phi: tuple[float, ...]
    grad_norm: tuple[float, ...]
    mvm_trace: tuple[int, ...]  # cumulative MVMs when each entry of ``phi`` was reached
    cg_iterations: tuple[int, ...]  # per Newton iteration (empty for a solver without CG)
    step_sizes: tuple[float, ...]
    iterations: int
    stalls: int
    mvm_count: int
    seconds: float
    converged: bool
    message: str

    def as_dict(self) -> dict:
        return attrs.asdict(self)


@attrs.frozen
class NewtonStep:
    """Progress record of one Newton iteration (0 = the start): Φ, the gradient RMS and MVMs so far."""

    iteration: int
    phi: float
    grad_rms: float
    mvm_count: int


@attrs.frozen
class NewtonResult:
    """The fitted dual vector α (n, C), u = K̃ α, Φ, the last CG solution β and diagnostics."""

    alpha: np.ndarray
    u: np.ndarray
    phi: float
    beta: np.ndarray | None
    diagnostics: NewtonDiagnostics
    precond_basis: np.ndarray | None = None  # ``lowrank``: the eigensolvers' subspaces (start of the next fit)

    @property
    def converged(self) -> bool:
        return self.diagnostics.converged


@attrs.frozen(eq=False)
class NewtonProblem:
    """What stays fixed during one fit: the likelihood, targets Y (n, C), ``mvm`` (V -> K̃ V, counted
    where the solver counts), the options, the row blocks of F independent fits (``offsets``) and the line
    search's Φ(λ), Φ'(λ) (``line_values``: the plan's, :meth:`ExecutionPlan.line_values`; None: the likelihood's
    ``pair_line_values``)."""

    likelihood: Likelihood
    Y: np.ndarray
    mvm: Callable[[np.ndarray], np.ndarray]
    options: NewtonOptions
    offsets: np.ndarray | None = None  # (F + 1,): the rows of F independent blocks; None: one block
    line_values: Callable | None = None


@attrs.frozen(eq=False)
class BlockFits:
    """Each block's fit (a :class:`NewtonResult`, in block order) and the preconditioner's subspaces over
    all rows (the next fit's ``precond_start``)."""

    blocks: tuple[NewtonResult, ...]
    precond_basis: np.ndarray | None


@attrs.frozen(eq=False)
class StepResult:
    """One block's Newton iteration: the line search along s (α-space, the block's rows) with s̃ = K̃ s,
    the last CG solution β (None without CG), the CG steps taken (None without CG) and the stalls met."""

    line_search: LineSearchResult
    s: np.ndarray
    s_tilde: np.ndarray
    beta: np.ndarray | None = None
    cg_iterations: int | None = None
    stalls: int = 0


class Stepper(Protocol):
    """A solver's state for one fit of F blocks (built by ``NewtonSolver.stepper``)."""

    #: V -> K̃ V, with ``counts`` (MVMs so far per block, (F,)) for the diagnostics
    mvm: Callable[[np.ndarray], np.ndarray]
    #: (F + 1,) the rows of the blocks, None for one block
    offsets: np.ndarray | None
    #: True for truncated (inexact) steps: then a negligible decrease of Φ ends the fit (``phi_rtol``)
    truncated: bool
    #: what the next fit on nearby hyperparameters may start from (``lowrank``: eigensolver subspaces)
    precond_basis: np.ndarray | None

    def step(self, problem: NewtonProblem, point: NewtonPoint, active: np.ndarray) -> dict[int, StepResult]:
        """Each ``active`` block's Newton point at ``point`` (Φ per block) and its line search towards it."""


class NewtonSolver(Protocol):
    """An inner MAP solver: ``NewtonCG(options)`` or ``ExactNewton(options)``."""

    name: str
    options: NewtonOptions

    def plan(self, op: Operator) -> ExecutionPlan:
        """The execution plan of a fit on ``op`` alone."""

    def fit(
        self, op: Operator, likelihood: Likelihood, Y, *, alpha0=None, precond_start=None, on_iteration=None, plan=None
    ) -> NewtonResult:
        """α̂ = argmin Φ by :func:`newton_loop` with this solver's steps, under ``plan`` (None: :meth:`plan`)."""

    def solve_weighted(self, op: Operator, hf, b: np.ndarray, *, x0=None, tol: float, max_iter: int, plan=None):
        """z = (I + W K̃)^{-1} W b for the exact Hessian factor ``hf`` (the CV accumulation solve)."""


def gradient_rms(alpha, g) -> float:
    """Per-point RMS of ∇_u Φ = α + g: sqrt(Σ_i ||α_i + g_i||² / n)."""
    return float(np.linalg.norm(alpha + g) / np.sqrt(alpha.shape[0]))


def project_start(likelihood: Likelihood, alpha0, n: int, C: int, mvm) -> tuple[np.ndarray, np.ndarray]:
    """Alg. 1, step 1: the start α projected onto ran W (``likelihood.project_alpha``) and u = K̃ α.

    ``alpha0`` None starts at α = 0 (u = 0 without an MVM); ``mvm`` applies K̃.  # shape: (n, C) each
    """
    if alpha0 is None:
        alpha = np.zeros((n, C))
    else:
        alpha = np.array(alpha0, dtype=np.float64)
        if alpha.shape != (n, C):
            raise InputError(f"Dimension mismatch: alpha0 must have shape ({n}, {C}); got {alpha.shape}")
        alpha = likelihood.project_alpha(alpha)
    u = mvm(alpha) if np.any(alpha) else np.zeros((n, C))
    return alpha, u


def line_search_step(problem: NewtonProblem, point: NewtonPoint, new_alpha: np.ndarray):
    """Alg. 1, step 3: the pair line search along s = α' − α with s̃ = K̃ s (one MVM, Sec. 5.1.2);
    returns (line search result, s, s̃)."""
    s = new_alpha - point.alpha
    s_tilde = problem.mvm(s)
    opts = problem.options
    ls = pair_line_search(
        problem.likelihood,
        problem.Y,
        point,
        s,
        s_tilde,
        armijo=opts.armijo,
        max_evals=opts.line_search_evals,
        values=problem.line_values,
    )
    return ls, s, s_tilde


def block_line_search(problem: NewtonProblem, point: NewtonPoint, rows: slice, s, s_tilde) -> LineSearchResult:
    """Alg. 1, step 3 for one block: the pair line search at its ``point`` (its rows of α, u, g and its Φ)
    along its rows of s with s̃ = K̃ s (Sec. 5.1.2)."""
    opts = problem.options
    return pair_line_search(
        problem.likelihood,
        problem.Y[rows],
        point,
        s,
        s_tilde,
        armijo=opts.armijo,
        max_evals=opts.line_search_evals,
        values=problem.line_values,
    )


def _small_decrease(phis: list, steps: list, phi_rtol: float) -> bool:
    """The last step was taken and decreased Φ by at most ``phi_rtol`` relative to |Φ| (or 1)."""
    return (
        phi_rtol > 0 and len(steps) >= 1 and steps[-1] > 0 and phis[-2] - phis[-1] <= phi_rtol * max(1.0, abs(phis[-1]))
    )


def stop_rule(grad: float, phis: list, steps: list, phi_rtol: float, it: int, opts) -> tuple[bool, str] | None:
    """Step 2's stopping rules at the current point: (converged, message) when the fit ends here, else None."""
    if grad <= opts.grad_tol:
        return True, "gradient below grad_tol"
    if _small_decrease(phis, steps, phi_rtol):
        return True, "relative decrease of Phi below phi_rtol"
    if it >= opts.max_iter:
        return False, "maximum number of Newton iterations reached"
    return None


def no_decrease(grad: float, grad_tol: float) -> tuple[bool, str]:
    """(converged, message) when the line search finds no decrease at gradient RMS ``grad``: converged
    at round-off level (at most max(grad_tol, ROUNDOFF_GRAD)), else not."""
    if grad <= max(grad_tol, ROUNDOFF_GRAD):
        return True, "no further decrease of Phi (round-off level)"
    return False, (
        f"not converged: the line search found no decrease of Phi along the Newton direction at "
        f"gradient RMS {grad:.3g} > grad_tol {grad_tol:g}"
    )


@attrs.define
class _Trace:
    """One block's traces and state during :func:`newton_loop`."""

    phis: list
    mvms: list
    grads: list = attrs.Factory(list)
    cg_its: list = attrs.Factory(list)
    steps: list = attrs.Factory(list)
    stalls: int = 0
    iterations: int = 0
    beta: np.ndarray | None = None
    stop: tuple | None = None  # (converged, message) once the block's fit has ended

    def advance(self, res: StepResult, mvms: int) -> None:
        """The block's iteration ``res`` into its traces (Φ and α, u are the loop's)."""
        self.iterations += 1
        if res.cg_iterations is not None:
            self.cg_its.append(res.cg_iterations)
        self.stalls += res.stalls
        self.steps.append(res.line_search.step)
        self.beta = res.beta
        self.mvms.append(mvms)

    def diagnostics(self, count: int, seconds: float) -> NewtonDiagnostics:
        converged, message = self.stop
        return NewtonDiagnostics(
            phi=tuple(self.phis),
            grad_norm=tuple(self.grads),
            mvm_trace=tuple(self.mvms),
            cg_iterations=tuple(self.cg_its),
            step_sizes=tuple(self.steps),
            iterations=self.iterations,
            stalls=self.stalls,
            mvm_count=count,
            seconds=seconds,
            converged=converged,
            message=message,
        )


def block_rows(offsets, n: int) -> list[slice]:
    """The rows of each block: ``offsets`` (F + 1,) cut the n rows into F blocks; None is one block."""
    cuts = [0, n] if offsets is None else [int(o) for o in offsets]
    return [slice(a, b) for a, b in zip(cuts[:-1], cuts[1:])]


def block_point(point: NewtonPoint, k: int, rows: slice) -> NewtonPoint:
    """Block ``k``'s part of the loop's ``point`` (Φ per block): its rows of α, u, g and its Φ."""
    return NewtonPoint(point.alpha[rows], point.u[rows], float(point.phi[k]), point.g[rows])


def _start(likelihood: Likelihood, alpha0, n: int, C: int, mvm, rows: list[slice]):
    """Alg. 1, step 1 per block: α0 projected onto ran W and u = K̃ α0 (no product for a block at zero)."""
    if alpha0 is None:
        return np.zeros((n, C)), np.zeros((n, C))
    alpha = project_start(likelihood, alpha0, n, C, lambda A: A)[0]
    started = np.array([bool(np.any(alpha[r])) for r in rows])
    if not started.any():
        return alpha, np.zeros((n, C))
    return alpha, np.array(mvm(alpha) if started.all() else mvm(alpha, started), dtype=np.float64)


def newton_loop(
    problem: NewtonProblem, stepper: Stepper, alpha0=None, *, on_iteration: Callable[[NewtonStep], None] | None = None
) -> BlockFits:
    """Minimise each block's Φ_k from ``alpha0`` (None: α = 0) with ``stepper``'s Newton steps (module
    docstring); the blocks (``problem.offsets``, None: one) advance together, each with its own steps,
    traces and stopping rules, and a block that has stopped sits out the later steps.

    A block's fit ends converged when its gradient RMS is at most ``grad_tol``, or (truncated steps only)
    when its Φ fell by at most ``phi_rtol``; unconverged after k1 iterations; and when its line search
    finds no decrease, converged if its gradient RMS is at most max(grad_tol, ROUNDOFF_GRAD) (round-off
    at the optimum), else not.  ``on_iteration`` needs one block."""
    opts, lik, Y = problem.options, problem.likelihood, problem.Y
    n, C = Y.shape
    rows = block_rows(problem.offsets, n)
    if on_iteration is not None and len(rows) != 1:
        raise InputError(f"on_iteration reports one fit; this one has {len(rows)} blocks")
    t0 = time.perf_counter()
    mvm = stepper.mvm
    alpha, u = _start(lik, alpha0, n, C, mvm, rows)
    phi = np.array([objective(lik, Y[r], alpha[r], u[r]) for r in rows])
    traces = [_Trace([float(phi[k])], [int(c)]) for k, c in enumerate(mvm.counts)]
    phi_rtol = opts.phi_rtol if stepper.truncated else 0.0
    while True:
        g = lik.gradient(u, Y)
        for k, (tr, r) in enumerate(zip(traces, rows)):
            if tr.stop is None:
                tr.grads.append(gradient_rms(alpha[r], g[r]))
                if on_iteration is not None:
                    on_iteration(NewtonStep(tr.iterations, float(phi[k]), tr.grads[-1], int(mvm.counts[k])))
                tr.stop = stop_rule(tr.grads[-1], tr.phis, tr.steps, phi_rtol, tr.iterations, opts)
        active = np.array([tr.stop is None for tr in traces])
        if not active.any():
            break
        results = stepper.step(problem, NewtonPoint(alpha, u, phi, g), active)
        for k in np.flatnonzero(active):
            res, tr, r = results[k], traces[k], rows[k]
            tr.advance(res, int(mvm.counts[k]))
            if res.line_search.success:
                alpha[r] += res.line_search.step * res.s
                u[r] += res.line_search.step * res.s_tilde
                phi[k] = res.line_search.phi
            else:
                tr.grads.append(tr.grads[-1])  # the same point: one entry per entry of ``phi``
                tr.stop = no_decrease(tr.grads[-1], opts.grad_tol)
            tr.phis.append(float(phi[k]))
    seconds = time.perf_counter() - t0
    basis = stepper.precond_basis
    fits = tuple(
        NewtonResult(
            alpha=alpha[r].copy(),
            u=u[r].copy(),
            phi=float(phi[k]),
            beta=tr.beta,
            diagnostics=tr.diagnostics(int(mvm.counts[k]), seconds),
            precond_basis=basis if len(rows) == 1 else None,
        )
        for k, (tr, r) in enumerate(zip(traces, rows))
    )
    return BlockFits(fits, basis)


class SteppedSolver(abc.ABC):
    """The ``fit`` both built-in solvers share: check the inputs, build the solver's :class:`Stepper`
    for this fit and run :func:`newton_loop` with it; a subclass gives ``options`` and ``stepper``."""

    __slots__ = ()
    options: NewtonOptions

    def check(self, op: Operator, likelihood: Likelihood) -> None:
        """Raise :class:`InputError` when this solver cannot fit ``likelihood`` on ``op`` (default: it can)."""
        return None

    @abc.abstractmethod
    def stepper(
        self, op: Operator, precond_start: np.ndarray | None, plan: ExecutionPlan, *, blocks: bool = False
    ) -> Stepper:
        """The solver's state for one fit on ``op`` under ``plan``; ``precond_start``: a previous fit's
        ``precond_basis``; ``blocks``: fit each of ``op.row_blocks`` as its own problem."""

    def plan(self, op: Operator) -> ExecutionPlan:
        """The execution plan of a fit on ``op`` alone (:func:`~gpmodels.inference.execution_plan.plan_for`)."""
        return plan_for(op, preconditioner=self.options.preconditioner, solver=self.name)

    def fit(
        self,
        op: Operator,
        likelihood: Likelihood,
        Y,
        *,
        alpha0=None,
        precond_start=None,
        on_iteration: Callable[[NewtonStep], None] | None = None,
        plan: ExecutionPlan | None = None,
    ) -> NewtonResult:
        """α̂ = argmin Φ by :func:`newton_loop` with this solver's steps from ``alpha0`` (None: 0), under
        ``plan`` (None: :meth:`plan`)."""
        return self._loop(op, likelihood, Y, alpha0, precond_start, on_iteration, plan, blocks=False).blocks[0]

    def fit_blocks(
        self, op: Operator, likelihood: Likelihood, Y, *, alpha0=None, precond_start=None, plan=None
    ) -> BlockFits:
        """Each row block's α̂_k = argmin Φ_k (``op.row_blocks``, e.g. the CV folds' stack; an operator
        without them is one block), the blocks advancing together in :func:`newton_loop` from ``alpha0``
        over all rows (None: 0; a block of zeros starts there cold), under ``plan`` (None: :meth:`plan`)."""
        return self._loop(op, likelihood, Y, alpha0, precond_start, None, plan, blocks=True)

    def _loop(self, op, likelihood, Y, alpha0, precond_start, on_iteration, plan, *, blocks: bool) -> BlockFits:
        self.check(op, likelihood)
        Y = likelihood.check_targets(Y, op.n_points, op.n_classes)
        plan = plan or self.plan(op)
        with plan.blas_context():
            stepper = self.stepper(op, precond_start, plan, blocks=blocks)
            problem = NewtonProblem(
                likelihood, Y, stepper.mvm, self.options, stepper.offsets, plan.line_values(likelihood)
            )
            return newton_loop(problem, stepper, alpha0, on_iteration=on_iteration)
