"""Newton–CG (Seeger 2008, Alg. 1) on independent blocks of points in lockstep: the refits of stacked CV folds.

An operator made of independent operators on separate points (``Operator.row_blocks``, e.g.
:class:`~gpmodels.operators.stacked.Stacked` over the folds' K̃_{J_k}) has Φ(α) = Σ_k Φ_k(α_k).  Fitting it
as one problem would share the CG step lengths, the line-search step and the stopping rules over the
blocks; :func:`lockstep_newton` keeps every block's fit its own instead, each with the iterates of
:class:`~gpmodels.inference.map.newton_cg.NewtonCG` on that block alone:

- one Newton system (5) over all rows (the likelihood is per point, so it is block-diagonal), solved by
  :func:`~gpmodels.linalg.cg.lockstep_cg` with each block's own scalars and forcing test, preconditioned
  per block (:mod:`gpmodels.inference.map.row_blocks`), on the operator's device where
  :func:`~gpmodels.inference.map.newton_cg.device_system` puts it;
- each block's pair line search on its rows (no MVM) with its own λ, stall restarts (Sec. 6.3) of the
  stalled blocks only;
- each block's stopping rules (:func:`~gpmodels.inference.map.newton.newton_loop`'s); a block that has
  stopped sits out the later CG solves.

What the blocks share is the calls: each step's product, vector updates and preconditioner cover every
block at once.  The MVMs of a block are counted as the whole system's (it took part in each of them).
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.inference.map.line_search import NewtonPoint, pair_line_search
from gpmodels.inference.map.newton import (
    NewtonDiagnostics,
    NewtonOptions,
    NewtonResult,
    no_decrease,
    project_start,
    stop_rule,
)
from gpmodels.inference.map.newton_cg import SystemSolution, device_system, is_stall, newton_system, system_matvec
from gpmodels.inference.map.preconditioners import make_preconditioner
from gpmodels.likelihoods.base import HessianFactor, Likelihood
from gpmodels.linalg.counting import MVMCounter
from gpmodels.linalg.lockstep_cg import BlockVectors, LockstepCGResult, lockstep_cg
from gpmodels.operators.base import Operator

__all__ = ["LockstepResult", "lockstep_newton", "lockstep_weighted_solve"]


@attrs.frozen(eq=False)
class LockstepResult:
    """Each block's fit (a :class:`NewtonResult`, in block order) and the preconditioner's subspaces over
    all rows (the next fit's ``precond_start``)."""

    blocks: tuple[NewtonResult, ...]
    precond_basis: np.ndarray | None


@attrs.define
class _Block:
    """One block's traces and state during :func:`lockstep_newton`."""

    rows: slice
    phis: list
    grads: list = attrs.Factory(list)
    mvms: list = attrs.Factory(list)
    cg_its: list = attrs.Factory(list)
    steps: list = attrs.Factory(list)
    stalls: int = 0
    iterations: int = 0
    stop: tuple | None = None  # (converged, message) once the block's fit has ended


def _offsets(op: Operator) -> np.ndarray:
    blocks = op.row_blocks
    if blocks is None:
        raise InputError(f"lockstep Newton–CG needs an operator of independent row blocks; {op!r} declares none")
    return np.array([0] + [rows.stop for rows, _ in blocks])


def _solve(system, vec: BlockVectors, precondition, x0, active, opts: NewtonOptions, forcing: float, alpha_norm: bool):
    """The blocks ``active`` of eq. (5) by lockstep CG, on the device where the system solves there."""
    dev, hf = system.device, system.hf
    settings = dict(tol=opts.cg_tol, forcing=forcing, max_iter=opts.cg_max_iter, active=active)
    if dev is not None and dev.solves:
        be = dev.backend
        res = lockstep_cg(
            dev.matvec,
            be.from_host(system.rhs),
            vec.on(be),
            x0=be.from_host(x0),
            precondition=precondition,
            forcing_map=dev.hf.V if alpha_norm else None,
            **settings,
        )
        return attrs.evolve(res, x=be.to_host(res.x))
    return lockstep_cg(
        system.matvec,
        system.rhs,
        vec,
        x0=x0,
        precondition=precondition,
        forcing_map=hf.V if alpha_norm else None,
        **settings,
    )


def _line_searches(lik, Y, blocks, trying, alpha, u, phi, g, s, s_tilde, opts):
    """Each trying block's pair line search on its rows: {k: result}."""
    out = {}
    for k in np.flatnonzero(trying):
        r = blocks[k].rows
        point = NewtonPoint(alpha[r], u[r], phi[k], g[r])
        out[k] = pair_line_search(
            lik, Y[r], point, s[r], s_tilde[r], armijo=opts.armijo, max_evals=opts.line_search_evals
        )
    return out


def _step(lik, Y, mvm, precond, blocks, active, alpha, u, phi, g, vec, opts):
    """One Newton iteration of the ``active`` blocks (Alg. 1, steps 2-3, with the stall restarts of
    :func:`~gpmodels.inference.map.newton_cg.newton_step_with_restarts` per block): {k: (line search, s, s̃)}
    of each block's best attempt (else its last), its CG steps and stalls, and the last β."""
    hf = lik.hessian_factor(u, Y)
    system = newton_system(hf, mvm, u, g)
    dev = system.device
    if dev is not None and dev.solves:
        precondition = precond.for_device(hf, dev.hf, dev.backend)
    else:
        precondition = precond.for_factor(hf, None if dev is None else dev.backend)
    x0, forcing, trying = hf.beta_init(alpha), opts.cg_forcing, active.copy()
    best, cg_its, stalls = {}, np.zeros(len(blocks), dtype=np.intp), np.zeros(len(blocks), dtype=np.intp)
    for _ in range(opts.max_stall_restarts + 1):
        res = _solve(system, vec, precondition, x0, trying, opts, forcing, precond.forcing_in_alpha_space)
        cg_its += res.iterations
        new_alpha = hf.V(res.x)
        if hf.fixed_alpha is not None:
            new_alpha += hf.fixed_alpha
        s = new_alpha - alpha
        s_tilde = mvm(s)
        for k, ls in _line_searches(lik, Y, blocks, trying, alpha, u, phi, g, s, s_tilde, opts).items():
            r = blocks[k].rows
            if k not in best or (ls.success and (not best[k][0].success or ls.phi < best[k][0].phi)):
                best[k] = (ls, s[r], s_tilde[r])
            stalled = is_stall(ls, phi[k], opts.phi_rtol, opts.stall_step)
            exact = bool(res.converged[k]) and res.residual[k] <= opts.cg_tol  # the stall is round-off
            stalls[k] += stalled
            trying[k] = stalled and not exact
        if not trying.any():
            break
        x0, forcing = res.x, 0.0  # restart the stalled blocks' CG from their last β (footnote 17)
    return best, cg_its, stalls, res.x


def _diagnostics(b: _Block, count: int, seconds: float) -> NewtonDiagnostics:
    converged, message = b.stop
    return NewtonDiagnostics(
        phi=tuple(b.phis),
        grad_norm=tuple(b.grads),
        mvm_trace=tuple(b.mvms),
        cg_iterations=tuple(b.cg_its),
        step_sizes=tuple(b.steps),
        iterations=b.iterations,
        stalls=b.stalls,
        mvm_count=count,
        seconds=seconds,
        converged=converged,
        message=message,
    )


def lockstep_newton(
    op: Operator,
    likelihood: Likelihood,
    Y,
    options: NewtonOptions | None = None,
    *,
    alpha0=None,
    precond_start: np.ndarray | None = None,
) -> LockstepResult:
    """Each row block's MAP fit α̂_k = argmin Φ_k by Newton–CG, the blocks in lockstep (module docstring);
    ``alpha0``: the start over all rows (None: α = 0; a block of zeros starts there cold)."""
    opts = options or NewtonOptions()
    t0 = time.perf_counter()
    Y = likelihood.check_targets(Y, op.n_points, op.n_classes)
    offsets = _offsets(op)
    vec = BlockVectors(offsets)
    mvm = MVMCounter(op)
    precond = make_preconditioner(
        opts.preconditioner, op, rank=opts.precond_rank, seed=int(opts.precond_seed), start=precond_start
    )
    alpha, u = project_start(likelihood, alpha0, op.n_points, op.n_classes, mvm)
    blocks = [_Block(slice(int(a), int(b)), []) for a, b in zip(offsets[:-1], offsets[1:])]
    phi = 0.5 * vec.dots(alpha, u) + np.array([likelihood.value(u[b.rows], Y[b.rows]) for b in blocks])
    for k, b in enumerate(blocks):
        b.phis.append(float(phi[k]))
        b.mvms.append(mvm.count)
    beta = None
    while True:
        g = likelihood.gradient(u, Y)
        grads = vec.norms(alpha + g) / np.sqrt(np.maximum(vec.sizes, 1))
        for k, b in enumerate(blocks):
            if b.stop is None:
                b.grads.append(float(grads[k]))
                b.stop = stop_rule(float(grads[k]), b.phis, b.steps, opts.phi_rtol, b.iterations, opts)
        active = np.array([b.stop is None for b in blocks])
        if not active.any():
            break
        best, cg_its, stalls, beta = _step(likelihood, Y, mvm, precond, blocks, active, alpha, u, phi, g, vec, opts)
        for k in np.flatnonzero(active):
            b, (ls, s, s_tilde) = blocks[k], best[k]
            b.iterations += 1
            b.cg_its.append(int(cg_its[k]))
            b.stalls += int(stalls[k])
            b.steps.append(ls.step)
            if ls.success:
                alpha[b.rows] += ls.step * s
                u[b.rows] += ls.step * s_tilde
                phi[k] = ls.phi
            b.phis.append(float(phi[k]))
            b.mvms.append(mvm.count)
            if not ls.success:
                b.grads.append(b.grads[-1])  # the same point: one entry per entry of ``phi``
                b.stop = no_decrease(b.grads[-1], opts.grad_tol)
    seconds = time.perf_counter() - t0
    results = tuple(
        NewtonResult(
            alpha=alpha[b.rows].copy(),
            u=u[b.rows].copy(),
            phi=float(phi[k]),
            beta=None if beta is None else beta[b.rows].copy(),
            diagnostics=_diagnostics(b, mvm.count, seconds),
        )
        for k, b in enumerate(blocks)
    )
    return LockstepResult(results, precond.basis)


def lockstep_weighted_solve(
    op: Operator, hf: HessianFactor, b: np.ndarray, *, x0=None, tol: float, max_iter: int
) -> tuple[SystemSolution, LockstepCGResult]:
    """Each row block's z_k = (I + W K̃_k)^{-1} W b_k (Seeger 2008, Sec. 5.2: the CV accumulation solves), as
    :func:`~gpmodels.inference.map.newton_cg.solve_weighted_system` per block, the blocks in lockstep: one
    CG over all rows with each block's scalars and stopping test, the App. B diagonal preconditioner, on the
    operator's device where it solves there.  Returns the whole solution (its ``iterations`` and
    ``residual`` the largest over the blocks) and the per-block CG result."""
    K = MVMCounter(op)
    vec = BlockVectors(_offsets(op))
    rhs = hf.Vt(b)
    inv_diag = 1.0 / hf.precond_diag(op.diag(), op.point_block_mvm)
    dev = device_system(hf, K)
    settings = dict(tol=tol, max_iter=max_iter)
    if dev is not None and dev.solves:
        be = dev.backend
        start = None if x0 is None else be.from_host(x0)
        res = lockstep_cg(
            dev.matvec,
            be.from_host(rhs),
            vec.on(be),
            x0=start,
            inv_diag=be.from_host(inv_diag),
            **settings,
        )
        res = attrs.evolve(res, x=be.to_host(res.x))
    else:
        matvec = system_matvec(hf, K, rhs.shape, dev)
        res = lockstep_cg(matvec, rhs, vec, x0=x0, inv_diag=inv_diag, **settings)
    whole = SystemSolution(hf.V(res.x), res.x, int(res.iterations.max()), float(res.residual.max()), K.count)
    return whole, res
