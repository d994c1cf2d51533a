"""Several folds of one CV evaluation refitted together, in lockstep (Seeger 2008, Sec. 4, 5.2).

The folds' refits are independent: α[J_k] minimises Φ_{J_k}.  On the stacked prior
diag(K̃_{J_1}, ..., K̃_{J_F}) (:meth:`Stacked.restrictions <gpmodels.operators.stacked.Stacked.restrictions>`,
the folds' training points one after the other, every product one product of K̃ with a column per fold)
they run as the blocks of one Newton loop (:meth:`NewtonCG.fit_blocks
<gpmodels.inference.map.newton.SteppedSolver.fit_blocks>`): each fold
keeps its own CG scalars, line-search steps, stall restarts and stopping rules, so its fit is the one
:func:`~gpmodels.inference.cv.fold.evaluate_fold` would make (up to the order of sums), while every step's
product, vector updates and preconditioner cover the F folds in one call.  The folds' accumulation systems
(Sec. 5.2) are solved the same way.

What it buys is fewer, larger calls: where each call has a fixed cost (a GPU's launches and transfers, the
host's Python and BLAS entry for arrays of a few thousand rows) the F folds cost about one fold's calls; with
F (n, C) vectors of 2^16 entries or more, CG moves to the device (the execution plan's ``cg``,
:mod:`gpmodels.inference.execution_plan`).  The ``lowrank`` preconditioners are each
fold's own (:mod:`gpmodels.inference.map.row_blocks`).  No restricted copies of K̃ are made: the folds
are views on it (App. D.2's copies pay for products one fold at a time; here one product serves all), and
so are their held-out blocks K̃_{I_k,J_k} (:meth:`Stacked.cross_restrictions
<gpmodels.operators.stacked.Stacked.cross_restrictions>`: one product for all folds' u[I_k], one for all
accumulation right-hand sides, where F blocks would each be taken out of K̃ and multiplied alone).

Costs are reported per fold: its own products (the ones its fit alone would take), and the fit's seconds
split evenly.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from gpmodels.inference.cv.fold import FoldResult, held_out_errors
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.cv.partition import FoldTask
from gpmodels.inference.map.newton_cg import NewtonCG, solve_weighted_blocks
from gpmodels.likelihoods.base import Likelihood
from gpmodels.operators.base import Operator
from gpmodels.operators.stacked import Stacked

__all__ = ["evaluate_stacked_folds", "stack_rows"]


def stack_rows(parts, rows_each: list[int]) -> np.ndarray | None:
    """The folds' arrays (|J_k|, ...) one after the other, or None when a fold has none or their widths
    differ (the state of another setting: the fit starts afresh)."""
    if any(p is None for p in parts) or len({p.shape[1:] for p in parts}) != 1:
        return None
    if [p.shape[0] for p in parts] != rows_each:
        return None
    return np.concatenate(parts)


def _split(A: np.ndarray, stack: Stacked) -> list[np.ndarray]:
    return [A[stack.part_rows(k)] for k in range(len(stack.parts))]


def _warm_starts(stack: Stacked, tasks, likelihood, Ys, opts: CVOptions):
    """Each fold's start by the warm-start policy (``opts.warm_start``, on its own operator), stacked;
    zeros for a fold without a state.  Returns (α0 or None for all cold, the policy's MVMs per fold,
    the folds' start labels)."""
    starts, mvms = [], []
    for task, op_J, Y_J in zip(tasks, stack.parts, Ys):
        alpha0, extra = (None, 0) if task.alpha0 is None else opts.warm_start(op_J, likelihood, Y_J, task.alpha0)
        starts.append(alpha0)
        mvms.append(extra)
    labels = ["cold" if a is None else "warm" for a in starts]
    if all(a is None for a in starts):
        return None, mvms, labels
    C = stack.n_classes
    return (
        np.concatenate([np.zeros((p.n_points, C)) if a is None else a for a, p in zip(starts, stack.parts)]),
        mvms,
        labels,
    )


def _refit(stack: Stacked, likelihood, Y, tasks, Ys, opts: CVOptions, plan):
    """The folds' refits in lockstep from their warm starts, each fold that did not converge to ``fail_tol``
    retried cold (those folds in lockstep again), as :func:`~gpmodels.inference.cv.fold.evaluate_fold` does
    per fold; returns (each fold's result, MVMs and Newton iterations per fold, start labels, the
    preconditioner's subspaces)."""
    alpha0, extra, labels = _warm_starts(stack, tasks, likelihood, Ys, opts)
    basis0 = stack_rows([t.basis0 for t in tasks], [p.n_points for p in stack.parts])
    res = NewtonCG(opts.newton).fit_blocks(stack, likelihood, Y, alpha0=alpha0, precond_start=basis0, plan=plan)
    fits = list(res.blocks)
    mvms = [f.diagnostics.mvm_count + e for f, e in zip(fits, extra)]
    its = [f.diagnostics.iterations for f in fits]
    failed = [k for k, f in enumerate(fits) if labels[k] == "warm" and not f.diagnostics.grad_norm[-1] <= opts.fail_tol]
    if opts.retry_cold and failed:
        sub = stack.subset(failed)
        start = stack_rows([tasks[k].basis0 for k in failed], [sub_part.n_points for sub_part in sub.parts])
        cold = NewtonCG(opts.newton).fit_blocks(
            sub, likelihood, np.concatenate([Ys[k] for k in failed]), precond_start=start, plan=plan
        )
        for k, c in zip(failed, cold.blocks):
            mvms[k] += c.diagnostics.mvm_count
            its[k] += c.diagnostics.iterations
            labels[k] = "warm+cold"
            if c.diagnostics.grad_norm[-1] < fits[k].diagnostics.grad_norm[-1]:
                fits[k] = c
    return fits, mvms, its, labels, res.precond_basis


def _fold_results(fits, stack: Stacked, held_out, likelihood, Y_Is, refit) -> list[FoldResult]:
    """Each fold's fit α[J_k] with its gradient RMS, and the hold-out Ψ_I, r_I at u[I] = K̃_{I,J} α[J]
    (eq. 3), all folds' u[I] by one product of ``held_out`` = diag(K̃_{I_1,J_1}, ..., K̃_{I_F,J_F})."""
    mvms, its, labels, basis, seconds = refit
    bases = _split(basis, stack) if basis is not None else [None] * len(fits)
    u_Is = np.split(
        held_out.mvm(np.concatenate([fit.alpha for fit in fits])), np.cumsum([y.shape[0] for y in Y_Is])[:-1]
    )
    out = []
    for k, (fit, u_I, Y_I) in enumerate(zip(fits, u_Is, Y_Is)):
        out.append(
            FoldResult(
                alpha=fit.alpha,
                grad_norm=fit.diagnostics.grad_norm[-1],
                newton_iterations=its[k],
                fit_mvms=mvms[k],
                fit_seconds=seconds,
                start=labels[k],
                psi=likelihood.value(u_I, Y_I),
                r_I=likelihood.gradient(u_I, Y_I),
                held_out_errors=held_out_errors(u_I, Y_I),
                basis=bases[k],
            )
        )
    return out


def evaluate_stacked_folds(
    tasks: list[FoldTask], op: Operator, likelihood: Likelihood, Y, opts: CVOptions, gradient: bool, plan
) -> list[FoldResult]:
    """The folds ``tasks`` together (module docstring): stack K̃'s restrictions to each J_k, refit every
    α[J_k] by Newton–CG in lockstep (Sec. 4), hold each fold out (eq. 3) and, with ``gradient``, solve the
    folds' accumulation systems z_k = (I + W K̃_{J_k})^{-1} W K̃_{J_k,I_k} r_{I_k} in lockstep (Sec. 5.2).  A
    pure function of its inputs, like :func:`~gpmodels.inference.cv.fold.evaluate_fold`, with its numbers, under
    the evaluation's execution ``plan``."""
    F = len(tasks)
    t = time.perf_counter()
    stack = Stacked.restrictions(op, [task.J for task in tasks])
    held_out = Stacked.cross_restrictions(op, [task.I for task in tasks], [task.J for task in tasks])
    restrict_s = (time.perf_counter() - t) / F
    Ys, Y_Is = [Y[task.J] for task in tasks], [Y[task.I] for task in tasks]
    Y_stack = np.concatenate(Ys)
    with plan.blas_context():
        t = time.perf_counter()
        fits, *refit = _refit(stack, likelihood, Y_stack, tasks, Ys, opts, plan)
        t_fit = time.perf_counter()
        folds = _fold_results(fits, stack, held_out, likelihood, Y_Is, (*refit, (t_fit - t) / F))
        if gradient:
            u = np.concatenate([f.u for f in fits])
            folds = _accumulate(stack, held_out, likelihood, u, Y_stack, tasks, folds, opts, plan)
        acc_s = (time.perf_counter() - t_fit) / F
    return [attrs.evolve(f, accumulation_seconds=acc_s, restrict_seconds=restrict_s) for f in folds]


def _accumulate(stack: Stacked, held_out, likelihood, u, Y, tasks, folds, opts: CVOptions, plan):
    """The folds' accumulation systems in lockstep on the stack, W the exact Hessian at each refit
    (:func:`~gpmodels.inference.cv.fold.evaluate_fold`'s module docstring); z and β split by fold."""
    hf = likelihood.exact_hessian_factor(u, Y)
    b = held_out.rmvm(np.concatenate([f.r_I for f in folds]))  # K̃_{J_k,I_k} r_{I_k} of every fold
    beta0 = stack_rows([task.beta0 for task in tasks], [p.n_points for p in stack.parts])
    solutions = solve_weighted_blocks(stack, hf, b, x0=beta0, tol=opts.accumulation_tol, max_iter=opts.k3, plan=plan)
    return [
        attrs.evolve(
            f,
            z=sol.z,
            beta=sol.beta,
            accumulation_iterations=sol.iterations,
            accumulation_residual=sol.residual,
            accumulation_mvms=2 + sol.mvms,
        )
        for f, sol in zip(folds, solutions)
    ]
