"""Kernels against loop oracles; derivative contractions against finite differences; sparse = dense."""

import importlib
import inspect
import pkgutil

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from oracles import naive_gram

import gpmodels
from gpmodels.errors import InputError
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.blocked_gram import BlockedGram
from gpmodels.kernels.composite import Constrained, KernelProduct, KernelSum
from gpmodels.kernels.constant import Constant, White
from gpmodels.kernels.feature_gram import FeatureGram
from gpmodels.kernels.linear import Linear, Polynomial
from gpmodels.kernels.lowrank_gram import LowRankGram, incomplete_cholesky
from gpmodels.kernels.matern import Matern, MaternARD
from gpmodels.kernels.precomputed import Precomputed, index_inputs
from gpmodels.kernels.rational_quadratic import RationalQuadratic, RationalQuadraticARD
from gpmodels.kernels.rbf import ARD, RBF
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.kernels.sklearn_adapter import SklearnKernel
from gpmodels.kernels.stored_gram import StoredGram
from gpmodels.testing import assert_close

log_uniform = st.floats(-2, 2).map(lambda t: float(np.exp(t)))


BASE_KINDS = ["rbf", "ard", "linear", "poly", "matern", "matern_ard", "rq", "rq_ard", "constant", "white"]


@st.composite
def base_kernel(draw, d, kinds=tuple(BASE_KINDS)):
    kind = draw(st.sampled_from(kinds))
    if kind == "rbf":
        return RBF(draw(log_uniform))
    if kind == "ard":
        return ARD([draw(log_uniform) for _ in range(d)])
    if kind == "linear":
        return Linear()
    if kind == "poly":
        return Polynomial(draw(st.integers(1, 4)), draw(log_uniform), draw(st.sampled_from([0.0, 0.5, 2.0])))
    if kind in ("matern", "matern_ard"):
        w = draw(log_uniform) if kind == "matern" else [draw(log_uniform) for _ in range(d)]
        return (Matern if kind == "matern" else MaternARD)(w=w, nu=draw(st.sampled_from([0.5, 1.5, 2.5])))
    if kind in ("rq", "rq_ard"):
        w = draw(log_uniform) if kind == "rq" else [draw(log_uniform) for _ in range(d)]
        return (RationalQuadratic if kind == "rq" else RationalQuadraticARD)(w=w, alpha=draw(log_uniform))
    if kind == "constant":
        return Constant(draw(log_uniform))
    return White(draw(log_uniform))


@st.composite
def kernel_and_inputs(draw):
    d = draw(st.integers(1, 4))
    r = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    X1, X2 = r.normal(size=(draw(st.integers(1, 6)), d)), r.normal(size=(draw(st.integers(1, 6)), d))
    kind = draw(st.sampled_from(BASE_KINDS + ["precomputed", "sum", "product", "constrained", "sklearn"]))
    if kind in BASE_KINDS:
        k = draw(base_kernel(d, (kind,)))
    elif kind in ("sum", "product"):
        terms = [draw(base_kernel(d)) for _ in range(draw(st.integers(1, 3)))]
        k = KernelSum(terms) if kind == "sum" else KernelProduct(terms)
    elif kind == "constrained":
        inner = draw(base_kernel(d, ("rq", "rq_ard", "ard")))
        free = np.array([draw(st.booleans()) for _ in range(inner.params.size)])
        k = Constrained(inner, np.tile([-20.0, 20.0], (int(free.sum()), 1)), free)
    elif kind == "sklearn":
        import sklearn.gaussian_process.kernels as skk

        k = SklearnKernel(
            skk.ConstantKernel(draw(log_uniform)) * skk.ExpSineSquared(draw(log_uniform), draw(log_uniform))
        )
    else:
        N = 8
        Z = r.normal(size=(N, N))
        k = Precomputed(Z @ Z.T)
        X1, X2 = index_inputs(r.integers(0, N, size=X1.shape[0])), index_inputs(r.integers(0, N, size=X2.shape[0]))
    return k, X1, X2, r


KERNEL_CLASSES_TESTED = {
    RBF,
    ARD,
    Linear,
    Polynomial,
    Precomputed,
    Matern,
    MaternARD,
    RationalQuadratic,
    RationalQuadraticARD,
    Constant,
    White,
    KernelSum,
    KernelProduct,
    Constrained,
    SklearnKernel,
}


def _all_subclasses(cls):
    out, stack = set(), [cls]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in out:
                out.add(sub)
                stack.append(sub)
    return out


def test_completeness_every_kernel_is_tested():
    for mod in pkgutil.walk_packages(gpmodels.__path__, "gpmodels."):
        importlib.import_module(mod.name)
    concrete = {
        c for c in _all_subclasses(Kernel) if not inspect.isabstract(c) and c.__module__.startswith("gpmodels.")
    }
    assert concrete <= KERNEL_CLASSES_TESTED, f"kernels without tests: {concrete - KERNEL_CLASSES_TESTED}"


@given(kernel_and_inputs())
def test_gram_and_diag_against_loops(case):
    k, X1, X2, _ = case
    assert_close("gram", k.gram(X1, X2), naive_gram(k, X1, X2), 1e-10)
    assert_close("diag", k.diag(X1), np.diag(naive_gram(k, X1, X1)), 1e-10)


@given(kernel_and_inputs())
def test_grad_contract_against_finite_differences(case):
    k, X1, X2, r = case
    G = r.normal(size=(X1.shape[0], X2.shape[0]))
    g = k.grad_contract(X1, X2, G)
    gd = k.diag_grad_contract(X1, G[:, 0] if G.shape[1] else np.zeros(X1.shape[0]))
    h = 1e-6
    for p in range(k.params.size):
        tp, tm = k.params.copy(), k.params.copy()
        tp[p] += h
        tm[p] -= h
        kp, km = k.with_params(tp), k.with_params(tm)
        fd = np.sum((naive_gram(kp, X1, X2) - naive_gram(km, X1, X2)) * G) / (2 * h)
        assert abs(g[p] - fd) <= 1e-5 * max(1.0, abs(fd)), (k.param_names[p], g[p], fd)
        fdd = np.dot(kp.diag(X1) - km.diag(X1), G[:, 0]) / (2 * h)
        assert abs(gd[p] - fdd) <= 1e-5 * max(1.0, abs(fdd))


@given(
    st.integers(0, 2**31 - 1),
    st.sampled_from(["rbf", "ard", "linear", "poly", "matern", "matern_ard", "rq", "sum", "product"]),
)
def test_sparse_inputs_give_the_dense_results(seed, kind):
    r = np.random.default_rng(seed)
    X = r.normal(size=(6, 5)) * (r.random((6, 5)) < 0.5)
    Xs = sp.csr_matrix(X)
    k = {
        "rbf": RBF(0.7),
        "ard": ARD(r.random(5) + 0.1),
        "linear": Linear(),
        "poly": Polynomial(2, 0.5, 1.0),
        "matern": Matern(0.7, nu=2.5),
        "matern_ard": MaternARD(r.random(5) + 0.1, nu=0.5),
        "rq": RationalQuadratic(0.4, alpha=2.0),
        "sum": Matern(0.3, nu=1.5) + RBF(0.5) + Linear(),
        "product": Constant(2.0) * RationalQuadraticARD(r.random(5) + 0.1) * Polynomial(2, 0.5, 1.0),
    }[kind]
    assert k.supports_sparse
    assert_close("gram sparse", k.gram(Xs, Xs), k.gram(X, X), 1e-12)
    G = r.normal(size=(6, 6))
    assert_close("grad_contract sparse", k.grad_contract(Xs, Xs, G), k.grad_contract(X, X, G), 1e-10)


def test_rbf_matches_seeger_equation_7():
    x, xp = np.array([[1.0, 2.0]]), np.array([[0.0, 0.0]])
    assert RBF(0.5).gram(x, xp)[0, 0] == pytest.approx(np.exp(-0.25 * 5.0))


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan, np.inf])
def test_non_positive_kernel_parameters_are_refused(bad):
    with pytest.raises(InputError, match="positive"):
        RBF(bad)
    with pytest.raises(InputError, match="positive"):
        ARD([1.0, bad])


def test_polynomial_and_precomputed_validation():
    with pytest.raises(InputError, match="degree"):
        Polynomial(degree=0)
    with pytest.raises(InputError, match="symmetric"):
        Precomputed(np.array([[1.0, 2.0], [0.0, 1.0]]))
    with pytest.raises(InputError, match="indices"):
        Precomputed(np.eye(3)).gram(index_inputs([0, 5]), index_inputs([1]))


def test_ard_dimension_mismatch_is_named():
    with pytest.raises(InputError, match="3 length-scales but the inputs have 2"):
        ARD([1.0, 1.0, 1.0]).gram(np.zeros((2, 2)), np.zeros((2, 2)))


# ----------------------------------------------------------------------------- representations
def test_blocked_representation_honours_its_memory_bound(rng):
    X = rng.normal(size=(50, 3))
    k = RBF(0.3)
    rep = BlockedGram(X, k, memory_mb=8 * 50 * 7 / 2**20)  # 7 rows per block
    blocks = list(rep._blocks())
    assert len(blocks) == 8 and max(b.stop - b.start for b in blocks) == 7
    B = rng.normal(size=(50, 4))
    assert_close("blocked mvm", rep.mvm(B), k.gram(X, X) @ B, 1e-12)
    E, F = rng.normal(size=(50, 2)), rng.normal(size=(50, 2))
    assert_close("blocked grad", rep.grad_contract(E, F), StoredGram(X, k).grad_contract(E, F), 1e-10)


def test_grad_contract_dense_is_grad_contract_against_the_identity(rng):
    X = rng.normal(size=(40, 3))
    k = RBF(0.3)
    A = rng.normal(size=(40, 40))
    expect = StoredGram(X, k).grad_contract(A, np.eye(40))
    for rep in (StoredGram(X, k), BlockedGram(X, k, memory_mb=8 * 40 * 7 / 2**20), LowRankGram(X, k, X[:10])):
        assert_close(type(rep).__name__, rep.grad_contract_dense(A), rep.grad_contract(A, np.eye(40)), 1e-12)
    assert_close("blocked = stored", BlockedGram(X, k).grad_contract_dense(A), expect, 1e-10)


def test_feature_representation_never_forms_the_gram_and_needs_linear(rng):
    X = sp.random(200, 1000, density=0.01, format="csr", random_state=1)
    rep = FeatureGram(X)
    B = rng.normal(size=(200, 3))
    assert_close("features mvm", rep.mvm(B), (X @ X.T).toarray() @ B, 1e-12)
    assert rep.nbytes < 200 * 200 * 8 / 4
    with pytest.raises(InputError, match="linear kernel only"):
        FeatureGram(X, RBF(1.0))


def test_incomplete_cholesky_at_full_rank_is_exact(rng):
    X = rng.normal(size=(12, 2))
    k = RBF(0.8)
    L, piv = incomplete_cholesky(X, k, 12, 0.0)
    assert_close("ICF full rank", L @ L.T, k.gram(X, X), 1e-8, 1e-8)
    assert len(set(piv.tolist())) == piv.size
    rep = LowRankGram.from_icf(X, k, max_rank=12, tol=1e-14)
    assert_close("low rank at full rank", rep.dense(), k.gram(X, X), 1e-6, 1e-6)


def test_low_rank_diagonal_correction_keeps_the_exact_diagonal(rng):
    X = rng.normal(size=(40, 3))
    k = RBF(0.5)
    rep = LowRankGram.from_icf(X, k, max_rank=5, tol=0.0)
    assert rep.rank == 5
    assert_close("diag of the corrected approximation", np.diag(rep.dense()), k.diag(X), 1e-12)
    err = np.linalg.norm(rep.dense() - k.gram(X, X)) / np.linalg.norm(k.gram(X, X))
    assert err < 0.5


def test_representation_config_auto_choices(rng):
    X = rng.normal(size=(10, 2))
    assert isinstance(RepresentationConfig().build(X, Linear()), FeatureGram)
    assert isinstance(RepresentationConfig().build(X, RBF(1.0)), StoredGram)
    assert isinstance(RepresentationConfig(memory_gb=1e-7, memory_mb=1e-5).build(X, RBF(1.0)), BlockedGram)
    with pytest.raises(InputError, match="RepresentationConfig.kind must be one of"):
        RepresentationConfig(kind="magic")
    with pytest.raises(InputError, match="needs dense inputs"):
        RepresentationConfig().build(sp.csr_matrix(X), Precomputed(np.eye(3)))


def test_stored_rbf_matrices_at_new_parameters_reuse_the_squared_distances(rng, monkeypatch):
    """An operator at new hyperparameters rebuilds its stored RBF matrices from the cached squared
    distances (computed once): the same numbers as a fresh build; restrict and cross blocks are the
    submatrices (float32 storage: rounded once); kernels without ``gram_from_sq_dists`` get no cache."""
    import gpmodels.kernels.stored_gram as R
    from gpmodels.priors.independent import IndependentGP

    X = rng.standard_normal((30, 3))
    calls = []
    real = R.sq_dists
    monkeypatch.setattr(R, "sq_dists", lambda a, b: calls.append(1) or real(a, b))
    op = IndependentGP(RBF(0.5), "separate", [1.0, 2.0], 1.0).operator(X, 2)
    moved = op.with_params(op.params - 0.4).with_params(op.params + np.array([0.3, -0.2, 0.1, 0.0]))
    reps = [r for r, _ in moved.inner.rep_groups]
    assert len(reps) == 2 and all(r.sq_dists is not None and r._M is None for r in reps)  # M: built on use
    J, I = np.array([0, 3, 4, 9, 17, 29]), np.array([1, 2, 28])
    restricted, cross = reps[0].restrict(J).M, reps[0].cross(I, J).M  # from the cached distance blocks
    assert reps[0]._M is None and len(reps[0].sq_dists._blocks) == 2
    for rep in reps:
        assert np.array_equal(rep.M, StoredGram(X, rep.kernel).M)
    assert np.array_equal(restricted, reps[0].M[np.ix_(J, J)])
    assert np.array_equal(cross, reps[0].M[np.ix_(I, J)])
    assert np.array_equal(reps[1].restrict(J).M, reps[1].M[np.ix_(J, J)])  # and from a built M
    assert len(calls) == 1  # the distances were computed once, for every parameter value
    assert RepresentationConfig(kind="stored").build(X, Linear()).sq_dists is None
    f32 = RepresentationConfig(kind="stored", dtype="float32").build(X, RBF(0.5))  # float32 from the cache too
    assert f32.sq_dists is not None
    assert f32.restrict(J).M.dtype == np.float32 and f32.cross(I, J).M.dtype == np.float32
    assert np.array_equal(f32.restrict(J).M, StoredGram(X, RBF(0.5)).M[np.ix_(J, J)].astype(np.float32))
    tiny = RepresentationConfig(kind="stored", memory_gb=1e-9)  # the cache would exceed its share of the budget
    assert tiny.build(X, RBF(0.5)).sq_dists is None
