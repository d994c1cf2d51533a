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
Alg. 5.1 lines 11-15).  ∂_f tr(Σ W) is, per point i:

  diagonal W (logistic, Gaussian, Student-t):  Σ_ii ∂W_ii/∂f_i  (R&W Alg. 5.1 line 9, the third
                                               derivative of -log P);
  softmax, W_i = diag π_i - π_i π_i^T:         W_i (diag Σ_i - 2 Σ_i π_i), Σ_i the C x C block.

Likelihood hyperparameters ψ (noise variance, scales): with the mode equation f̂ + K̃ g(f̂; ψ) = 0,

    ∂ log q/∂ψ = -∂_ψ Φ_lh - ½ Σ_i Σ_ii ∂_ψ W_ii - t^T K̃ ∂_ψ g.

Two paths compute log|B|, tr(R K̃_j) and the blocks Σ_i:

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
(``gpmodels.optimize.minimize``: projected L-BFGS, checkpoints, progress) over one flat log-space
vector: the operator's parameters, then the likelihood's (:class:`LaplaceObjective`).
"""

from __future__ import annotations

import time

import attrs
import numpy as np
import scipy.linalg as sla

from gpmodels.errors import InputError
from gpmodels.likelihoods.base import Likelihood
from gpmodels.likelihoods.diagonal import DiagonalFactor, DiagonalLikelihood
from gpmodels.likelihoods.softmax import Softmax, SoftmaxFactor, log_softmax
from gpmodels.operators.base import Operator
from gpmodels.optimize.checkpoint import Checkpointing, digest_array, probe_operator
from gpmodels.optimize.lbfgs import OuterOptions, Trial
from gpmodels.optimize.minimize import OptimizeResult, minimize, outer_options
from gpmodels.optimize.objective import JointParams, log_box
from gpmodels.inference.map.newton_cg import NewtonOptions, NewtonResult, newton_cg
from gpmodels.linalg.counting import MVMCounter
from gpmodels.linalg.dense_posterior import DensePosterior
from gpmodels.linalg.slq import batched_cg, hutchinson_blocks, rademacher, slq_logdet

__all__ = ["LaplaceOptions", "LaplaceResult", "laplace_mlm", "laplace_objective", "LaplaceObjective", "learn_laplace",
           "LAPLACE_PATHS", "MODE_OPTIONS"]

LAPLACE_PATHS = ("exact", "mvm")

#: Newton–CG settings for the mode: the gradient formulas assume the exact mode.
MODE_OPTIONS = NewtonOptions(max_iter=200, cg_max_iter=1000, cg_tol=1e-12, cg_forcing=0.01, grad_tol=1e-9,
                             phi_rtol=0.0)


def _path(instance, attribute, value):
    if value not in LAPLACE_PATHS:
        raise InputError(f"LaplaceOptions.path must be one of {LAPLACE_PATHS}; got {value!r}")


def _positive_int(instance, attribute, value):
    if int(value) != value or value < 1:
        raise InputError(f"LaplaceOptions.{attribute.name} must be an integer >= 1; got {value!r}")


@attrs.frozen
class LaplaceOptions:
    """Path (``exact`` | ``mvm``), MVM-path probes / CG settings and the probe seed; mode settings."""

    path: str = attrs.field(default="exact", validator=_path)
    n_probes: int = attrs.field(default=32, validator=_positive_int)
    cg_max_iter: int = attrs.field(default=500, validator=_positive_int)
    cg_tol: float = 1e-8
    seed: int = 0
    newton: NewtonOptions = MODE_OPTIONS


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


def _check_smooth(lik: Likelihood) -> None:
    if isinstance(lik, Softmax):
        return
    if not isinstance(lik, DiagonalLikelihood):
        raise InputError(f"the Laplace MLM is written for the softmax and factorised likelihoods; got {type(lik).__name__}")
    if not lik.smooth or not lik.has_super_gaussian:
        raise InputError(f"the Laplace approximation needs a smooth, normalised likelihood; {type(lik).__name__} is "
                         f"{'a loss' if lik.smooth else 'not differentiable (W = 0 almost everywhere)'} "
                         f"(use the VB objective for the Laplace likelihood)")


def _dlogdet_df(lik, U, Y, S):
    """∂/∂f of tr(S W(f)) at f = U for per-point blocks S (n, C, C) held fixed (see the docstring)."""
    if isinstance(lik, Softmax):
        pi = np.exp(log_softmax(U))
        q = np.einsum("icc->ic", S) - 2.0 * np.einsum("icd,id->ic", S, pi)
        return pi * q - pi * np.sum(pi * q, axis=1, keepdims=True)  # W_i q_i
    return np.einsum("icc->ic", S) * lik.third_derivative(U, Y)


# ---------------------------------------------------------------------- exact path
class _DiagonalExact:
    """C = 1, W diagonal: R&W Alg. 3.1 (Cholesky of B) or an LU of I + K W when W has negative entries."""

    def __init__(self, K: np.ndarray, w: np.ndarray):
        n = K.shape[0]
        self.K = K
        if np.all(w > 0):
            post = DensePosterior(K, np.sqrt(w))  # B = I + W^{1/2} K W^{1/2} = L L^T   (R&W Alg. 3.1)
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


class _SoftmaxExact:
    """Softmax with a class-diagonal prior: R&W Alg. 3.3 with the complete determinant."""

    def __init__(self, op: Operator, pi: np.ndarray):
        n, C = pi.shape
        self.C = C
        self.blocks = [op.class_block(c) for c in range(C)]
        self.E = []
        logdet = 0.0
        for c in range(C):
            post = DensePosterior(self.blocks[c], np.sqrt(pi[:, c]))  # R&W Alg. 3.3: B_c = L_c L_c^T
            logdet += post.logdet
            self.E.append(post.R)  # E_c = D^{1/2} B_c^{-1} D^{1/2}
        self.M = sla.cholesky(sum(self.E), lower=True)  # M M^T = Σ_c E_c
        self.logdet = logdet + 2.0 * float(np.sum(np.log(np.diag(self.M))))
        self._P = [sla.solve_triangular(self.M, self.E[c] @ self.blocks[c], lower=True) for c in range(C)]

    def _MMinv(self, x):
        return sla.cho_solve((self.M, True), x)

    def apply_R(self, x):
        """R x with R_cc' = δ_cc' E_c - E_c (M M^T)^{-1} E_c'."""
        Ex = np.column_stack([self.E[c] @ x[:, c] for c in range(self.C)])
        z = self._MMinv(Ex.sum(axis=1))
        return Ex - np.column_stack([self.E[c] @ z for c in range(self.C)])

    def sigma_blocks(self):
        P = np.stack(self._P, axis=2)  # (n, n, C): P_c = M^{-1} E_c K_c
        S = np.einsum("kic,kid->icd", P, P)
        for c in range(self.C):
            KE = self.blocks[c] @ self.E[c]
            S[:, c, c] += np.diag(self.blocks[c]) - np.einsum("ij,ji->i", KE, self.blocks[c])
        return S

    def trace_factors(self):
        """E, F (n, C, n) with Σ_k e_k^T dK f_k = Σ_c tr(R_cc dK_c) for class-diagonal dK."""
        n, C = self.blocks[0].shape[0], self.C
        E = np.empty((n, C, n))
        for c in range(C):
            Q = sla.solve_triangular(self.M, self.E[c], lower=True)
            E[:, c, :] = self.E[c] - Q.T @ Q
        F = np.repeat(np.eye(n)[:, None, :], C, axis=1)
        return E, F


class _DenseExact:
    """Any prior and factor: dense (nC x nC) B = I + V^T K V."""

    def __init__(self, op: Operator, hf):
        n, C = op.n_points, op.n_classes
        N = n * C
        K = op.dense()
        I3 = np.eye(N).reshape(n, C, N)
        Vd = np.stack([hf.V(I3[:, :, j]).ravel() for j in range(N)], axis=1)  # (N, N)
        post = DensePosterior(K, Vd)  # B = I + V^T K V
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


# ---------------------------------------------------------------------- the criterion
def _full_factor(lik, U, Y):
    """V of the *exact* W with no App. B fixing (all components free)."""
    if isinstance(lik, Softmax):
        return SoftmaxFactor(log_softmax(U), Y, -np.inf)
    return DiagonalFactor(lik.hessian_diag(U, Y), exact=True)


def laplace_mlm(op: Operator, lik: Likelihood, Y, options: LaplaceOptions | None = None, *, alpha0=None,
                gradient: bool = True) -> LaplaceResult:
    """log q(y | θ) of the Laplace approximation and (optionally) its gradient; see the module docstring."""
    opts = options or LaplaceOptions()
    _check_smooth(lik)
    t0 = time.perf_counter()
    n, C = op.n_points, op.n_classes
    Y = lik.check_targets(Y, n, C)
    mode = newton_cg(op, lik, Y, opts.newton, alpha0=alpha0)
    alpha, f = mode.alpha, mode.u
    K = MVMCounter(op)
    names = tuple(op.param_names) + tuple(lik.param_names)
    if isinstance(lik, DiagonalLikelihood):
        w = lik.hessian_diag(f, Y)
        if opts.path == "mvm" and np.any(w <= 0):
            raise InputError("the MVM path needs W >= 0 at the mode (a log-concave likelihood); use path 'exact'")
    fit_value = 0.5 * float(np.vdot(alpha, f)) + lik.value(f, Y)
    if opts.path == "exact":
        if isinstance(lik, DiagonalLikelihood):
            post = _DiagonalExact(op.class_block(0), w[:, 0])
        elif op.is_class_diagonal:
            post = _SoftmaxExact(op, np.exp(log_softmax(f)))
        else:
            post = _DenseExact(op, _full_factor(lik, f, Y))
        logdet = post.logdet
        log_q = -fit_value - 0.5 * logdet  # R&W eq. 3.32 / 3.44 (softmax: with the |Σ_c E_c| factor)
        if not gradient:
            return LaplaceResult(log_q, None, names, logdet, mode, "exact", time.perf_counter() - t0, K.count)
        S = post.sigma_blocks()
        s2 = -0.5 * _dlogdet_df(lik, f, Y, S)  # R&W Alg. 5.1 line 9 (signs: Φ_lh = -log P)
        t = s2 - post.apply_R(K(s2))  # (I + W K)^{-1} s2
        Etr, Ftr = post.trace_factors()
        tr_RdK = op.grad_trace(Etr, Ftr)
    else:
        hf = _full_factor(lik, f, Y)
        d = hf.precond_diag(op.diag(), op.point_block_mvm)  # diag B, App. B formula
        isd = 1.0 / np.sqrt(d)

        def cols(fn, X):  # apply an (n, C) map to every column of X (n, C, k)
            out = np.empty_like(X)
            for j in range(X.shape[2]):
                out[:, :, j] = fn(X[:, :, j])
            return out

        def Bhat(X):  # D^{-1/2} (I + V^T K V) D^{-1/2} = D^{-1} + D^{-1/2} V^T K V D^{-1/2}
            Xs = isd[:, :, None] * X
            return isd[:, :, None] * (Xs + cols(hf.Vt, K(cols(hf.V, Xs))))

        def VDs(X):  # V D^{-1/2} X
            return cols(hf.V, isd[:, :, None] * X)

        def DsVt(X):  # D^{-1/2} V^T X
            return isd[:, :, None] * cols(hf.Vt, X)

        m = opts.n_probes
        rng = np.random.default_rng(opts.seed)
        Z1 = rademacher(rng, (n, C, m))
        Z2 = rademacher(rng, (n, C, m)) if gradient else np.zeros((n, C, 0))
        KZ2 = K(Z2) if gradient else Z2
        rhs = np.concatenate([Z1, DsVt(KZ2)], axis=2)
        sol = batched_cg(Bhat, rhs, tol=opts.cg_tol, max_iter=opts.cg_max_iter)
        logdet = float(np.sum(np.log(d))) + slq_logdet(sol, rhs, range(m))
        log_q = -fit_value - 0.5 * logdet
        if not gradient:
            return LaplaceResult(log_q, None, names, logdet, mode, "mvm", time.perf_counter() - t0, K.count)
        Y1, Y2 = sol.x[:, :, :m], sol.x[:, :, m:]
        SZ2 = KZ2 - K(VDs(Y2))  # Σ Z2 = K Z2 - K R K Z2
        S = hutchinson_blocks(SZ2, Z2)
        s2 = -0.5 * _dlogdet_df(lik, f, Y, S)
        one = batched_cg(Bhat, DsVt(K(s2)[:, :, None]), tol=opts.cg_tol, max_iter=opts.cg_max_iter)
        t = s2 - VDs(one.x)[:, :, 0]
        tr_RdK = op.grad_trace(VDs(Y1), VDs(Z1)) / m
    g_op = 0.5 * op.grad_trace(alpha, alpha) - 0.5 * tr_RdK + op.grad_trace(t, alpha)  # R&W eq. 5.22-5.24
    g_lik = np.zeros(0)
    if lik.params.size:
        v_psi, g_psi, w_psi = lik.param_derivatives(f, Y)
        diag_S = np.einsum("icc->ic", S)
        g_lik = np.array([-v_psi[p] - 0.5 * float(np.sum(diag_S * w_psi[p])) - float(np.vdot(t, K(g_psi[p])))
                          for p in range(v_psi.size)])
    return LaplaceResult(log_q, np.concatenate([g_op, g_lik]), names, logdet, mode, opts.path,
                         time.perf_counter() - t0, K.count)


def laplace_objective(op: Operator, lik: Likelihood, Y, options: LaplaceOptions | None = None):
    """x -> (-log q(y | θ), gradient) over the joint log-space vector, warm-starting each mode at the
    last one; returns (fun, JointParams).  A plain function, so any outer optimiser can take it."""
    joint = JointParams(op, lik)
    state = {"alpha": None}

    def fun(x):
        o, lk = joint.build(x)
        res = laplace_mlm(o, lk, Y, options, alpha0=state["alpha"])
        state["alpha"] = res.mode.alpha
        return -res.log_marginal, -res.gradient

    return fun, joint


class LaplaceObjective:
    """-log q(y | θ) over the joint log-space vector as an outer-optimiser objective
    (``optimize/objective.py``): the inner state is the mode {"alpha": α̂}, and every evaluation
    warm-starts Newton–CG at the seed the optimiser gives (the mode of the last successful evaluation
    to the left), so a resumed run reproduces the uninterrupted one."""

    def __init__(self, op: Operator, lik: Likelihood, Y, options: LaplaceOptions | None = None):
        _check_smooth(lik)
        self.joint = JointParams(op, lik)
        self.Y = lik.check_targets(Y, op.n_points, op.n_classes)
        self.options = options or LaplaceOptions()

    def evaluate(self, x, seed) -> Trial:
        o, lk = self.joint.build(x)
        try:
            res = laplace_mlm(o, lk, self.Y, self.options, alpha0=None if seed is None else seed["alpha"])
        except (np.linalg.LinAlgError, FloatingPointError) as exc:
            return Trial(float("nan"), None, False, None, {"message": str(exc)})
        ok = bool(np.isfinite(res.log_marginal) and np.all(np.isfinite(res.gradient)))
        info = {"mode_converged": bool(res.mode.converged), "mvms": int(res.mvm_count), "seconds": res.seconds}
        return Trial(-res.log_marginal, -res.gradient, ok, {"alpha": res.mode.alpha}, info)

    def identity(self) -> dict:
        op, lik = self.joint.op, self.joint.lik
        return {"criterion": "laplace", "n": op.n_points, "C": op.n_classes, "targets": digest_array(self.Y),
                "likelihood": repr(lik), "operator": type(op).__name__, "options": attrs.asdict(self.options)}

    def probe(self) -> np.ndarray:
        return probe_operator(self.joint.op)


def learn_laplace(op: Operator, lik: Likelihood, Y, options: LaplaceOptions | None = None, *, x0=None,
                  bounds=None, max_iter: int = 100, tol: float = 1e-6, outer: OuterOptions | None = None,
                  checkpoint: Checkpointing | None = None,
                  on_iteration=None) -> tuple[OptimizeResult, Operator, Likelihood]:
    """Maximise log q(y | θ) over the joint log-space vector by :func:`gpmodels.optimize.minimize`
    (``outer``, default :func:`outer_options` (max_iter, tol); ``bounds`` default: x0 ± 10 within the
    operator's own bounds; ``checkpoint``, ``on_iteration``: as there); returns (result, op, lik)
    with ``result.value`` = -log q at the learned θ."""
    objective = LaplaceObjective(op, lik, Y, options)
    joint = objective.joint
    start = joint.x0 if x0 is None else np.asarray(x0, dtype=np.float64)
    if bounds is None:
        bounds = log_box(start, param_bounds=joint.bounds, names=joint.names)
    result = minimize(objective, start, joint.names, bounds, outer or outer_options(max_iter, tol),
                      checkpoint=checkpoint, on_iteration=on_iteration)
    o, lk = joint.build(result.x)
    return result, o, lk
