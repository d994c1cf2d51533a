"""Laplace predictive (gpmodels/inference/map/predictive.py) against dense computations and sampling.

Dense oracle (R&W 2006, eq. 3.43 / Alg. 3.4): the operator built on X ∪ X_new gives K, the cross
block Q and K_**; W = blockdiag(diag π_i - π_i π_i^T) from û; Σ_* = K_** - Q^T (I + W K)^{-1} W Q
((K + W^{-1})^{-1} = (I + W K)^{-1} W, which holds for singular W).
"""

import numpy as np
import pytest

from gpmodels.errors import InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.inference.map.model import fit_map
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions
from gpmodels.inference.map.predictive import latent_predictive, predictive_proba
from gpmodels.kernels.rbf import RBF
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.likelihoods.logistic import Logistic
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.coupled import Coupled
from gpmodels.operators.intercept import Intercept
from gpmodels.priors.anova import ANOVAPrior
from gpmodels.testing import assert_close

STORED = RepresentationConfig(kind="stored")
TREE = ClassTree([("root", "a"), ("root", "c3"), ("a", "c1"), ("a", "c2")])
OPTS = NewtonOptions(max_iter=60, grad_tol=1e-12)


def _independent(X):
    return Intercept(BlockDiagonal.from_sharing(X, RBF(w=0.7), 3, "semi", [2.0, 1.0, 3.0], STORED), 0.5)


def _anova(X):
    return ANOVAPrior(
        TREE, RBF(w=0.5), sharing="node", variance=[1.5, 0.8, 1.0, 2.0], sigma2=0.3, representation=STORED
    ).operator(X, TREE.n_classes)


def _coupled(X):
    inner = BlockDiagonal.from_sharing(X, RBF(w=0.7), 2, "separate", [2.0, 1.0], STORED)
    return Coupled(inner, np.array([[1.0, 0.0], [0.6, 0.8], [-0.5, 1.0]]))


PRIORS = {"independent": _independent, "anova": _anova, "coupled": _coupled}


def _problem(seed=0, n=30, m=8, C=3):
    rng = np.random.default_rng(seed)
    centres = np.array([[-1.5, 0.0], [1.5, 0.0], [0.0, 1.8]])[:C]
    y = rng.integers(0, C, size=n)
    X = centres[y] + rng.normal(scale=1.0, size=(n, 2))
    X_new = rng.normal(scale=2.0, size=(m, 2))
    return X, np.eye(C)[y], X_new


def _dense_oracle(factory, X, X_new, model):
    n, m = X.shape[0], X_new.shape[0]
    full = factory(np.vstack([X, X_new])).dense()
    C = model.operator.n_classes
    K, Q = full[: n * C, : n * C], full[: n * C, n * C :]
    Kss = full[n * C :, n * C :].reshape(m, C, m, C)[np.arange(m), :, np.arange(m), :]
    u = model.result.u
    pi = np.exp(u - u.max(axis=1, keepdims=True))
    pi /= pi.sum(axis=1, keepdims=True)
    W = np.zeros((n * C, n * C))
    for i in range(n):
        s = slice(i * C, (i + 1) * C)
        W[s, s] = np.diag(pi[i]) - np.outer(pi[i], pi[i])
    S = Q.T @ np.linalg.solve(np.eye(n * C) + W @ K, W @ Q)
    cov = Kss - S.reshape(m, C, m, C)[np.arange(m), :, np.arange(m), :]
    mean = (Q.T @ model.alpha.ravel()).reshape(m, C)
    return mean, cov, K, W, Q, Kss


@pytest.fixture(scope="module", params=sorted(PRIORS))
def fitted(request):
    X, Y, X_new = _problem()
    factory = PRIORS[request.param]
    model = fit_map(factory(X), Softmax(), Y, NewtonCG(OPTS))
    return request.param, factory, X, Y, X_new, model


def test_exact_equals_the_dense_computation(fitted):
    name, factory, X, Y, X_new, model = fitted
    mean, cov, *_ = _dense_oracle(factory, X, X_new, model)
    pred = latent_predictive(model, X_new, method="exact", tol=1e-13, batch=3)  # 3 chunks of test points
    assert pred.converged
    assert_close(f"{name}: mean", pred.mean, mean, 1e-8, 1e-8)
    assert_close(f"{name}: mean = MAPModel.latent", pred.mean, model.latent(X_new), 1e-12, 1e-12)
    assert_close(f"{name}: cov", pred.cov, cov, 1e-8, 1e-8)
    assert np.all(np.linalg.eigvalsh(pred.cov) > -1e-10), "predictive covariances must be PSD"
    # the data explain some variance: Σ_* <= K_** in the PSD order, strictly on the trace
    Kss = model.operator.test_point_blocks(X_new)
    assert np.all(np.linalg.eigvalsh(Kss - pred.cov) > -1e-10)


def test_lanczos_at_full_rank_equals_exact(fitted):
    name, factory, X, Y, X_new, model = fitted
    exact = latent_predictive(model, X_new, method="exact", tol=1e-13)
    n, C = model.alpha.shape
    full = latent_predictive(model, X_new, method="lanczos", rank=n * C)
    assert full.converged, "a full-rank Lanczos basis is exact"
    assert_close(f"{name}: lanczos full rank", full.cov, exact.cov, 1e-8, 1e-8)
    assert_close(f"{name}: lanczos mean", full.mean, exact.mean, 1e-12, 1e-12)


def test_lanczos_at_low_rank_over_estimates_the_variance(fitted):
    """A Galerkin projection explains less variance: Σ_lanczos >= Σ_exact (PSD order), the gap
    shrinking with the rank."""
    name, factory, X, Y, X_new, model = fitted
    exact = latent_predictive(model, X_new, method="exact", tol=1e-13)
    gaps = []
    for k in (5, 20, 40):
        low = latent_predictive(model, X_new, method="lanczos", rank=k)
        assert low.rank <= k
        assert np.all(np.linalg.eigvalsh(low.cov - exact.cov) > -1e-9), f"rank {k} under-estimates Σ"
        gaps.append(float(np.abs(low.cov - exact.cov).max()))
    assert gaps[2] <= gaps[0] + 1e-12


def test_monte_carlo_probabilities_match_brute_force_sampling(fitted):
    """MC over N(μ_*, Σ_*) against sampling u ~ N(û, (K^{-1} + W)^{-1}) and u_* | u by the GP
    conditional, averaging the softmax.  Each probability estimate has standard error
    <= 0.5/sqrt(S); with S = 20000 per side the difference has sd <= 0.0036: tolerance 0.02."""
    name, factory, X, Y, X_new, model = fitted
    mean, cov, K, W, Q, Kss = _dense_oracle(factory, X, X_new, model)
    n, C = model.alpha.shape
    m = X_new.shape[0]
    pred = latent_predictive(model, X_new)
    lik = Softmax()
    P = predictive_proba(pred, lik, n_samples=20000, random_state=1)
    assert P.shape == (m, C)
    assert_close("rows sum to 1", P.sum(axis=1), np.ones(m), 1e-12, 1e-12)
    # brute force: training-latent posterior covariance (K^{-1} + W)^{-1} = K - K (I + W K)^{-1} W K
    post = K - K @ np.linalg.solve(np.eye(n * C) + W @ K, W @ K)
    rng = np.random.default_rng(2)
    S = 20000
    Lp = np.linalg.cholesky(0.5 * (post + post.T) + 1e-10 * np.eye(n * C))
    u = model.result.u.ravel()[None, :] + rng.standard_normal((S, n * C)) @ Lp.T
    Kj = K + 1e-10 * np.trace(K) / (n * C) * np.eye(n * C)
    A = np.linalg.solve(Kj, Q).T  # K_{*,X} K^{-1}, shape: (m C, n C)
    cond = np.eye(m * C) * 0.0
    for j in range(m):  # per-point conditional covariance K_** - K_{*,X} K^{-1} K_{X,*} (blocks)
        s = slice(j * C, (j + 1) * C)
        cond[s, s] = Kss[j] - A[s] @ Q[:, s]
    Lc = np.linalg.cholesky(cond + 1e-10 * np.eye(m * C))
    ustar = u @ A.T + rng.standard_normal((S, m * C)) @ Lc.T
    brute = lik.predict(ustar.reshape(S * m, C)).reshape(S, m, C).mean(axis=0)
    assert_close(f"{name}: MC vs brute force", P, brute, 0.0, 0.02)
    plugin = lik.predict(pred.mean)
    assert float(np.abs(brute - plugin).max()) > 0.05, "test problem too easy: plug-in already matches"
    probit = predictive_proba(pred, lik, method="probit")
    assert_close("probit rows sum to 1", probit.sum(axis=1), np.ones(m), 1e-12, 1e-12)
    assert float(np.abs(probit - brute).max()) < float(np.abs(plugin - brute).max())


def test_monte_carlo_is_seeded():
    X, Y, X_new = _problem(1, n=12, m=3)
    model = fit_map(_independent(X), Softmax(), Y, NewtonCG(OPTS))
    pred = latent_predictive(model, X_new)
    a = predictive_proba(pred, Softmax(), n_samples=500, random_state=7)
    b = predictive_proba(pred, Softmax(), n_samples=500, random_state=7, chunk=100)
    assert_close("same seed, other chunking", a, b, 1e-12, 1e-12)
    c = predictive_proba(pred, Softmax(), n_samples=500, random_state=8)
    assert not np.allclose(a, c)


def test_binary_logistic():
    rng = np.random.default_rng(3)
    n, m = 25, 6
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)[:, None]
    X_new = rng.normal(scale=2.0, size=(m, 2))
    op = BlockDiagonal.from_sharing(X, RBF(w=0.8), 1, "tied", 4.0, STORED)
    model = fit_map(op, Logistic(), y, NewtonCG(OPTS))
    pred = latent_predictive(model, X_new, tol=1e-13)
    K, Q = op.dense(), op.cross_test(X_new).dense().T
    p = 1.0 / (1.0 + np.exp(-model.result.u.ravel()))
    w = p * (1 - p)
    var = 4.0 - np.einsum("aj,aj->j", Q, np.linalg.solve(np.eye(n) + w[:, None] * K, w[:, None] * Q))
    assert_close("logistic variance (R&W Alg. 3.2 line 6)", pred.cov[:, 0, 0], var, 1e-8, 1e-8)
    P = predictive_proba(pred, Logistic(), n_samples=40000, random_state=0)
    probit = predictive_proba(pred, Logistic(), method="probit")
    assert P.shape == (m, 2) and probit.shape == (m, 2)
    assert_close("MacKay's probit approximation is close to MC", probit, P, 0.0, 0.03)


def test_bad_arguments_are_refused():
    X, Y, X_new = _problem(1, n=8, m=2)
    model = fit_map(_independent(X), Softmax(), Y, NewtonCG(OPTS))
    with pytest.raises(InputError, match="method"):
        latent_predictive(model, X_new, method="dense")
    with pytest.raises(InputError, match="Y"):
        latent_predictive(model, X_new, Y=np.ones((3, 3)))
    with pytest.raises(InputError, match="rank"):
        latent_predictive(model, X_new, method="lanczos", rank=0)
    pred = latent_predictive(model, X_new)
    with pytest.raises(InputError, match="method"):
        predictive_proba(pred, Softmax(), method="laplace")
    with pytest.raises(InputError, match="n_samples"):
        predictive_proba(pred, Softmax(), n_samples=0)


def test_monte_carlo_estimates_do_not_depend_on_the_other_test_points_or_their_order():
    """Common random numbers: point j's estimate is a function of (μ_j, Σ_j, seed) alone."""
    X, Y, X_new = _problem(2, n=15, m=6)
    model = fit_map(_independent(X), Softmax(), Y, NewtonCG(OPTS))
    P = predictive_proba(latent_predictive(model, X_new), Softmax(), n_samples=300, random_state=5)
    order = np.array([4, 0, 5, 2])
    Q = predictive_proba(latent_predictive(model, X_new[order]), Softmax(), n_samples=300, random_state=5)
    assert_close("reordered subset", Q, P[order], 1e-12, 1e-12)
