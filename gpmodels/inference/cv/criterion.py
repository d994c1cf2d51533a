"""The cross-validation criterion Ψ and its gradient ∇Ψ (Seeger 2008, Sec. 4, 5.2, App. C, D.2).

A fixed partition {I_k} of the n training points into q folds, J_k = {1..n} \\ I_k.  For every
fold the dual vector α[J] (independent per fold, not part of a common α) minimises the criterion
Φ_J of the training subset J, and Ψ is the held-out negative log likelihood:

    Ψ = Σ_k Ψ_{I_k},   Ψ_I = -y_I^T u[I] + 1^T l[I],   u[I] = K̃_{I,J} α[J]        (eq. 3)

Gradient (Sec. 5.2).  With r_I = π[I] - y_I and V[J] the Hessian factor at α[J] (W[J] = V V^T),

    f = I_{·,I} r_I - I_{·,J} V[J] (I + V[J]^T K̃_J V[J])^{-1} V[J]^T K̃_{J,I} r_I,
    e = I_{·,J} α[J],         dΨ_I = e^T (dK̃) f,

so that with E, F collecting e_k, f_k as columns (shape (n, C, q))

    dΨ = tr E^T (dK̃) F                                                          (eq. 6)

which is ``op.grad_trace(E, F)``: the per-fold work ("accumulation": the refit of α[J] and one
more symmetric solve) is independent of the number of hyperparameters.

Per evaluation the caller builds the operator at the new hyperparameters once (``with_params``);
here every fold restricts it once (``op.restrict(J)``: a contiguous re-layout, App. D.2
"covariance shuffling", never index-mapped per MVM) and takes the rectangular block K̃_{I,J}
(``op.cross``; K̃_{J,I} is its transpose, ``rmvm``).  All of it is generic over the operator protocol: flat,
hierarchical (ANOVA) and coupled priors only differ in their operators.

The folds are independent jobs (:mod:`gpmodels.inference.cv.fold`, the partition in
:mod:`gpmodels.inference.cv.partition`), run by an engine and taken in fold order here by the
accumulation of Ψ, E, F; settings in :mod:`gpmodels.inference.cv.options`, the inner state in
:mod:`gpmodels.inference.cv.state`, warm starts in :mod:`gpmodels.inference.cv.warm_start`.

An evaluation *fails* when its inner fits did not converge: the mean over folds of the final
per-point RMS of ∇_u Φ_J (= α[J] + g[J]) is above ``fail_tol`` (Sec. 4).  A failed evaluation has
no gradient; the outer optimiser treats it as a right bracket and discards its inner state.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from gpmodels.engine.base import Engine, LocalEngine, Workload
from gpmodels.errors import InputError
from gpmodels.inference.cv.fold import FoldResult
from gpmodels.inference.cv.jobs import FoldContext, fold_workload, run_folds
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.cv.partition import FoldTask, check_partition, fold_tasks
from gpmodels.inference.cv.state import CVState
from gpmodels.inference.execution_plan import ExecutionPlan, plan_for
from gpmodels.inference.map.exact_newton import ExactNewton
from gpmodels.likelihoods.base import Likelihood
from gpmodels.operators.base import Operator

__all__ = ["CVEvaluation", "cv_criterion", "criterion_on", "cv_plan", "planned"]


@attrs.frozen(eq=False)
class CVEvaluation:
    """Ψ, ∇Ψ (None when failed or not asked for), the new inner state and diagnostics."""

    psi: float
    gradient: np.ndarray | None
    state: CVState | None
    ok: bool
    mean_grad_norm: float
    folds: tuple
    seconds: float
    grad_trace_seconds: float
    message: str
    solver: str = "newton-cg"  # the refits' solver (``auto`` resolved)
    folds_per_fit: int = 1  # folds refitted together (``auto`` resolved; 1 for ``exact``)
    plan: ExecutionPlan | None = None  # where and how the folds ran, and why

    @property
    def mvm_count(self) -> int:
        """Kernel MVMs of the accumulation phase (fits, cross blocks, accumulation solves)."""
        return int(sum(f.fit_mvms + f.accumulation_mvms for f in self.folds))

    def summary(self) -> dict:
        """JSON-friendly scalars."""
        f = self.folds
        return {
            "psi": float(self.psi),
            "ok": bool(self.ok),
            "mean_grad_norm": float(self.mean_grad_norm),
            "mvms": self.mvm_count,
            "newton_iterations": int(sum(x.newton_iterations for x in f)),
            "accumulation_iterations": int(sum(x.accumulation_iterations for x in f)),
            "fit_seconds": float(sum(x.fit_seconds for x in f)),
            "accumulation_seconds": float(sum(x.accumulation_seconds for x in f)),
            "restrict_seconds": float(sum(x.restrict_seconds for x in f)),
            "grad_trace_seconds": float(self.grad_trace_seconds),
            "seconds": float(self.seconds),
            "folds_per_fit": int(self.folds_per_fit),
            "warm_starts": sum(x.start == "warm" for x in f),
            "cold_retries": sum(x.start == "warm+cold" for x in f),
            "held_out_errors": int(sum(x.held_out_errors for x in f)) if all(x.held_out_errors >= 0 for x in f) else -1,
        }


def _new_state(alphas, betas, bases) -> CVState:
    def kept(arrays):
        return None if any(b is None for b in arrays) else tuple(arrays)

    return CVState(tuple(alphas), kept(betas), kept(bases))


def _check_call(op: Operator, folds, opts: CVOptions, state: CVState | None) -> tuple[np.ndarray, ...]:
    """The validated partition; the state must have one α per fold, App. C a flat prior."""
    folds = check_partition(folds, op.n_points)
    q = len(folds)
    if state is not None and (not isinstance(state, CVState) or len(state.alphas) != q):
        raise InputError(
            f"state must be a CVState with one α per fold ({q}); got "
            f"{len(state.alphas) if isinstance(state, CVState) else type(state).__name__}"
        )
    if opts.solver == ExactNewton.name and not op.is_class_diagonal:
        raise InputError(
            "the exact CV criterion (App. C) needs a block-diagonal (flat) prior; use the solver 'newton-cg'"
        )
    return folds


@attrs.define
class _Accumulator:
    """Ψ, the inner state and E, F of eq. (6) over the folds, with the failure rules of Sec. 4."""

    q: int
    opts: CVOptions
    E: np.ndarray | None
    F: np.ndarray | None
    psi: float = 0.0
    norm_sum: float = 0.0
    alphas: list = attrs.field(factory=list)
    betas: list = attrs.field(factory=list)
    bases: list = attrs.field(factory=list)
    diags: list = attrs.field(factory=list)
    ok: bool = True
    message: str = "ok"

    def add(self, task: FoldTask, fold: FoldResult) -> bool:
        """Take fold k (in fold order); False when the evaluation has failed (stop)."""
        opts, k, I, J = self.opts, task.k, task.I, task.J
        self.diags.append(fold.diagnostics())
        self.norm_sum += fold.grad_norm if np.isfinite(fold.grad_norm) else np.inf
        self.psi += fold.psi
        self.alphas.append(fold.alpha)
        self.betas.append(fold.beta)
        self.bases.append(fold.basis)
        if not (np.isfinite(fold.psi) and np.all(np.isfinite(fold.alpha))):
            return self.fail(f"fold {k}: non-finite inner fit")
        if opts.abort_on_failure and self.norm_sum > self.q * opts.fail_tol:
            return self.fail(
                f"inner fits did not converge: after fold {k} the mean gradient RMS over {self.q} "
                f"folds is already above fail_tol {opts.fail_tol:g}"
            )
        if self.E is not None:
            self.E[J, :, k] = fold.alpha  # e = I_{·,J} α[J]
            self.F[I, :, k] = fold.r_I  # f = I_{·,I} r_I - I_{·,J} z
            self.F[J, :, k] = -fold.z
        return True

    def fail(self, message: str) -> bool:
        self.ok, self.message = False, message
        return False

    def mean_norm(self) -> float:
        """Mean final gradient RMS over the folds (inf when not every fold ran); fails the evaluation when
        above ``fail_tol``."""
        mean = self.norm_sum / self.q if len(self.diags) == self.q else np.inf
        if self.ok and not mean <= self.opts.fail_tol:
            self.fail(
                f"inner fits did not converge: mean gradient RMS {mean:.3g} over folds > fail_tol "
                f"{self.opts.fail_tol:g}"
            )
        return mean


def _take(acc: _Accumulator, group, outcomes) -> bool:
    """One job's folds into ``acc`` in fold order; False when the evaluation has failed (stop)."""
    for task, (fold, err) in zip(group, outcomes):
        if err is not None:
            return acc.fail(f"fold {task.k}: {err}")
        if not acc.add(task, fold):
            return False
    return True


def cv_criterion(
    op: Operator,
    likelihood: Likelihood,
    Y,
    folds,
    options: CVOptions | None = None,
    *,
    state: CVState | None = None,
    gradient: bool = True,
    engine: Engine | None = None,
) -> CVEvaluation:
    """Ψ (eq. 3) and ∇Ψ = op.grad_trace(E, F) (eq. 6) at the operator's hyperparameters.

    ``op``: the full operator K̃ at the hyperparameters to evaluate (build it once per evaluation
    with ``with_params``).  ``Y``: targets, shape (n, C).  ``folds``: the fixed partition, q index
    arrays.  ``state``: the inner state to warm-start from (α[J_k] of the last successful
    evaluation), or None for α = 0.  Returns ``ok=False`` (and no gradient) when the inner fits
    did not converge to ``options.fail_tol``; ``state`` is then None (discarded).

    ``engine`` (:mod:`gpmodels.engine`; None: this process, one fold after the other): where the
    folds run, each as an independent job; the results are taken in fold order, so Ψ and ∇Ψ do not
    depend on it.  A learning run evaluates through :func:`criterion_on` with one
    :class:`FoldContext` for all its evaluations, so that a worker gets the shared state once.
    """
    Y = likelihood.check_targets(Y, op.n_points, op.n_classes)
    return criterion_on(
        FoldContext(op, likelihood, Y), op, folds, options, state=state, gradient=gradient, engine=engine
    )


def criterion_on(
    context: FoldContext,
    op: Operator,
    folds,
    options: CVOptions | None = None,
    *,
    state: CVState | None = None,
    gradient: bool = True,
    engine: Engine | None = None,
) -> CVEvaluation:
    """:func:`cv_criterion` with the fold jobs' shared state ``context`` (its likelihood and checked
    targets); ``op`` is the operator at the evaluated θ, built by ``context.base.with_params(θ)``."""
    opts = options or CVOptions()
    t_start = time.perf_counter()
    n, C = op.n_points, op.n_classes
    folds = _check_call(op, folds, opts, state)
    q = len(folds)
    plan, opts = planned(op, context.likelihood, folds, opts)
    acc = _Accumulator(q, opts, np.zeros((n, C, q)) if gradient else None, np.zeros((n, C, q)) if gradient else None)
    tasks = fold_tasks(folds, n, C, state)
    theta = np.array(op.params, dtype=np.float64)
    context.prime(theta, op)
    engine = engine or LocalEngine()
    jobs = opts.fold_jobs(tasks)
    workload = Workload(len(jobs))
    if engine.workers_for(workload) > 1:
        workload = fold_workload(op, len(jobs), len(jobs[0]), plan.compiled)
    plan = plan.with_workers(*engine.worker_plan(workload))
    results = engine.imap_shared(run_folds, context, [(group, theta, opts, plan, gradient) for group in jobs], workload)
    for group in jobs:
        if not _take(acc, group, next(results)):
            break
    results.close()  # a stopped evaluation leaves the remaining folds undone (or cancelled)
    mean_norm = acc.mean_norm()
    grad, gt_s = None, 0.0
    if acc.ok and gradient:
        t = time.perf_counter()
        grad = op.grad_trace(acc.E, acc.F)  # Seeger 2008, eq. (6): dΨ = tr E^T (dK̃) F
        gt_s = time.perf_counter() - t
        if not np.all(np.isfinite(grad)):
            grad = None
            acc.fail("non-finite gradient")
    ok = acc.ok
    return CVEvaluation(
        psi=float(acc.psi) if ok else float("nan"),
        gradient=grad,
        state=_new_state(acc.alphas, acc.betas, acc.bases) if ok else None,
        ok=ok,
        mean_grad_norm=float(mean_norm),
        folds=tuple(acc.diags),
        seconds=time.perf_counter() - t_start,
        grad_trace_seconds=gt_s,
        message=acc.message,
        solver=opts.solver,
        folds_per_fit=len(jobs[0]),
        plan=plan,
    )


def planned(op: Operator, likelihood: Likelihood, folds, opts: CVOptions) -> tuple[ExecutionPlan, CVOptions]:
    """(:func:`cv_plan`, ``opts`` with its ``auto`` solver and folds per fit resolved by that plan)."""
    plan = cv_plan(op, likelihood, folds, opts)
    return plan, attrs.evolve(opts, solver=plan.solver.choice, folds_per_fit=plan.folds_per_fit.choice)


def cv_plan(op: Operator, likelihood: Likelihood, folds, opts: CVOptions) -> ExecutionPlan:
    """The execution plan of one Ψ evaluation on ``op`` over ``folds``: the refits' solver and how many
    folds each fit takes (``auto`` resolved), where CG runs and the preconditioner, for fits of the largest
    fold's |J| points (:func:`~gpmodels.inference.execution_plan.plan_for`)."""
    return plan_for(
        op,
        fit_points=op.n_points - min(len(I) for I in folds),
        folds=len(folds),
        exact_applies=ExactNewton.supports(op, likelihood),
        preconditioner=opts.newton.preconditioner,
        solver=opts.solver,
        folds_per_fit=opts.folds_per_fit,
    )
