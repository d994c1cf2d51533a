"""MAP fitting by Newton–Raphson with CG-approximated Newton directions (Seeger 2008, Alg. 1).

Minimises Φ(α) = (1/2) α^T K̃ α + Φ_lh(u), u = K̃ α, touching the prior only through MVMs:

1. project α onto ran W (``likelihood.project_alpha``) and set u = K̃ α;
2. per Newton iteration: g = ∇_u Φ_lh, the factor V of W, g̃; solve
   (I + V^T K̃ V) β = V^T u - g̃   (eq. 5)
   by preconditioned CG, warm-started at β = D^{-1/2} α (the current α, "alpha" mode) or at the
   last β ("beta" mode); α' = V β (+ the App. B fixed part).  Preconditioner (``preconditioner``,
   see :mod:`gpmodels.inference.map.preconditioners`): ``diagonal`` is diag(I + V^T K̃ V) of App. B;
   ``block`` the per-point C x C blocks; ``lowrank`` / ``lowrank_block`` deflate the leading kernel
   eigen-directions through the Kronecker form of K̃, with the diagonal / the per-point blocks for
   the rest (the "future work" preconditioning of Sec. 3 and 5.1.1);
3. pair-optimisation line search along s = α' - α in u with s̃ = K̃ s (one MVM, Sec. 5.1.2);
4. when a step stalls (no decrease of Φ, or a damped step whose decrease is below phi_rtol) CG is
   restarted from its last β for another k2 steps (Sec. 6.3, footnote 17); the stalled iteration
   counts towards k1.

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
from typing import Callable

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.likelihoods.base import Likelihood
from gpmodels.operators.base import Operator
from gpmodels.linalg.cg import cg
from gpmodels.linalg.counting import MVMCounter
from gpmodels.inference.map.line_search import objective, pair_line_search
from gpmodels.inference.map.preconditioners import PRECONDITIONERS, make_preconditioner

__all__ = ["NewtonOptions", "NewtonDiagnostics", "NewtonResult", "NewtonStep", "newton_cg", "gradient_rms", "PRECONDITIONERS",
           "FORCING_NORMS"]


def _positive_int(instance, attribute, value):
    if int(value) != value or value < 1:
        raise InputError(f"NewtonOptions.{attribute.name} must be an integer >= 1; got {value!r}")


def _nonneg(instance, attribute, value):
    if not np.isfinite(value) or value < 0:
        raise InputError(f"NewtonOptions.{attribute.name} must be a finite number >= 0; got {value!r}")


def _precond(instance, attribute, value):
    if value not in PRECONDITIONERS:
        raise InputError(f"NewtonOptions.preconditioner must be one of {PRECONDITIONERS}; got {value!r}")


FORCING_NORMS = ("auto", "residual", "alpha")


def _forcing_norm(instance, attribute, value):
    if value not in FORCING_NORMS:
        raise InputError(f"NewtonOptions.cg_forcing_norm must be one of {FORCING_NORMS}; got {value!r}")


def _warm(instance, attribute, value):
    if value not in ("alpha", "beta"):
        raise InputError(f"NewtonOptions.warm_start must be 'alpha' or 'beta'; got {value!r}")


@attrs.frozen
class NewtonOptions:
    """Settings of Newton–CG (k1, k2 and tolerances of Seeger 2008, Sec. 2 and 6)."""

    max_iter: int = attrs.field(default=30, validator=_positive_int)  # k1
    cg_max_iter: int = attrs.field(default=50, validator=_positive_int)  # k2
    cg_tol: float = attrs.field(default=1e-10, validator=_nonneg)  # relative to ||rhs||
    cg_forcing: float = attrs.field(default=0.1, validator=_nonneg)  # max. relative to the initial residual
    grad_tol: float = attrs.field(default=1e-6, validator=_nonneg)  # per-point RMS of α + g
    phi_rtol: float = attrs.field(default=1e-12, validator=_nonneg)
    warm_start: str = attrs.field(default="alpha", validator=_warm)
    max_stall_restarts: int = attrs.field(default=2, validator=_nonneg)
    armijo: float = attrs.field(default=1e-4, validator=_nonneg)
    line_search_evals: int = attrs.field(default=30, validator=_positive_int)
    preconditioner: str = attrs.field(default="diagonal", validator=_precond)  # see inference/preconditioners.py
    precond_rank: int = attrs.field(default=8, validator=_positive_int)  # lowrank: eigenpairs of the kernel
    precond_seed: int = attrs.field(default=0, validator=_nonneg)  # lowrank: seed of the randomized eigensolver
    cg_forcing_norm: str = attrs.field(default="auto", validator=_forcing_norm)  # residual | alpha | auto


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

    @property
    def converged(self) -> bool:
        return self.diagnostics.converged


def gradient_rms(alpha, g) -> float:
    """Per-point RMS of ∇_u Φ = α + g: sqrt(Σ_i ||α_i + g_i||² / n)."""
    return float(np.linalg.norm(alpha + g) / np.sqrt(alpha.shape[0]))


def _newton_direction_and_step(K, likelihood, Y, alpha, u, phi, g, hf, beta, precond, opts: NewtonOptions,
                               alpha_norm: bool):
    """One Newton iteration's direction and step (Alg. 1, steps 2-4): solve eq. (5) by CG, line search
    along s = α' - α (Sec. 5.1.2), and on a stall restart CG from its last β (footnote 17).

    Returns (line-search result, s, s̃ = K̃ s, β, CG steps, stalls) for the best successful attempt
    (or the last one when none succeeded).
    """
    n, C = alpha.shape
    rhs = hf.Vt(u) - hf.g_tilde(g)
    if hf.fixed_alpha is not None:
        rhs -= hf.Vt(K(hf.fixed_alpha))
    inv_diag, precondition = precond.for_factor(hf)

    def system(x):
        return x + hf.Vt(K(hf.V(x)))

    if opts.warm_start == "beta" and beta is not None and beta.shape == (n, C):
        x0 = np.where(hf.free, beta, 0.0)
    else:
        x0 = hf.beta_init(alpha)
    total_cg = stalls = 0
    forcing = opts.cg_forcing
    best = None  # (line search result, s, s̃) of the best successful attempt
    for _ in range(opts.max_stall_restarts + 1):
        res = cg(system, rhs, x0=x0, inv_diag=inv_diag, tol=opts.cg_tol, forcing=forcing,
                 max_iter=opts.cg_max_iter, precondition=precondition,
                 forcing_map=hf.V if alpha_norm else None)
        total_cg += res.iterations
        beta = res.x
        new_alpha = hf.V(beta)
        if hf.fixed_alpha is not None:
            new_alpha += hf.fixed_alpha
        s = new_alpha - alpha
        s_tilde = K(s)
        ls = pair_line_search(likelihood, Y, alpha, u, s, s_tilde, phi, armijo=opts.armijo,
                              max_evals=opts.line_search_evals)
        if ls.success and (best is None or ls.phi < best[0].phi):
            best = (ls, s, s_tilde)
        # a damped step (λ < 1) that leaves Φ unchanged to phi_rtol is a stall as well: the
        # truncated direction is useless, and accepting it would end the fit by phi_rtol
        negligible = ls.success and ls.step < 1.0 and phi - ls.phi <= opts.phi_rtol * max(1.0, abs(phi))
        if ls.success and not negligible:
            break
        stalls += 1
        x0, forcing = beta, 0.0  # restart CG from its last β (footnote 17)
        if res.converged and res.residual <= opts.cg_tol:
            break  # CG already exact: the stall is round-off at the optimum
    if best is not None:
        ls, s, s_tilde = best
    return ls, s, s_tilde, beta, total_cg, stalls


def newton_cg(
    op: Operator,
    likelihood: Likelihood,
    Y,
    options: NewtonOptions | None = None,
    *,
    alpha0=None,
    beta0=None,
    on_iteration: Callable[[NewtonStep], None] | None = None,
) -> NewtonResult:
    """Fit α̂ = argmin Φ by Newton–CG (Alg. 1).  ``alpha0``/``beta0`` warm-start the fit;
    ``on_iteration`` gets a :class:`NewtonStep` at the start and after every iteration."""
    opts = options or NewtonOptions()
    n, C = op.n_points, op.n_classes
    Y = likelihood.check_targets(Y, n, C)
    t0 = time.perf_counter()
    K = MVMCounter(op)
    if alpha0 is None:
        alpha = np.zeros((n, C))
    else:
        alpha = np.array(alpha0, dtype=np.float64)
        if alpha.shape != (n, C):
            raise InputError(f"Dimension mismatch: alpha0 must have shape ({n}, {C}); got {alpha.shape}")
        alpha = likelihood.project_alpha(alpha)
    u = K(alpha) if np.any(alpha) else np.zeros((n, C))
    beta = None if beta0 is None else np.array(beta0, dtype=np.float64)
    alpha_norm = opts.cg_forcing_norm == "alpha" or (opts.cg_forcing_norm == "auto" and opts.preconditioner != "diagonal")
    precond = make_preconditioner(opts.preconditioner, op, rank=opts.precond_rank, seed=int(opts.precond_seed))
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
        if opts.phi_rtol > 0 and it >= 1 and steps[-1] > 0 and \
                phis[-2] - phis[-1] <= opts.phi_rtol * max(1.0, abs(phis[-1])):
            converged, message = True, "relative decrease of Phi below phi_rtol"
            break
        if it >= opts.max_iter:
            break
        it += 1
        hf = likelihood.hessian_factor(u, Y)
        ls, s, s_tilde, beta, total_cg, n_stalls = _newton_direction_and_step(K, likelihood, Y, alpha, u, phi, g, hf,
                                                                           beta, precond, opts, alpha_norm)
        stalls += n_stalls
        cg_its.append(total_cg)
        steps.append(ls.step)
        if ls.success:
            alpha = alpha + ls.step * s
            u = u + ls.step * s_tilde
            phi = ls.phi
            phis.append(phi)
            mvms.append(K.count)
        else:
            phis.append(phi)
            mvms.append(K.count)
            message = "stalled: no decrease along the Newton direction after CG restarts"
            g = likelihood.gradient(u, Y)
            grads.append(gradient_rms(alpha, g))
            converged = grads[-1] <= opts.grad_tol
            break
    diag = NewtonDiagnostics(
        phi=tuple(phis), grad_norm=tuple(grads), mvm_trace=tuple(mvms), cg_iterations=tuple(cg_its),
        step_sizes=tuple(steps),
        iterations=it, stalls=stalls, mvm_count=K.count, seconds=time.perf_counter() - t0,
        converged=converged, message=message,
    )
    return NewtonResult(alpha=alpha, u=u, phi=phi, beta=beta, diagnostics=diag)
