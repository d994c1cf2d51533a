"""scikit-learn's conventions on the estimators (issue 41): ``kernel=``, nested parameters through
``get_params`` / ``set_params`` on frozen priors and kernels, ``length_scale`` beside ``w``, the ``'auto'``
default width, and the engine's share of the cores under joblib's parallelism."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import assert_estimator_checks_pass
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.gaussian_process import kernels as skk
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import gpmodels as gp
from gpmodels.data.scaling import auto_rbf_w
from gpmodels.engine.auto import AutoEngine, engine_for_jobs
from gpmodels.engine.base import LocalEngine
from gpmodels.engine.outer import OuterParallelism, cores_left, engine_cores, read_outer
from gpmodels.engine.processes import ProcessEngine
from gpmodels.errors import ConvergenceWarning, InputError
from gpmodels.estimators import GPClassifier, HierarchicalGPClassifier
from gpmodels.kernels.auto_width import resolve_widths
from gpmodels.priors import ANOVAPrior, CoupledPrior, IndependentGP

WIDTH_KERNELS = [
    (gp.RBF, 2.0),
    (gp.Matern, 2.0),
    (gp.RationalQuadratic, 2.0),
    (gp.ARD, np.array([1.0, 4.0])),
    (gp.MaternARD, np.array([1.0, 4.0])),
    (gp.RationalQuadraticARD, np.array([1.0, 4.0])),
]


def _iris(n=90):
    X, y = load_iris(return_X_y=True)
    rows = np.random.default_rng(0).permutation(len(y))[:n]
    return StandardScaler().fit_transform(X[rows]), y[rows]


def _same(a, b) -> bool:
    """Equal parameter values: arrays by value, frozen objects by their parameters, others by repr."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return repr(a) == repr(b)


# ----------------------------------------------------------------------------- length_scale <-> w
@pytest.mark.parametrize("cls, scale", WIDTH_KERNELS, ids=lambda v: getattr(v, "__name__", ""))
def test_length_scale_and_w_each_give_the_other(cls, scale):
    by_scale = cls(length_scale=scale)
    np.testing.assert_allclose(by_scale.w, 1.0 / np.square(scale))
    by_w = cls(w=1.0 / np.square(scale))
    np.testing.assert_allclose(by_w.length_scale, scale)
    np.testing.assert_allclose(by_w.params, by_scale.params)
    assert "length_scale=" in repr(by_w) and "w=" in repr(by_w)
    params = by_w.get_params()
    np.testing.assert_allclose(params["length_scale"], scale)
    np.testing.assert_allclose(by_w.set_params(length_scale=2 * scale).w, 1.0 / np.square(2 * scale))
    np.testing.assert_allclose(by_w.w, 1.0 / np.square(scale))  # frozen: set_params made a new kernel
    section = by_w.spec_section()
    assert "length_scale" not in section and np.allclose(section["w"], 1.0 / np.square(scale))


@pytest.mark.parametrize("cls, scale", WIDTH_KERNELS, ids=lambda v: getattr(v, "__name__", ""))
def test_w_and_length_scale_together_are_refused(cls, scale):
    with pytest.raises(InputError, match="takes w or length_scale .*not both"):
        cls(w=1.0 / np.square(scale), length_scale=scale)
    with pytest.raises(InputError, match="length_scale must be"):
        cls(length_scale=-np.abs(scale))


def test_a_kernel_without_a_width_is_auto_and_set_from_the_training_inputs():
    X = np.random.default_rng(1).normal(size=(40, 3)) * [1.0, 2.0, 3.0]
    w = auto_rbf_w(X)
    assert gp.RBF().w == "auto" and gp.RBF().length_scale == "auto" and repr(gp.RBF()) == "RBF(w='auto')"
    with pytest.raises(InputError, match="has no width until it meets the training inputs"):
        _ = gp.Matern().params
    resolved = resolve_widths(gp.RBF() + 2.0 * gp.ARD(), X)
    assert resolved.terms[0].w == pytest.approx(w)
    np.testing.assert_allclose(resolved.terms[1].terms[1].w, np.full(3, w))
    assert resolve_widths(gp.RBF(3.0), X).w == 3.0
    # a prior without a kernel builds with RBF(w='auto'), as the default prior always did
    op = IndependentGP(None, "separate", 1.0, 1.0).operator(X, 3)
    ref = IndependentGP(gp.RBF(w), "separate", 1.0, 1.0).operator(X, 3)
    np.testing.assert_allclose(op.params, ref.params)
    np.testing.assert_allclose(op.dense(), ref.dense())


def test_the_estimator_records_the_auto_width_it_resolved():
    X, y = _iris()
    est = GPClassifier(kernel=gp.Matern(nu=2.5), objective="map").fit(X, y)
    kernel = est.kernel_.prior.kernel
    assert isinstance(kernel, gp.Matern) and kernel.w == pytest.approx(auto_rbf_w(X)) and kernel.nu == 2.5
    default = GPClassifier(objective="map").fit(X, y)
    assert default.kernel_.prior.kernel.w == pytest.approx(auto_rbf_w(X))
    assert GPClassifier().kernel is None and GPClassifier().prior is None  # the estimator's parameters unchanged


# ----------------------------------------------------------------------------- kernel=
def test_kernel_takes_native_and_scikit_learn_kernels_and_fills_the_prior():
    X, y = _iris()
    native = GPClassifier(kernel=gp.Matern(length_scale=2.0), objective="map").fit(X, y)
    sk = GPClassifier(kernel=skk.Matern(length_scale=2.0), objective="map").fit(X, y)
    np.testing.assert_allclose(native.predict_proba(X), sk.predict_proba(X), rtol=1e-8, atol=1e-10)
    semi = GPClassifier(prior=IndependentGP(sharing="semi", variance=2.0), kernel=gp.RBF(length_scale=1.5))
    semi.fit(X, y)
    assert semi.kernel_.prior.sharing == "semi" and semi.kernel_.prior.kernel.length_scale == pytest.approx(1.5)
    assert semi.prior.kernel is None  # fit changed no parameter


def test_kernel_and_a_prior_with_its_own_kernel_conflict():
    X, y = _iris(30)
    est = GPClassifier(prior=IndependentGP(gp.RBF(1.0)), kernel=skk.Matern(), objective="map")
    with pytest.raises(InputError, match=r"kernel=Matern.* and a prior=IndependentGP that carries its own kernel RBF"):
        est.fit(X, y)
    with pytest.raises(InputError, match="The 'kernel' parameter of GPClassifier must be None"):
        GPClassifier(kernel="rbf", objective="map").fit(X, y)
    with pytest.raises(InputError, match="carries its own kernel"):
        HierarchicalGPClassifier(
            prior=lambda tree, X: ANOVAPrior(tree, gp.RBF(1.0)), kernel=gp.Matern(1.0), objective="map"
        ).fit(X, y)


def test_hierarchical_classifier_takes_kernel():
    X, y = _iris(60)
    paths = [["small" if c == 0 else "large", str(c)] for c in y]
    est = HierarchicalGPClassifier(kernel=gp.Matern(length_scale=2.0), objective="map").fit(X, paths)
    kernel = est.estimator_.kernel_.prior.kernel
    assert isinstance(kernel, gp.Matern) and kernel.length_scale == pytest.approx(2.0)
    est.set_params(kernel__length_scale=3.0)
    assert est.kernel.length_scale == pytest.approx(3.0)


# ----------------------------------------------------------------------------- nested parameters
def test_nested_parameters_are_listed_and_set_without_changing_the_frozen_objects():
    prior = IndependentGP(gp.RBF(length_scale=2.0), "semi", 3.0, 0.5)
    est = GPClassifier(prior=prior)
    params = est.get_params(deep=True)
    assert params["prior__variance"] == 3.0 and params["prior__kernel__length_scale"] == pytest.approx(2.0)
    est.set_params(prior__variance=10.0, prior__kernel__length_scale=4.0, cv=3)
    assert est.prior.variance == 10.0 and est.prior.kernel.w == pytest.approx(1 / 16) and est.cv == 3
    assert prior.variance == 3.0 and prior.kernel.length_scale == pytest.approx(2.0)
    # on prior=None / kernel=None the nested names start from the defaults
    fresh = GPClassifier().set_params(prior__variance=5.0, kernel__length_scale=0.5)
    assert fresh.prior.variance == 5.0 and fresh.prior.kernel is None and fresh.kernel.w == pytest.approx(4.0)
    assert fresh.prior.sharing == "separate" and fresh.prior.sigma2 == 1.0
    # a scikit-learn kernel is set in place on the estimator's own copy, as scikit-learn does
    sk = skk.Matern(length_scale=1.0)
    est = clone(GPClassifier(kernel=sk)).set_params(kernel__length_scale=3.0)
    assert est.kernel.length_scale == 3.0 and sk.length_scale == 1.0
    with pytest.raises(InputError, match="Invalid parameter 'varience' for IndependentGP"):
        GPClassifier(prior=prior).set_params(prior__varience=1.0)
    with pytest.raises(ValueError, match="Invalid parameter"):
        GPClassifier().set_params(priors__variance=1.0)


@pytest.mark.parametrize(
    "est",
    [
        GPClassifier(prior=IndependentGP(gp.RBF(length_scale=2.0), "semi", [1.0, 2.0], 0.5)),
        GPClassifier(prior=CoupledPrior(gp.ARD(length_scale=[1.0, 2.0]), n_factors=2), cv=3, n_jobs=1),
        GPClassifier(kernel=gp.Matern(length_scale=2.0, nu=0.5) + gp.Constant(2.0), objective="laplace"),
        GPClassifier(kernel=1.0 * skk.RBF(1.0, length_scale_bounds=(1e-2, 1e2)), random_state=3),
    ],
    ids=["independent", "coupled", "composite", "scikit-learn-kernel"],
)
def test_clone_round_trips_every_parameter(est):
    copy = clone(est)  # scikit-learn's clone checks that the constructor keeps every parameter as given
    original, cloned = est.get_params(deep=True), copy.get_params(deep=True)
    assert original.keys() == cloned.keys()
    assert any("__" in key for key in original)
    for key in original:
        assert _same(original[key], cloned[key]), key


def test_grid_search_over_kernel_length_scale_and_prior_variance_picks_the_better_model():
    X, y = _iris()
    search = GridSearchCV(GPClassifier(objective="map"), {"kernel__length_scale": [0.01, 1.0]}, cv=3).fit(X, y)
    assert search.best_params_ == {"kernel__length_scale": 1.0}
    assert search.best_estimator_.kernel.length_scale == 1.0 and search.best_score_ > 0.85
    search = GridSearchCV(GPClassifier(objective="map"), {"prior__variance": [1e-4, 10.0]}, cv=3).fit(X, y)
    assert search.best_params_ == {"prior__variance": 10.0} and search.best_score_ > 0.85
    assert search.cv_results_["mean_test_score"][0] < search.cv_results_["mean_test_score"][1]


def test_grid_search_through_a_pipeline_and_over_the_prior_kernel():
    X, y = _iris()
    pipe = make_pipeline(StandardScaler(), GPClassifier(objective="map"))
    grid = {"gpclassifier__prior__variance": [1e-4, 10.0], "gpclassifier__prior__kernel__length_scale": [1.0]}
    search = GridSearchCV(pipe, grid, cv=3).fit(X, y)
    assert search.best_params_["gpclassifier__prior__variance"] == 10.0
    prior = search.best_estimator_[-1].prior
    assert prior.variance == 10.0 and prior.kernel.length_scale == 1.0


@pytest.mark.parametrize(
    "estimator",
    [GPClassifier(kernel=gp.Matern(length_scale=1.0), objective="map"), GPClassifier(kernel=skk.RBF(1.0), cv=3)],
    ids=["native-kernel", "scikit-learn-kernel"],
)
def test_sklearn_estimator_checks_with_kernel(estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert_estimator_checks_pass(
            estimator,
            {
                "check_array_api_input": "needs SCIPY_ARRAY_API and an array-API library",
                "check_classifier_data_not_an_array": "needs pandas, which is not installed in the test environment",
            },
        )


# ----------------------------------------------------------------------------- joblib's share of the cores
def test_cores_left_under_an_outer_parallelism():
    assert cores_left(16, OuterParallelism()) == 16
    assert cores_left(16, OuterParallelism(n_jobs=3)) == 3 and cores_left(4, OuterParallelism(n_jobs=-1)) == 4
    # a loky worker of cross_val_score(n_jobs=2) on 16 cores: joblib set the BLAS limit to 16 // 2
    assert cores_left(16, OuterParallelism(nesting_level=1, blas_limit=8)) == 8
    assert cores_left(2, OuterParallelism(nesting_level=1, blas_limit=1)) == 1
    assert cores_left(4, OuterParallelism(nesting_level=1, blas_limit=64)) == 4
    assert cores_left(16, OuterParallelism(nesting_level=1, in_thread=True, blas_limit=16)) == 1


def test_the_engine_is_sized_from_what_joblib_leaves_it():
    worker = OuterParallelism(nesting_level=1, blas_limit=2)  # e.g. 8 cores, n_jobs=4
    auto = engine_for_jobs(None, outer=worker)
    assert isinstance(auto, AutoEngine) and auto.cores <= 2
    explicit = engine_for_jobs(8, outer=worker)  # asked for 8, joblib left 2 (or fewer usable)
    assert isinstance(explicit, (ProcessEngine, LocalEngine))
    if isinstance(explicit, ProcessEngine):
        assert explicit.workers <= 2 and explicit.workers * explicit.blas_threads <= 2
    one = OuterParallelism(nesting_level=1, blas_limit=1)
    assert isinstance(engine_for_jobs(4, outer=one), LocalEngine) and engine_for_jobs(None, outer=one).cores == 1
    thread = OuterParallelism(nesting_level=1, in_thread=True, blas_limit=8)
    assert engine_for_jobs(None, outer=thread).cores == 1


def _outer_here(_):
    return read_outer(), engine_cores()


def test_read_outer_inside_joblib_tasks():
    from joblib import Parallel, delayed

    assert read_outer().nesting_level == 0
    for outer, cores in Parallel(n_jobs=2, backend="threading")(delayed(_outer_here)(i) for i in range(2)):
        assert outer.nesting_level >= 1 and outer.in_thread and cores == 1
    for outer, cores in Parallel(n_jobs=2)(delayed(_outer_here)(i) for i in range(2)):  # loky workers
        assert outer.nesting_level >= 1 and not outer.in_thread
        assert cores == max(1, min(outer.blas_limit, cores)) and cores <= outer.blas_limit


def test_make_kernel_and_reports_take_length_scale():
    from gpmodels.hyperparameters import with_length_scales
    from gpmodels.kernels.factory import make_kernel

    assert make_kernel("rbf", length_scale=2.0).w == pytest.approx(0.25)
    X = np.zeros((5, 2))
    np.testing.assert_allclose(make_kernel("matern_ard", X=X, length_scale=0.5).w, [4.0, 4.0])
    with pytest.raises(InputError, match="takes `w` or `length_scale`"):
        make_kernel("rbf", w=1.0, length_scale=1.0)
    with pytest.raises(InputError, match="length_scale of kernel 'rbf' must be a positive number"):
        make_kernel("rbf", length_scale=-1.0)
    shown = with_length_scales({"kernel0.w": 4.0, "log_variance": 0.0, "w2": 0.25})
    assert shown == {
        "kernel0.w": 4.0,
        "kernel0.length_scale": 0.5,
        "log_variance": 0.0,
        "w2": 0.25,
        "length_scale2": 2.0,
    }
