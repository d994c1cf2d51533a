"""Variational bound (VB) on the marginal likelihood for super-Gaussian likelihoods, double loop.

Nickisch & Seeger (2011), Sec. 2.3, eq. (10)-(12); Nickisch & Seeger (2009).  Every likelihood with
a super-Gaussian form -2 log P(y|u) = G(s²) + ℓ_lin(u) (``likelihoods/diagonal.py``; G concave)
satisfies P(y_i|u_i) >= exp(b_i u_i - s_i²/(2γ_i) - h_i(γ_i)/2) for all γ_i > 0, so with a GP prior
N(u | 0, K) (single latent function, Γ = diag γ):

  -2 log P(y | θ) <= φ(γ) = log|K + Γ| - log|Γ| + Σ_i h_i(γ_i) + Q(γ),   φ_VB(θ) = min_γ φ(γ),

  residual form (s = y - u):  Q = min_u u^T K^{-1} u + (y - u)^T Γ^{-1} (y - u) = y^T (K + Γ)^{-1} y,
  logistic (s = u, b = y/2):  Q = min_u u^T K^{-1} u + u^T Γ^{-1} u - 2 b^T u = -b^T (K^{-1} + Γ^{-1})^{-1} b.

(DESIGN.md writes the bound with a constant b for every likelihood; for the regression likelihoods
the bound is Gaussian in the residual, i.e. b_i = y_i/γ_i depends on γ and the term y_i²/γ_i
belongs to the bound: Q above is the complete statement.)  All constants are kept, so φ_VB is an
upper bound on -2 log P(y | θ) itself (checked by quadrature in the tests) and equals it for the
Gaussian likelihood (γ = σ², eq. (6)).  h(γ) = G(x) - x G'(x) at the x with G'(x) = 1/γ.

Double loop (Nickisch & Seeger 2009; Seeger & Nickisch 2011): log|K + Γ| - log|Γ| =
log|K| + log|K^{-1} + Γ^{-1}| is concave in π = 1/γ, bounded by its tangent z^T π + const with
z = diag((K^{-1} + Γ^{-1})^{-1}) (the marginal variances).  Outer loop: refit z (one Cholesky
factor of B = I + Γ^{-1/2} K Γ^{-1/2}).  Inner loop: the minimisation over γ is then closed form
and leaves the variance-smoothed MAP problem min_u u^T K^{-1} u + Σ_i G(s_i² + z_i) + ℓ_lin(u_i)
(``likelihoods/smoothed.py``), solved by Newton–CG warm-started at the current α; the new
γ_i = 1/G'(s_i² + z_i).  φ(γ) decreases monotonically (recorded in ``VBResult.trace``).

Gradient (at the optimal γ, whose own derivative vanishes), with α = (K + Γ)^{-1} y
(residual form) or α = (K + Γ)^{-1} Γ b (logistic), u = K α the posterior mean:

  ∂φ_VB/∂θ_j = tr((K + Γ)^{-1} K_j) - α^T K_j α,     ∂φ_VB/∂ψ = Σ_i ∂G/∂ψ (x_i),  x_i = s(u_i)² + z_i

(the second since ∂h(γ)/∂ψ = ∂G/∂ψ at the touching x, by Legendre duality).  Hyperparameter
learning minimises φ_VB by the package's outer optimiser (``gpmodels.optimize.driver``) over
(operator parameters, likelihood parameters): :class:`VBObjective`.
This is the exact (Cholesky, O(n³)) path; K̃ = op.class_block(0).
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.inference.execution_plan import dense_blas
from gpmodels.inference.map.newton_cg import NewtonOptions, newton_cg
from gpmodels.likelihoods.base import Likelihood
from gpmodels.likelihoods.diagonal import DiagonalLikelihood
from gpmodels.likelihoods.smoothed import VarianceSmoothed
from gpmodels.linalg.dense_posterior import DensePosterior
from gpmodels.operators.base import Operator
from gpmodels.optimize.checkpoint import Checkpointing
from gpmodels.optimize.driver import OptimizeResult, minimize_joint
from gpmodels.optimize.lbfgs import OuterOptions
from gpmodels.optimize.objective import JointObjective
from gpmodels.validation import instance_of, nonnegative_number, positive_int

__all__ = [
    "VBOptions",
    "VBResult",
    "GammaBound",
    "gamma_bound",
    "vb_criterion",
    "VBObjective",
    "learn_vb",
    "check_vb_likelihood",
]


@attrs.frozen
class VBOptions:
    """Outer-loop iterations and relative tolerance on φ; inner Newton–CG settings."""

    max_outer: int = attrs.field(default=100, validator=positive_int())
    tol: float = attrs.field(default=1e-10, validator=nonnegative_number())
    newton: NewtonOptions = attrs.field(
        default=NewtonOptions(
            max_iter=100, cg_max_iter=1000, cg_tol=1e-12, cg_forcing=0.01, grad_tol=1e-9, phi_rtol=0.0
        ),
        validator=instance_of(NewtonOptions),
    )


@attrs.frozen
class GammaBound:
    """φ(γ) and the quantities of one Cholesky factor of B = I + Γ^{-1/2} K Γ^{-1/2}."""

    phi: float
    logdet_B: float  # log|K + Γ| - log|Γ|
    h_sum: float
    Q: float
    alpha: np.ndarray  # (n, 1), u = K α the minimiser of the γ-bound
    z: np.ndarray  # (n, 1) marginal variances diag((K^{-1} + Γ^{-1})^{-1})
    R: np.ndarray  # (n, n) (K + Γ)^{-1}


@attrs.frozen
class VBResult:
    """φ_VB(θ) (upper bound on -2 log P(y|θ)), gradient by ``param_names``, γ, z, α and the trace."""

    phi: float
    gradient: np.ndarray | None
    param_names: tuple[str, ...]
    gamma: np.ndarray
    z: np.ndarray
    alpha: np.ndarray
    u: np.ndarray
    trace: tuple[float, ...]
    outer_iterations: int
    converged: bool
    seconds: float


def check_vb_likelihood(lik) -> None:
    if not isinstance(lik, Likelihood) or not lik.has_super_gaussian:
        raise InputError(
            f"VB needs a likelihood with a super-Gaussian form (logistic, gaussian, laplace, student_t); "
            f"got {type(lik).__name__}"
        )


def gamma_bound(K: np.ndarray, lik: DiagonalLikelihood, Y: np.ndarray, x: np.ndarray) -> GammaBound:
    """φ(γ) at γ = 1/G'(x) (elementwise), K the n x n prior covariance, Y (n, 1), x (n, 1) >= 0."""
    dG = lik.sg_dG(x, Y)
    h = lik.sg_G(x, Y) - x * dG  # h(γ) = G(x) - x G'(x)  (Legendre)
    post = DensePosterior(K, np.sqrt(dG[:, 0]), dense_blas(len(K)))  # B = I + Γ^{-1/2} K Γ^{-1/2}
    logdet = post.logdet  # log|K + Γ| - log|Γ|
    R = post.R  # (K + Γ)^{-1} = Γ^{-1/2} B^{-1} Γ^{-1/2}
    z = post.sigma_diag()[:, None]  # diag((K^{-1} + Γ^{-1})^{-1})
    if lik.vb_residual:
        alpha = R @ Y  # (K + Γ)^{-1} y
        Q = float(Y[:, 0] @ alpha[:, 0])
    else:
        b = lik.sg_b(Y)
        Kb = K @ b
        alpha = b - R @ Kb  # (K + Γ)^{-1} Γ b
        Q = -float(b[:, 0] @ (K @ alpha)[:, 0])  # -b^T (K^{-1} + Γ^{-1})^{-1} b = -b^T K α
    hs = float(np.sum(h))
    return GammaBound(logdet + hs + Q, logdet, hs, Q, alpha, np.maximum(z, 0.0), R)


def _initial_x(K, lik, Y):
    """γ from the prior: x = s(0)² + diag K (u = 0, z = the prior variances)."""
    return lik.sg_s(np.zeros_like(Y), Y) ** 2 + np.diag(K)[:, None]


def vb_criterion(
    op: Operator, lik: DiagonalLikelihood, Y, options: VBOptions | None = None, *, x0=None, gradient: bool = True
) -> VBResult:
    """φ_VB(θ) by the double loop, with its gradient; ``x0`` (n, 1) warm-starts the variational state."""
    check_vb_likelihood(lik)
    opts = options or VBOptions()
    t0 = time.perf_counter()
    n = op.n_points
    Y = lik.check_targets(Y, n, op.n_classes)
    K = op.class_block(0)
    x = _initial_x(K, lik, Y) if x0 is None else np.asarray(x0, dtype=np.float64).reshape(n, 1)
    trace, converged, it = [], False, 0
    gb = gamma_bound(K, lik, Y, x)
    trace.append(gb.phi)
    for it in range(1, opts.max_outer + 1):  # noqa: B007 - the count is reported after the loop
        smoothed = VarianceSmoothed(lik, gb.z)  # Nickisch & Seeger 2011, eq. (12): inner problem at fixed z
        inner = newton_cg(op, smoothed, Y, opts.newton, alpha0=gb.alpha)
        x = lik.sg_s(inner.u, Y) ** 2 + gb.z  # γ_i = 1/G'(s_i² + z_i)
        gb = gamma_bound(K, lik, Y, x)
        trace.append(gb.phi)
        if abs(trace[-2] - trace[-1]) <= opts.tol * max(1.0, abs(trace[-1])):
            converged = True
            break
    u = K @ gb.alpha
    names = tuple(op.param_names) + tuple(lik.param_names)
    grad = None
    if gradient:
        n_id = np.eye(n)[:, None, :]
        g_op = op.grad_trace(gb.R[:, None, :], n_id) - op.grad_trace(gb.alpha, gb.alpha)
        x_post = lik.sg_s(u, Y) ** 2 + gb.z
        dpsi = lik.sg_dpsi(x_post, Y)
        g_lik = dpsi.reshape(dpsi.shape[0], -1).sum(axis=1) if dpsi.shape[0] else np.zeros(0)
        grad = np.concatenate([g_op, g_lik])
    gamma = 1.0 / lik.sg_dG(x, Y)
    return VBResult(
        gb.phi, grad, names, gamma, gb.z, gb.alpha, u, tuple(trace), it, converged, time.perf_counter() - t0
    )


class VBObjective(JointObjective):
    """φ_VB over the joint log-space vector as an outer-optimiser objective (``optimize/objective.py``):
    the inner state is the variational state {"x": s(u)² + z} (γ = 1/G'(x)), and every evaluation
    warm-starts the double loop at the seed the optimiser gives, so a resumed run reproduces the
    uninterrupted one."""

    criterion = "vb"

    def __init__(self, op: Operator, lik: DiagonalLikelihood, Y, options: VBOptions | None = None):
        check_vb_likelihood(lik)
        super().__init__(op, lik, Y, options or VBOptions())

    def _evaluate(self, op, lik, seed):
        res = vb_criterion(op, lik, self.Y, self.options, x0=None if seed is None else seed["x"])
        x = lik.sg_s(res.u, self.Y) ** 2 + res.z
        info = {
            "double_loop_iterations": res.outer_iterations,
            "double_loop_converged": res.converged,
            "seconds": res.seconds,
        }
        return res.phi, res.gradient, {"x": x}, info


def learn_vb(
    op: Operator,
    lik: DiagonalLikelihood,
    Y,
    options: VBOptions | None = None,
    *,
    outer: OuterOptions | None = None,
    bounds=None,
    checkpoint: Checkpointing | None = None,
    on_iteration=None,
) -> tuple[OptimizeResult, Operator, DiagonalLikelihood]:
    """Minimise φ_VB over the joint log-space vector by :func:`gpmodels.optimize.driver`, from the
    hyperparameters of ``op`` and ``lik`` (``outer``, default :func:`outer_options` () (100
    iterations, tol 1e-6); ``bounds`` default: the start ± 10 within the operator's own bounds;
    ``checkpoint``, ``on_iteration``: as there); returns (result, op, lik)."""
    return minimize_joint(
        VBObjective(op, lik, Y, options), bounds=bounds, outer=outer, checkpoint=checkpoint, on_iteration=on_iteration
    )
