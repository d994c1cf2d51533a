"""Laplace-approximate predictive distribution of a MAP model (Rasmussen & Williams 2006, Sec. 3.4.2, 3.5).

At the MAP point α̂ (û = K̃ α̂) the Laplace approximation of the posterior over the training
latents is N(û, (K̃^{-1} + W)^{-1}) with W = ∇∇_u Φ_lh(û) (Seeger 2008, Sec. 2; App. B gives the
softmax factor W = V V^T).  By the GP conditional the latent vector u_* of a test point j (its C
class values) is Gaussian with

  mean  μ_j = K̃_{(j,.),X} α̂                                          (R&W eq. 3.40 / 3.58)
  cov   Σ_j = K̃_**,j - Q_j^T (K̃ + W^{-1})^{-1} Q_j,  Q_j = K̃_{X,(j,.)}  (R&W eq. 3.43 / 3.61)

where Q_j (nC x C) holds the cross-covariance columns of point j.  The softmax W is singular
(W 1 = 0 per point), so (K̃ + W^{-1})^{-1} is written through the Hessian factor as

  (K̃ + W^{-1})^{-1} = V (I + V^T K̃ V)^{-1} V^T,

the matrix A = I + V^T K̃ V being the (well-conditioned, eigenvalues >= 1) system matrix of
Newton–CG (Seeger 2008, eq. 5).  With R_j = V^T Q_j:  Σ_j = K̃_**,j - R_j^T A^{-1} R_j.

Two ways to apply A^{-1}:

* ``exact``: for a chunk of b test points, R = V^T K̃_{X,*} E by one transposed cross MVM
  (``cross_test(...).rmvm``) on the b·C unit vectors of the chunk, then A Z = R by batched CG
  (one K̃-MVM with b·C columns per step); cost per chunk: (CG steps) x (MVM with b·C columns).
  "Exact" up to the CG tolerance.
* ``lanczos`` (LOVE, Pleiss et al. 2018): a rank-k Lanczos basis Q_k of A with full
  reorthogonalisation, started from a random combination of the test right-hand sides (so the
  Krylov space is built where the test points look), A^{-1} ≈ Q_k T_k^{-1} Q_k^T with
  T_k = Q_k^T A Q_k; then R_j^T Q_k = (K̃_{*,X} V Q_k)_j is one forward cross MVM with k columns
  for all test points.  Cost: k MVMs with one column, O(nC k^2) for the reorthogonalisation and
  O(m C k (C + k)) per test set.  Approximation: the Galerkin projection onto span Q_k
  under-estimates the explained variance R_j^T A^{-1} R_j (so Σ_j is over-estimated, never
  under-estimated); when the Krylov space becomes invariant (breakdown) it restarts from a new
  random test combination, and once a restart vector lies in span Q_k every test direction
  does, so the result is exact, at the latest when k reaches nC.

Predictive probabilities average the likelihood's ``predict`` over N(μ_j, Σ_j) by Monte Carlo
with a seeded generator, or use the probit ("mean-field") approximation (MacKay 1992;
R&W Sec. 3.4.2 for the binary case).
"""

from __future__ import annotations

import warnings

import attrs
import numpy as np
import scipy.linalg as sla

from gpmodels.errors import ConvergenceWarning, InputError
from gpmodels.likelihoods.base import HessianFactor, Likelihood
from gpmodels.linalg.cg import Systems, cg
from gpmodels.validation import check_features

__all__ = [
    "LatentPredictive",
    "latent_predictive",
    "predictive_proba",
    "laplace_predict_proba",
    "PREDICTIVE_METHODS",
    "PROBA_METHODS",
    "PREDICTIVES",
]

PREDICTIVE_METHODS = ("exact", "lanczos")
PROBA_METHODS = ("mc", "probit")
#: how class probabilities at test points are made: ``plugin`` = likelihood at the latent mean,
#: ``laplace`` = averaged over the Laplace latent predictive (:func:`laplace_predict_proba`)
PREDICTIVES = ("plugin", "laplace")


@attrs.frozen
class LatentPredictive:
    """Gaussian latent predictive N(mean_j, cov_j) at m test points over C latent functions.

    ``mean`` (m, C), ``cov`` (m, C, C); ``method`` and ``matvecs`` (K̃-MVM columns spent);
    ``rank``: the Lanczos rank used (None for ``exact``); ``converged``: CG reached its tolerance
    at every right-hand side (``exact``) / the Lanczos basis became exact (``lanczos``).
    """

    mean: np.ndarray
    cov: np.ndarray
    method: str
    matvecs: int
    rank: int | None = None
    converged: bool = True

    @property
    def var(self) -> np.ndarray:
        """Marginal variances diag Σ_j, shape (m, C)."""
        return np.einsum("jcc->jc", self.cov).copy()


def _point_factor(factor: HessianFactor) -> np.ndarray:
    """Per-point V_i (n, C, C): V is block-diagonal over points (the likelihood is per point)."""
    return factor.point_V()


def _apply_V(Vb, Z):
    # (V z)_i = V_i z_i for Z of shape (n, C, k)
    return np.matmul(Vb, Z)


def _apply_Vt(Vb, Z):
    # (V^T z)_i = V_i^T z_i for Z of shape (n, C, k)
    return np.matmul(np.swapaxes(Vb, 1, 2), Z)


def _system(op, Vb):
    """A = I + V^T K̃ V on arrays (n, C, k) (Seeger 2008, eq. 5)."""

    def apply(Z):
        return Z + _apply_Vt(Vb, op.mvm(np.ascontiguousarray(_apply_V(Vb, Z))))

    return apply


def _symmetrise(S):
    return 0.5 * (S + np.swapaxes(S, 1, 2))


def latent_predictive(
    model,
    X_new,
    *,
    method: str = "exact",
    Y=None,
    tol: float = 1e-10,
    batch: int | None = None,
    rank: int | None = None,
    random_state=0,
) -> LatentPredictive:
    """Laplace-approximate latent predictive N(μ_j, Σ_j) of a fitted MAP model at X_new.

    ``model``: a :class:`~gpmodels.inference.map.model.MAPModel` (operator K̃, likelihood, α̂, û).
    ``method``: ``exact`` (batched CG per chunk of ``batch`` test points to relative residual
    ``tol``, at most max(50, n C) steps) or ``lanczos`` (rank ``rank`` LOVE factorisation; ``tol``
    is its relative breakdown threshold).  ``Y``: the training targets, needed only where W
    depends on them (robust likelihoods); softmax and logistic W depend on û alone and Y may be
    left None.  Components that the softmax factor fixes (App. B, π_ic < e^κ) carry curvature
    below e^κ and are left out of W.  ``random_state`` seeds the Lanczos start vectors.
    See the module docstring for the formulas (R&W eq. 3.43) and costs.
    """
    if method not in PREDICTIVE_METHODS:
        raise InputError(f"method must be one of {PREDICTIVE_METHODS}; got {method!r}")
    if not (np.isfinite(tol) and tol > 0):
        raise InputError(f"tol must be a positive number; got {tol!r}")
    op, lik = model.operator, model.likelihood
    n, C = op.n_points, op.n_classes
    X_new = check_features("X_new", X_new)
    U = np.asarray(model.result.u, dtype=np.float64)
    Yf = np.zeros((n, C)) if Y is None else np.asarray(Y, dtype=np.float64)
    if Yf.size != n * C:
        raise InputError(
            f"Dimension mismatch: Y (the training targets) must have {n} rows and {C} columns like the "
            f"fitted model; got shape {Yf.shape}"
        )
    Yf = Yf.reshape(n, C)
    Vb = _point_factor(lik.hessian_factor(U, Yf))
    K_ss = op.test_point_blocks(X_new)  # shape: (m, C, C)
    mean = op.cross_test(X_new).mvm(model.alpha)
    if method == "exact":
        if batch is None:
            batch = max(1, 256 // C)
        if int(batch) < 1:
            raise InputError(f"batch must be a positive number of test points; got {batch!r}")
        cov, matvecs, converged = _exact(op, Vb, X_new, K_ss, tol, max(50, n * C), int(batch))
        return LatentPredictive(mean, cov, method, matvecs, None, converged)
    if rank is None:
        rank = min(n * C, 256)
    if int(rank) < 1:
        raise InputError(f"rank must be a positive integer; got {rank!r}")
    cov, k, exact = _lanczos(op, Vb, X_new, K_ss, min(int(rank), n * C), tol, np.random.default_rng(random_state))
    return LatentPredictive(mean, cov, method, k, k, exact)


def _rows(X, s):
    return X[s]


def _exact(op, Vb, X_new, K_ss, tol, max_iter, batch):
    m, C = K_ss.shape[:2]
    n = op.n_points
    cov = np.empty_like(K_ss)
    apply_A = _system(op, Vb)
    matvecs, converged = 0, True
    for s in range(0, m, batch):
        sl = slice(s, min(m, s + batch))
        b = sl.stop - sl.start
        ct = op.cross_test(_rows(X_new, sl))
        E = np.eye(b * C).reshape(b, C, b * C)  # column (j, c) = e_{jc}
        R = _apply_Vt(Vb, ct.rmvm(E))  # R = V^T Q, shape: (n, C, b C)
        res = cg(apply_A, R, systems=Systems(columns=True), tol=tol, max_iter=max_iter)
        matvecs += res.matvecs * b * C
        converged &= bool(np.all(res.residual <= tol))
        Rr, Zr = R.reshape(n * C, b, C), res.x.reshape(n * C, b, C)
        cov[sl] = K_ss[sl] - np.einsum("ajc,ajd->jcd", Rr, Zr)  # Σ_j = K_** - R_j^T A^{-1} R_j
    if not converged:
        warnings.warn(
            f"latent_predictive: batched CG stopped at max_iter={max_iter} before the relative residual "
            f"reached tol={tol:g}; loosen tol or use method='lanczos'",
            ConvergenceWarning,
            stacklevel=3,
        )
    return _symmetrise(cov), matvecs, converged


def _lanczos(op, Vb, X_new, K_ss, rank, tol, rng):
    m, C = K_ss.shape[:2]
    n = op.n_points
    N = n * C
    ct = op.cross_test(X_new)
    apply_A = _system(op, Vb)

    def start():  # a random combination of the test right-hand sides R_j = V^T Q_j
        w = rng.standard_normal((m, C))
        return _apply_Vt(Vb, ct.rmvm(w)[:, :, None]).reshape(N)

    def orth(v, Q, k):
        for _ in range(2):  # full reorthogonalisation, two passes (Parlett's "twice is enough")
            v = v - Q[:k].T @ (Q[:k] @ v)
        return v

    Q = np.zeros((rank, N))  # rows are the Lanczos vectors (contiguous leading blocks Q[:k])
    AQ = np.zeros((rank, N))
    v = start()
    scale = float(np.linalg.norm(v))
    exact = False
    k = 0
    if scale == 0.0:  # no test point is correlated with the training latents: Σ_j = K_**
        return K_ss.copy(), 0, True
    q = v / scale
    while k < rank:
        Q[k] = q
        AQ[k] = apply_A(q.reshape(n, C, 1)).reshape(N)
        k += 1
        w = orth(AQ[k - 1], Q, k)
        beta = float(np.linalg.norm(w))
        if beta > tol * float(np.linalg.norm(AQ[k - 1])):
            q = w / beta
            continue
        # breakdown: span Q is invariant under A; restart from a new test combination
        v = start()
        v_norm = float(np.linalg.norm(v))
        v = orth(v, Q, k)
        if float(np.linalg.norm(v)) <= tol * max(v_norm, np.finfo(float).tiny):
            exact = True  # the test directions lie in an invariant subspace spanned by Q
            break
        q = v / float(np.linalg.norm(v))
    if k == N:
        exact = True
    Qk = Q[:k]
    T = Qk @ AQ[:k].T
    T = 0.5 * (T + T.T)  # Rayleigh–Ritz: T_k = Q_k^T A Q_k
    L = sla.cholesky(T, lower=True)
    VQ = _apply_V(Vb, np.ascontiguousarray(Qk.T).reshape(n, C, k))  # shape: (n, C, k)
    RQ = ct.mvm(np.ascontiguousarray(VQ))  # R_j^T Q_k = (K̃_{*,X} V Q_k)_j, shape: (m, C, k)
    G = sla.solve_triangular(L, RQ.reshape(m * C, k).T, lower=True)  # L^{-1} Q_k^T R, shape: (k, m C)
    G = G.T.reshape(m, C, k)
    cov = K_ss - np.matmul(G, np.swapaxes(G, 1, 2))  # Σ_j = K_** - R_j^T Q_k T_k^{-1} Q_k^T R_j
    return _symmetrise(cov), k, exact


# ---------------------------------------------------------------------------- probabilities
def _sqrt_cov(cov: np.ndarray, jitter: float) -> np.ndarray:
    """Lower Cholesky factors of each Σ_j (m, C, C), with jitter·mean(diag) added if needed."""
    m, C = cov.shape[:2]
    scale = np.maximum(np.einsum("jcc->j", cov) / C, np.finfo(float).tiny)[:, None, None]
    eye = np.eye(C)[None]
    for j in (0.0, jitter, 1e3 * jitter):
        try:
            return np.linalg.cholesky(cov + j * scale * eye)
        except np.linalg.LinAlgError:
            continue
    lam, U = np.linalg.eigh(cov)  # last resort for numerically indefinite blocks: clip eigenvalues
    return U * np.sqrt(np.maximum(lam, 0.0))[:, None, :]


def predictive_proba(
    pred: LatentPredictive,
    likelihood: Likelihood,
    *,
    method: str = "mc",
    n_samples: int = 2000,
    random_state=None,
    jitter: float = 1e-10,
    chunk: int = 2_000_000,
) -> np.ndarray:
    """Predictive probabilities E[p(y | u_*)] under u_* ~ N(μ_j, Σ_j), shape of ``likelihood.predict``.

    ``mc``: (1/S) Σ_s predict(μ_j + L_j ε_s), ε_s ~ N(0, I) from ``numpy.random.default_rng(
    random_state)`` in float64, L_j the Cholesky factor of Σ_j (+ jitter·mean diag Σ_j where Σ_j
    is numerically singular); the Monte Carlo standard error of each probability is at most
    0.5/sqrt(S).  The draws ε_s are shared by all test points (common random numbers), so a point's
    estimate depends on its own μ_j, Σ_j and the seed only: not on the other test points or their order.
    ``probit``: the analytic probit / "mean-field" approximation
    predict(μ_jc / sqrt(1 + π Σ_j,cc / 8)) — for the binary logistic (C = 1) this is MacKay's
    σ(κ(s²) μ) (R&W eq. 3.25 approximation); for the softmax it rescales each class' mean
    independently, ignores the correlations of Σ_j and is renormalised by the softmax: an
    approximation, not an expectation.  ``chunk`` bounds the number of latent values sampled at
    once.
    """
    if method not in PROBA_METHODS:
        raise InputError(f"method must be one of {PROBA_METHODS}; got {method!r}")
    mean, cov = np.asarray(pred.mean, dtype=np.float64), np.asarray(pred.cov, dtype=np.float64)
    m, C = mean.shape
    if method == "probit":
        var = np.einsum("jcc->jc", cov)
        return likelihood.predict(mean / np.sqrt(1.0 + np.pi * np.maximum(var, 0.0) / 8.0))
    if int(n_samples) < 1:
        raise InputError(f"n_samples must be a positive integer; got {n_samples!r}")
    S = int(n_samples)
    rng = np.random.default_rng(random_state)
    L = _sqrt_cov(cov, jitter)
    total = None
    step = max(1, int(chunk) // max(1, m * C))
    for s in range(0, S, step):
        b = min(step, S - s)
        eps = rng.standard_normal((b, C))  # common random numbers: the same ε_s for every test point
        U = mean[None] + np.einsum("jcd,sd->sjc", L, eps)  # shape: (b, m, C)
        P = likelihood.predict(U.reshape(b * m, C))
        P = P.reshape(b, m, -1).sum(axis=0)
        total = P if total is None else total + P
    return total / S


def laplace_predict_proba(
    model, X_new, *, latent: str = "exact", rank: int | None = None, n_samples: int = 2000, random_state=0, Y=None
) -> tuple[np.ndarray, LatentPredictive]:
    """Laplace-predictive class probabilities of a fitted MAP model at X_new, and the latent predictive.

    P_j = E[p(y | u_*)] under u_* ~ N(μ_j, Σ_j) (R&W eq. 3.40 / 3.43 for μ_j, Σ_j; see the module
    docstring), by :func:`latent_predictive` with ``method=latent`` (``exact`` or ``lanczos`` of
    rank ``rank``) and Monte Carlo with ``n_samples`` draws seeded by ``random_state``
    (:func:`predictive_proba`).  The plug-in alternative is ``model.predict_proba(X_new)`` =
    p(y | μ_j), which ignores Σ_j.
    """
    pred = latent_predictive(model, X_new, method=latent, rank=rank, Y=Y, random_state=random_state)
    return predictive_proba(pred, model.likelihood, n_samples=n_samples, random_state=random_state), pred
