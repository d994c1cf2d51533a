"""Newton–CG (Seeger 2008, Alg. 1) on independent blocks of points in lockstep: the refits of stacked CV folds.

An operator made of independent operators on separate points (``Operator.row_blocks``, e.g.
:class:`~gpmodels.operators.stacked.Stacked` over the folds' K̃_{J_k}) has Φ(α) = Σ_k Φ_k(α_k).  Fitting it
as one problem would share the CG step lengths, the line-search step and the stopping rules over the
blocks; :func:`lockstep_newton` keeps every block's fit its own instead, each with the iterates of
:class:`~gpmodels.inference.map.newton_cg.NewtonCG` on that block alone:

- one Newton system (5) over all rows (the likelihood is per point, so it is block-diagonal), solved by
  :func:`~gpmodels.linalg.cg.cg` on the row blocks (``Systems(offsets)``) with each block's own scalars and
  forcing test, preconditioned per block (:mod:`gpmodels.inference.map.row_blocks`), on the operator's device where
  :func:`~gpmodels.inference.map.newton_cg.device_system` puts it;
- each block's pair line search on its rows (no MVM) with its own λ, stall restarts (Sec. 6.3) of the
  stalled blocks only;
- each block's stopping rules (:func:`~gpmodels.inference.map.newton.newton_loop`'s); a block that has
  stopped sits out the later CG solves.

What the blocks share is the calls: each step's vector updates and preconditioner cover every block at
once, and its product (:class:`BlockProducts`, ``Operator.row_blocks_mvm``) the blocks still solving: for
restrictions of one operator one product of it with a column per block
(:meth:`~gpmodels.operators.stacked.Stacked.restrictions`), else one product per block.  A block's
products are its own (counted per block): the ones its fit alone would take.
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
from gpmodels.inference.map.newton_cg import SystemSolution, device_cg, device_system, is_stall, newton_rhs
from gpmodels.inference.map.preconditioners import make_preconditioner
from gpmodels.likelihoods.base import HessianFactor, Likelihood
from gpmodels.linalg.cg import HOST_VECTORS, CGResult, Systems, cg
from gpmodels.linalg.counting import MVMCounter
from gpmodels.operators.base import Operator

__all__ = ["BlockProducts", "LockstepResult", "lockstep_newton", "lockstep_weighted_solve"]


class BlockProducts:
    """K̃ X on the row blocks ``on`` of an operator of independent blocks (``op.row_blocks``), zero on the
    others, each block's products counted (``counts``): on host arrays (through the operator's device in one
    transfer each way where it has one) and, by :meth:`device`, on that device's arrays."""

    def __init__(self, op: Operator):
        blocks = op.row_blocks
        if blocks is None:
            raise InputError(f"lockstep Newton–CG needs an operator of independent row blocks; {op!r} declares none")
        self.op, self.blocks, self.backend = op, blocks, op.device_backend
        self.offsets = np.array([0] + [rows.stop for rows, _ in blocks])
        self.counts = np.zeros(len(blocks), dtype=np.intp)

    def _on(self, on) -> np.ndarray:
        return np.ones(len(self.blocks), dtype=bool) if on is None else np.asarray(on, dtype=bool)

    def __call__(self, X: np.ndarray, on=None) -> np.ndarray:
        on = self._on(on)
        if self.backend is not None:
            return self.backend.to_host(self.device(self.backend.from_host(X), on))
        self.counts += on
        return self.op.row_blocks_mvm(X, on)

    def device(self, Xd, on=None):
        on = self._on(on)
        self.counts += on
        return self.op.device_row_blocks_mvm(Xd, on)


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


def _system(hf, products: BlockProducts):
    """(I + V^T K̃ V) of eq. (5) on the blocks ``on``: (the device system or None, matvec (x, on) -> ... on
    host arrays, or on the device's when CG solves there); the factor's V and V^T on the device where the
    products are (:func:`~gpmodels.inference.map.newton_cg.device_system`)."""
    dev = device_system(hf, MVMCounter(products.op)) if products.backend is not None else None
    if dev is None:
        return None, lambda x, on: x + hf.Vt(products(hf.V(x), on))
    be, dhf = dev.backend, dev.hf

    def device_matvec(xd, on):
        return xd + dhf.Vt(products.device(dhf.V(xd), on))

    if dev.solves:
        return dev, device_matvec
    return dev, lambda x, on: be.to_host(device_matvec(be.from_host(x), on))


def _solve(matvec, dev, hf, rhs, systems: Systems, x0, *, inv_diag=None, alpha_norm=False, **settings) -> CGResult:
    """Lockstep CG on a system (I + V^T K̃ V) of the blocks from host arrays, on the device where it solves
    there (rhs, x0 and ``inv_diag`` uploaded, x back on the host); ``alpha_norm``: the forcing test on V r
    (V of ``hf``, or of the device's factor)."""
    if dev is None or not dev.solves:
        forcing_map = hf.V if alpha_norm else None
        return cg(matvec, rhs, systems=systems, x0=x0, inv_diag=inv_diag, forcing_map=forcing_map, **settings)
    inv_d = None if inv_diag is None else dev.backend.from_host(inv_diag)
    forcing_map = dev.hf.V if alpha_norm else None
    return device_cg(dev, rhs, x0, matvec=matvec, systems=systems, inv_diag=inv_d, forcing_map=forcing_map, **settings)


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


def _step(lik, Y, products: BlockProducts, precond, blocks, active, point, systems: Systems, opts):
    """One Newton iteration of the ``active`` blocks (Alg. 1, steps 2-3, with the stall restarts of
    :func:`~gpmodels.inference.map.newton_cg.newton_step_with_restarts` per block) at ``point`` (α, u, Φ per
    block, g): {k: (line search, s, s̃)} of each block's best attempt (else its last), its CG steps and
    stalls, and the last β."""
    alpha, u, phi, g = point
    hf = lik.hessian_factor(u, Y)
    rhs = newton_rhs(hf, lambda A: products(A, active), u, g)
    dev, matvec = _system(hf, products)
    if dev is not None and dev.solves:
        precondition = precond.for_device(hf, dev.hf, dev.backend)
    else:
        precondition = precond.for_factor(hf, None if dev is None else dev.backend)
    x0, forcing, trying = hf.beta_init(alpha), opts.cg_forcing, active.copy()
    best, cg_its, stalls = {}, np.zeros(len(blocks), dtype=np.intp), np.zeros(len(blocks), dtype=np.intp)
    for _ in range(opts.max_stall_restarts + 1):
        res = _solve(
            matvec,
            dev,
            hf,
            rhs,
            systems,
            x0,
            precondition=precondition,
            alpha_norm=precond.forcing_in_alpha_space,
            active=trying,
            tol=opts.cg_tol,
            forcing=forcing,
            max_iter=opts.cg_max_iter,
        )
        cg_its += res.iterations
        new_alpha = hf.V(res.x)
        if hf.fixed_alpha is not None:
            new_alpha += hf.fixed_alpha
        s = new_alpha - alpha
        s_tilde = products(s, trying)
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


def _start(likelihood, alpha0, op: Operator, products: BlockProducts, systems: Systems):
    """Alg. 1, step 1 per block: α0 projected onto ran W and u = K̃ α0 (no product for a block at zero)."""
    n, C = op.n_points, op.n_classes
    if alpha0 is None:
        return np.zeros((n, C)), np.zeros((n, C))
    alpha = project_start(likelihood, alpha0, n, C, lambda A: A)[0]
    started = HOST_VECTORS.layout(systems, alpha).norms(alpha) > 0
    return alpha, products(alpha, started) if started.any() else np.zeros((n, C))


def _advance(blocks, active, best, cg_its, stalls, alpha, u, phi, products, opts) -> None:
    """Each active block's iteration into its traces and, where its line search succeeded, its step."""
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
        b.mvms.append(int(products.counts[k]))
        if not ls.success:
            b.grads.append(b.grads[-1])  # the same point: one entry per entry of ``phi``
            b.stop = no_decrease(b.grads[-1], opts.grad_tol)


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
    products = BlockProducts(op)
    systems = Systems(products.offsets)
    lay = HOST_VECTORS.layout(systems, np.empty((op.n_points, op.n_classes)))
    precond = make_preconditioner(
        opts.preconditioner, op, rank=opts.precond_rank, seed=int(opts.precond_seed), start=precond_start
    )
    alpha, u = _start(likelihood, alpha0, op, products, systems)
    blocks = [_Block(rows, []) for rows, _ in products.blocks]
    phi = 0.5 * lay.sums(alpha, u) + np.array([likelihood.value(u[b.rows], Y[b.rows]) for b in blocks])
    for k, b in enumerate(blocks):
        b.phis.append(float(phi[k]))
        b.mvms.append(int(products.counts[k]))
    beta = None
    while True:
        g = likelihood.gradient(u, Y)
        grads = lay.norms(alpha + g) / np.sqrt(np.maximum(np.diff(products.offsets), 1))
        for k, b in enumerate(blocks):
            if b.stop is None:
                b.grads.append(float(grads[k]))
                b.stop = stop_rule(float(grads[k]), b.phis, b.steps, opts.phi_rtol, b.iterations, opts)
        active = np.array([b.stop is None for b in blocks])
        if not active.any():
            break
        best, cg_its, stalls, beta = _step(
            likelihood, Y, products, precond, blocks, active, (alpha, u, phi, g), systems, opts
        )
        _advance(blocks, active, best, cg_its, stalls, alpha, u, phi, products, opts)
    seconds = time.perf_counter() - t0
    results = tuple(
        NewtonResult(
            alpha=alpha[b.rows].copy(),
            u=u[b.rows].copy(),
            phi=float(phi[k]),
            beta=None if beta is None else beta[b.rows].copy(),
            diagnostics=_diagnostics(b, int(products.counts[k]), seconds),
        )
        for k, b in enumerate(blocks)
    )
    return LockstepResult(results, precond.basis)


def lockstep_weighted_solve(
    op: Operator, hf: HessianFactor, b: np.ndarray, *, x0=None, tol: float, max_iter: int
) -> list[SystemSolution]:
    """Each row block's z_k = (I + W K̃_k)^{-1} W b_k (Seeger 2008, Sec. 5.2: the CV accumulation solves), as
    :func:`~gpmodels.inference.map.newton_cg.solve_weighted_system` per block, the blocks in lockstep: one
    CG over all rows with each block's scalars and stopping test, the App. B diagonal preconditioner, on the
    operator's device where it solves there.  Returns each block's solution (its z, β, CG steps, residual and
    products)."""
    products = BlockProducts(op)
    rhs = hf.Vt(b)
    inv_diag = 1.0 / hf.precond_diag(op.diag(), op.point_block_mvm)
    dev, matvec = _system(hf, products)
    res = _solve(matvec, dev, hf, rhs, Systems(products.offsets), x0, inv_diag=inv_diag, tol=tol, max_iter=max_iter)
    z = hf.V(res.x)
    return [
        SystemSolution(z[rows], res.x[rows], int(res.iterations[k]), float(res.residual[k]), int(products.counts[k]))
        for k, (rows, _) in enumerate(products.blocks)
    ]
