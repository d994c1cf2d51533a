"""Laplace approximation to the log marginal likelihood and its exact gradient.

Rasmussen & Williams (2006), Sec. 3.4 (binary, Alg. 3.1/3.2), Sec. 3.5 (multiclass softmax,
Alg. 3.3; Williams & Barber 1998) and Sec. 5.5 (gradients, Alg. 5.1).  At the posterior mode
f̂ = K̃ α̂ (found by Newton–CG, Seeger 2008 Alg. 1) with W = ∇∇ Φ_lh(f̂) = V V^T:

    log q(y | θ) = -½ α̂^T f̂ - Φ_lh(f̂) - ½ log|B|,      B = I + V^T K̃ V    (R&W eq. 3.32 / 3.44)

(|B| = |I + K̃ W|).  With R = V B^{-1} V^T = W (I + K̃ W)^{-1} and Σ = (K̃^{-1} + W)^{-1} = K̃ - K̃ R K̃,
the gradient by a kernel hyperparameter θ_j (R&W eq. 5.22-5.24) is

    ∂ log q/∂θ_j = ½ α̂^T K̃_j α̂ - ½ tr(R K̃_j) + s2^T (I + K̃ W)^{-1} K̃_j α̂,
    s2 = ∂(-½ log|B|)/∂f̂ = -½ ∂_f tr(Σ W(f))           (implicit dependence through the mode)

and we use the adjoint form s2^T (I + K̃W)^{-1} K̃_j α̂ = t^T K̃_j α̂ with t = (I + W K̃)^{-1} s2 =
s2 - R K̃ s2, so every θ_j costs one ``grad_trace`` call together (no solve per θ_j as in R&W
Alg. 5.1 lines 11-15).  ∂_f tr(Σ W) is the likelihood's ``trace_hessian_derivative`` hook; per point i:

  diagonal W (logistic, Gaussian, Student-t):  Σ_ii ∂W_ii/∂f_i  (R&W Alg. 5.1 line 9, the third
                                               derivative of -log P);
  softmax, W_i = diag π_i - π_i π_i^T:         W_i (diag Σ_i - 2 Σ_i π_i), Σ_i the C x C block.

Likelihood hyperparameters ψ (noise variance, scales): with the mode equation f̂ + K̃ g(f̂; ψ) = 0,

    ∂ log q/∂ψ = -∂_ψ Φ_lh - ½ Σ_i Σ_ii ∂_ψ W_ii - t^T K̃ ∂_ψ g.

Two paths compute log|B|, tr(R K̃_j) and the blocks Σ_i:

W is the likelihood's ``exact_hessian_factor``; its structure picks the exact path
(``diagonal_W``, ``multinomial_pi``), never the likelihood's type.

* ``exact``: Cholesky factors.  Diagonal W: B = I + W^{1/2} K̃ W^{1/2} = L L^T (R&W Alg. 3.1; an LU
  of I + K̃ W when some W_ii < 0, Student-t).  Softmax with a class-diagonal prior: R&W Alg. 3.3,
  O(n³ C): B_c = I + D_c^{1/2} K̃_c D_c^{1/2} = L_c L_c^T, E_c = D_c^{1/2} B_c^{-1} D_c^{1/2},
  M M^T = Σ_c E_c, and

      log|B| = 2 Σ_c Σ_i log L_c,ii + 2 Σ_i log M_ii,

  because |I + K̃ W| = Π_c |B_c| · |I_n - Π^T (I + K̃ D)^{-1} K̃ Π| and the second factor is
  |Σ_c E_c| (Σ_c D_c = I).  R's class blocks are R_cc' = δ_cc' E_c - E_c (M M^T)^{-1} E_c'.
  Any other prior: dense nC x nC matrices.
* ``mvm``: only operator MVMs.  B is Jacobi-scaled (B̂ = D^{-1/2} B D^{-1/2}, D = diag B from the
  App. B preconditioner formula); Rademacher probes Z1 and the right-hand sides D^{-1/2} V^T K̃ Z2 are
  solved together by batched CG, whose coefficients give the Lanczos matrices of B̂ for stochastic
  Lanczos quadrature (log|B| = Σ log D + log|B̂|); tr(R K̃_j) ≈ (1/m) Σ_k z_k^T B̂^{-1} (D^{-1/2} V^T
  K̃_j V D^{-1/2}) z_k is one ``grad_trace``; Σ_i ≈ Hutchinson blocks of Σ Z2 = K̃ Z2 - K̃ V D^{-1/2}
  B̂^{-1} D^{-1/2} V^T K̃ Z2; t needs one more CG solve.  The probes come from
  ``np.random.default_rng(options.seed)`` at every evaluation, so the estimate is a deterministic
  function of θ (common random numbers for the outer optimiser).

Hyperparameter learning (``learn_laplace``) maximises log q by the package's outer optimiser
(``gpmodels.optimize.driver``: projected L-BFGS, checkpoints, progress) over one flat log-space
vector: the operator's parameters, then the likelihood's (:class:`LaplaceObjective`).
"""

from __future__ import annotations

import contextlib
import time

import attrs
import numpy as np
import scipy.linalg as sla

from gpmodels.errors import InputError
from gpmodels.inference.execution_plan import dense_blas
from gpmodels.inference.map.exact_newton import ClassBlocks, SoftmaxNewtonFactors, softmax_newton_factors
from gpmodels.inference.map.line_search import objective
from gpmodels.inference.map.newton import (
    NewtonPoint,
    NewtonProblem,
    StepResult,
    block_point,
    gradient_rms,
    line_search_step,
    newton_loop,
)
from gpmodels.inference.map.newton_cg import NewtonOptions, NewtonResult, newton_cg
from gpmodels.likelihoods.base import HessianFactor, Likelihood
from gpmodels.linalg.blas_threads import limit_blas_threads
from gpmodels.linalg.cg import Systems, cg
from gpmodels.linalg.counting import MVMCounter
from gpmodels.linalg.dense_posterior import DensePosterior
from gpmodels.linalg.slq import hutchinson_blocks, rademacher, slq_logdet
from gpmodels.operators.base import Operator
from gpmodels.optimize.checkpoint import Checkpointing
from gpmodels.optimize.driver import OptimizeResult, minimize_joint
from gpmodels.optimize.lbfgs import OuterOptions
from gpmodels.optimize.objective import JointObjective
from gpmodels.validation import (
    MAX_SIZE,
    instance_of,
    integer,
    nonnegative_int,
    nonnegative_number,
    one_of,
    optional,
    positive_int,
)

__all__ = [
    "LaplaceOptions",
    "LaplaceResult",
    "laplace_mlm",
    "laplace_mode",
    "LaplaceObjective",
    "learn_laplace",
    "newton_step_from_mode",
    "chord_newton",
    "CHORD_RATE",
    "softmax_posterior_blocks",
    "LAPLACE_PATHS",
    "MODE_OPTIONS",
]

LAPLACE_PATHS = ("exact", "mvm")

#: Newton–CG settings for the mode: the gradient formulas assume the exact mode.
MODE_OPTIONS = NewtonOptions(max_iter=200, cg_max_iter=1000, cg_tol=1e-12, cg_forcing=0.01, grad_tol=1e-9, phi_rtol=0.0)


@attrs.frozen
class LaplaceOptions:
    """Path (``exact`` | ``mvm``), MVM-path probes / CG settings and the probe seed; mode settings."""

    path: str = attrs.field(default="exact", validator=one_of(LAPLACE_PATHS))
    n_probes: int = attrs.field(default=32, validator=integer(1, MAX_SIZE))
    cg_max_iter: int = attrs.field(default=500, validator=positive_int())
    cg_tol: float = attrs.field(default=1e-8, validator=nonnegative_number())
    seed: int | None = attrs.field(default=0, validator=optional(nonnegative_int()))  # None: fresh probes each time
    newton: NewtonOptions = attrs.field(default=MODE_OPTIONS, validator=instance_of(NewtonOptions))


@attrs.frozen
class LaplaceResult:
    """log q(y | θ), its gradient by ``param_names`` (operator's, then likelihood's) and the mode."""

    log_marginal: float
    gradient: np.ndarray | None
    param_names: tuple[str, ...]
    logdet_B: float
    mode: NewtonResult
    path: str
    seconds: float
    mvm_count: int


# ---------------------------------------------------------------------- exact path
class _ExactPosterior:
    """The gradient pieces of an exact posterior from its R, Σ blocks and trace factors."""

    def t_vector(self, s2, K):
        """t = (I + W K̃)^{-1} s2 = s2 - R K̃ s2."""
        return s2 - self.apply_R(K(s2))

    def trace_RdK(self, op):
        """tr(R ∂K̃/∂θ_j) for every θ_j: one ``grad_trace``."""
        return op.grad_trace(*self.trace_factors())


class _DiagonalExact(_ExactPosterior):
    """C = 1, W diagonal: R&W Alg. 3.1 (Cholesky of B) or an LU of I + K W when W has negative entries."""

    def __init__(self, K: np.ndarray, w: np.ndarray):
        n = K.shape[0]
        self.K = K
        if np.all(w > 0):
            post = DensePosterior(K, np.sqrt(w), dense_blas(n))  # B = I + W^{1/2} K W^{1/2} = L L^T   (R&W Alg. 3.1)
            self.logdet = post.logdet
            self.R = post.R  # W^{1/2} B^{-1} W^{1/2}   (R&W Alg. 5.1 line 7)
            self.diag_sigma = post.sigma_diag()  # R&W Alg. 5.1 lines 8-9
        else:
            A = np.eye(n) + K * w[None, :]  # I + K W
            sign, logdet = np.linalg.slogdet(A)
            if sign <= 0:
                raise InputError("I + K W is not positive at the mode (not a local maximum of the posterior)")
            self.logdet = float(logdet)
            self.R = np.linalg.solve(A.T, np.diag(w))  # (I + W K)^{-1} W = W (I + K W)^{-1}
            self.R = 0.5 * (self.R + self.R.T)
            self.diag_sigma = np.diag(K) - np.einsum("ij,ji->i", K, self.R @ K)

    def apply_R(self, x):  # x: (n, 1)
        return self.R @ x

    def sigma_blocks(self):
        return self.diag_sigma[:, None, None]

    def trace_factors(self):
        n = self.K.shape[0]
        return self.R[:, None, :], np.eye(n)[:, None, :]


#: π floor of :func:`softmax_posterior_blocks`' divisions by π (its entries enter the gradient times π)
_PI_FLOOR = 1e-200
#: the probes of the criterion: each column its own CG system
COLUMNS = Systems(columns=True)


def softmax_posterior_blocks(
    blocks: list[np.ndarray], factors: SoftmaxNewtonFactors, pi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The per-point C x C blocks of Σ = (K̃^{-1} + W)^{-1} = K̃ - K̃ R K̃ and the class-diagonal blocks R_cc
    of R = W (I + K̃ W)^{-1}, for a class-diagonal K̃ = diag(blocks) and the softmax W = D - Π Π^T at π,
    from the factors of R&W Alg. 3.3 (:func:`softmax_newton_factors`: E_c, M M^T = Σ_c E_c):

        R_cd = δ_cd E_c - E_c (M M^T)^{-1} E_d,        R_cc = E_c - Q_c^T Q_c,   Q_c = M^{-1} E_c,
        Σ_i,cd = δ_cd (K̃_c E_c)_ii / π_ic + (P_c^T P_d)_ii,   P_c = M^{-1} E_c K̃_c = M^{-1} - Q_c D_c^{-1},

    by Woodbury on W = D - Π Π^T (Σ_c D_c = I) and E_c K̃_c = I - E_c D_c^{-1} (E_c = (D_c^{-1} + K̃_c)^{-1}),
    so K̃_c - K̃_c E_c K̃_c = K̃_c E_c D_c^{-1}: per class one triangular solve and one product (3 n³),
    no product with K̃_c.  The divisions by π_ic amplify round-off in the entries of point i and class c
    by 1/π_ic^{1/2}; those entries enter the gradient multiplied by π_ic (R&W eq. 3.44's ∂W/∂f), so it
    stays at round-off (π is floored at 1e-200 against overflow; such entries are not resolved).
    Returns (S (n, C, C), R_cc stacked (C, n, n))."""
    C, n = len(blocks), blocks[0].shape[0]
    inv_pi = 1.0 / np.maximum(pi, _PI_FLOOR)
    M_inv, info = sla.lapack.dtrtri(factors.M, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"inverse of the factor of the sum of the E_c failed (info {info})")
    M_inv = np.tril(M_inv)
    S = np.zeros((n, C, C))
    Rcc = np.empty((C, n, n))
    P = np.empty((C, n, n))
    for c in range(C):
        E = factors.E[c]
        Q = sla.solve_triangular(factors.M, E, lower=True, check_finite=False)
        Rcc[c] = E - Q.T @ Q
        P[c] = M_inv - Q * inv_pi[None, :, c]
        S[:, c, c] = np.einsum("ki,ki->i", blocks[c], E) * inv_pi[:, c]  # (K̃_c E_c)_ii / π_ic
    for c in range(C):
        for d in range(c, C):
            cross = np.einsum("ki,ki->i", P[c], P[d])
            S[:, c, d] += cross
            if d != c:
                S[:, d, c] += cross
    return S, Rcc


class _MultinomialExact(_ExactPosterior):
    """W_i = diag π_i - π_i π_i^T (softmax) with a class-diagonal prior: R&W Alg. 3.3, complete determinant;
    Σ blocks and R_cc by :func:`softmax_posterior_blocks` (computed once, on the gradient's request)."""

    def __init__(self, op: Operator, pi: np.ndarray):
        self.C, self.pi = pi.shape[1], pi
        self.blocks = [op.class_block(c) for c in range(self.C)]
        self.factors = softmax_newton_factors(self.blocks, pi, keep_E=True)
        self.logdet = self.factors.logdet
        self._blocks_S = None

    def _posterior_blocks(self):
        if self._blocks_S is None:
            self._blocks_S = softmax_posterior_blocks(self.blocks, self.factors, self.pi)
        return self._blocks_S

    def apply_R(self, x):
        """R x with R_cc' = δ_cc' E_c - E_c (M M^T)^{-1} E_c'."""
        E = self.factors.E
        Ex = np.column_stack([E[c] @ x[:, c] for c in range(self.C)])
        z = sla.cho_solve((self.factors.M, True), Ex.sum(axis=1), check_finite=False)
        return Ex - np.column_stack([E[c] @ z for c in range(self.C)])

    def sigma_blocks(self):
        return self._posterior_blocks()[0]

    def trace_RdK(self, op):
        """tr(R ∂K̃/∂θ_j) = Σ_c tr(R_cc ∂K̃_c/∂θ_j) (K̃ class-diagonal): one ``grad_trace_blocks``."""
        return op.grad_trace_blocks(self._posterior_blocks()[1])


class _DenseExact(_ExactPosterior):
    """Any prior and factor: dense (nC x nC) B = I + V^T K V."""

    def __init__(self, op: Operator, hf):
        n, C = op.n_points, op.n_classes
        N = n * C
        K = op.dense()
        I3 = np.eye(N).reshape(n, C, N)
        Vd = np.stack([hf.V(I3[:, :, j]).ravel() for j in range(N)], axis=1)  # (N, N)
        post = DensePosterior(K, Vd, dense_blas(N))  # B = I + V^T K V
        self.logdet = post.logdet
        self.R = post.R
        self.Sigma = post.sigma()
        self.n, self.C = n, C

    def apply_R(self, x):
        return (self.R @ x.ravel()).reshape(x.shape)

    def sigma_blocks(self):
        n, C = self.n, self.C
        S4 = self.Sigma.reshape(n, C, n, C)
        return S4[np.arange(n), :, np.arange(n), :]

    def trace_factors(self):
        n, C = self.n, self.C
        N = n * C
        return self.R.reshape(n, C, N), np.eye(N).reshape(n, C, N)


def _exact_posterior(op: Operator, hf: HessianFactor):
    """The cheapest exact path for the structure of W (diagonal, multinomial, or any)."""
    w = hf.diagonal_W()
    if w is not None and op.n_classes == 1:
        return _DiagonalExact(op.class_block(0), w[:, 0])
    pi = hf.multinomial_pi()
    if pi is not None and op.is_class_diagonal:
        return _MultinomialExact(op, pi)
    return _DenseExact(op, hf)


# ---------------------------------------------------------------------- MVM path
class _MVMPosterior:
    """log|B| by SLQ on the Jacobi-scaled B̂ = D^{-1/2} B D^{-1/2}, and the gradient pieces by probes.

    Rademacher probes Z1 (log-det, tr(R dK̃)) and Z2 (Σ blocks) are solved together by batched CG:
    B̂ [Y1, Y2] = [Z1, D^{-1/2} V^T K̃ Z2] (see the module docstring).
    """

    def __init__(self, op: Operator, hf: HessianFactor, K, opts: LaplaceOptions, gradient: bool):
        self.hf, self.K, self.opts = hf, K, opts
        n, C = op.n_points, op.n_classes
        self.d = hf.precond_diag(op.diag(), op.point_block_mvm)  # diag B, App. B formula
        self.isd = 1.0 / np.sqrt(self.d)
        m = self.m = opts.n_probes
        rng = np.random.default_rng(opts.seed)
        self.Z1 = rademacher(rng, (n, C, m))
        self.Z2 = rademacher(rng, (n, C, m)) if gradient else np.zeros((n, C, 0))
        self.KZ2 = K(self.Z2) if gradient else self.Z2
        rhs = np.concatenate([self.Z1, self.DsVt(self.KZ2)], axis=2)
        sol = cg(self.Bhat, rhs, systems=COLUMNS, tol=opts.cg_tol, max_iter=opts.cg_max_iter, record=True)
        self.logdet = float(np.sum(np.log(self.d))) + slq_logdet(sol, rhs, range(m))
        self.Y1, self.Y2 = sol.x[:, :, :m], sol.x[:, :, m:]

    @staticmethod
    def _cols(fn, X):
        """Apply an (n, C) map to every column of X (n, C, k)."""
        out = np.empty_like(X)
        for j in range(X.shape[2]):
            out[:, :, j] = fn(X[:, :, j])
        return out

    def Bhat(self, X):
        """D^{-1/2} (I + V^T K̃ V) D^{-1/2} X."""
        Xs = self.isd[:, :, None] * X
        return self.isd[:, :, None] * (Xs + self._cols(self.hf.Vt, self.K(self._cols(self.hf.V, Xs))))

    def VDs(self, X):
        """V D^{-1/2} X."""
        return self._cols(self.hf.V, self.isd[:, :, None] * X)

    def DsVt(self, X):
        """D^{-1/2} V^T X."""
        return self.isd[:, :, None] * self._cols(self.hf.Vt, X)

    def sigma_blocks(self):
        """Hutchinson blocks of Σ Z2 = K̃ Z2 - K̃ R K̃ Z2."""
        return hutchinson_blocks(self.KZ2 - self.K(self.VDs(self.Y2)), self.Z2)

    def t_vector(self, s2, K):
        rhs = self.DsVt(K(s2)[:, :, None])
        one = cg(self.Bhat, rhs, systems=COLUMNS, tol=self.opts.cg_tol, max_iter=self.opts.cg_max_iter)
        return s2 - self.VDs(one.x)[:, :, 0]

    def trace_RdK(self, op):
        """tr(R dK̃) ≈ (1/m) Σ_k z_k^T B̂^{-1} D^{-1/2} V^T dK̃ V D^{-1/2} z_k."""
        return op.grad_trace(self.VDs(self.Y1), self.VDs(self.Z1)) / self.m


# ---------------------------------------------------------------------- the criterion
#: chord steps keep the factors of I + W K̃ while each step shrinks the gradient RMS by at least this factor
CHORD_RATE = 0.25


def newton_step_from_mode(blocks: ClassBlocks, lik: Likelihood, Y, u0: np.ndarray):
    """α1 = (I + W K̃)^{-1} (W f0 - ∇Φ_lh(f0)), W = ∇∇Φ_lh at f0: one Newton step from the latent values
    f0 (a previous mode) under the current K̃ = diag(blocks), so that f1 = K̃ α1 = (K̃^{-1} + W)^{-1}
    (W f0 + ∇ log P(y | f0)) (R&W eq. 3.18; App. C's solve).  Between outer iterations this is the
    better warm start: f̂ moves little with θ, while α̂ = K̃^{-1} f̂ scales like 1/v.  Returns α1 and
    the (factor of W, factors of I + W K̃) at f0, for :func:`chord_newton`."""
    hf = lik.exact_hessian_factor(u0, Y)
    factors = softmax_newton_factors(blocks.blocks, hf.multinomial_pi())
    return factors.solve(blocks.blocks, hf.W(u0) - lik.gradient(u0, Y)), (hf, factors)


class _ChordStepper:
    """The steps of :func:`chord_newton` for :func:`~gpmodels.inference.map.newton.newton_loop`."""

    truncated = False  # only the gradient ends the fit
    precond_basis = None
    offsets = None  # one block

    def __init__(self, blocks: ClassBlocks, lik: Likelihood, Y, reference=None):
        self.mvm, self.lik, self.Y = blocks, lik, Y
        self.hf, self.factors = reference if reference is not None else (None, None)
        self.last_rms = None

    def _refresh(self, u):
        self.hf = self.lik.exact_hessian_factor(u, self.Y)
        self.factors = softmax_newton_factors(self.mvm.blocks, self.hf.multinomial_pi())

    def step(self, problem: NewtonProblem, point: NewtonPoint, active: np.ndarray) -> dict[int, StepResult]:
        point = block_point(point, 0, slice(None))
        rms = gradient_rms(point.alpha, point.g)
        fresh = self.factors is None or (self.last_rms is not None and rms > CHORD_RATE * self.last_rms)
        if fresh:
            self._refresh(point.u)
        self.last_rms = rms
        while True:
            new_alpha = self.factors.solve(self.mvm.blocks, self.hf.W(point.u) - point.g)
            ls, s, s_tilde = line_search_step(problem, point, new_alpha)
            if ls.success or fresh:
                return {0: StepResult(ls, s, s_tilde)}
            self._refresh(point.u)  # the held W gave no descent: a true Newton step
            fresh = True


def chord_newton(
    blocks: ClassBlocks, lik: Likelihood, Y, options: NewtonOptions, *, alpha0=None, reference=None
) -> NewtonResult:
    """The mode for a class-diagonal K̃ = diag(blocks) and the softmax by Newton steps that keep the
    factors of I + W_r K̃ (R&W Alg. 3.3) from a reference point r while they work (the chord method with
    refresh, Shamanskii's; Kelley 1995, Sec. 5.4):

        α' = (I + W_r K̃)^{-1} (W_r f - ∇Φ_lh(f)),   f = K̃ α,

    i.e. f' = (K̃^{-1} + W_r)^{-1} (W_r f + ∇ log P(y | f)), a descent step of Φ(α) = ½ α^T K̃ α + Φ_lh(K̃ α)
    for any W_r ⪰ 0, exact Newton at r = f.  Each step costs O(n² C) (triangular solves), a refresh
    (r = f) O(n³ C): at the first step without a ``reference`` (W, factors), when the gradient RMS fell
    by less than :data:`CHORD_RATE` over the last step, and when the held W gives no descent.  The
    pair line search, the stopping rules (gradient RMS <= ``grad_tol``) and the traces are
    :func:`~gpmodels.inference.map.newton.newton_loop`'s.  Near the mode the held W is close to the
    current one, so the steps converge almost as fast as Newton's at a fraction of the cost."""
    stepper = _ChordStepper(blocks, lik, Y, reference)
    return newton_loop(NewtonProblem(lik, Y, blocks, options), stepper, alpha0).blocks[0]


def laplace_mode(op: Operator, lik: Likelihood, Y, options: LaplaceOptions, *, alpha0=None, u0=None) -> NewtonResult:
    """The mode f̂ = K̃ α̂ of the posterior (R&W eq. 3.12 / 3.35) to the tolerances of ``options.newton``.

    On the exact path where App. C applies (a class-diagonal K̃ and a W of the multinomial form
    diag π_i - π_i π_i^T, as the likelihood's ``exact_hessian_factor`` declares): :func:`chord_newton`
    (O(n³ C) per refresh, like the posterior's own factors), from the start of least
    Φ(α) = ½ α^T K̃ α + Φ_lh(K̃ α) among α = 0, ``alpha0`` and the Newton step from the previous mode
    ``u0`` (:func:`newton_step_from_mode`, whose factors it keeps).
    Otherwise Newton–CG (Seeger 2008, Alg. 1) from ``alpha0``."""
    u0 = None if u0 is None or np.shape(u0) != Y.shape else np.asarray(u0, dtype=np.float64)
    probe = lik.exact_hessian_factor(np.zeros(Y.shape) if u0 is None else u0, Y)
    if options.path != "exact" or not op.is_class_diagonal or probe.multinomial_pi() is None:
        return newton_cg(op, lik, Y, options.newton, alpha0=alpha0)
    blocks = ClassBlocks(op)
    starts = [None if alpha0 is None else lik.project_alpha(np.asarray(alpha0, dtype=np.float64))]
    reference = None
    if u0 is not None:
        alpha1, reference = newton_step_from_mode(blocks, lik, Y, u0)
        starts.append(alpha1)
    best, best_phi = None, lik.value(np.zeros(Y.shape), Y)  # α = 0
    for alpha in starts:
        if alpha is not None and np.all(np.isfinite(alpha)):
            phi = objective(lik, Y, alpha, blocks(alpha))
            if phi < best_phi:
                best, best_phi = alpha, phi
    blocks.count = 0
    return chord_newton(blocks, lik, Y, options.newton, alpha0=best, reference=reference)


def laplace_mlm(
    op: Operator,
    lik: Likelihood,
    Y,
    options: LaplaceOptions | None = None,
    *,
    alpha0=None,
    u0=None,
    gradient: bool = True,
) -> LaplaceResult:
    """log q(y | θ) = -½ α̂^T f̂ - Φ_lh(f̂) - ½ log|B| (R&W eq. 3.32 / 3.44) and, optionally, its gradient
    (:func:`_laplace_gradient`); see the module docstring for the two paths.  The mode
    (:func:`laplace_mode`) starts from ``alpha0`` or the Newton step from a previous mode ``u0``.

    The exact path runs on one BLAS thread: between its short BLAS calls (solves with one right-hand
    side, products of n x n blocks) idle OpenBLAS threads spin, and on a busy two-core machine a
    satimage-800 learning took 407 s with two threads against 27 s with one (and 67 s with two threads
    for the n³ factorisations only)."""
    exact = (options or LaplaceOptions()).path == "exact"
    with limit_blas_threads(1) if exact else contextlib.nullcontext():
        return _laplace_mlm(op, lik, Y, options, alpha0=alpha0, u0=u0, gradient=gradient)


def _laplace_mlm(op: Operator, lik: Likelihood, Y, options, *, alpha0, u0, gradient: bool) -> LaplaceResult:
    opts = options or LaplaceOptions()
    lik.check_laplace()
    t0 = time.perf_counter()
    n, C = op.n_points, op.n_classes
    Y = lik.check_targets(Y, n, C)
    mode = laplace_mode(op, lik, Y, opts, alpha0=alpha0, u0=u0)
    alpha, f = mode.alpha, mode.u
    K = MVMCounter(op)
    names = tuple(op.param_names) + tuple(lik.param_names)
    hf = lik.exact_hessian_factor(f, Y)  # W exactly, nothing fixed
    w = hf.diagonal_W()
    if opts.path == "mvm" and w is not None and np.any(w <= 0):
        raise InputError("the MVM path needs W >= 0 at the mode (a log-concave likelihood); use path 'exact'")
    fit_value = 0.5 * float(np.vdot(alpha, f)) + lik.value(f, Y)
    post = _exact_posterior(op, hf) if opts.path == "exact" else _MVMPosterior(op, hf, K, opts, gradient)
    log_q = -fit_value - 0.5 * post.logdet  # softmax: with the |Σ_c E_c| factor
    grad = _laplace_gradient(op, lik, Y, mode, post, K) if gradient else None
    return LaplaceResult(log_q, grad, names, post.logdet, mode, opts.path, time.perf_counter() - t0, K.count)


def _laplace_gradient(op: Operator, lik: Likelihood, Y, mode: NewtonResult, post, K) -> np.ndarray:
    """∂ log q/∂θ_j = ½ α̂^T K̃_j α̂ - ½ tr(R K̃_j) + t^T K̃_j α̂ (R&W eq. 5.22-5.24, adjoint form) with
    s2 = -½ ∂_f tr(Σ W) (R&W Alg. 5.1 line 9, the likelihood's ``trace_hessian_derivative``) and
    t = (I + W K̃)^{-1} s2; then the likelihood's ψ:
    ∂ log q/∂ψ = -∂_ψ Φ_lh - ½ Σ_i Σ_ii ∂_ψ W_ii - t^T K̃ ∂_ψ g."""
    alpha, f = mode.alpha, mode.u
    S = post.sigma_blocks()
    s2 = -0.5 * lik.trace_hessian_derivative(f, Y, S)  # signs: Φ_lh = -log P
    t = post.t_vector(s2, K)
    tr_RdK = post.trace_RdK(op)
    g_op = 0.5 * op.grad_trace(alpha, alpha) - 0.5 * tr_RdK + op.grad_trace(t, alpha)
    g_lik = np.zeros(0)
    if lik.params.size:
        v_psi, g_psi, w_psi = lik.param_derivatives(f, Y)
        diag_S = np.einsum("icc->ic", S)
        g_lik = np.array(
            [
                -v_psi[p] - 0.5 * float(np.sum(diag_S * w_psi[p])) - float(np.vdot(t, K(g_psi[p])))
                for p in range(v_psi.size)
            ]
        )
    return np.concatenate([g_op, g_lik])


class LaplaceObjective(JointObjective):
    """-log q(y | θ) over the joint log-space vector as an outer-optimiser objective
    (``optimize/objective.py``): the inner state is the mode {"alpha": α̂, "u": f̂}, and every
    evaluation warm-starts the mode (:func:`laplace_mode`) at the seed the optimiser gives (the mode of
    the last successful evaluation to the left), so a resumed run reproduces the uninterrupted one."""

    criterion = "laplace"

    def __init__(self, op: Operator, lik: Likelihood, Y, options: LaplaceOptions | None = None):
        lik.check_laplace()
        super().__init__(op, lik, Y, options or LaplaceOptions())

    def _evaluate(self, op, lik, seed):
        seed = seed or {}
        res = laplace_mlm(op, lik, self.Y, self.options, alpha0=seed.get("alpha"), u0=seed.get("u"))
        info = {"mode_converged": bool(res.mode.converged), "mvms": int(res.mvm_count), "seconds": res.seconds}
        return -res.log_marginal, -res.gradient, {"alpha": res.mode.alpha, "u": res.mode.u}, info


def learn_laplace(
    op: Operator,
    lik: Likelihood,
    Y,
    options: LaplaceOptions | None = None,
    *,
    outer: OuterOptions | None = None,
    bounds=None,
    checkpoint: Checkpointing | None = None,
    on_iteration=None,
) -> tuple[OptimizeResult, Operator, Likelihood]:
    """Maximise log q(y | θ) over the joint log-space vector by :func:`gpmodels.optimize.driver`, from
    the hyperparameters of ``op`` and ``lik`` (``outer``, default :func:`outer_options` () (100
    iterations, tol 1e-6; ``outer_options(max_iter, tol)`` for others); ``bounds`` default: the start
    ± 10 within the operator's own bounds; ``checkpoint``, ``on_iteration``: as there); returns
    (result, op, lik) with ``result.value`` = -log q at the learned θ."""
    return minimize_joint(
        LaplaceObjective(op, lik, Y, options),
        bounds=bounds,
        outer=outer,
        checkpoint=checkpoint,
        on_iteration=on_iteration,
    )
