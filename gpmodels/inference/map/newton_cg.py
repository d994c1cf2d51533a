"""MAP fitting by Newton–Raphson with CG-approximated Newton directions (Seeger 2008, Alg. 1).

Minimises Φ(α) = (1/2) α^T K̃ α + Φ_lh(u), u = K̃ α, touching the prior only through MVMs:

1. project α onto ran W (``likelihood.project_alpha``) and set u = K̃ α (:func:`project_start`);
2. per Newton iteration: g = ∇_u Φ_lh, the factor V of W, g̃; solve
   (I + V^T K̃ V) β = V^T u - g̃   (eq. 5, :func:`newton_system`)
   by preconditioned CG (:func:`newton_direction`), warm-started at β = D^{-1/2} α (the current α,
   "alpha" mode) or at the last β ("beta" mode); α' = V β (+ the App. B fixed part).  Preconditioner
   (``preconditioner``, see :mod:`gpmodels.inference.map.preconditioners`): ``diagonal`` is
   diag(I + V^T K̃ V) of App. B;
   ``block`` the per-point C x C blocks; ``lowrank`` / ``lowrank_block`` deflate the leading kernel
   eigen-directions through the Kronecker form of K̃, with the diagonal / the per-point blocks for
   the rest (the preconditioning that Sec. 3 and 5.1.1 leave to future work);
3. pair-optimisation line search along s = α' - α in u with s̃ = K̃ s (one MVM, Sec. 5.1.2;
   :func:`line_search_step`);
4. when a step stalls (no decrease of Φ, a damped step whose decrease is below phi_rtol, or a
   step λ < ``stall_step``) CG is restarted from its last β for another k2 steps (Sec. 6.3,
   footnote 17; :func:`is_stall`, :func:`newton_step_with_restarts`); the stalled iteration counts
   towards k1.  The ``stall_step`` rule (0.1 by default) catches a truncated direction that is
   poor without being useless: on a news20 CV fold (ANOVA prior, v = 40, |J| = 9051) the line
   search took λ = 0.077, 0.014, 0.0036, ... for 8 iterations, each shrinking Φ by less than the
   last, before the phi_rtol rule restarted CG (24 iterations, 491 MVMs); restarting at λ < 0.1
   gave 13 iterations and 315 MVMs, and left the other four folds unchanged.

CG stops at the truncated-Newton forcing term: the residual fell by ``cg_forcing`` from its start,
measured on r (``residual``) or on V r, the residual mapped to α-space (``alpha``; it ignores the
β-direction √π_i per point that α' = V β does not see, and the D^{-1/2} amplification of a poor
warm start).  ``auto`` keeps ``residual`` for the diagonal preconditioner (the original path) and
uses ``alpha`` for the others, with which a residual test stopped after one step and stalled.

Progress: ``on_iteration(NewtonStep)`` is called with the state at the start (iteration 0) and
after every Newton iteration; the fit itself never prints (the driver turns the calls into a
progress bar, :mod:`gpmodels.progress`).

Stopping: the per-point RMS of the gradient α + g (∇ of Φ in u-space, Sec. 5.1.2) below
``grad_tol``, or a relative decrease of Φ below ``phi_rtol``, or k1 iterations.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.inference.map.line_search import objective, pair_line_search
from gpmodels.inference.map.preconditioners import PRECONDITIONERS, make_preconditioner
from gpmodels.likelihoods.base import Likelihood
from gpmodels.linalg.cg import cg
from gpmodels.linalg.counting import MVMCounter
from gpmodels.operators.base import Operator
from gpmodels.validation import MAX_SIZE, integer, nonnegative_int, nonnegative_number, number, one_of, positive_int

__all__ = ["NewtonOptions", "NewtonDiagnostics", "NewtonResult", "NewtonStep", "newton_cg", "gradient_rms",
           "PRECONDITIONERS", "FORCING_NORMS", "NEWTON_WARM_STARTS", "project_start", "newton_system",
           "newton_direction", "line_search_step", "is_stall", "newton_step_with_restarts"]


FORCING_NORMS = ("auto", "residual", "alpha")
NEWTON_WARM_STARTS = ("alpha", "beta")


@attrs.frozen
class NewtonOptions:
    """Settings of Newton–CG (k1, k2 and tolerances of Seeger 2008, Sec. 2 and 6)."""

    max_iter: int = attrs.field(default=30, validator=positive_int())  # k1
    cg_max_iter: int = attrs.field(default=50, validator=positive_int())  # k2
    cg_tol: float = attrs.field(default=1e-10, validator=nonnegative_number())  # relative to ||rhs||
    cg_forcing: float = attrs.field(default=0.1, validator=nonnegative_number())  # max. relative to the 1st residual
    grad_tol: float = attrs.field(default=1e-6, validator=nonnegative_number())  # per-point RMS of α + g
    phi_rtol: float = attrs.field(default=1e-12, validator=nonnegative_number())
    warm_start: str = attrs.field(default="alpha", validator=one_of(NEWTON_WARM_STARTS))
    max_stall_restarts: int = attrs.field(default=2, validator=nonnegative_int())
    stall_step: float = attrs.field(default=0.1, validator=number(0, 1))  # a line-search step λ below it is a stall
    armijo: float = attrs.field(default=1e-4, validator=number(0, 1, open_high=True))  # c1 of the Armijo condition
    line_search_evals: int = attrs.field(default=30, validator=positive_int())
    preconditioner: str = attrs.field(default="diagonal", validator=one_of(PRECONDITIONERS))  # see preconditioners.py
    precond_rank: int = attrs.field(default=8, validator=integer(1, MAX_SIZE))  # lowrank: eigenpairs of the kernel
    precond_seed: int = attrs.field(default=0, validator=nonnegative_int())  # lowrank: randomised eigensolver seed
    cg_forcing_norm: str = attrs.field(default="auto", validator=one_of(FORCING_NORMS))  # residual | alpha | auto


@attrs.frozen
class NewtonDiagnostics:
    """What a fit did: Φ and gradient per iteration (index 0 = start), CG steps, MVMs, time."""

    phi: tuple[float, ...]
    grad_norm: tuple[float, ...]
    mvm_trace: tuple[int, ...]  # cumulative MVMs when each entry of ``phi`` was reached
    cg_iterations: tuple[int, ...]
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


def newton_system(hf, mvm, u: np.ndarray, g: np.ndarray):
    """The Newton system (I + V^T K̃ V) β = V^T u − g̃ of Seeger 2008, eq. (5), as (matvec, rhs).

    ``hf``: the likelihood's Hessian factor at u (V, V^T, g̃ and the App. B fixed part α_fix, whose
    K̃ α_fix moves to the right-hand side: rhs −= V^T K̃ α_fix); ``g`` = ∇_u Φ_lh; ``mvm`` applies K̃.
    """
    rhs = hf.Vt(u) - hf.g_tilde(g)
    if hf.fixed_alpha is not None:
        rhs -= hf.Vt(mvm(hf.fixed_alpha))

    def system(x):
        return x + hf.Vt(mvm(hf.V(x)))

    return system, rhs


def newton_direction(system, rhs, hf, x0, opts: NewtonOptions, *, inv_diag, precondition, forcing: float,
                     alpha_norm: bool):
    """Alg. 1, step 2: β by preconditioned CG on eq. (5) from x0, stopped at the truncated-Newton forcing
    term (module docstring); the Newton point α' = V β (+ α_fix, App. B).  Returns (CG result, α')."""
    res = cg(system, rhs, x0=x0, inv_diag=inv_diag, tol=opts.cg_tol, forcing=forcing, max_iter=opts.cg_max_iter,
             precondition=precondition, forcing_map=hf.V if alpha_norm else None)
    new_alpha = hf.V(res.x)
    if hf.fixed_alpha is not None:
        new_alpha += hf.fixed_alpha
    return res, new_alpha


def line_search_step(likelihood: Likelihood, Y, alpha, u, new_alpha, phi: float, mvm, opts: NewtonOptions):
    """Alg. 1, step 3: the pair line search along s = α' − α with s̃ = K̃ s (one MVM, Sec. 5.1.2);
    returns (line search result, s, s̃)."""
    s = new_alpha - alpha
    s_tilde = mvm(s)
    ls = pair_line_search(
        likelihood, Y, alpha, u, s, s_tilde, phi, armijo=opts.armijo, max_evals=opts.line_search_evals
    )
    return ls, s, s_tilde


def is_stall(ls, phi: float, phi_rtol: float, stall_step: float = 0.0) -> bool:
    """No decrease of Φ, or a damped step (λ < 1) that leaves Φ unchanged to ``phi_rtol``: the truncated
    direction is useless, and accepting the step would end the fit by phi_rtol (Sec. 6.3); or a step
    λ < ``stall_step``: the direction is poor, and the next ones tend to be damped further."""
    negligible = ls.success and ls.step < 1.0 and phi - ls.phi <= phi_rtol * max(1.0, abs(phi))
    return not ls.success or negligible or ls.step < stall_step


def newton_step_with_restarts(likelihood: Likelihood, Y, alpha, u, phi: float, hf, system, rhs, x0, mvm,
                              opts: NewtonOptions, *, inv_diag, precondition, alpha_norm: bool):
    """One Newton iteration of Alg. 1 (steps 2-3) with stall handling (Sec. 6.3, footnote 17).

    The direction by CG on ``system`` β = ``rhs`` (:func:`newton_system`) from x0 and the line
    search; when the step stalls (:func:`is_stall`) CG is restarted from its last β, without the
    forcing term, for another k2 steps, at most ``max_stall_restarts`` times, and not when CG had
    already converged to ``cg_tol`` (the stall is round-off at the optimum).  Returns (line search result, s, s̃) of
    the best successful attempt (else the last
    one), the last β, the CG steps of all attempts and the number of stalls.
    """
    total_cg, stalls, forcing = 0, 0, opts.cg_forcing
    best = None  # (line search result, s, s̃) of the best successful attempt
    for _ in range(opts.max_stall_restarts + 1):
        res, new_alpha = newton_direction(system, rhs, hf, x0, opts, inv_diag=inv_diag, precondition=precondition,
                                          forcing=forcing, alpha_norm=alpha_norm)
        total_cg += res.iterations
        ls, s, s_tilde = line_search_step(likelihood, Y, alpha, u, new_alpha, phi, mvm, opts)
        if ls.success and (best is None or ls.phi < best[0].phi):
            best = (ls, s, s_tilde)
        if not is_stall(ls, phi, opts.phi_rtol, opts.stall_step):
            break
        stalls += 1
        x0, forcing = res.x, 0.0  # restart CG from its last β (footnote 17)
        if res.converged and res.residual <= opts.cg_tol:
            break  # CG already exact: the stall is round-off at the optimum
    if best is not None:
        ls, s, s_tilde = best
    return ls, s, s_tilde, res.x, total_cg, stalls


def newton_cg(op: Operator, likelihood: Likelihood, Y, options: NewtonOptions | None = None, *, alpha0=None, beta0=None,
              on_iteration: Callable[[NewtonStep], None] | None = None,
              precond_start: np.ndarray | None = None) -> NewtonResult:
    """Fit α̂ = argmin Φ by Newton–CG (Alg. 1; steps: :func:`project_start`, :func:`newton_system`,
    :func:`newton_direction`, :func:`line_search_step`, :func:`newton_step_with_restarts`).
    ``alpha0``/``beta0`` warm-start the fit; ``on_iteration`` gets a :class:`NewtonStep` at the start
    and after every iteration; ``precond_start``: a previous fit's ``precond_basis`` on the same
    points (the ``lowrank`` eigensolvers start from it, :func:`make_preconditioner`)."""
    opts = options or NewtonOptions()
    n, C = op.n_points, op.n_classes
    Y = likelihood.check_targets(Y, n, C)
    t0 = time.perf_counter()
    K = MVMCounter(op)
    alpha, u = project_start(likelihood, alpha0, n, C, K)
    beta = None if beta0 is None else np.array(beta0, dtype=np.float64)
    precond = make_preconditioner(opts.preconditioner, op, rank=opts.precond_rank, seed=int(opts.precond_seed),
                                  start=precond_start)
    alpha_norm = opts.cg_forcing_norm == "alpha" or (opts.cg_forcing_norm == "auto" and precond.kind != "diagonal")
    phi = objective(likelihood, Y, alpha, u)
    phis, grads, cg_its, steps, mvms = [phi], [], [], [], [K.count]
    stalls, converged, message = 0, False, "maximum number of Newton iterations reached"
    it = 0
    while True:
        g = likelihood.gradient(u, Y)
        gnorm = gradient_rms(alpha, g)
        grads.append(gnorm)
        if on_iteration is not None:
            on_iteration(NewtonStep(it, float(phi), gnorm, K.count))
        if gnorm <= opts.grad_tol:
            converged, message = True, "gradient below grad_tol"
            break
        if (
            opts.phi_rtol > 0
            and it >= 1
            and steps[-1] > 0
            and phis[-2] - phis[-1] <= opts.phi_rtol * max(1.0, abs(phis[-1]))
        ):
            converged, message = True, "relative decrease of Phi below phi_rtol"
            break
        if it >= opts.max_iter:
            break
        it += 1
        hf = likelihood.hessian_factor(u, Y)
        system, rhs = newton_system(hf, K, u, g)
        inv_diag, precondition = precond.for_factor(hf)
        if opts.warm_start == "beta" and beta is not None and beta.shape == (n, C):
            x0 = np.where(hf.free, beta, 0.0)
        else:
            x0 = hf.beta_init(alpha)
        ls, s, s_tilde, beta, total_cg, n_stalls = newton_step_with_restarts(likelihood, Y, alpha, u, phi, hf, system,
                                                                             rhs, x0, K, opts, inv_diag=inv_diag,
                                                                             precondition=precondition,
                                                                             alpha_norm=alpha_norm)
        stalls += n_stalls
        cg_its.append(total_cg)
        steps.append(ls.step)
        if not ls.success:
            phis.append(phi)
            mvms.append(K.count)
            message = "stalled: no decrease along the Newton direction after CG restarts"
            grads.append(gradient_rms(alpha, likelihood.gradient(u, Y)))
            converged = grads[-1] <= opts.grad_tol
            break
        alpha = alpha + ls.step * s
        u = u + ls.step * s_tilde
        phi = ls.phi
        phis.append(phi)
        mvms.append(K.count)
    diag = NewtonDiagnostics(phi=tuple(phis), grad_norm=tuple(grads), mvm_trace=tuple(mvms),
                             cg_iterations=tuple(cg_its), step_sizes=tuple(steps), iterations=it, stalls=stalls,
                             mvm_count=K.count, seconds=time.perf_counter() - t0, converged=converged, message=message)
    return NewtonResult(alpha=alpha, u=u, phi=phi, beta=beta, diagnostics=diag, precond_basis=precond.basis)
