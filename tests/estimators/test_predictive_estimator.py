"""GPClassifier(predictive="plugin" | "laplace"): the Laplace latent predictive behind predict_proba."""

import pickle

import numpy as np
import pytest
from conftest import toy_classification

from gpmodels.errors import InputError
from gpmodels.estimators import GPClassifier
from gpmodels.inference.map.predictive import laplace_predict_proba


def _data():
    X, y = toy_classification(60, 3, d=2, seed=2, spread=1.2)
    return X[:40], y[:40], X[40:], y[40:]


def test_laplace_predict_proba_is_the_library_predictive_at_the_fitted_seed():
    X, y, Xt, _ = _data()
    clf = GPClassifier(w=0.5, variance=8.0, predictive="laplace", predictive_samples=3000, random_state=3).fit(X, y)
    assert clf.predictive_seed_ == 3
    P = clf.predict_proba(Xt)
    expected, _ = laplace_predict_proba(clf.model_, Xt, n_samples=3000, random_state=3)
    np.testing.assert_allclose(P, expected, rtol=0, atol=1e-14)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(clf.predict_proba(Xt), P)  # repeated calls agree
    plugin = GPClassifier(w=0.5, variance=8.0).fit(X, y)
    assert plugin.predictive_seed_ is None
    assert np.abs(plugin.predict_proba(Xt) - P).max() > 0.02, "the predictive variance must change probabilities"
    # averaging over the latent predictive makes the largest probability less extreme
    assert P.max(axis=1).mean() < plugin.predict_proba(Xt).max(axis=1).mean()


def test_random_state_none_draws_the_seed_once_at_fit():
    X, y, Xt, _ = _data()
    clf = GPClassifier(w=0.5, predictive="laplace", predictive_samples=200).fit(X, y)
    assert isinstance(clf.predictive_seed_, int)
    np.testing.assert_array_equal(clf.predict_proba(Xt), clf.predict_proba(Xt))


def test_lanczos_method_and_pickle_round_trip():
    X, y, Xt, _ = _data()
    clf = GPClassifier(w=0.5, predictive="laplace", predictive_method="lanczos", predictive_samples=500,
                       random_state=0).fit(X, y)
    exact = GPClassifier(w=0.5, predictive="laplace", predictive_samples=500, random_state=0).fit(X, y)
    # rank 256 > n C = 120: the Lanczos basis is exact
    np.testing.assert_allclose(clf.predict_proba(Xt), exact.predict_proba(Xt), atol=1e-8)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(again.predict_proba(Xt), clf.predict_proba(Xt), atol=1e-10)


@pytest.mark.parametrize("params, message", [
    ({"predictive": "bayes"}, "'predictive' parameter of GPClassifier must be one of ('plugin', 'laplace')"),
    ({"predictive_samples": 0}, "'predictive_samples' parameter of GPClassifier must be an int"),
    ({"predictive_samples": 2.5}, "'predictive_samples'"),
    ({"predictive_method": "dense"}, "'predictive_method' parameter of GPClassifier must be one of"),
])
def test_bad_predictive_settings_are_named_at_fit(params, message):
    X, y, _, _ = _data()
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        GPClassifier(w=0.5, **params).fit(X, y)
