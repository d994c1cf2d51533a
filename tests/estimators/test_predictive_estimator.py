"""GPClassifier(predictive="plugin" | "laplace" | LaplacePredictive): the Laplace latent predictive behind
predict_proba, and predict_latent."""

import pickle

import numpy as np
import pytest
from conftest import toy_classification

from gpmodels.errors import InputError
from gpmodels.estimators import GPClassifier, LaplacePredictive
from gpmodels.inference.map.predictive import laplace_predict_proba, latent_predictive
from gpmodels.kernels import RBF
from gpmodels.priors import IndependentGP


def _fixed(variance=1.0):
    return IndependentGP(RBF(0.5), variance=variance, sigma2=1.0)


def _data():
    X, y = toy_classification(60, 3, d=2, seed=2, spread=1.2)
    return X[:40], y[:40], X[40:], y[40:]


def test_laplace_predict_proba_is_the_library_predictive_at_the_fitted_seed():
    X, y, Xt, _ = _data()
    clf = GPClassifier(_fixed(8.0), objective="map", predictive=LaplacePredictive(3000), random_state=3).fit(X, y)
    assert clf.predictive_seed_ == 3
    P = clf.predict_proba(Xt)
    expected, _ = laplace_predict_proba(clf.model_, Xt, n_samples=3000, random_state=3)
    np.testing.assert_allclose(P, expected, rtol=0, atol=1e-14)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(clf.predict_proba(Xt), P)  # repeated calls agree
    plugin = GPClassifier(_fixed(8.0), objective="map").fit(X, y)
    assert plugin.predictive_seed_ is None
    assert np.abs(plugin.predict_proba(Xt) - P).max() > 0.02, "the predictive variance must change probabilities"
    # averaging over the latent predictive makes the largest probability less extreme
    assert P.max(axis=1).mean() < plugin.predict_proba(Xt).max(axis=1).mean()


def test_random_state_none_draws_the_seed_once_at_fit():
    X, y, Xt, _ = _data()
    clf = GPClassifier(_fixed(), objective="map", predictive=LaplacePredictive(200)).fit(X, y)
    assert isinstance(clf.predictive_seed_, int)
    np.testing.assert_array_equal(clf.predict_proba(Xt), clf.predict_proba(Xt))


def test_lanczos_method_and_pickle_round_trip():
    X, y, Xt, _ = _data()
    lanczos = LaplacePredictive(500, "lanczos")
    clf = GPClassifier(_fixed(), objective="map", predictive=lanczos, random_state=0).fit(X, y)
    exact = GPClassifier(_fixed(), objective="map", predictive=LaplacePredictive(500), random_state=0).fit(X, y)
    # rank 256 > n C = 120: the Lanczos basis is exact
    np.testing.assert_allclose(clf.predict_proba(Xt), exact.predict_proba(Xt), atol=1e-8)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(again.predict_proba(Xt), clf.predict_proba(Xt), atol=1e-10)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"n_samples": 0}, "LaplacePredictive.n_samples must be an int"),
        ({"n_samples": 2.5}, "LaplacePredictive.n_samples"),
        ({"latent": "dense"}, "LaplacePredictive.latent must be one of"),
    ],
)
def test_bad_predictive_settings_are_named(params, message):
    with pytest.raises(InputError, match=message):
        LaplacePredictive(**params)


def test_predict_latent_is_the_latent_mean_and_the_laplace_covariance_in_class_order():
    X, y, Xt, _ = _data()
    labels = np.array(["c", "a", "b"])[y]  # classes_ sorted: a, b, c
    clf = GPClassifier(_fixed(4.0), objective="map").fit(X, labels)
    mean = clf.predict_latent(Xt)
    np.testing.assert_allclose(mean, clf.decision_function(Xt))
    np.testing.assert_allclose(
        clf.predict_proba(Xt), np.exp(mean) / np.exp(mean).sum(axis=1, keepdims=True), rtol=1e-10
    )
    mean2, cov = clf.predict_latent(Xt, return_cov=True)
    np.testing.assert_array_equal(mean2, mean)
    ref = latent_predictive(clf.model_, Xt)
    perm = clf.model_class_order_
    np.testing.assert_allclose(cov, ref.cov[:, perm][:, :, perm])
    np.testing.assert_allclose(cov, np.swapaxes(cov, 1, 2))
    assert np.all(np.linalg.eigvalsh(cov) > -1e-10)
