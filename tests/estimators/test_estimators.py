"""The scikit-learn façade passes scikit-learn's estimator checks (exceptions listed with reasons).

GPClassifier and CrammerSingerSVC here; HM3Classifier (multilabel) in test_hm3_estimator.py.
"""

import warnings

import numpy as np
import pytest
from conftest import assert_estimator_checks_pass

from gpmodels.baselines.crammer_singer.solver import CSOptions, fit_crammer_singer
from gpmodels.errors import ConvergenceWarning, InputError, NotFittedError
from gpmodels.estimators import CrammerSingerSVC, GPClassifier, LaplacePredictive
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions
from gpmodels.kernels import RBF, Linear
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.priors import IndependentGP

# checks that may be skipped, and why (none may fail)
ALLOWED_SKIPS = {
    "check_array_api_input": "needs SCIPY_ARRAY_API and an array-API library; gpmodels computes with numpy/scipy",
    "check_classifier_data_not_an_array": "needs pandas, which is not installed in the test environment",
}


@pytest.mark.parametrize(
    "estimator",
    [
        GPClassifier(),
        GPClassifier(objective="map", solver=NewtonCG(NewtonOptions(max_iter=20))),
        GPClassifier(IndependentGP(Linear(), "tied", sigma2=1.0), objective="map", solver="exact"),
        GPClassifier(
            IndependentGP(RBF(0.5), "semi", 2.0, 1.0, representation=RepresentationConfig(kind="lowrank")),
            objective="map",
        ),
        GPClassifier(
            objective="map",
            solver=NewtonCG(NewtonOptions(max_iter=20)),
            predictive=LaplacePredictive(200),
            random_state=0,
        ),
    ],
    ids=["default-cv", "rbf-map", "linear-exact", "rbf-semi-lowrank", "laplace-predictive"],
)
def test_sklearn_estimator_checks(estimator):
    assert_estimator_checks_pass(estimator, ALLOWED_SKIPS)


def test_gp_classifier_in_a_pipeline_and_grid_search():
    from sklearn.datasets import load_iris
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    priors = [IndependentGP(RBF(0.25), variance=v, sigma2=1.0) for v in (1.0, 10.0)]
    search = GridSearchCV(
        make_pipeline(StandardScaler(), GPClassifier(objective="map")), {"gpclassifier__prior": priors}, cv=3
    )
    search.fit(X, y)
    assert search.best_score_ > 0.9
    assert set(search.predict(X)) <= set(y)
    P = search.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)


def test_estimator_protocol_details():
    X = np.random.default_rng(0).normal(size=(30, 2))
    y = np.array(["a", "b", "c"] * 10)
    est = GPClassifier(objective="laplace")
    with pytest.raises(NotFittedError, match="not fitted"):
        est.predict(X)
    est.fit(X, y)
    assert list(est.classes_) == ["a", "b", "c"] and est.n_features_in_ == 2 and est.n_iter_ >= 1
    assert est.decision_function(X).shape == (30, 3)
    assert est.get_params()["objective"] == "laplace"
    assert est.set_params(objective="map").objective == "map"
    with pytest.raises(ValueError, match="Invalid parameter 'objectiv'"):
        est.set_params(objectiv="cv")
    with pytest.raises(ValueError, match="expecting 2 features"):
        est.predict(np.zeros((2, 3)))
    assert "objective='map'" in repr(est)
    with pytest.raises(ValueError, match="The 'solver' parameter of GPClassifier must be 'newton-cg', 'exact'"):
        GPClassifier(solver="newton_cg").fit(X, y)


# ------------------------------------------------------------------------------------------ CrammerSingerSVC
# The linear and polynomial kernels on the checks' uncentred data (x ~ N(100, 1), random labels) make the
# dual very ill-conditioned: Fig. 4 then needs far more than 10^5 example updates, so those instances cap
# max_updates (they end with a ConvergenceWarning, deterministically, which no check minds).
@pytest.mark.parametrize(
    "estimator",
    [
        CrammerSingerSVC(),
        CrammerSingerSVC(kernel="linear", C=10.0, max_updates=20000),
        CrammerSingerSVC(kernel="polynomial", cooling="none", reduced_solver="exact", max_updates=20000),
        CrammerSingerSVC(kernel="ard", w=0.5, engine="numpy", epsilon=1e-2, cache_mb=0),
    ],
    ids=["rbf", "linear", "poly-exact", "ard-numpy-nocache"],
)
@pytest.mark.filterwarnings("ignore::gpmodels.errors.ConvergenceWarning")
def test_crammer_singer_sklearn_estimator_checks(estimator):
    assert_estimator_checks_pass(estimator, ALLOWED_SKIPS)


def _blobs(seed=0, n=90, k=3):
    r = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])[:k]
    y = np.arange(n) % k
    return centres[y] + r.normal(size=(n, 2)), y


def test_crammer_singer_svc_matches_the_solver_and_its_own_attributes():
    X, y = _blobs()
    labels = np.array(["x", "y", "z"])[y]
    est = CrammerSingerSVC(C=4.0, w=0.7, epsilon=1e-4).fit(X, labels)
    model = fit_crammer_singer(RBF(0.7), X, y, CSOptions(beta=0.25, epsilon=1e-4))
    Xt = _blobs(seed=1)[0]
    np.testing.assert_array_equal(est.tau_, model.result.tau)
    np.testing.assert_allclose(est.decision_function(Xt), model.decision_function(Xt), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(est.predict(Xt), np.array(["x", "y", "z"])[model.predict(Xt)])
    # f(x) = K(x, SV) dual_coef_ (eq. 12), support = rows with τ_i ≠ 0, per-class counts
    np.testing.assert_allclose(
        RBF(0.7).gram(Xt, est.support_vectors_) @ est.dual_coef_, est.decision_function(Xt), atol=1e-12
    )
    np.testing.assert_array_equal(est.support_, np.flatnonzero(np.any(est.tau_ != 0, axis=1)))
    assert est.n_support_.sum() == est.support_.size and est.n_support_.shape == (3,)
    np.testing.assert_allclose(est.tau_.sum(axis=1), 0.0, atol=1e-12)  # Σ_r τ_ir = 0
    assert np.all(est.tau_[np.arange(y.size), y] <= 1.0) and est.n_iter_ == model.result.updates
    assert est.score(X, labels) > 0.9 and not hasattr(est, "predict_proba")


def test_crammer_singer_svc_against_liblinear_crammer_singer():
    """Linear kernel: the same primal (7) as LinearSVC(multi_class='crammer_singer', fit_intercept=False)."""
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    for C in (0.1, 1.0):
        est = CrammerSingerSVC(kernel="linear", C=C, epsilon=1e-5, reduced_solver="exact").fit(X, y)
        ref = LinearSVC(multi_class="crammer_singer", fit_intercept=False, C=C, tol=1e-8, max_iter=100_000).fit(X, y)
        W = est.dual_coef_.T @ est.support_vectors_  # M = Σ_i (τ_i/β) x_iᵀ
        np.testing.assert_allclose(W, ref.coef_, atol=1e-4)
        np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X), atol=1e-4)


def test_crammer_singer_svc_leaves_out_zero_rows_of_the_linear_kernel():
    X, y = _blobs(n=60)
    Xz = np.vstack([X, np.zeros((3, 2))])
    yz = np.r_[y, [0, 1, 2]]
    with_zeros = CrammerSingerSVC(kernel="linear", epsilon=1e-4).fit(Xz, yz)
    without = CrammerSingerSVC(kernel="linear", epsilon=1e-4).fit(X, y)
    np.testing.assert_array_equal(with_zeros.tau_[-3:], 0.0)
    np.testing.assert_array_equal(with_zeros.tau_[:-3], without.tau_)
    np.testing.assert_allclose(with_zeros.decision_function(X), without.decision_function(X), atol=1e-12)
    with pytest.raises(ValueError, match="K\\(x, x\\) = 0"):
        CrammerSingerSVC(kernel="linear").fit(np.zeros((4, 2)), [0, 1, 0, 1])


def test_crammer_singer_svc_protocol_and_errors():
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = _blobs(n=60)
    est = CrammerSingerSVC(kernel=Linear(), C=2.0)
    with pytest.raises(NotFittedError, match="not fitted"):
        est.decision_function(X)
    assert clone(est).get_params()["C"] == 2.0 and "C=2.0" in repr(est)
    assert est.fit(X, y).decision_function(X).shape == (60, 3)
    assert CrammerSingerSVC().fit(X[y < 2], y[y < 2]).decision_function(X).shape == (60,)  # f_1 − f_0
    with pytest.raises(ValueError, match="expecting 2 features"):
        est.predict(np.zeros((2, 3)))
    with pytest.raises(
        ValueError,
        match="The 'kernel' parameter of CrammerSingerSVC: unknown kernel '(rbff|gauss)'; allowed: 'rbf', 'ard'",
    ):
        CrammerSingerSVC(kernel="rbff").fit(X, y)
    with pytest.raises(ValueError, match="The 'C' parameter of CrammerSingerSVC must be a positive number"):
        CrammerSingerSVC(C=0).fit(X, y)
    with pytest.raises(ValueError, match="The 'w' parameter"):
        CrammerSingerSVC(w="scale").fit(X, y)
    with pytest.raises(ValueError, match="CSOptions.cooling must be one of"):
        CrammerSingerSVC(cooling="fast").fit(X, y)
    with pytest.warns(ConvergenceWarning, match="max_updates"):
        CrammerSingerSVC(max_updates=3).fit(X, y)
    search = GridSearchCV(
        make_pipeline(StandardScaler(), CrammerSingerSVC()), {"crammersingersvc__C": [0.1, 10.0]}, cv=3
    ).fit(X, y)
    assert search.best_score_ > 0.8


# ------------------------------------------------------------------------------------------ issue 15: bad input
@pytest.mark.parametrize(
    "y, message",
    [
        (np.array([1, "a"] * 6, dtype=object), r"Unknown label type: y mixes number and string labels"),
        (["a", 1] * 6, "Unknown label type: y mixes number and string labels"),
        (np.array([b"a", "a"] * 6, dtype=object), "Unknown label type: y mixes bytes and string labels"),
        ([[1], [1, 2]] * 6, r"Unknown label type: entry 0 of y is a list \(ragged or nested y\)"),
        ([1, None] * 6, r"y contains None \(entry 1\)"),
        (np.array([0, 1.5j] * 6, dtype=object), "Unknown label type: label 1 of y is a complex"),
        (np.array([0.0, np.nan] * 6, dtype=object), "NaN or infinity"),
    ],
)
@pytest.mark.parametrize("make", [GPClassifier, CrammerSingerSVC])
def test_label_types_that_cannot_be_classes_are_named(make, y, message):
    X = np.random.default_rng(0).normal(size=(12, 2))
    with pytest.raises(InputError, match=message):
        make().fit(X, y)


def test_object_labels_of_one_type_still_work():
    X, y = _blobs(n=30)
    est = GPClassifier().fit(X, np.array(["a", "b", "c"], dtype=object)[y])
    assert list(est.classes_) == ["a", "b", "c"]
    assert list(GPClassifier().fit(X, y.astype(object)).classes_) == [0, 1, 2]


def test_a_prior_object_is_a_parameter_that_clone_and_set_params_carry_untouched():
    from sklearn.base import clone

    prior = IndependentGP(RBF(1.0), "separate", 1.0, 1.0)
    est = GPClassifier(prior=prior, objective="map")
    other = IndependentGP(RBF(0.25), "tied", 4.0, 1.0)
    assert repr(clone(est).get_params()["prior"]) == repr(prior)
    assert est.set_params(prior=other).prior is other and prior.variance == 1.0
    X, y = _blobs(n=30)
    assert est.fit(X, y).score(X, y) > 0.8
    assert est.kernel_.prior is other
    assert est.kernel_.hyperparameters() == pytest.approx({"kernel0.w": 0.25, "variance0": 4.0})


def test_a_column_vector_y_warns_with_sklearns_data_conversion_warning_under_any_filter():
    """check_supervised_y_2d turns scikit-learn's DataConversionWarning to "always"; a warning that is
    not that class was lost under an outer "ignore" filter and the check failed."""

    from sklearn.exceptions import DataConversionWarning as SkDataConversionWarning
    from sklearn.utils.estimator_checks import check_supervised_y_2d

    from gpmodels.errors import DataConversionWarning

    X, y = _blobs(n=30)
    with pytest.warns(SkDataConversionWarning, match="column-vector y"):
        GPClassifier().fit(X, y[:, None])
    with pytest.warns(DataConversionWarning):
        CrammerSingerSVC().fit(X, y[:, None])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_supervised_y_2d("GPClassifier", GPClassifier(objective="map"))


def test_hm3_indicator_matrices_with_none_or_mixed_types_are_named():
    from gpmodels.estimators import HM3Classifier

    X = np.random.default_rng(0).normal(size=(4, 2))
    tree = [("r", "a"), ("a", "b")]
    with pytest.raises(InputError, match=r"y contains None \(entry 1\)"):
        HM3Classifier(tree).fit(X, np.array([[1, None], [0, 0], [1, 1], [1, 0]], dtype=object))
    with pytest.raises(InputError, match="Unknown label type: y mixes number and string"):
        HM3Classifier(tree).fit(X, [[1, "a"]] * 4)
