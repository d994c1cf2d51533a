"""MAP fitting by Newton–Raphson with CG-approximated Newton directions (Seeger 2008, Alg. 1).

Minimises Φ(α) = (1/2) α^T K̃ α + Φ_lh(u), u = K̃ α, touching the prior only through MVMs:

1. project α onto ran W (``likelihood.project_alpha``) and set u = K̃ α (:func:`project_start`);
2. per Newton iteration: g = ∇_u Φ_lh, the factor V of W, g̃; solve
   (I + V^T K̃ V) β = V^T u - g̃   (eq. 5, :func:`newton_system`)
   by preconditioned CG (:func:`newton_direction`), warm-started at β = D^{-1/2} α (the current α,
   ``hf.beta_init``); α' = V β (+ the App. B fixed part).  Preconditioner (``preconditioner``, see
   :mod:`gpmodels.inference.map.preconditioners`): ``diagonal`` is diag(I + V^T K̃ V) of App. B;
   ``block`` the per-point C x C blocks; ``lowrank`` / ``lowrank_block`` deflate the leading kernel
   eigen-directions through the Kronecker form of K̃, with the diagonal / the per-point blocks for
   the rest (the preconditioning that Sec. 3 and 5.1.1 leave to future work);
3. pair-optimisation line search along s = α' - α in u with s̃ = K̃ s (Sec. 5.1.2;
   :func:`line_search_step`): CG keeps K̃ V β beside β from K̃ V β_init = u (its ``image``), so
   s̃ = K̃ V β − u costs no product where the start is exact (``hf.beta_init_exact``), else one MVM;
4. when a step stalls (no decrease of Φ, a damped step whose decrease is below phi_rtol, or a
   step λ < ``stall_step``), and when a damped step (λ < 1) follows a CG stopped by the forcing term
   (:func:`is_damped_truncation`), CG is restarted from its last β for another k2 steps (Sec. 6.3,
   footnote 17; :func:`is_stall`, :func:`newton_step_with_restarts`); the stalled iteration counts
   towards k1.  The ``stall_step`` rule (0.1 by default) catches a truncated direction that is
   poor without being useless: on a news20 CV fold (ANOVA prior, v = 40, |J| = 9051) the line
   search took λ = 0.077, 0.014, 0.0036, ... for 8 iterations, each shrinking Φ by less than the
   last, before the phi_rtol rule restarted CG (24 iterations, 491 MVMs); restarting at λ < 0.1
   gave 13 iterations and 315 MVMs, and left the other four folds unchanged.

CG stops at the truncated-Newton forcing term: the residual fell by ``cg_forcing`` from its start,
measured on r or on V r, the residual mapped to α-space, as the preconditioner declares
(``forcing_in_alpha_space``: the diagonal keeps r, the others V r).

The outer loop, its stopping rules (gradient RMS below ``grad_tol``, a relative decrease of Φ
below ``phi_rtol``, k1 iterations) and progress calls are the shared
:func:`~gpmodels.inference.map.newton.newton_loop`; :class:`NewtonCG` supplies the steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import attrs
import numpy as np

from gpmodels.inference.execution_plan import ExecutionPlan, Placement, plan_for
from gpmodels.inference.map.block_products import BlockProducts
from gpmodels.inference.map.line_search import LineSearchResult
from gpmodels.inference.map.newton import (
    PRECONDITIONER_NAMES,
    NewtonDiagnostics,
    NewtonOptions,
    NewtonPoint,
    NewtonProblem,
    NewtonResult,
    NewtonStep,
    SteppedSolver,
    StepResult,
    block_line_search,
    block_point,
    block_rows,
    gradient_rms,
    line_search_step,
    project_start,
)
from gpmodels.inference.map.preconditioners import Preconditioner, make_preconditioner
from gpmodels.likelihoods.base import HessianFactor, Likelihood
from gpmodels.linalg.cg import CGResult, Systems, cg
from gpmodels.linalg.counting import MVMCounter
from gpmodels.operators.base import Operator
from gpmodels.validation import instance_of

__all__ = [
    "NewtonCG",
    "NewtonOptions",
    "NewtonDiagnostics",
    "NewtonResult",
    "NewtonStep",
    "NewtonSystem",
    "SystemProduct",
    "placed_cg",
    "known_start",
    "SystemSolution",
    "newton_cg",
    "gradient_rms",
    "PRECONDITIONER_NAMES",
    "project_start",
    "newton_system",
    "newton_rhs",
    "newton_direction",
    "start_residual",
    "preconditioning",
    "line_search_step",
    "is_stall",
    "is_damped_truncation",
    "newton_step_with_restarts",
    "restarted_steps",
    "solve_weighted_system",
    "solve_weighted_blocks",
    "block_newton_step",
]


@attrs.frozen(eq=False)
class NewtonSystem:
    """The symmetric system (I + V^T K̃ V) β = rhs of eq. (5) at one iterate: ``hf`` (V, V^T, App. B fixed part
    on host arrays), ``matvec`` (β -> (I + V^T K̃ V) β on CG's arrays, a :class:`SystemProduct`) and ``rhs``
    (n, C) on the host; ``place``: where its products and CG run (:meth:`ExecutionPlan.place`)."""

    hf: HessianFactor
    matvec: Callable
    rhs: np.ndarray
    place: Placement


@attrs.frozen(eq=False)
class SystemSolution:
    """z = (I + W K̃)^{-1} W b (n, C), the CG solution β with z = V β (None for a direct solve), the CG
    steps, the final relative residual and the MVMs it took."""

    z: np.ndarray
    beta: np.ndarray | None = None
    iterations: int = 0
    residual: float = 0.0
    mvms: int = 0


def newton_rhs(hf: HessianFactor, mvm, u: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The right-hand side V^T u − g̃ of eq. (5), less V^T K̃ α_fix where App. B fixed a part α_fix."""
    rhs = hf.Vt(u) - hf.g_tilde(g)
    if hf.fixed_alpha is not None:
        rhs -= hf.Vt(mvm(hf.fixed_alpha))
    return rhs


def newton_system(
    hf: HessianFactor, mvm: MVMCounter, u: np.ndarray, g: np.ndarray, plan: ExecutionPlan | None = None
) -> NewtonSystem:
    """The Newton system (I + V^T K̃ V) β = V^T u − g̃ of Seeger 2008, eq. (5).

    ``hf``: the likelihood's Hessian factor at u (V, V^T, g̃ and the App. B fixed part α_fix, whose
    K̃ α_fix moves to the right-hand side: rhs −= V^T K̃ α_fix, :func:`newton_rhs`); ``g`` = ∇_u Φ_lh;
    ``mvm`` counts K̃'s products; ``plan`` places them and CG (None: the plan of a fit on ``mvm``'s operator).
    """
    place = (plan or plan_for(mvm.op)).place(mvm.op, hf)
    rhs = newton_rhs(place.host_factor, mvm, u, g)
    return NewtonSystem(place.host_factor, SystemProduct(place, place.products.product(mvm), rhs.shape), rhs, place)


class SystemProduct:
    """β -> β + V^T K̃ V β (eq. 5) on CG's arrays where ``place`` puts it: V β on the products' arrays into one
    buffer reused by every product (K̃ consumes it at once), K̃ there (``product``: K̃, or the row blocks' K̃ called
    as ``product(x, on)``), K̃ V β carried to CG's arrays and kept until the next product (:meth:`latest_inner`:
    CG's ``image``, so that the line search's s̃ needs no product), V^T there; the result is a fresh array."""

    def __init__(self, place: Placement, product, shape):
        self.place, self.product, self._buf, self._inner = place, product, place.products.buffer(shape), None

    def __call__(self, x, *on):
        p = self.place
        self._inner = p.down(self.product(p.factor.V_into(p.up(x), self._buf), *on))
        return p.solve_factor.Vt_plus(self._inner, x)

    def latest_inner(self):
        return self._inner


def known_start(hf: HessianFactor, rhs: np.ndarray, x0, u: np.ndarray) -> tuple:
    """(r0, w0) for CG from x0 without a product: the residual (:func:`start_residual`) and K̃ V x0 = u where the
    start is exact, else (None, None)."""
    r0 = start_residual(hf, rhs, x0, u)
    return r0, None if r0 is None else u


def newton_direction(
    system: NewtonSystem,
    x0,
    opts: NewtonOptions,
    precondition,
    *,
    forcing: float,
    alpha_norm: bool,
    r0=None,
    w0=None,
) -> tuple[CGResult, np.ndarray]:
    """Alg. 1, step 2: β by CG on eq. (5) from x0, preconditioned by ``precondition`` (r -> P^{-1} r on CG's
    arrays, :func:`preconditioning`), stopped at the truncated-Newton forcing term measured on r or, with
    ``alpha_norm``, on V r (module docstring), where ``system.place`` runs CG (:func:`placed_cg`); the Newton
    point α' = V β (+ α_fix, App. B).  ``r0``: the residual rhs - (I + V^T K̃ V) x0 on CG's arrays where the caller
    has it (saves the start's product); ``w0``: K̃ V x0 where the caller has it, and then the result's ``image`` is
    K̃ V β.  Returns (CG result, α')."""
    hf = system.hf
    res = placed_cg(
        system.place,
        system.matvec,
        system.rhs,
        x0,
        alpha_norm=alpha_norm,
        r0=r0,
        w0=w0,
        tol=opts.cg_tol,
        forcing=forcing,
        max_iter=opts.cg_max_iter,
        precondition=precondition,
    )
    new_alpha = hf.V(res.x)
    if hf.fixed_alpha is not None:
        new_alpha += hf.fixed_alpha
    return res, new_alpha


def placed_cg(
    place: Placement, matvec, rhs: np.ndarray, x0, *, alpha_norm=False, inv_diag=None, r0=None, w0=None, **settings
) -> CGResult:
    """:func:`~gpmodels.linalg.cg.cg` on ``place``'s CG arrays from host arrays: rhs, x0, ``inv_diag`` and ``w0``
    (K̃ V x0 where known: then CG keeps K̃ V β, ``matvec.latest_inner``) go there once, every step's product,
    preconditioner, updates and scalars run there (on a device one scalar synchronisation per step), and the
    solution and image return to the host once; the residual ``r`` stays on CG's arrays, where ``r0`` (rhs - A x0
    where known: an earlier run's ``r``, or the known start's uploaded) is taken; ``alpha_norm``: the forcing test
    on V r; ``settings``: cg's other keywords, their maps on those arrays."""
    ops = place.solve

    def there(a):
        return None if a is None else ops.from_host(a)

    buf = ops.buffer(rhs.shape)
    forcing_map = (lambda r: place.solve_factor.V_into(r, buf)) if alpha_norm else None
    image = None if w0 is None else (there(w0), matvec.latest_inner)
    res = cg(
        matvec,
        there(rhs),
        x0=there(x0),
        inv_diag=there(inv_diag),
        r0=r0,
        image=image,
        forcing_map=forcing_map,
        vectors=ops.vectors,
        **settings,
    )
    image = None if res.image is None else ops.to_host(res.image)
    return attrs.evolve(res, x=ops.to_host(res.x), image=image)


def is_stall(ls: LineSearchResult, phi: float, phi_rtol: float, stall_step: float = 0.0) -> bool:
    """No decrease of Φ, or a damped step (λ < 1) that leaves Φ unchanged to ``phi_rtol``: the truncated
    direction is useless, and accepting the step would end the fit by phi_rtol (Sec. 6.3); or a step
    λ < ``stall_step``: the direction is poor, and the next ones tend to be damped further."""
    negligible = ls.success and ls.step < 1.0 and phi - ls.phi <= phi_rtol * max(1.0, abs(phi))
    return not ls.success or negligible or ls.step < stall_step


def is_damped_truncation(ls: LineSearchResult, forcing: float, stopped: bool, residual: float, cg_tol: float) -> bool:
    """A damped step (λ < 1) along a direction whose CG stopped at the forcing term (``stopped`` with a
    ``residual`` above ``cg_tol``): the forcing term trades accuracy for speed where the quadratic model
    holds, which a damped step says it does not here, so CG continues from its β without it (once: the
    continuation runs with forcing 0).  On a CLINC150 ANOVA fold (|J| = 12 000, C = 150, v = 40, k1 = 12,
    k2 = 30) CG met the forcing term after 10-12 steps from the sixth iteration on and the line search
    took λ = 0.11-0.45 for seven iterations and ended at gradient RMS 0.060 (313 MVMs); continuing those
    directions ended it at 0.0013 (471 MVMs)."""
    return forcing > 0 and stopped and residual > cg_tol and ls.success and ls.step < 1.0


def restarted_steps(
    problem: NewtonProblem, point: NewtonPoint, rows: list[slice], active: np.ndarray, x0, solve, product
) -> dict[int, StepResult]:
    """The stall restarts of Sec. 6.3 (footnote 17) for the ``active`` row blocks ``rows`` at ``point`` (Φ per
    block): ``solve(x0, forcing, trying)`` -> (CG result, the Newton point α') from x0, ``product(s, trying)``
    -> s̃ = K̃ s, unless CG kept K̃ V β (its ``image``; then s̃ = K̃ V β − u with no product); each trying block's
    pair line search on its rows along s = α' − α.  A block whose step stalls
    (:func:`is_stall`), or takes a damped step along a direction truncated by the forcing term
    (:func:`is_damped_truncation`), is solved again from the last β without the forcing term, at most
    ``max_stall_restarts`` times, and not when its CG had converged to ``cg_tol`` (the stall is round-off at
    the optimum).  Returns per active block the line search, s and s̃ of its best successful attempt (else its
    last), its last β, its CG steps over all attempts and its stalls."""
    opts = problem.options
    forcing, trying = opts.cg_forcing, np.array(active, dtype=bool)
    best, last = {}, {}
    cg_its, stalls = np.zeros(len(rows), dtype=np.intp), np.zeros(len(rows), dtype=np.intp)
    for _ in range(opts.max_stall_restarts + 1):
        res, new_alpha = solve(x0, forcing, trying)
        cg_its += res.iterations
        s = new_alpha - point.alpha
        s_tilde = product(s, trying) if res.image is None else res.image - point.u  # K̃ V β - K̃ α
        for k in np.flatnonzero(trying):
            r, at = rows[k], block_point(point, k, rows[k])
            ls = block_line_search(problem, at, r, s[r], s_tilde[r])
            last[k] = (ls, s[r], s_tilde[r])
            if ls.success and (k not in best or ls.phi < best[k][0].phi):
                best[k] = last[k]
            stopped, residual = bool(res.converged[k]), float(res.residual[k])
            stalled = is_stall(ls, at.phi, opts.phi_rtol, opts.stall_step) or is_damped_truncation(
                ls, forcing, stopped, residual, opts.cg_tol
            )
            exact = stopped and residual <= opts.cg_tol  # the stall is round-off
            stalls[k] += stalled
            trying[k] = stalled and not exact
        if not trying.any():
            break
        x0, forcing = res.x, 0.0  # restart the stalled blocks' CG from their last β (footnote 17)
    return {
        k: StepResult(*best.get(k, last[k]), beta=res.x[rows[k]], cg_iterations=int(cg_its[k]), stalls=int(stalls[k]))
        for k in last
    }


def newton_step_with_restarts(
    problem: NewtonProblem, point: NewtonPoint, system: NewtonSystem, precond: Preconditioner, x0
) -> StepResult:
    """One Newton iteration of Alg. 1 (steps 2-3) with stall handling (Sec. 6.3, footnote 17): the one-block
    case of :func:`restarted_steps`.

    The direction by CG on ``system`` (:func:`newton_system`) from x0, preconditioned by
    ``precond`` (:func:`preconditioning`), and the line search; when the step stalls (:func:`is_stall`)
    CG is restarted from its last β, without the forcing term, for another k2 steps, at most
    ``max_stall_restarts`` times, and not when CG had already converged to ``cg_tol`` (the stall is
    round-off at the optimum).  Returns the line search, s and s̃ of the best successful attempt
    (else the last one), the last β, the CG steps of all attempts and the number of stalls.
    """
    opts = problem.options
    precondition = preconditioning(precond, system.hf, system.place)

    def solve_from(start, forcing, trying, r0, w0):
        alpha_norm = precond.forcing_in_alpha_space
        return newton_direction(system, start, opts, precondition, forcing=forcing, alpha_norm=alpha_norm, r0=r0, w0=w0)

    solve = _known_starts(solve_from, x0, known_start(system.hf, system.rhs, x0, point.u), system.place)

    point = NewtonPoint(point.alpha, point.u, np.atleast_1d(point.phi), point.g)
    steps = restarted_steps(
        problem, point, [slice(None)], np.ones(1, dtype=bool), x0, solve, lambda s, _: problem.mvm(s)
    )
    return steps[0]


def preconditioning(precond: Preconditioner, hf: HessianFactor, place: Placement) -> Callable:
    """r -> P^{-1} r of ``precond`` at the Hessian factor ``hf`` on CG's arrays (``place.solve``), its set-up's large
    products on the arrays of the system's products (``place.products``)."""
    return precond.inverse(hf, place.products).on(place.solve, place.solve_factor)


def start_residual(hf: HessianFactor, rhs: np.ndarray, x0, u: np.ndarray):
    """rhs - (I + V^T K̃ V) x0 of the Newton system (5) without a product, where x0 = β_init(α) and the factor's
    start is exact (``hf.beta_init_exact``: V β_init(α) = α, so K̃ V x0 = K̃ α = u): rhs - (x0 + V^T u)
    (Seeger 2008, Sec. 5.1.1; in exact arithmetic -(x0 + g̃), the gradient of Φ in β).  None otherwise (CG
    multiplies)."""
    if x0 is None or not hf.beta_init_exact:
        return None
    return rhs - hf.Vt_plus(u, x0)


def _known_starts(solve_from, x0, start: tuple, place: Placement):
    """``solve_from(start, forcing, trying, r0, w0)`` as the ``solve`` of :func:`restarted_steps`: for the start
    x0 the system product's ``known_start`` (r0, w0 = K̃ V x0; None: CG multiplies, and keeps no image), r0 carried
    to CG's arrays (``place``), and for a stall restart from the last CG solution that run's residual (left on CG's
    arrays) and image, so that neither needs a product."""
    r0, w0 = start
    known = {"x": x0, "r": None if r0 is None else place.solve.from_host(r0), "w": w0}

    def solve(start, forcing, trying):
        same = start is known["x"]
        res, new_alpha = solve_from(start, forcing, trying, known["r"] if same else None, known["w"] if same else None)
        known.update(x=res.x, r=res.r, w=res.image)
        return res, new_alpha

    return solve


def solve_weighted_system(
    op: Operator, hf: HessianFactor, b: np.ndarray, *, x0=None, tol: float, max_iter: int, plan=None
) -> SystemSolution:
    """z = (I + W K̃)^{-1} W b = V (I + V^T K̃ V)^{-1} V^T b by CG on the symmetric form with the App. B
    diagonal preconditioner, from x0 (a previous β), to relative residual ``tol`` or ``max_iter``
    steps (Seeger 2008, Sec. 5.2: the accumulation solve of the CV gradient), where ``plan`` places it
    (None: :func:`~gpmodels.inference.execution_plan.plan_for` ``op``)."""
    plan = plan or plan_for(op)
    K = MVMCounter(op)
    place = plan.place(op, hf)
    hf = place.host_factor
    rhs = hf.Vt(b)
    inv_diag = 1.0 / hf.precond_diag(op.diag(), op.point_block_mvm)
    matvec = SystemProduct(place, place.products.product(K), rhs.shape)
    with plan.blas_context():
        sol = placed_cg(place, matvec, rhs, x0, inv_diag=inv_diag, tol=tol, max_iter=max_iter)
    return SystemSolution(hf.V(sol.x), sol.x, int(sol.iterations[0]), float(sol.residual[0]), K.count)


def _block_system(hf: HessianFactor, products: BlockProducts, plan: ExecutionPlan) -> tuple:
    """(placement, (I + V^T K̃ V) of eq. (5) on the row blocks ``on``, a :class:`SystemProduct` called as
    ``matvec(x, on)``) where ``plan`` places them (:meth:`ExecutionPlan.place`)."""
    place = plan.place(products.op, hf)
    return place, SystemProduct(place, place.products.product(products), (products.op.n_points, products.op.n_classes))


def block_newton_step(
    problem: NewtonProblem,
    point: NewtonPoint,
    active: np.ndarray,
    products: BlockProducts,
    precond: Preconditioner,
    plan: ExecutionPlan,
) -> dict[int, StepResult]:
    """One Newton iteration of the ``active`` row blocks (Alg. 1, steps 2-3) at ``point`` (Φ per block): one
    CG over all rows with each block's own scalars and forcing test (``Systems(offsets)``), each block's pair
    line search on its rows and stall restarts of the stalled blocks only (:func:`restarted_steps`)."""
    lik, Y, opts = problem.likelihood, problem.Y, problem.options
    place, matvec = _block_system(lik.hessian_factor(point.u, Y), products, plan)
    hf = place.host_factor
    rhs = newton_rhs(hf, lambda A: products(A, active), point.u, point.g)
    precondition = preconditioning(precond, hf, place)
    systems = Systems(products.offsets)

    def solve_from(x0, forcing, trying, r0, w0):
        settings = dict(tol=opts.cg_tol, forcing=forcing, max_iter=opts.cg_max_iter, precondition=precondition)
        alpha_norm = precond.forcing_in_alpha_space
        res = placed_cg(
            place, matvec, rhs, x0, systems=systems, alpha_norm=alpha_norm, active=trying, r0=r0, w0=w0, **settings
        )
        new_alpha = hf.V(res.x)
        if hf.fixed_alpha is not None:
            new_alpha += hf.fixed_alpha
        return res, new_alpha

    rows = block_rows(products.offsets, Y.shape[0])
    x0 = hf.beta_init(point.alpha)
    solve = _known_starts(solve_from, x0, known_start(hf, rhs, x0, point.u), place)
    return restarted_steps(problem, point, rows, active, x0, solve, products)


def solve_weighted_blocks(
    op: Operator, hf: HessianFactor, b: np.ndarray, *, x0=None, tol: float, max_iter: int, plan=None
) -> list[SystemSolution]:
    """Each row block's z_k = (I + W K̃_k)^{-1} W b_k (Seeger 2008, Sec. 5.2: the CV accumulation solves), as
    :func:`solve_weighted_system` per block, the blocks together: one CG over all rows with each block's
    scalars and stopping test, the App. B diagonal preconditioner, on the operator's device where it solves
    there (``plan``; None: :func:`~gpmodels.inference.execution_plan.plan_for` ``op``).  Returns each block's
    solution (its z, β, CG steps, residual and products)."""
    products = BlockProducts(op)
    place, matvec = _block_system(hf, products, plan or plan_for(op))
    hf = place.host_factor
    rhs = hf.Vt(b)
    inv_diag = 1.0 / hf.precond_diag(op.diag(), op.point_block_mvm)
    systems = Systems(products.offsets)
    res = placed_cg(place, matvec, rhs, x0, systems=systems, inv_diag=inv_diag, tol=tol, max_iter=max_iter)
    z = hf.V(res.x)
    return [
        SystemSolution(z[rows], res.x[rows], int(res.iterations[k]), float(res.residual[k]), int(products.counts[k]))
        for k, (rows, _) in enumerate(products.blocks)
    ]


class _CGStepper:
    """Newton–CG's state for one fit: the counted K̃ (per row block with ``blocks``, :class:`BlockProducts`),
    the preconditioner the plan names, built on the operator, and where the plan runs CG."""

    truncated = True

    def __init__(
        self, op: Operator, opts: NewtonOptions, precond_start: np.ndarray | None, plan: ExecutionPlan, blocks: bool
    ):
        by_blocks = blocks and op.row_blocks is not None
        self.mvm = BlockProducts(op) if by_blocks else MVMCounter(op)
        self.offsets = self.mvm.offsets if by_blocks else None
        self.plan = plan
        name = str(plan.preconditioner.choice) if opts.preconditioner == "auto" else opts.preconditioner
        self.precond = make_preconditioner(
            name, op, rank=opts.precond_rank, seed=int(opts.precond_seed), start=precond_start
        )
        self.precond_basis = self.precond.basis

    def step(self, problem: NewtonProblem, point: NewtonPoint, active: np.ndarray) -> dict[int, StepResult]:
        if self.offsets is not None:
            return block_newton_step(problem, point, active, self.mvm, self.precond, self.plan)
        point = block_point(point, 0, slice(None))
        hf = problem.likelihood.hessian_factor(point.u, problem.Y)
        system = newton_system(hf, problem.mvm, point.u, point.g, self.plan)
        return {0: newton_step_with_restarts(problem, point, system, self.precond, hf.beta_init(point.alpha))}


@attrs.frozen
class NewtonCG(SteppedSolver):
    """Newton–CG (Seeger 2008, Alg. 1): any operator, any likelihood with a Hessian factor."""

    options: NewtonOptions = attrs.field(factory=NewtonOptions, validator=instance_of(NewtonOptions))
    name: ClassVar[str] = "newton-cg"

    def stepper(
        self, op: Operator, precond_start: np.ndarray | None, plan: ExecutionPlan, *, blocks: bool = False
    ) -> _CGStepper:
        """Newton–CG's state for one fit under ``plan``; ``precond_start``: a previous fit's ``precond_basis``
        on the same points (the ``lowrank`` eigensolvers start from it); ``blocks``: each of ``op.row_blocks``
        its own fit."""
        return _CGStepper(op, self.options, precond_start, plan, blocks)

    def solve_weighted(
        self, op: Operator, hf: HessianFactor, b: np.ndarray, *, x0=None, tol: float, max_iter: int, plan=None
    ) -> SystemSolution:
        """z = (I + W K̃)^{-1} W b by CG (:func:`solve_weighted_system`); ``hf`` exact (W = V V^T)."""
        return solve_weighted_system(op, hf, b, x0=x0, tol=tol, max_iter=max_iter, plan=plan)


def newton_cg(
    op: Operator,
    likelihood: Likelihood,
    Y,
    options: NewtonOptions | None = None,
    *,
    alpha0=None,
    on_iteration: Callable[[NewtonStep], None] | None = None,
    precond_start: np.ndarray | None = None,
) -> NewtonResult:
    """Fit α̂ = argmin Φ by Newton–CG (Alg. 1): ``NewtonCG(options).fit`` (steps: :func:`project_start`,
    :func:`newton_system`, :func:`newton_direction`, :func:`line_search_step`,
    :func:`newton_step_with_restarts`)."""
    return NewtonCG(options or NewtonOptions()).fit(
        op, likelihood, Y, alpha0=alpha0, precond_start=precond_start, on_iteration=on_iteration
    )
