"""GPClassifier that learns (optimizer='cv' | 'laplace'), its warnings, base classes, random_state,
length_scale and compact pickles (issue 14, item 1)."""

import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from gpmodels.data.splits import kfold_partition
from gpmodels.errors import ConvergenceWarning, InputError
from gpmodels.estimators import GPClassifier, HM3Classifier, convergence_warning_class
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

sklearn = pytest.importorskip("sklearn")
from conftest import assert_estimator_checks_pass  # noqa: E402
from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402
from sklearn.exceptions import ConvergenceWarning as SkConvergenceWarning  # noqa: E402

from tests.estimators.test_estimators import ALLOWED_SKIPS  # noqa: E402


def _blobs(n=60, d=3, C=3, seed=0):
    r = np.random.default_rng(seed)
    y = np.arange(n) % C
    X = r.standard_normal((n, d)) + 1.5 * np.eye(C, d)[y]
    return X, y


def _reference_operator(X, C):
    return IndependentGP(RBF(w=1.0 / X.var(axis=0).sum()), "separate", 1.0, 1.0).operator(X, C)


def test_the_learning_estimator_passes_sklearns_checks_and_derives_from_its_bases():
    est = GPClassifier(optimizer="cv", learn_max_iter=2, max_iter=10)
    assert isinstance(est, BaseEstimator) and isinstance(est, ClassifierMixin)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_estimator_checks_pass(est, ALLOWED_SKIPS)
    assert not [w for w in caught if "BaseEstimator" in str(w.message)]


def test_cv_learning_is_the_librarys_learning_on_seeded_stratified_folds():
    X, y = _blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = GPClassifier(optimizer="cv", cv=4, learn_max_iter=3, random_state=5).fit(X, y)
    Y = labels_to_targets(y, 3)
    folds = kfold_partition(y.size, 4, 5, y=y)
    opts = LearnOptions(outer=OuterOptions(ftol=1e-4, max_iter=3))
    ref = learn_hyperparameters(_reference_operator(X, 3), Softmax(), Y, folds, opts)
    np.testing.assert_allclose(est.optimizer_result_.theta, ref.theta)
    assert est.learned_hyperparameters_ == pytest.approx(natural_values(ref.names, ref.theta))
    assert set(est.learned_hyperparameters_) == {"kernel0.w", "kernel1.w", "kernel2.w",
                                                 "variance0", "variance1", "variance2"}
    model = fit_map(ref.operator, Softmax(), Y, NewtonCG(NewtonOptions(max_iter=30, cg_max_iter=50, grad_tol=1e-6)))
    np.testing.assert_allclose(est.alpha_, model.alpha)
    assert est.optimizer_result_.psi < ref.history[0].value  # Ψ went down from the given hyperparameters


def test_laplace_learning_is_the_librarys_and_raises_the_marginal_likelihood():
    X, y = _blobs(n=45)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = GPClassifier(optimizer="laplace", learn_max_iter=4, random_state=2).fit(X, y)
        res, op, lik = learn_laplace(_reference_operator(X, 3), Softmax(), labels_to_targets(y, 3),
                                     LaplaceOptions(seed=2), outer=OuterOptions(max_iter=4))
    np.testing.assert_allclose(est.optimizer_result_.x, res.x)
    assert est.learned_hyperparameters_ == pytest.approx(natural_values(res.names, res.x))
    assert res.value < res.trace[0].value  # -log q went down
    assert GPClassifier().fit(X, y).optimizer_result_ is None


def test_default_keeps_the_given_hyperparameters_and_reports_them():
    X, y = _blobs()
    est = GPClassifier(w=0.5, variance=2.0).fit(X, y)
    assert est.learned_hyperparameters_ == pytest.approx({**{f"kernel{c}.w": 0.5 for c in range(3)},
                                                          **{f"variance{c}": 2.0 for c in range(3)}})


def test_checkpointed_learning_resumes_to_the_same_hyperparameters(tmp_path):
    X, y = _blobs(n=45)
    path = tmp_path / "learn.ckpt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        first = GPClassifier(optimizer="cv", cv=3, learn_max_iter=2, random_state=0, checkpoint=str(path)).fit(X, y)
        assert path.exists() and first.optimizer_result_.resumed_from is None
        again = GPClassifier(optimizer="cv", cv=3, learn_max_iter=2, random_state=0, checkpoint=path).fit(X, y)
    assert again.optimizer_result_.resumed_from is not None
    assert again.learned_hyperparameters_ == pytest.approx(first.learned_hyperparameters_)


def test_unconverged_newton_and_learning_warn_with_sklearns_convergence_warning():
    X, y = _blobs()
    assert issubclass(convergence_warning_class(), SkConvergenceWarning)
    assert issubclass(convergence_warning_class(), ConvergenceWarning)
    with pytest.warns(SkConvergenceWarning, match="Newton fit of alpha stopped unconverged.*raise max_iter"):
        GPClassifier(max_iter=1).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="learning \\(optimizer='cv'\\) stopped unconverged"):
        GPClassifier(optimizer="cv", cv=3, learn_max_iter=1, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkConvergenceWarning)
        GPClassifier().fit(X, y)  # converges: no warning


def test_settings_are_checked_with_messages_naming_what_is_allowed():
    X, y = _blobs(n=12)
    for kwargs, match in [({"optimizer": "ml"}, "must be None, 'cv' or 'laplace'"),
                          ({"optimizer": "cv", "cv": 13}, "number of folds in 2..n_samples = 12"),
                          ({"optimizer": "cv", "learn_max_iter": 0}, "positive int"),
                          ({"optimizer": "cv", "checkpoint": 3}, "None, a path or"),
                          ({"optimizer": "cv", "random_state": -1}, "non-negative int"),
                          ({"w": 0.5, "length_scale": 2.0}, "either 'w' or 'length_scale'"),
                          ({"kernel": "linear", "length_scale": 2.0}, "'rbf' and 'ard' kernels"),
                          ({"length_scale": [1.0, 2.0]}, "positive number; got")]:
        with pytest.raises(InputError, match=match):
            GPClassifier(**kwargs).fit(X, y)


def test_length_scale_is_w_equal_one_over_its_square():
    X, y = _blobs()
    by_ls = GPClassifier(length_scale=2.0).fit(X, y)
    by_w = GPClassifier(w=0.25).fit(X, y)
    np.testing.assert_allclose(by_ls.predict_proba(X), by_w.predict_proba(X))
    assert by_ls.learned_hyperparameters_["kernel0.w"] == pytest.approx(0.25)
    ard = GPClassifier(kernel="ard", length_scale=[1.0, 2.0, 4.0]).fit(X, y)
    np.testing.assert_allclose(ard.predict_proba(X),
                               GPClassifier(kernel="ard", w=[1.0, 0.25, 0.0625]).fit(X, y).predict_proba(X))


def test_random_state_seeds_the_folds_and_accepts_generators():
    X, y = _blobs(n=45)
    fit = lambda rs: GPClassifier(optimizer="cv", cv=3, learn_max_iter=2, random_state=rs).fit(X, y)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a, b, c = fit(4), fit(4), fit(5)
        fit(np.random.default_rng(0)), fit(np.random.RandomState(0)), fit(None)
    np.testing.assert_array_equal(a.alpha_, b.alpha_)
    assert a.optimizer_result_.psi != c.optimizer_result_.psi  # other folds, other Ψ


def test_hm3_seed_is_deprecated_for_random_state():
    from tests.estimators.test_hm3_estimator import DEEP, _data

    X, Y = _data()
    new = HM3Classifier(DEEP, kernel="linear", random_state=3, max_passes=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = new.fit(X, Y).dual_coef_
        with pytest.warns(FutureWarning, match="'seed' parameter of HM3Classifier is deprecated.*'random_state'"):
            old = HM3Classifier(DEEP, kernel="linear", seed=3, max_passes=3).fit(X, Y).dual_coef_
    np.testing.assert_array_equal(old, ref)
    assert new.get_params()["random_state"] == 3


@pytest.mark.parametrize("kwargs", [{}, {"optimizer": "cv", "learn_max_iter": 2, "random_state": 0}],
                         ids=["fixed", "cv"])
def test_pickles_carry_no_kernel_matrix_and_predict_the_same(kwargs):
    n, d, C = 400, 6, 3
    X, y = _blobs(n=n, d=d, C=C)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = GPClassifier(representation="stored", **kwargs).fit(X, y)
    Xt = _blobs(n=30, d=d, C=C, seed=1)[0]
    P = est.predict_proba(Xt)
    blob = pickle.dumps(est)
    assert len(blob) < 64 * n * (d + C) + 20_000 < 8 * n * n  # no n×n matrix: proportional to n·d
    back = pickle.loads(blob)
    assert "model_" not in back.__dict__  # rebuilt lazily, on first use
    np.testing.assert_array_equal(back.predict_proba(Xt), P)
    np.testing.assert_array_equal(back.predict(Xt), est.predict(Xt))
    assert len(pickle.dumps(back)) == pytest.approx(len(blob), rel=0.01)


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


def test_the_package_imports_and_fits_without_sklearn():
    code = textwrap.dedent("""
        import sys, warnings
        import numpy as np

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "sklearn" or name.startswith("sklearn."):
                    raise ImportError("scikit-learn blocked for this test")

        sys.meta_path.insert(0, Block())
        import gpmodels
        from gpmodels.errors import ConvergenceWarning
        from gpmodels.estimators import EstimatorMixin, GPClassifier, convergence_warning_class

        assert "sklearn" not in sys.modules
        assert EstimatorMixin.__mro__ == (EstimatorMixin, object)
        assert convergence_warning_class() is ConvergenceWarning
        X = np.random.default_rng(0).standard_normal((30, 2)); y = (X[:, 0] > 0).astype(int)
        est = GPClassifier(optimizer="cv", cv=3, learn_max_iter=2, random_state=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(X, y)
        assert est.score(X, y) > 0.8 and est.get_params()["cv"] == 3
        assert all(w.category is ConvergenceWarning for w in caught), caught
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_every_estimator_has_sklearns_bases_and_its_html_repr():
    from gpmodels.estimators import CrammerSingerSVC

    for est in (GPClassifier(optimizer="cv"), CrammerSingerSVC(C=2.0), HM3Classifier([("r", "a"), ("r", "b")])):
        assert isinstance(est, BaseEstimator) and isinstance(est, ClassifierMixin)
        assert type(est).__name__ in est._repr_html_()
    assert repr(GPClassifier(optimizer="cv", length_scale=2.0)) == "GPClassifier(optimizer='cv', length_scale=2.0)"
