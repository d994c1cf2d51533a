"""Matérn, rational quadratic, constant and white kernels, sums and products, through every
representation and the CV / Laplace gradients; the scikit-learn adapter."""

import numpy as np
import pytest
import sklearn.gaussian_process.kernels as skk
from conftest import toy_classification
from oracles import block_diagonal_dense, cv_fd_gradient, naive_gram, nystrom_gram

from gpmodels.data.splits import kfold_partition
from gpmodels.errors import InputError
from gpmodels.inference.cv.criterion import cv_criterion
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.map.exact_newton import ExactNewton
from gpmodels.inference.map.model import fit_map
from gpmodels.inference.map.newton_cg import NewtonOptions
from gpmodels.inference.marginal.laplace import LaplaceOptions, laplace_mlm
from gpmodels.kernels import (
    ARD,
    RBF,
    Constant,
    KernelProduct,
    KernelSum,
    Linear,
    Matern,
    MaternARD,
    RationalQuadratic,
    RationalQuadraticARD,
    RepresentationConfig,
    White,
    from_sklearn,
    make_kernel,
)
from gpmodels.kernels.composite import Constrained
from gpmodels.kernels.lowrank_gram import LowRankGram
from gpmodels.kernels.sklearn_adapter import SklearnKernel
from gpmodels.kernels.stored_gram import SqDistCache, StoredGram
from gpmodels.likelihoods import Logistic, Softmax
from gpmodels.linalg.finite_differences import central_differences
from gpmodels.operators.blockdiag import VARIANCE_BOUNDS, BlockDiagonal
from gpmodels.optimize.objective import JointParams
from gpmodels.priors.independent import IndependentGP
from gpmodels.testing import assert_close, check_grad_trace, check_operator

KERNELS = {
    "matern12": Matern(w=0.8, nu=0.5),
    "matern32": Matern(w=0.5, nu=1.5),
    "matern52": Matern(w=1.3, nu=2.5),
    "matern32-ard": MaternARD(w=[0.4, 1.7, 0.9], nu=1.5),
    "matern12-ard": MaternARD(w=[0.4, 1.7, 0.9], nu=0.5),
    "rq": RationalQuadratic(w=0.6, alpha=0.8),
    "rq-ard": RationalQuadraticARD(w=[0.4, 1.7, 0.9], alpha=2.5),
    "matern32+rbf": Matern(w=0.5, nu=1.5) + RBF(2.0),
    "const*rbf": 2.5 * RBF(0.7),
    "rq*matern52+const": RationalQuadratic(w=0.3, alpha=1.5) * Matern(w=0.9, nu=2.5) + Constant(0.4),
    "ard*matern+linear": ARD([0.5, 1.0, 2.0]) * Matern(w=0.3, nu=0.5) + Linear(),
    "rbf+white": RBF(0.9) + White(0.3),
}
REPS = {
    "stored": RepresentationConfig(kind="stored"),  # with the squared-distance cache where the kernel has the form
    "stored-no-cache": RepresentationConfig(kind="stored", memory_gb=1e-9),
    "stored-float32": RepresentationConfig(kind="stored", dtype="float32"),
    "blocked": RepresentationConfig(kind="blocked", memory_mb=8 * 3 * 11 / 2**20),  # 3 rows per block
    "lowrank": RepresentationConfig(kind="lowrank", rank=6, tol=0.0),
}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_gram_is_symmetric_psd_and_matches_the_oracle(name):
    k, r = KERNELS[name], np.random.default_rng(1)
    X, Y = r.normal(size=(15, 3)), r.normal(size=(4, 3))
    M = k.gram(X, X)
    assert_close("gram symmetric", M, M.T, 1e-14)
    assert np.linalg.eigvalsh(M).min() > -1e-10 * np.abs(M).max()
    assert_close("gram vs loops", M, naive_gram(k, X, X), 1e-12)
    assert_close("cross gram vs loops", k.gram(Y, X), naive_gram(k, Y, X), 1e-12)
    assert_close("diag", k.diag(X), np.diag(M), 1e-12)
    rows = k.gram(X[:5].copy(), X)  # a block of rows, as representations build M: the same numbers
    assert_close("row block", rows, M[:5], 1e-13, 1e-13)


@pytest.mark.parametrize("rep", sorted(REPS))
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_representation_passes_the_operator_conformance_checks(name, rep):
    k, r = KERNELS[name], np.random.default_rng(2)
    X, X_new = r.normal(size=(11, 3)), r.normal(size=(3, 3))
    op = BlockDiagonal.from_sharing(X, k, 2, "semi", [0.7, 1.8], REPS[rep])
    rep_obj = op._rep_list[0]
    if isinstance(rep_obj, LowRankGram):
        grams = [nystrom_gram(k, X, X, rep_obj.Xp, rep_obj.jitter, True)] * 2
        cross = None
    else:
        grams = [naive_gram(k, X, X)] * 2
        cross = np.kron(naive_gram(k, X_new, X), np.diag(op.class_variances))
    if rep == "stored":
        assert (rep_obj.sq_dists is not None) == k.has_sq_dist_form
    rtol = 1e-5 if rep == "stored-float32" else 1e-9
    check_operator(
        op, r, dense=block_diagonal_dense(grams, op.class_variances), X_new=X_new, cross_dense=cross, rtol=rtol
    )
    if rep != "stored-float32":
        check_grad_trace(op, r)
        moved = op.with_params(op.params + 0.2)  # at new parameters: the cache's matrices, the same gradient
        check_grad_trace(moved, r)


@pytest.mark.parametrize("name", [n for n in sorted(KERNELS) if KERNELS[n].has_sq_dist_form])
def test_squared_distance_form_gives_the_same_matrices_and_contractions(name):
    k, r = KERNELS[name], np.random.default_rng(3)
    X = r.normal(size=(13, 3))
    D = SqDistCache(X).get()
    assert_close("gram from D", k.gram_from_sq_dists(D), k.gram(X, X), 1e-13, 1e-13)
    G = r.normal(size=(13, 13))
    assert_close(
        "contraction from D",
        k.grad_contract_from_sq_dists(D, G, k.gram_from_sq_dists(D)),
        k.grad_contract(X, X, G),
        1e-11,
    )
    E, F, w = r.normal(size=(13, 3)), r.normal(size=(13, 3)), r.random(3) + 0.5
    values, grad = StoredGram(X, k, sq_dists=SqDistCache(X)).contractions(E, F, w)
    v2, g2 = StoredGram(X, k).contractions(E, F, w)
    assert_close("values", values, v2, 1e-12)
    assert_close("weighted gradient", grad, g2, 1e-10)


def test_declared_capabilities():
    assert Matern(1.0).has_sq_dist_form and RationalQuadratic(1.0).has_sq_dist_form and Constant(2.0).has_sq_dist_form
    assert (Matern(1.0) + RBF(1.0)).has_sq_dist_form and (2.0 * Matern(1.0)).has_sq_dist_form
    for k in (MaternARD([1.0, 2.0]), White(1.0), Linear(), Matern(1.0) + Linear(), ARD([1.0]) * RBF(1.0)):
        assert not k.has_sq_dist_form and k.gram_from_sq_dists(np.zeros((2, 2))) is None


def test_sums_and_products_compose_and_name_their_parameters():
    k = Matern(0.5, nu=0.5) + RBF(1.0) + Matern(2.0, nu=2.5)
    assert isinstance(k, KernelSum) and len(k.terms) == 3  # flattened
    assert k.param_names == ("k0.log_w", "k1.log_w", "k2.log_w")
    assert sum([RBF(1.0), Matern(1.0)]).key() == (RBF(1.0) + Matern(1.0)).key()
    p = 3.0 * RBF(0.5) * RationalQuadratic(1.0, alpha=2.0)
    assert isinstance(p, KernelProduct) and [type(t) for t in p.terms] == [Constant, RBF, RationalQuadratic]
    assert p.param_names == ("k0.log_value", "k1.log_w", "k2.log_w", "k2.log_alpha")
    q = p.with_params(p.params + 1.0)
    np.testing.assert_allclose(q.params, p.params + 1.0)
    assert q.key() != p.key() and p.with_params(p.params).key() == p.key()
    with pytest.raises(InputError, match="positive"):
        RBF(1.0) * -2.0
    with pytest.raises(InputError, match="must be a gpmodels Kernel or a positive number"):
        RBF(1.0) + "rbf"
    with pytest.raises(InputError, match="one of"):
        Matern(1.0, nu=1.0)


def test_product_rule_with_a_zero_term():
    """Products of the other terms come from prefix and suffix products, never by division."""
    r = np.random.default_rng(4)
    X = r.normal(size=(6, 2))
    X[:, 0] = 0.0  # the linear kernel on this column is 0 on the diagonal of a one-feature product
    k = Linear() * Matern(0.7, nu=2.5) * RationalQuadratic(0.4, alpha=3.0)
    G = r.normal(size=(6, 6))
    fd = central_differences(k.params, lambda t: np.sum(k.with_params(t).gram(X[:, :1], X[:, :1]) * G), 1e-6)
    np.testing.assert_allclose(k.grad_contract(X[:, :1], X[:, :1], G), fd, atol=1e-8)


def test_matern_half_is_exactly_one_on_the_diagonal_of_row_blocks():
    """The kink of e^{-r} at 0 would turn the rounding of |x|² + |x|² - 2 xᵀx into an O(1e-8) error."""
    X = np.random.default_rng(5).normal(size=(40, 30)) * 10.0
    M = Matern(1.0, nu=0.5).gram(X[:20].copy(), X)
    assert np.all(M[np.arange(20), np.arange(20)] == 1.0)


# ----------------------------------------------------------------------------- the learners' gradients
TIGHT = NewtonOptions(max_iter=100, cg_max_iter=600, cg_tol=1e-14, cg_forcing=0.0, grad_tol=1e-12, phi_rtol=0.0)
EXACT = CVOptions(newton=TIGHT, solver="exact", fail_tol=1e-8)


@pytest.mark.parametrize("rep", ["stored", "blocked"])
def test_cv_gradient_of_a_matern32_plus_rbf_sum_matches_central_differences(rep):
    """∇Ψ (Seeger 2008, eq. 6) through the sum's analytic contractions against central differences of Ψ."""
    X, y = toy_classification(24, 3, d=2, seed=0)
    Y, folds = np.eye(3)[y], kfold_partition(24, 3, seed=1, y=y)
    kernel = Matern(w=0.6, nu=1.5) + RBF(2.0)
    op = IndependentGP(kernel, "separate", [1.5, 3.0, 0.8], 1.0, representation=REPS[rep]).operator(X, 3)
    ev = cv_criterion(op, Softmax(), Y, folds, EXACT)
    assert ev.ok, ev.message
    assert op.param_names[:2] == ("kernel0.k0.log_w", "kernel0.k1.log_w")
    fd = cv_fd_gradient(op, Y, folds, EXACT, 1e-5)
    np.testing.assert_allclose(ev.gradient, fd, rtol=2e-6, atol=2e-6 * np.abs(fd).max())


def test_laplace_gradient_of_a_scaled_product_matches_central_differences():
    r = np.random.default_rng(6)
    X = r.normal(size=(30, 2))
    yb = np.where(np.sin(2 * X[:, 0]) + X[:, 1] + 0.3 * r.normal(size=30) > 0, 1.0, -1.0)
    kernel = 1.5 * Matern(w=0.5, nu=2.5) * RationalQuadratic(w=0.3, alpha=2.0)
    op = BlockDiagonal.from_sharing(X, kernel, 1, "tied", 1.2)
    options = LaplaceOptions(path="exact")
    res = laplace_mlm(op, Logistic(), yb, options)
    J = JointParams(op, Logistic())
    fd = central_differences(J.x0, lambda x: laplace_mlm(*J.build(x), yb, options, gradient=False).log_marginal, 1e-5)
    np.testing.assert_allclose(res.gradient, fd, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- scikit-learn kernels
SK_CASES = {
    "constant*rbf": skk.ConstantKernel(2.0) * skk.RBF(1.5),
    "rbf-anisotropic": skk.RBF([0.5, 2.0, 1.0]),
    "matern12": skk.Matern(0.7, nu=0.5),
    "matern32-anisotropic": skk.Matern([0.5, 2.0, 1.0], nu=1.5),
    "matern52": skk.Matern(1.3, nu=2.5),
    "matern-inf": skk.Matern(0.9, nu=np.inf),
    "rq": skk.RationalQuadratic(1.2, alpha=0.7),
    "dot": skk.DotProduct(0.8),
    "sum-with-white": skk.ConstantKernel(0.5) * skk.Matern(1.0) + skk.RBF(2.0) + skk.WhiteKernel(0.1),
    "fixed": skk.ConstantKernel(2.0, "fixed") * skk.RationalQuadratic(1.0, 0.5, alpha_bounds="fixed"),
    "generic-part": skk.ConstantKernel(1.5) * skk.ExpSineSquared(1.0, 3.0),
}


@pytest.mark.parametrize("name", sorted(SK_CASES))
def test_scikit_learn_kernels_give_their_own_matrices_parameters_and_bounds(name):
    sk = SK_CASES[name]
    k = from_sklearn(sk)
    r = np.random.default_rng(7)
    X, Y = r.normal(size=(9, 3)), r.normal(size=(4, 3))
    assert_close("training gram", k.gram(X, X), sk(X), 1e-13)
    if name != "sum-with-white":  # scikit-learn's WhiteKernel is 0 off the training Gram matrix
        assert_close("cross gram", k.gram(Y, X), sk(Y, X), 1e-13)
    assert_close("diag", k.diag(X), sk.diag(X), 1e-13)
    assert k.params.size == sk.theta.size
    # the natural parameters are fixed multiples of scikit-learn's log hyperparameters (log w = -2 log ℓ)
    generic = from_sklearn(sk, native=False)
    assert isinstance(generic, SklearnKernel)
    G = r.normal(size=(9, 9))
    _, dK = sk(X, eval_gradient=True)
    sk_grad = np.einsum("abp,ab->p", dK, G)
    assert_close("generic wrapper's gradient is scikit-learn's", generic.grad_contract(X, X, G), sk_grad, 1e-12)
    fd = central_differences(k.params, lambda t: np.sum(k.with_params(t).gram(X, X) * G), 1e-6)
    assert_close("mapped gradient vs finite differences", k.grad_contract(X, X, G), fd, 1e-6)
    # bounds: the native box maps back onto scikit-learn's
    assert k.param_bounds.shape == (k.params.size, 2)
    assert np.all(k.param_bounds[:, 0] < k.params) and np.all(k.params < k.param_bounds[:, 1])


def test_mapped_kernels_are_the_native_ones_with_their_bounds():
    k = from_sklearn(skk.ConstantKernel(2.0, (0.1, 10.0)) * skk.RBF(1.5, (0.5, 4.0)))
    assert isinstance(k, KernelProduct)
    c, rbf = k.terms
    assert isinstance(c, Constrained) and isinstance(c.kernel, Constant) and c.kernel.value == 2.0
    assert isinstance(rbf.kernel, RBF) and rbf.kernel.w == pytest.approx(1 / 2.25, rel=1e-15)
    np.testing.assert_allclose(k.param_bounds, [[np.log(0.1), np.log(10.0)], [-2 * np.log(4.0), -2 * np.log(0.5)]])
    fixed = from_sklearn(skk.RBF(1.5, "fixed"))
    assert fixed.params.size == 0 and fixed.param_names == ()
    assert isinstance(from_sklearn(skk.Matern(1.0, nu=1.5)).kernel, Matern)
    assert isinstance(from_sklearn(skk.Matern(1.0, nu=0.7)), SklearnKernel)  # no closed form: wrapped
    assert isinstance(from_sklearn(skk.Matern([1.0, 2.0], nu=2.5)).kernel, MaternARD)
    assert isinstance(from_sklearn(skk.RBF([1.0, 2.0])).kernel, ARD)
    assert isinstance(make_kernel(skk.RBF(1.0)).kernel, RBF)


def test_a_scikit_learn_constant_times_rbf_gives_the_native_fit():
    """The goal of issue 26: ConstantKernel(2.0) * RBF(1.5) fits as the native 2 * RBF(w = 1/1.5²) does
    (the same numbers), and the generic wrapper (scikit-learn's own matrices) to Φ within 1e-10."""
    X, y = toy_classification(60, 3, d=3, seed=3)
    Y = np.eye(3)[y]
    sk = skk.ConstantKernel(2.0) * skk.RBF(1.5)
    fits = {}
    for name, kernel in [
        ("native", Constant(2.0) * RBF(1.0 / 1.5**2)),
        ("mapped", from_sklearn(sk)),
        ("generic", from_sklearn(sk, native=False)),
    ]:
        op = IndependentGP(kernel, "separate", 1.0, 1.0).operator(X, 3)
        fits[name] = fit_map(op, Softmax(), Y, ExactNewton(TIGHT)).result
    assert fits["mapped"].phi == fits["native"].phi
    assert abs(fits["generic"].phi - fits["native"].phi) <= 1e-10
    np.testing.assert_allclose(fits["generic"].alpha, fits["native"].alpha, atol=1e-9)


def test_bounds_reach_the_learners_box():
    X = np.random.default_rng(8).normal(size=(10, 2))
    k = from_sklearn(skk.ConstantKernel(1.0, (0.5, 2.0)) * skk.RBF(1.0, (0.25, 4.0)))
    op = IndependentGP(k, "tied", 1.0, 1.0).operator(X, 2)
    b = op.param_bounds
    np.testing.assert_allclose(b[:2], [[np.log(0.5), np.log(2.0)], [-2 * np.log(4.0), -2 * np.log(0.25)]])
    np.testing.assert_allclose(b[2], np.log(VARIANCE_BOUNDS))  # the variance: declared (m̄ = 1 here)
    assert np.all(np.isinf(b[3:]))  # the fixed intercept: unbounded


@pytest.mark.parametrize(
    "bad, message",
    [
        (object(), "a kernel is a kernel name ("),
        ("matern52", "unknown kernel 'matern52'"),
        (skk.CompoundKernel([skk.RBF(1.0), skk.RBF(2.0)]), "CompoundKernel stacks several kernels"),
    ],
)
def test_refusals_name_what_is_accepted(bad, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")) as info:
        make_kernel(bad)
    if not isinstance(bad, str) and "Compound" not in message:
        assert "scikit-learn kernel object" in str(info.value) and "gpmodels.kernels.Kernel" in str(info.value)
    with pytest.raises(InputError, match="expected a scikit-learn kernel"):
        from_sklearn(RBF(1.0))


def test_factory_names_the_new_kernels():
    X = np.random.default_rng(9).normal(size=(12, 3))
    k = make_kernel("sum", X=X, terms=[{"type": "matern", "nu": 1.5, "w": "auto"}, {"type": "rbf", "w": 0.5}])
    assert isinstance(k, KernelSum) and isinstance(k.terms[0], Matern) and k.terms[0].nu == 1.5
    assert k.terms[0].w == pytest.approx(make_kernel("rbf", X=X, w="auto").w)
    ard = make_kernel("matern_ard", X=X, w=2.0, nu=0.5)
    assert isinstance(ard, MaternARD) and ard.w.shape == (3,)
    rq = make_kernel("rational_quadratic", w=0.5, alpha=3.0)
    assert isinstance(rq, RationalQuadratic) and rq.alpha == 3.0
    prod = make_kernel("product", terms=[{"type": "constant", "value": 2.0}, RBF(1.0), skk.Matern(1.0, nu=2.5)])
    assert [type(t) for t in prod.terms] == [Constant, RBF, Constrained]
    assert isinstance(make_kernel("white", noise=0.1), White)
    with pytest.raises(InputError, match="term 1 of kernel 'sum': kernel 'rbf' needs `w`"):
        make_kernel("sum", terms=[{"type": "constant"}, {"type": "rbf"}])
    with pytest.raises(InputError, match="matern takes one w; use kernel 'matern_ard'"):
        make_kernel("matern", w=[1.0, 2.0])
    with pytest.raises(InputError, match="needs `terms`"):
        make_kernel("product")


def test_priors_take_scikit_learn_kernels_and_the_estimator_learns_with_one():
    from gpmodels.estimators import GPClassifier
    from gpmodels.priors import ANOVAPrior, CoupledPrior

    sk = skk.ConstantKernel(1.0, "fixed") * skk.Matern(2.0, nu=1.5) + skk.RBF(3.0)
    prior = IndependentGP(sk, "tied", 1.0, 1.0)
    assert isinstance(prior.kernel, KernelSum) and prior.kernel.param_names == ("k0.k1.log_w", "k1.log_w")
    assert isinstance(CoupledPrior(skk.RBF(1.0)).kernel.kernel, RBF)
    assert ANOVAPrior.__attrs_attrs__.kernel.converter is IndependentGP.__attrs_attrs__.kernel.converter
    with pytest.raises(
        InputError, match="must be null or a gpmodels kernel .* or a scikit-learn kernel object; got 'rbf'"
    ):
        IndependentGP("rbf")
    X, y = toy_classification(45, 3, d=2, seed=2)
    clf = GPClassifier(prior=prior, objective="cv", cv=3, random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.8
    assert set(clf.learned_hyperparameters_) >= {"kernel0.k0.k1.w", "kernel0.k1.w"}


@pytest.mark.parametrize("name", sorted(KERNELS) + ["rbf", "ard", "linear", "sklearn-matern"])
def test_gram_depends_on_the_points_values_not_on_the_array_object(name):
    """gram(X, X) and gram(X, a copy of X) are the same numbers bit for bit (one symmetric product and an exact 0
    distance diagonal either way): a model shipped between processes predicts its training points as it did."""
    extra = {
        "rbf": RBF(0.7),
        "ard": ARD([0.5, 1.0, 2.0]),
        "linear": Linear(),
        "sklearn-matern": from_sklearn(skk.Matern(0.9)),
    }
    k = KERNELS.get(name) or extra[name]
    X = np.random.default_rng(3).normal(size=(40, 3))
    assert np.array_equal(k.gram(X, X), k.gram(X, X.copy()))
    assert np.array_equal(k.gram(X, X), k.gram(X.copy(), X))
