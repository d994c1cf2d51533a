"""One fold of the CV criterion as an independent job: restrict, refit α[J], hold out, accumulate
(Seeger 2008, Sec. 4, 5.2, App. C, D.2).

Inner solves, by the solver ``CVOptions.solver`` names (:mod:`gpmodels.inference.map.solvers`), which
both refits α[J] and solves the accumulation system z = (I + W K̃_J)^{-1} W K̃_{J,I} r_I
(``solve_weighted``; V (I + V^T K̃ V)^{-1} V^T = (I + W K̃)^{-1} W):
- ``newton-cg``: Newton–CG (Alg. 1) warm-started from the previous α[J] (the inner
  state), then the accumulation system (I + V^T K̃_J V) β = V^T K̃_{J,I} r_I by preconditioned CG
  with at most k3 steps, started from the fold's previous solution β (kept in the inner state
  next to α[J]; it changes little between neighbouring hyperparameters).
- ``auto``: ``exact`` on small flat problems (|J| C <= the plan's ``exact_max_size``, measured), else
  ``newton-cg`` (:mod:`gpmodels.inference.execution_plan`).
- ``exact`` (flat priors only, App. C): exact Newton per fold and the accumulation solve by
  Cholesky factors and Woodbury.  The test reference.

App. B and the accumulation solve: the Hessian factor of the softmax fixes components
(i, c) with log π_ic < κ, y_ic > 0 because the Newton right-hand side contains
g̃ = D^{-1/2} g, which explodes there.  The accumulation system has no g̃: its right-hand side is
V^T K̃_{J,I} r_I, bounded for any π.  Masking those components out of V would drop A D_I A^T from
W (an O(e^κ) error of the gradient), so the accumulation solve uses the likelihood's
``exact_hessian_factor`` (nothing fixed, W = V V^T exactly; for factorised likelihoods the true
second derivative, not a majoriser); ``fixed_alpha`` belongs to the Newton step only.

Folds are independent: :func:`evaluate_fold` is a pure function ``FoldTask -> FoldResult``, run as a
job of an engine (:mod:`gpmodels.inference.cv.jobs`).
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.cv.partition import FoldTask
from gpmodels.inference.execution_plan import ExecutionPlan
from gpmodels.inference.map.newton import NewtonSolver
from gpmodels.inference.map.solvers import make_solver
from gpmodels.likelihoods.base import Likelihood
from gpmodels.operators.base import Operator

__all__ = ["FoldProblem", "FoldDiagnostics", "FoldResult", "evaluate_fold", "held_out_errors"]


@attrs.frozen(eq=False)
class FoldProblem:
    """The operators and targets of one fold: K̃_J (restricted), the cross block K̃_{I,J} (its
    transpose K̃_{J,I} by ``rmvm``), the likelihood, the targets Y_J, Y_I and the execution plan of its fits."""

    op_J: Operator
    cross_IJ: Operator
    likelihood: Likelihood
    Y_J: np.ndarray
    Y_I: np.ndarray
    plan: ExecutionPlan


def _refit(solver: NewtonSolver, fp: FoldProblem, task, opts: CVOptions):
    """The fold's refit with the warm-start policy from the task's α[J] (and, for Newton–CG, its
    preconditioner subspaces); returns (result, MVMs, Newton iterations, start)."""
    op_J, lik, Y_J = fp.op_J, fp.likelihood, fp.Y_J
    alpha0, extra, start = task.alpha0, 0, "cold"
    if alpha0 is not None:
        alpha0, extra = opts.warm_start(op_J, lik, Y_J, alpha0)
    if alpha0 is not None:
        start = "warm"
    res = solver.fit(op_J, lik, Y_J, alpha0=alpha0, precond_start=task.basis0, plan=fp.plan)
    mvms, its = res.diagnostics.mvm_count + extra, res.diagnostics.iterations
    if alpha0 is not None and opts.retry_cold and not res.diagnostics.grad_norm[-1] <= opts.fail_tol:
        cold = solver.fit(op_J, lik, Y_J, precond_start=task.basis0, plan=fp.plan)
        mvms += cold.diagnostics.mvm_count
        its += cold.diagnostics.iterations
        start = "warm+cold"
        if cold.diagnostics.grad_norm[-1] < res.diagnostics.grad_norm[-1]:
            res = cold
    return res, mvms, its, start


@attrs.frozen
class FoldDiagnostics:
    """What one fold cost and how well its inner fit converged."""

    psi: float
    grad_norm: float  # final per-point RMS of ∇_u Φ_J
    newton_iterations: int
    fit_mvms: int
    accumulation_iterations: int
    accumulation_residual: float
    accumulation_mvms: int
    fit_seconds: float
    accumulation_seconds: float
    restrict_seconds: float
    start: str = "cold"  # where the refit started: "warm", "cold" or "warm+cold" (retried)
    held_out_errors: int = -1  # misclassified held-out points of the fold (-1: single-latent likelihood)


@attrs.frozen(eq=False)
class FoldResult:
    """One fold's inner fit (α[J], Seeger 2008 Sec. 4), held-out part (Ψ_I, r_I = ∇_u Φ_lh at u[I],
    eq. 3) and accumulation vector z of f = I_{·,I} r_I - I_{·,J} z (Sec. 5.2), with their costs."""

    alpha: np.ndarray
    grad_norm: float
    newton_iterations: int
    fit_mvms: int
    fit_seconds: float
    start: str
    psi: float
    r_I: np.ndarray
    z: np.ndarray | None = None
    beta: np.ndarray | None = None  # the accumulation CG solution (warm start of the next evaluation)
    accumulation_iterations: int = 0
    accumulation_residual: float = 0.0
    accumulation_mvms: int = 1
    accumulation_seconds: float = 0.0
    restrict_seconds: float = 0.0
    held_out_errors: int = -1  # misclassified held-out points (-1: not defined for this likelihood)
    basis: np.ndarray | None = None  # the refit's preconditioner subspaces (start of the next evaluation's)

    def diagnostics(self) -> FoldDiagnostics:
        return FoldDiagnostics(
            psi=float(self.psi),
            grad_norm=float(self.grad_norm),
            newton_iterations=int(self.newton_iterations),
            fit_mvms=int(self.fit_mvms),
            accumulation_iterations=int(self.accumulation_iterations),
            accumulation_residual=float(self.accumulation_residual),
            accumulation_mvms=int(self.accumulation_mvms),
            fit_seconds=float(self.fit_seconds),
            accumulation_seconds=float(self.accumulation_seconds),
            restrict_seconds=float(self.restrict_seconds),
            held_out_errors=int(self.held_out_errors),
            start=self.start,
        )


def held_out_errors(u_I, Y_I) -> int:
    """Held-out points whose largest latent is not their target's largest entry (C >= 2; the
    misclassifications of the fold's MAP predictor), -1 for single-latent likelihoods."""
    if u_I.ndim != 2 or u_I.shape[1] < 2:
        return -1
    return int(np.count_nonzero(np.argmax(u_I, axis=1) != np.argmax(Y_I, axis=1)))


def _fit_and_hold_out(solver: NewtonSolver, fp: FoldProblem, task, opts: CVOptions):
    """The fold's refit of α[J], then Ψ_I = Φ_lh(u[I]) and r_I at u[I] = K̃_{I,J} α[J] (eq. 3);
    returns (Newton result, FoldResult without the accumulation, time at the end of the fit)."""
    t = time.perf_counter()
    res, mvms, its, start = _refit(solver, fp, task, opts)
    t_fit = time.perf_counter()
    lik = fp.likelihood
    u_I = fp.cross_IJ.mvm(res.alpha)  # Seeger 2008, eq. (3): u[I] = K̃_{I,J} α[J]
    fold = FoldResult(
        alpha=res.alpha,
        grad_norm=res.diagnostics.grad_norm[-1],
        newton_iterations=its,
        fit_mvms=mvms,
        fit_seconds=t_fit - t,
        start=start,
        psi=lik.value(u_I, fp.Y_I),
        r_I=lik.gradient(u_I, fp.Y_I),
        held_out_errors=held_out_errors(u_I, fp.Y_I),
        basis=res.precond_basis,
    )  # r_I = π[I] - y_I for the softmax
    return res, fold, t_fit


def _fold(solver: NewtonSolver, fp: FoldProblem, task, opts: CVOptions, gradient: bool) -> FoldResult:
    """Fit α[J] with ``solver``, then Ψ_I and (optionally) the accumulation vector
    z = (I + W K̃_J)^{-1} W K̃_{J,I} r_I = V (I + V^T K̃_J V)^{-1} V^T K̃_{J,I} r_I (Sec. 5.2), by the
    solver's ``solve_weighted`` (CG from the fold's last β with k3 steps, or App. C's Cholesky and
    Woodbury), W the likelihood's *exact* Hessian at α[J] (module docstring)."""
    res, fold, t = _fit_and_hold_out(solver, fp, task, opts)
    if not gradient:
        return attrs.evolve(fold, accumulation_seconds=time.perf_counter() - t)
    hf = fp.likelihood.exact_hessian_factor(res.u, fp.Y_J)  # W = V V^T exactly: no App. B set in this solve
    b = fp.cross_IJ.rmvm(fold.r_I)  # K̃_{J,I} r_I, K̃_{J,I} = K̃_{I,J}^T
    sol = solver.solve_weighted(
        fp.op_J, hf, b, x0=task.beta0, tol=opts.accumulation_tol, max_iter=opts.k3, plan=fp.plan
    )
    return attrs.evolve(
        fold,
        z=sol.z,
        beta=sol.beta,
        accumulation_iterations=sol.iterations,
        accumulation_residual=sol.residual,
        accumulation_mvms=2 + sol.mvms,
        accumulation_seconds=time.perf_counter() - t,
    )


def evaluate_fold(
    task: FoldTask, op: Operator, likelihood: Likelihood, Y, opts: CVOptions, gradient: bool, plan: ExecutionPlan
) -> FoldResult:
    """All the work of one fold, a pure function of its inputs: restrict K̃ to J once (contiguous
    copy, App. D.2) and take the cross blocks, refit α[J] (Sec. 4), hold out (eq. 3) and, with
    ``gradient``, solve the accumulation system (Sec. 5.2).  It reads nothing of other folds, so
    the folds may run in any order or at once (:func:`~gpmodels.inference.cv.jobs.run_folds` on an engine).
    ``plan``: the evaluation's execution plan (:func:`~gpmodels.inference.cv.criterion.cv_plan`)."""
    I, J = task.I, task.J
    t = time.perf_counter()
    op_J = op.restrict(J)
    cross_IJ = op.cross(I, J)  # its transpose is K̃_{J,I} (rmvm): one copy per fold, not two
    restrict_s = time.perf_counter() - t
    solver = make_solver(opts.solver, opts.newton)
    with plan.blas_context():
        fold = _fold(solver, FoldProblem(op_J, cross_IJ, likelihood, Y[J], Y[I], plan), task, opts, gradient)
    return attrs.evolve(fold, restrict_seconds=restrict_s)
