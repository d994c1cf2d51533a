"""The scikit-learn façade passes scikit-learn's estimator checks (exceptions listed with reasons)."""

import numpy as np
import pytest

from gpmodels.errors import NotFittedError
from gpmodels.estimators import GPClassifier

sklearn = pytest.importorskip("sklearn")
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

# checks that may be skipped, and why (none may fail)
ALLOWED_SKIPS = {
    "check_array_api_input": "needs SCIPY_ARRAY_API and an array-API library; gpmodels computes with numpy/scipy",
    "check_classifier_data_not_an_array": "needs pandas, which is not installed in the test environment",
}


@pytest.mark.parametrize("estimator", [
    GPClassifier(max_iter=20),
    GPClassifier(kernel="linear", sharing="tied", objective="exact"),
    GPClassifier(kernel="ard", w=0.5, sharing="semi", variance=2.0, representation="lowrank"),
], ids=["rbf-map", "linear-exact", "ard-lowrank"])
def test_sklearn_estimator_checks(estimator):
    results = check_estimator(estimator, on_fail=None)
    failed = [(r["check_name"], repr(r["exception"])[:300]) for r in results if r["status"] == "failed"]
    assert not failed, failed
    skipped = {r["check_name"] for r in results if r["status"] == "skipped"}
    assert skipped <= set(ALLOWED_SKIPS), skipped - set(ALLOWED_SKIPS)
    assert len(results) > 40


def test_gp_classifier_in_a_pipeline_and_grid_search():
    from sklearn.datasets import load_iris
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    search = GridSearchCV(make_pipeline(StandardScaler(), GPClassifier(sigma2=1.0)),
                          {"gpclassifier__variance": [1.0, 10.0]}, cv=3)
    search.fit(X, y)
    assert search.best_score_ > 0.9
    assert set(search.predict(X)) <= set(y)
    P = search.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)


def test_estimator_protocol_details():
    X = np.random.default_rng(0).normal(size=(30, 2))
    y = np.array(["a", "b", "c"] * 10)
    est = GPClassifier(variance=3.0)
    with pytest.raises(NotFittedError, match="not fitted"):
        est.predict(X)
    est.fit(X, y)
    assert list(est.classes_) == ["a", "b", "c"] and est.n_features_in_ == 2 and est.n_iter_ >= 1
    assert est.decision_function(X).shape == (30, 3)
    assert est.get_params()["variance"] == 3.0
    assert est.set_params(variance=5.0).variance == 5.0
    with pytest.raises(ValueError, match="invalid parameter 'varianc'"):
        est.set_params(varianc=1.0)
    with pytest.raises(ValueError, match="expecting 2 features"):
        est.predict(np.zeros((2, 3)))
    assert "variance=5.0" in repr(est)
    with pytest.raises(ValueError, match="kernel must be one of"):
        GPClassifier(kernel="rbff").fit(X, y)
