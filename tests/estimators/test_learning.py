"""GPClassifier that learns (objective='cv' | 'laplace' | a learner object), its warnings, base classes,
random_state and pickles."""

import pickle
import warnings

import numpy as np
import pytest
from conftest import assert_estimator_checks_pass
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning as SkConvergenceWarning

from gpmodels.data.splits import kfold_partition
from gpmodels.errors import ConvergenceWarning, InputError
from gpmodels.estimators import CV, GPClassifier, HM3Classifier, Laplace
from gpmodels.estimators import ConvergenceWarning as EstimatorConvergenceWarning
from gpmodels.hyperparameters import natural_values
from gpmodels.inference.cv.learn import LearnOptions, learn_hyperparameters
from gpmodels.inference.map.model import fit_map
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions
from gpmodels.inference.marginal.laplace import LaplaceOptions, learn_laplace
from gpmodels.kernels import RBF
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.optimize.lbfgs import OuterOptions
from gpmodels.priors.independent import IndependentGP
from gpmodels.validation import labels_to_targets
from tests.estimators.test_estimators import ALLOWED_SKIPS


def _blobs(n=60, d=3, C=3, seed=0):
    r = np.random.default_rng(seed)
    y = np.arange(n) % C
    X = r.standard_normal((n, d)) + 1.5 * np.eye(C, d)[y]
    return X, y


def _reference_operator(X, C):
    return IndependentGP(RBF(w=1.0 / X.var(axis=0).sum()), "separate", 1.0, 1.0).operator(X, C)


def _cv(max_iter, **outer):
    return CV(LearnOptions(outer=OuterOptions(max_iter=max_iter, **outer)))


def test_the_learning_estimator_passes_sklearns_checks_and_derives_from_its_bases():
    est = GPClassifier(objective=_cv(2), solver=NewtonCG(NewtonOptions(max_iter=10)))
    assert isinstance(est, BaseEstimator) and isinstance(est, ClassifierMixin)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_estimator_checks_pass(est, ALLOWED_SKIPS)
    assert not [w for w in caught if "BaseEstimator" in str(w.message)]


def test_cv_learning_is_the_librarys_learning_on_seeded_stratified_folds():
    X, y = _blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = GPClassifier(objective=_cv(3, ftol=1e-4), cv=4, random_state=5).fit(X, y)
    Y = labels_to_targets(y, 3)
    folds = kfold_partition(y.size, 4, 5, y=y)
    opts = LearnOptions(outer=OuterOptions(ftol=1e-4, max_iter=3))
    ref = learn_hyperparameters(_reference_operator(X, 3), Softmax(), Y, folds, opts)
    np.testing.assert_allclose(est.learning_result_.theta, ref.theta)
    np.testing.assert_allclose(est.kernel_.theta, ref.theta)
    assert est.learned_hyperparameters_ == pytest.approx(natural_values(ref.names, ref.theta))
    assert set(est.learned_hyperparameters_) == {
        "kernel0.w",
        "kernel1.w",
        "kernel2.w",
        "variance0",
        "variance1",
        "variance2",
    }
    model = fit_map(ref.operator, Softmax(), Y, NewtonCG(NewtonOptions(max_iter=30, cg_max_iter=50, grad_tol=1e-6)))
    np.testing.assert_allclose(est.alpha_, model.alpha)
    assert est.learning_result_.psi < ref.history[0].value  # Ψ went down from the given hyperparameters


def test_laplace_learning_is_the_librarys_and_raises_the_marginal_likelihood():
    X, y = _blobs(n=45)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = GPClassifier(objective=Laplace(outer=OuterOptions(max_iter=4)), random_state=2).fit(X, y)
        res, op, lik = learn_laplace(
            _reference_operator(X, 3),
            Softmax(),
            labels_to_targets(y, 3),
            LaplaceOptions(seed=2),
            outer=OuterOptions(max_iter=4),
        )
    np.testing.assert_allclose(est.learning_result_.x, res.x)
    assert est.learned_hyperparameters_ == pytest.approx(natural_values(res.names, res.x))
    assert res.value < res.trace[0].value  # -log q went down
    assert GPClassifier(objective="map").fit(X, y).learning_result_ is None


def test_default_keeps_the_given_hyperparameters_and_reports_them():
    X, y = _blobs()
    est = GPClassifier(IndependentGP(RBF(0.5), variance=2.0, sigma2=1.0), objective="map").fit(X, y)
    assert est.learned_hyperparameters_ == pytest.approx(
        {**{f"kernel{c}.w": 0.5 for c in range(3)}, **{f"variance{c}": 2.0 for c in range(3)}}
    )


def test_checkpointed_learning_resumes_to_the_same_hyperparameters(tmp_path):
    X, y = _blobs(n=45)
    path = tmp_path / "learn.ckpt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        first = GPClassifier(objective=_cv(2), cv=3, random_state=0, checkpoint=str(path)).fit(X, y)
        assert path.exists() and first.learning_result_.resumed_from is None
        again = GPClassifier(objective=_cv(2), cv=3, random_state=0, checkpoint=path).fit(X, y)
    assert again.learning_result_.resumed_from is not None
    assert again.learned_hyperparameters_ == pytest.approx(first.learned_hyperparameters_)


def test_unconverged_newton_and_learning_warn_with_sklearns_convergence_warning():
    X, y = _blobs()
    assert issubclass(EstimatorConvergenceWarning, SkConvergenceWarning)
    assert issubclass(EstimatorConvergenceWarning, ConvergenceWarning)
    with pytest.warns(SkConvergenceWarning, match="Newton fit of alpha stopped unconverged.*raise max_iter"):
        GPClassifier(objective="map", solver=NewtonCG(NewtonOptions(max_iter=1))).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="learning \\(objective='cv'\\) stopped unconverged"):
        GPClassifier(objective=_cv(1), cv=3, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkConvergenceWarning)
        GPClassifier(objective="map").fit(X, y)  # converges: no warning


def test_settings_are_checked_with_messages_naming_what_is_allowed():
    X, y = _blobs(n=12)
    for kwargs, match in [
        ({"objective": "ml"}, "must be 'cv', 'laplace', 'map' or a learner object"),
        ({"cv": 13}, "number of folds in 2..n_samples = 12"),
        ({"cv": "kfold"}, "an int number of folds or a scikit-learn splitter"),
        ({"solver": "cg"}, "must be 'newton-cg', 'exact' or a solver object"),
        ({"predictive": "bayes"}, "must be 'plugin', 'laplace' or a LaplacePredictive"),
        ({"checkpoint": 3}, "None, a path or"),
        ({"n_jobs": 0}, "None, a positive int or a negative int"),
        ({"random_state": -1}, "non-negative int"),
    ]:
        with pytest.raises(InputError, match=match):
            GPClassifier(**kwargs).fit(X, y)


def test_random_state_seeds_the_folds_and_accepts_generators():
    X, y = _blobs(n=45)
    fit = lambda rs: GPClassifier(objective=_cv(2), cv=3, random_state=rs).fit(X, y)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a, b, c = fit(4), fit(4), fit(5)
        fit(np.random.default_rng(0)), fit(np.random.RandomState(0)), fit(None)
    np.testing.assert_array_equal(a.alpha_, b.alpha_)
    assert a.learning_result_.psi != c.learning_result_.psi  # other folds, other Ψ


def test_hm3_random_state_seeds_gap_sampling():
    from gpmodels.baselines.hm3.solver import HM3Options, fit_hm3
    from gpmodels.hierarchy import ClassTree
    from gpmodels.kernels import Linear
    from tests.estimators.test_hm3_estimator import DEEP, _data

    X, Y = _data()
    est = HM3Classifier(DEEP, kernel="linear", random_state=3, max_passes=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, Y)
        ref = fit_hm3(Linear(), X, np.asarray(Y, dtype=bool), ClassTree(DEEP), HM3Options(max_passes=3, seed=3))
    np.testing.assert_array_equal(est.dual_coef_, ref.nu_support_)
    assert est.get_params()["random_state"] == 3 and "seed" not in est.get_params()


@pytest.mark.parametrize(
    "kwargs", [{"objective": "map"}, {"objective": _cv(2), "random_state": 0}], ids=["fixed", "cv"]
)
def test_pickles_hold_the_fitted_state_and_predict_the_same(kwargs):
    X, y = _blobs(n=120, d=6, C=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = GPClassifier(**kwargs).fit(X, y)
    Xt = _blobs(n=30, d=6, C=3, seed=1)[0]
    back = pickle.loads(pickle.dumps(est))
    assert "model_" in back.__dict__
    assert back.kernel_.theta == est.kernel_.theta and back.kernel_.names == est.kernel_.names
    np.testing.assert_array_equal(back.predict_proba(Xt), est.predict_proba(Xt))
    np.testing.assert_array_equal(back.predict(Xt), est.predict(Xt))


def test_feature_names_in_from_a_dataframe_like_input():
    class Frame:
        def __init__(self, a, columns):
            self.a, self.columns = a, columns

        def __array__(self, dtype=None, copy=None):
            return self.a

    X, y = _blobs()
    est = GPClassifier().fit(Frame(X, ["a", "b", "c"]), y)
    assert list(est.feature_names_in_) == ["a", "b", "c"] and est.n_features_in_ == 3
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        est.predict(X)
    with pytest.raises(InputError, match="feature names of X"):
        est.predict(Frame(X, ["c", "b", "a"]))
    assert not hasattr(GPClassifier().fit(X, y), "feature_names_in_")


def test_every_estimator_has_sklearns_bases_and_its_html_repr():
    from gpmodels.estimators import CrammerSingerSVC
    from gpmodels.estimators._common import NestedParamsRouting

    for est in (GPClassifier(), CrammerSingerSVC(C=2.0), HM3Classifier([("r", "a"), ("r", "b")])):
        assert isinstance(est, BaseEstimator) and isinstance(est, ClassifierMixin)
        assert type(est).__name__ in est._repr_html_()
        for method in ("get_params", "__repr__"):  # scikit-learn's own, not overridden
            assert getattr(type(est), method) is getattr(BaseEstimator, method)
        # set_params: scikit-learn's, or the routing of nested names under frozen priors and kernels to it
        assert type(est).set_params in (BaseEstimator.set_params, NestedParamsRouting.set_params)
    for est in (GPClassifier(), CrammerSingerSVC()):  # accuracy; HM3Classifier scores by micro F1 (its docstring)
        assert type(est).score is ClassifierMixin.score
    assert repr(GPClassifier(objective="laplace", cv=3)) == "GPClassifier(cv=3, objective='laplace')"
