"""Kernel-weight learning by the unifying criteria: MKL, joint MAP, Gaussian MLM and VB.

Nickisch & Seeger (2011), Sec. 2-3.  K_θ = Σ_m θ_m K_m (a :class:`~gpmodels.operators.sum.Sum` over
fixed base operators, single latent function), θ > 0, u = K_θ α.  Every criterion is written, in
the "-2 log" scale of the paper, as the minimum over u (and the VB variances γ) of

    F(u, θ) = u^T K_θ^{-1} u + Σ_i L_i(u_i) + C(θ) + P(θ) + const,

  criterion    L_i(u)                       C(θ) (concave)            P(θ)          const
  ``mkl``      2 ℓ_i(u)                     -                          λ Σ_m θ_m^p   -            (eq. 3)
  ``joint_map`` 2 ℓ_i(u)                    log|K_θ|                   -             -            (eq. 4)
  ``mlm``      (y_i - u)²/σ² + log 2πσ²     log|K_θ + σ² I|            -             -n log σ²    (eq. 6)
  ``vb``       s_i²/γ_i + ℓ_lin(u_i)        log|K_θ + Γ|               -             -log|Γ| + Σ h(γ_i)  (eq. 10)

with ℓ_i = -log P(y_i | u_i) (or a loss such as the smoothed hinge).  min_u F is then φ_MKL,
φ_MAP, φ_MLM = -2 log N(y | 0, K_θ + σ² I) and φ(γ) of VB (``inference/vb.py``) exactly:
min_u [u^T K^{-1} u + ||y - u||²/σ²] = y^T (K + σ² I)^{-1} y.  u^T K_θ^{-1} u is jointly convex in
(u, θ) (a matrix-fractional function), P is convex for p >= 1, so MKL is jointly convex for a
convex loss; C is concave (log-det of an affine function of θ, and of (θ, γ) jointly).

**Algorithm 1** (double loop; Nickisch & Seeger 2011, Sec. 3), per outer iteration:
  1. (optional) a few Newton steps in u alone;
  2. refit the upper bound: C(θ) <= C(θ_k) + c^T (θ - θ_k), c_m = tr((K_θk + D)^{-1} K_m) (D = 0,
     σ² I or Γ); for VB also γ_i = 1/G'(s_i² + z_i), z = diag((K_θ^{-1} + Γ^{-1})^{-1}) (the
     double-loop refit of ``vb.py``, an MM step in γ);
  3. the joint Newton direction in (u, t), t = log θ (log-parametrisation for θ >= 0), of the
     bound S(u, θ) = u^T K_θ^{-1} u + Σ L(u) + c^T θ + P(θ);
  4. line search (Armijo backtracking) on S along the direction.
Because S >= F with equality at (u_k, θ_k), F decreases monotonically (``trace``).  In t the
Hessian of S is diag(θ) H_θθ diag(θ) + diag(θ ∘ ∂_θ S); the second term can be negative, so it is
replaced by its positive part: the joint matrix stays positive (semi)definite (the (u, θ) Hessian
of the convex S is), the direction is a descent direction, and at an interior stationary point
(∂_θ S = 0) the step is the exact Newton step.  Weights that go to zero (sparse MKL) shrink by a
constant factor per iteration.  Derivatives, with α = K_θ^{-1} u and v_m = K_m α:

  ∂_u S = 2α + L',  ∂_θm S = -α^T K_m α + c_m + P',  ∂²_uu S = 2 K_θ^{-1} + diag L'',
  ∂²_uθm S = -2 K_θ^{-1} v_m,  ∂²_θmθl S = 2 v_m^T K_θ^{-1} v_l + δ_ml P''.

The (n + M) system is solved by eliminating u with (2K^{-1} + W)^{-1} = ½[K - K S (I + S K S)^{-1} S K],
S = (W/2)^{1/2}, so K^{-1} appears only applied to the M vectors v_m.  Likelihoods with a majoriser
curvature (Laplace, Student-t, hinge) use it for L'' (then the step is a descent step of a
majoriser).  All of this is dense, O(n³ + M n²) per iteration, as in the paper.

**Alternating minimisation** (the compared method): minimise F over u at fixed θ (Newton to
convergence; VB: with the γ refits), then over θ at fixed u (Newton in t with the bound refitted at
every step), and repeat.

**Quasi-Newton on φ(θ)** (``learn_weights``): φ(θ) = min_u F(u, θ) by :func:`criterion_at` with its
envelope gradient, minimised over log θ by the package's outer optimiser (``gpmodels.optimize``).

A small jitter ε I (``jitter`` times the mean diagonal of Σ_m K_m) is added to K_θ and is part of
the criterion (the cvxpy references use the same matrix).
"""

from __future__ import annotations

import time

import attrs
import numpy as np
import scipy.linalg as sla

from gpmodels.errors import InputError
from gpmodels.inference.execution_plan import dense_blas
from gpmodels.likelihoods.diagonal import DiagonalLikelihood
from gpmodels.linalg.dense_posterior import DensePosterior
from gpmodels.operators.sum import Sum, check_weights
from gpmodels.optimize.checkpoint import Checkpointing, digest_array, probe_operator
from gpmodels.optimize.driver import OptimizeResult, minimize, outer_options
from gpmodels.optimize.lbfgs import OuterOptions, Trial
from gpmodels.validation import nonnegative_int, nonnegative_number, number, one_of, positive_int, positive_number

__all__ = [
    "CRITERIA",
    "MKLOptions",
    "KernelLearningResult",
    "algorithm1",
    "alternating",
    "criterion_at",
    "KernelCriterion",
    "WeightsObjective",
    "learn_weights",
]

CRITERIA = ("mkl", "joint_map", "mlm", "vb")


@attrs.frozen
class MKLOptions:
    """Criterion and its constants; iteration limits and tolerances of the two solvers."""

    criterion: str = attrs.field(default="mkl", validator=one_of(CRITERIA))
    lam: float = attrs.field(default=1.0, validator=nonnegative_number())  # λ of MKL
    p: float = attrs.field(default=1.0, validator=number(1))  # the penalty λ||θ||_p^p is convex only for p >= 1
    jitter: float = attrs.field(default=1e-8, validator=nonnegative_number())
    max_iter: int = attrs.field(default=300, validator=positive_int())
    # stop when the relative decrease of F is below tol (and the gradient below grad_tol)
    tol: float = attrs.field(default=1e-12, validator=nonnegative_number())
    grad_tol: float = attrs.field(default=1e-8, validator=nonnegative_number())
    # Algorithm 1, line 2: Newton steps in u alone per outer iteration
    inner_newton: int = attrs.field(default=1, validator=nonnegative_int())
    inner_max: int = attrs.field(default=100, validator=positive_int())  # alternating: Newton steps per block
    max_log_step: float = attrs.field(default=3.0, validator=positive_number())  # cap on |Δ log θ| per step
    time_limit: float = attrs.field(default=float("inf"), validator=positive_number(finite=False))  # seconds


@attrs.frozen
class KernelLearningResult:
    """Learned weights θ, the dual α (u = K_θ α), F per iteration with cumulative time."""

    theta: np.ndarray
    alpha: np.ndarray  # (n, 1)
    u: np.ndarray  # (n, 1)
    criterion: float
    trace: tuple[float, ...]
    times: tuple[float, ...]
    iterations: int
    converged: bool
    method: str
    gamma: np.ndarray | None  # VB: the variational γ (n, 1)
    message: str


#: the joint line search of Algorithm 1: Armijo constant and evaluations of S
LINE_SEARCH_ARMIJO, LINE_SEARCH_EVALS = 1e-4, 40


class KernelCriterion:
    """One criterion on fixed base matrices K_m: F, the bound S, their derivatives and the refits."""

    def __init__(self, op: Sum, lik: DiagonalLikelihood, Y, options: MKLOptions):
        if not op.is_kernel_sum:
            raise InputError(f"kernel-weight learning needs a Sum operator (K_θ = Σ θ_m K_m); got {type(op).__name__}")
        if op.n_classes != 1:
            raise InputError(
                f"kernel-weight learning is for a single latent function (n_classes = 1); got {op.n_classes}"
            )
        if lik.hessian_form != "diagonal":
            raise InputError(f"kernel-weight learning needs a factorised likelihood or loss; got {type(lik).__name__}")
        crit = options.criterion
        if crit == "mlm" and not lik.conjugate:
            raise InputError(
                f"the `mlm` criterion is the Gaussian marginal likelihood (eq. 6); got {type(lik).__name__} "
                f"(use `vb` for other likelihoods)"
            )
        if crit == "vb" and not lik.has_super_gaussian:
            raise InputError(
                f"the `vb` criterion needs a likelihood with a super-Gaussian form; got {type(lik).__name__}"
            )
        self.lik, self.opts, self.crit = lik, options, crit
        self.n = op.n_points
        self.blas = dense_blas(self.n)  # the BLAS threads of its dense factors (the plan's dense_blas)
        self.Y = lik.check_targets(Y, self.n, 1)
        self.Ks = np.stack([k.class_block(0) for k in op.ops])  # (M, n, n)
        self.M = len(op.ops)
        self.eps = options.jitter * float(np.mean(np.einsum("mii->i", self.Ks)))

    # ------------------------------------------------------------------ pieces
    def K(self, theta):
        K = np.einsum("m,mij->ij", theta, self.Ks)
        K[np.diag_indices(self.n)] += self.eps
        return K

    def gamma(self, state):
        """VB: γ = 1/G'(x) from the variational state x (n, 1); None for the other criteria."""
        return None if state is None else 1.0 / self.lik.sg_dG(state, self.Y)

    def D(self, state):
        """Diagonal added inside the concave log-det (None for MKL)."""
        if self.crit == "mkl":
            return None
        if self.crit == "joint_map":
            return np.zeros(self.n)
        if self.crit == "mlm":
            return np.full(self.n, self.lik.noise)
        return self.gamma(state)[:, 0]

    def loss(self, u, state):
        """L, L', L'' (curvature) elementwise, shape (n, 1)."""
        lik, Y = self.lik, self.Y
        if self.crit == "vb":
            g = self.gamma(state)
            s = lik.sg_s(u, Y)
            sp = -1.0 if lik.vb_residual else 1.0
            lin = lik.sg_lin(u, Y)
            dlin = 0.0 if lik.vb_residual else -Y
            return s**2 / g + lin, 2 * s * sp / g + dlin, 2.0 / g
        if lik.smooth and lik.log_concave:  # exact (semismooth for the hinge: W = 0 is fine here)
            w = np.maximum(lik.hessian_diag(u, Y), 0.0)
        else:  # Laplace kink, Student-t: the majoriser curvature
            w = lik.hessian_factor(u, Y).W(np.ones_like(u))
        return 2 * lik.value_per_point(u, Y)[:, None], 2 * lik.gradient(u, Y), 2 * w

    def penalty(self, theta):
        if self.crit != "mkl":
            z = np.zeros_like(theta)
            return 0.0, z, z
        lam, p = self.opts.lam, self.opts.p
        return lam * float(np.sum(theta**p)), lam * p * theta ** (p - 1), lam * p * (p - 1) * theta ** (p - 2)

    def const(self, state):
        if self.crit == "mlm":
            return -self.n * np.log(self.lik.noise)
        if self.crit == "vb":  # -log|Γ| + Σ h(γ_i), h = G(x) - x G'(x)
            x = state
            dG = self.lik.sg_dG(x, self.Y)
            return float(np.sum(np.log(dG))) + float(np.sum(self.lik.sg_G(x, self.Y) - x * dG))
        return 0.0

    def concave(self, theta, state):
        """C(θ) and the tangent c_m = tr((K_θ + D)^{-1} K_m) (None for MKL)."""
        d = self.D(state)
        if d is None:
            return 0.0, np.zeros(self.M)
        A = self.K(theta) + np.diag(d)
        cf = sla.cho_factor(A, lower=True)
        logdet = 2.0 * float(np.sum(np.log(np.diag(cf[0]))))
        Ainv = sla.cho_solve(cf, np.eye(self.n))
        return logdet, np.einsum("ij,mij->m", Ainv, self.Ks)

    def quad(self, u, theta):
        """u^T K_θ^{-1} u, α = K_θ^{-1} u and the Cholesky factor."""
        cf = sla.cho_factor(self.K(theta), lower=True)
        alpha = sla.cho_solve(cf, u)
        return float(u[:, 0] @ alpha[:, 0]), alpha, cf

    def F(self, u, theta, state) -> float:
        """The criterion itself (no bound)."""
        q, _, _ = self.quad(u, theta)
        L = float(np.sum(self.loss(u, state)[0]))
        return q + L + self.concave(theta, state)[0] + self.penalty(theta)[0] + self.const(state)

    def S(self, u, theta, state, c) -> float:
        """The bound with C linearised (up to its constant): the line-search objective."""
        q, _, _ = self.quad(u, theta)
        return q + float(np.sum(self.loss(u, state)[0])) + float(c @ theta) + self.penalty(theta)[0]

    # ------------------------------------------------------------------ VB state
    def init_state(self, u, theta):
        """VB: x = s(u)² + diag K_θ (γ from the prior variances); None otherwise."""
        if self.crit != "vb":
            return None
        return self.lik.sg_s(u, self.Y) ** 2 + np.diag(self.K(theta))[:, None]

    def refit_state(self, u, theta, state):
        """γ_i = 1/G'(s_i² + z_i), z = diag((K^{-1} + Γ^{-1})^{-1}) at (u, θ, γ): an MM step in γ.
        Returns the new state x = s² + z."""
        if self.crit != "vb":
            return None
        gamma = self.gamma(state)[:, 0]
        post = DensePosterior(self.K(theta), 1.0 / np.sqrt(gamma), self.blas)  # B = I + Γ^{-1/2} K Γ^{-1/2}
        z = np.maximum(post.sigma_diag(), 0.0)[:, None]
        return self.lik.sg_s(u, self.Y) ** 2 + z

    # ------------------------------------------------------------------ Newton directions
    def direction(self, u, theta, state, c, blocks: str):
        """Newton direction of S in (u, t = log θ) for ``blocks`` in {"joint", "u", "t"}; returns
        (du, dt, directional derivative)."""
        q, alpha, cf = self.quad(u, theta)
        _, L1, L2 = self.loss(u, state)
        _, P1, P2 = self.penalty(theta)
        V = np.einsum("mij,j->im", self.Ks, alpha[:, 0])  # v_m = K_m α, (n, M)
        g_u = 2 * alpha + L1
        g_th = -np.einsum("im,i->m", V, alpha[:, 0]) + c + P1
        g_t = theta * g_th
        if blocks == "t":
            KiV = sla.cho_solve(cf, V)
            H = 2 * theta[:, None] * (V.T @ KiV) * theta[None, :] + np.diag(theta**2 * P2 + np.maximum(g_t, 0.0))
            dt = -np.linalg.solve(H + 1e-8 * max(np.trace(H) / self.M, 1e-300) * np.eye(self.M), g_t)
            return np.zeros_like(u), dt, float(g_t @ dt)
        post = DensePosterior(self.K(theta), np.sqrt(np.maximum(L2[:, 0], 0.0) / 2.0), self.blas)  # B = I + S K S

        def A(x):  # (2 K^{-1} + W)^{-1} x = ½ [K x - K S B^{-1} S K x]
            return 0.5 * post.apply_sigma(x)

        if blocks == "u":
            du = -A(g_u)
            return du, np.zeros(self.M), float(g_u[:, 0] @ du[:, 0])
        KiV = sla.cho_solve(cf, V)
        H_ut = -2 * KiV * theta[None, :]  # (n, M)
        H_tt = 2 * theta[:, None] * (V.T @ KiV) * theta[None, :] + np.diag(theta**2 * P2 + np.maximum(g_t, 0.0))
        AH = A(H_ut)
        Ag = A(g_u)
        Schur = H_tt - H_ut.T @ AH
        # S is homogeneous of degree 1 along (u, θ) where the loss has no curvature (hinge, p = 1), so
        # the Schur complement can be singular: Levenberg-Marquardt ridges of growing size, and the
        # u-block step if round-off still breaks positivity.
        Schur = 0.5 * (Schur + Schur.T)
        scale = max(np.trace(Schur) / self.M, 1e-300)
        rhs = -g_t + H_ut.T @ Ag[:, 0]
        for ridge in (1e-14, 1e-10, 1e-6):
            dt = np.linalg.solve(Schur + ridge * scale * np.eye(self.M), rhs)
            du = -Ag - AH @ dt[:, None]
            slope = float(g_u[:, 0] @ du[:, 0] + g_t @ dt)
            if np.isfinite(slope) and slope < 0 and np.max(np.abs(dt)) < 1e3:
                break
        else:
            du = -Ag
            dt = np.zeros(self.M)
            slope = float(g_u[:, 0] @ du[:, 0])
        return du, dt, slope

    def line_search(self, u, theta, state, c, du, dt, slope):
        """Backtracking on S along (u + λ du, θ exp(λ dt)) (Armijo constant ``LINE_SEARCH_ARMIJO``, at
        most ``LINE_SEARCH_EVALS`` evaluations); returns (λ, u', θ', whether S decreased)."""
        armijo, max_evals = LINE_SEARCH_ARMIJO, LINE_SEARCH_EVALS
        big = np.max(np.abs(dt), initial=0.0)
        if big > self.opts.max_log_step:
            du, dt, slope = (
                du * self.opts.max_log_step / big,
                dt * self.opts.max_log_step / big,
                slope * self.opts.max_log_step / big,
            )
        s0 = self.S(u, theta, state, c)
        lam = 1.0
        roundoff = 64 * np.finfo(float).eps * max(1.0, abs(s0))
        for _ in range(max_evals):
            un, thn = u + lam * du, theta * np.exp(lam * dt)
            try:
                sn = self.S(un, thn, state, c)
            except (np.linalg.LinAlgError, ValueError):
                sn = np.inf
            if np.isfinite(sn) and (sn <= s0 + armijo * lam * slope or (sn <= s0 + roundoff and lam < 1e-3)):
                return lam, un, thn, sn < s0 + roundoff
            lam *= 0.5
        return 0.0, u, theta, False


def _start(crit: KernelCriterion, theta0):
    theta = check_weights(theta0, crit.M)
    u = np.zeros((crit.n, 1))
    state = crit.init_state(u, theta)
    return theta, u, state


def _result(crit, method, theta, u, state, trace, times, end):
    """The result at (θ, u, state) with the traces and ``end`` = (iterations, converged, message)."""
    it, converged, message = end
    _, alpha, _ = crit.quad(u, theta)
    return KernelLearningResult(
        theta, alpha, u, trace[-1], tuple(trace), tuple(times), it, converged, method, crit.gamma(state), message
    )


def _grad_norm(crit, u, theta, state, c):
    _, alpha, _ = crit.quad(u, theta)
    _, L1, _ = crit.loss(u, state)
    V = np.einsum("mij,j->im", crit.Ks, alpha[:, 0])
    g_th = -np.einsum("im,i->m", V, alpha[:, 0]) + c + crit.penalty(theta)[1]
    # projected gradient in θ >= 0 (KKT): g_m where θ_m > g_m, else θ_m.  The log-space gradient θ ∘ g
    # would also vanish at θ_m -> 0 with g_m < 0, which is not a minimum.
    pg = np.where(theta - g_th > 0, g_th, theta)
    return float(np.sqrt(np.sum((2 * alpha + L1) ** 2) / crit.n + np.sum(pg**2)))


def _begin(op: Sum, lik: DiagonalLikelihood, Y, options: MKLOptions | None, theta0):
    """The options, the criterion and the starting point (θ, u, γ-state) shared by both algorithms."""
    opts = options or MKLOptions()
    crit = KernelCriterion(op, lik, Y, opts)
    return opts, crit, _start(crit, op.weights if theta0 is None else theta0)


def _outer_loop(crit: KernelCriterion, opts: MKLOptions, method: str, start, iteration, on_iteration):
    """The outer loop of both algorithms from ``start`` = (θ, u, state): ``iteration(crit, opts, u, θ, state,
    F) -> (u, θ, state, F', stop)`` does one outer iteration from the criterion value F and returns the new
    value and, where it has converged, the message (None: go on).  The loop keeps the traces, reports
    progress, and stops at convergence, ``max_iter`` or the time limit."""
    theta, u, state = start
    t0 = time.perf_counter()
    trace, times = [crit.F(u, theta, state)], [0.0]
    converged, message, it = False, "maximum number of outer iterations reached", 0
    for it in range(1, opts.max_iter + 1):  # noqa: B007 - the count is reported after the loop
        u, theta, state, F, stop = iteration(crit, opts, u, theta, state, trace[-1])
        trace.append(F)
        times.append(time.perf_counter() - t0)
        if on_iteration is not None:
            on_iteration(it, F)
        if stop is not None:
            converged, message = True, stop
            break
        if times[-1] > opts.time_limit:
            message = "time limit"
            break
    return _result(crit, method, theta, u, state, trace, times, (it, converged, message))


def _algorithm1_iteration(crit, opts, u, theta, state, F_prev):
    """One outer iteration of Algorithm 1 (lines 2-5) and its stopping rules."""
    for _ in range(opts.inner_newton):  # line 2 (optional)
        _, c = crit.concave(theta, state)
        du, dt, slope = crit.direction(u, theta, state, c, "u")
        if slope >= 0:
            break
        _, u, theta, _ = crit.line_search(u, theta, state, c, du, dt, slope)
    state = crit.refit_state(u, theta, state) if crit.crit == "vb" else state  # line 3: refit the bound
    _, c = crit.concave(theta, state)
    du, dt, slope = crit.direction(u, theta, state, c, "joint")  # line 4
    lam, u, theta, ok = crit.line_search(u, theta, state, c, du, dt, slope)  # line 5
    F = crit.F(u, theta, state)
    scale = max(1.0, abs(F))
    stop = None
    if lam == 0.0 or not ok:
        stop = "no further decrease along the Newton direction (round-off level)"
    elif (F_prev - F) / scale <= opts.tol and _grad_norm(crit, u, theta, state, c) <= opts.grad_tol * scale:
        stop = "relative decrease and gradient below tolerance"
    return u, theta, state, F, stop


def algorithm1(
    op: Sum, lik: DiagonalLikelihood, Y, options: MKLOptions | None = None, *, theta0=None, on_iteration=None
) -> KernelLearningResult:
    """Nickisch & Seeger (2011), Algorithm 1 (see the module docstring).  ``on_iteration(iteration, F)``
    is called after each outer iteration with the criterion F (progress)."""
    opts, crit, start = _begin(op, lik, Y, options, theta0)
    return _outer_loop(crit, opts, "algorithm1", start, _algorithm1_iteration, on_iteration)


def _block_newton(crit, u, theta, state, blocks, max_steps, refit_c):
    """Newton in one block until its decrease stalls; the bound c is refitted per step when ``refit_c``."""
    _, c = crit.concave(theta, state)
    for _ in range(max_steps):
        if refit_c:
            _, c = crit.concave(theta, state)
        du, dt, slope = crit.direction(u, theta, state, c, blocks)
        if not slope < -1e-15 * max(1.0, abs(crit.S(u, theta, state, c))):
            break
        lam, u, theta, ok = crit.line_search(u, theta, state, c, du, dt, slope)
        if lam == 0.0 or not ok:
            break
        if -slope * lam < 1e-14 * max(1.0, abs(crit.S(u, theta, state, c))):
            break
    return u, theta


def _alternating_iteration(crit, opts, u, theta, state, F_prev):
    """One round of alternating minimisation: u (and γ) at fixed θ, then θ at fixed u."""
    u, theta = _block_newton(crit, u, theta, state, "u", opts.inner_max, False)
    if crit.crit == "vb":
        state = crit.refit_state(u, theta, state)
        u, theta = _block_newton(crit, u, theta, state, "u", opts.inner_max, False)
    u, theta = _block_newton(crit, u, theta, state, "t", opts.inner_max, True)
    F = crit.F(u, theta, state)
    stop = "relative decrease below tolerance" if (F_prev - F) / max(1.0, abs(F)) <= opts.tol else None
    return u, theta, state, F, stop


def alternating(
    op: Sum, lik: DiagonalLikelihood, Y, options: MKLOptions | None = None, *, theta0=None, on_iteration=None
) -> KernelLearningResult:
    """Alternating minimisation: u (and γ) at fixed θ to convergence, then θ at fixed u; repeat.
    ``on_iteration(iteration, F)``: as in :func:`algorithm1`."""
    opts, crit, start = _begin(op, lik, Y, options, theta0)
    return _outer_loop(crit, opts, "alternating", start, _alternating_iteration, on_iteration)


def criterion_at(
    op: Sum, lik: DiagonalLikelihood, Y, theta, options: MKLOptions | None = None, *, return_fit: bool = False
):
    """φ(θ) = min_u F(u, θ) (VB: min over γ too) at fixed weights, by Newton in u (and γ refits), and
    its gradient by log θ: θ_m (-α^T K_m α + c_m + P'(θ_m)) at the minimiser (envelope theorem).
    With ``return_fit`` also a :class:`KernelLearningResult` holding α, u (and γ) at θ."""
    opts = options or MKLOptions()
    crit = KernelCriterion(op, lik, Y, opts)
    theta, u, state = _start(crit, theta)
    prev = np.inf
    for it in range(1, opts.max_iter + 1):  # noqa: B007 - the count is reported after the loop
        u, _ = _block_newton(crit, u, theta, state, "u", opts.inner_max, False)
        val = crit.F(u, theta, state)
        if crit.crit != "vb" or prev - val <= opts.tol * max(1.0, abs(val)):
            break
        prev = val
        state = crit.refit_state(u, theta, state)
    _, alpha, _ = crit.quad(u, theta)
    _, c = crit.concave(theta, state)
    V = np.einsum("mij,j->im", crit.Ks, alpha[:, 0])
    g_th = -np.einsum("im,i->m", V, alpha[:, 0]) + c + crit.penalty(theta)[1]
    if return_fit:
        fit = KernelLearningResult(
            theta, alpha, u, val, (val,), (0.0,), 0, True, "fixed", crit.gamma(state), "criterion at fixed weights"
        )
        return val, theta * g_th, fit
    return val, theta * g_th


class WeightsObjective:
    """φ(θ) = min_u F(u, θ) by t = log θ (:func:`criterion_at`) as an outer-optimiser objective
    (``optimize/objective.py``): every evaluation refits u (and γ) from scratch, so there is no inner
    state; an evaluation whose Cholesky factors fail is a failed one (a right bracket)."""

    def __init__(self, op: Sum, lik: DiagonalLikelihood, Y, options: MKLOptions | None = None):
        self.options = options or MKLOptions()
        crit = KernelCriterion(op, lik, Y, self.options)  # validates op, lik and Y
        self.op, self.lik, self.Y = op, lik, crit.Y

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f"log_theta{m}" for m in range(self.op.n_kernels))

    def evaluate(self, t, seed=None) -> Trial:
        try:
            value, grad = criterion_at(self.op, self.lik, self.Y, np.exp(t), self.options)
        except (np.linalg.LinAlgError, FloatingPointError) as exc:
            return Trial(float("nan"), None, False, None, {"message": str(exc)})
        ok = bool(np.isfinite(value) and np.all(np.isfinite(grad)))
        return Trial(float(value), np.asarray(grad, dtype=np.float64), ok, None, {})

    def identity(self) -> dict:
        return {
            "criterion": f"kernel_weights/{self.options.criterion}",
            "n": self.op.n_points,
            "targets": digest_array(self.Y),
            "likelihood": repr(self.lik),
            "kernels": self.op.n_kernels,
            "options": attrs.asdict(self.options),
        }

    def probe(self) -> np.ndarray:
        return probe_operator(self.op)


def learn_weights(
    op: Sum,
    lik: DiagonalLikelihood,
    Y,
    options: MKLOptions | None = None,
    *,
    outer: OuterOptions | None = None,
    checkpoint: Checkpointing | None = None,
    on_iteration=None,
) -> tuple[OptimizeResult, KernelLearningResult]:
    """Minimise φ(θ) over t = log θ by :func:`gpmodels.optimize.driver` (``outer``, default
    :func:`~gpmodels.optimize.driver.outer_options` () (100 iterations, tol 1e-6); box: log θ0 ± 10; ``checkpoint``,
    ``on_iteration``: as there), the quasi-Newton alternative to :func:`algorithm1`; returns the
    optimiser's result and the fit (α, u, γ) at the learned weights."""
    objective = WeightsObjective(op, lik, Y, options)
    result = minimize(
        objective,
        np.log(op.weights),
        objective.names,
        options=outer or outer_options(),
        checkpoint=checkpoint,
        on_iteration=on_iteration,
    )
    _, _, fit = criterion_at(op, lik, objective.Y, np.exp(result.x), objective.options, return_fit=True)
    return result, attrs.evolve(
        fit,
        trace=result.values,
        iterations=result.iterations,
        converged=result.converged,
        method="lbfgs",
        message=result.message,
        times=tuple(r.elapsed for r in result.trace),
    )
