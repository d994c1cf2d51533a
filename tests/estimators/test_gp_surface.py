"""GPClassifier's surface beside scikit-learn's GPC: learning by default, kernel_, the learning criterion
at any θ, cv splitters, class trees checked against the labels, and model folders."""

import csv
import warnings

import numpy as np
import pytest
from sklearn.model_selection import KFold, ShuffleSplit, StratifiedKFold

from gpmodels.errors import ConvergenceWarning, HierarchyError, InputError
from gpmodels.estimators import CV, GPClassifier, Laplace, load_classifier
from gpmodels.hierarchy import ClassTree
from gpmodels.inference.cv.learn import LearnOptions
from gpmodels.kernels import RBF
from gpmodels.optimize.lbfgs import OuterOptions
from gpmodels.priors import ANOVAPrior, IndependentGP
from gpmodels.priors.learned import LearnedPrior


def _blobs(n=60, d=3, C=3, seed=0):
    r = np.random.default_rng(seed)
    y = np.arange(n) % C
    X = r.standard_normal((n, d)) + 1.5 * np.eye(C, d)[y]
    return X, y


def _quiet_fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y)


def test_the_default_learns_by_cv_and_kernel_is_the_learned_prior():
    X, y = _blobs()
    est = _quiet_fit(GPClassifier(random_state=0), X, y)
    assert est.learning_result_ is not None and est.folds_ is not None and len(est.folds_) == 5
    assert isinstance(est.kernel_, LearnedPrior)
    np.testing.assert_allclose(est.kernel_.theta, est.learning_result_.theta)
    assert est.kernel_.hyperparameters() == pytest.approx(est.learned_hyperparameters_)
    # the learned prior refits without learning to the same model
    again = GPClassifier(prior=est.kernel_, objective="map").fit(X, y)
    np.testing.assert_allclose(again.predict_proba(X), est.predict_proba(X), rtol=1e-12, atol=1e-14)
    assert again.kernel_.prior is est.kernel_.prior


def test_learning_criterion_is_psi_at_the_learned_theta_with_its_gradient():
    X, y = _blobs(n=45)
    est = _quiet_fit(
        GPClassifier(objective=CV(LearnOptions(outer=OuterOptions(max_iter=3))), cv=3, random_state=1), X, y
    )
    theta = np.asarray(est.kernel_.theta)
    value, grad = est.learning_criterion(eval_gradient=True)
    assert value == pytest.approx(est.learning_criterion(theta))
    assert value == pytest.approx(est.learning_result_.psi, rel=1e-3)
    assert grad.shape == theta.shape
    moved = est.learning_criterion(theta + 0.5)
    assert moved != pytest.approx(value)
    with pytest.raises(InputError, match="theta must be 6 finite log-space values"):
        est.learning_criterion(theta[:2])
    with pytest.raises(InputError, match="objective='map'.* has no learning criterion"):
        GPClassifier(objective="map").fit(X, y).learning_criterion()


def test_laplace_criterion_gradient_against_finite_differences():
    X, y = _blobs(n=30, d=2)
    est = _quiet_fit(GPClassifier(objective=Laplace(outer=OuterOptions(max_iter=3)), random_state=0), X, y)
    theta = np.asarray(est.kernel_.theta)
    value, grad = est.learning_criterion(theta, eval_gradient=True)
    assert value == pytest.approx(est.learning_result_.value, rel=1e-8)
    h = 1e-5
    for j in range(theta.size):
        e = np.eye(theta.size)[j] * h
        fd = (est.learning_criterion(theta + e) - est.learning_criterion(theta - e)) / (2 * h)
        assert grad[j] == pytest.approx(fd, rel=1e-4, abs=1e-6)


def test_cv_takes_a_splitter_whose_test_sets_are_the_folds():
    X, y = _blobs(n=45)
    splitter = StratifiedKFold(3, shuffle=True, random_state=4)
    est = _quiet_fit(GPClassifier(objective=CV(LearnOptions(outer=OuterOptions(max_iter=2))), cv=splitter), X, y)
    expected = [np.sort(test) for _, test in splitter.split(X, y)]
    assert len(est.folds_) == 3
    for got, want in zip(est.folds_, expected):
        np.testing.assert_array_equal(got, want)
    same = _quiet_fit(GPClassifier(objective=CV(LearnOptions(outer=OuterOptions(max_iter=2))), cv=KFold(3)), X, y)
    np.testing.assert_array_equal(same.folds_[0], np.arange(15))
    with pytest.raises(InputError, match="must give at least 2 test sets that partition the 45 samples"):
        GPClassifier(cv=ShuffleSplit(3, random_state=0)).fit(X, y)


def _iris_like(n=60):
    X, y = _blobs(n=n, d=4, C=3)
    return X, np.array(["setosa", "versicolor", "virginica"])[y]


def _anova(edges):
    return ANOVAPrior(ClassTree(edges), RBF(0.5), sharing="level", sigma2=1.0)


def test_a_class_tree_whose_leaves_are_not_the_labels_is_refused_by_name():
    X, y = _iris_like()
    wrong = _anova([("r", "a"), ("r", "g"), ("g", "c"), ("g", "d")])  # 3 leaves, as many as classes
    with pytest.raises(
        HierarchyError,
        match=r"label\(s\) 'setosa', 'versicolor', 'virginica' are not leaves.*"
        r"leaf/leaves 'a', 'c', 'd' have no training label",
    ):
        GPClassifier(wrong, objective="map").fit(X, y)
    partial = _anova([("r", "setosa"), ("r", "g"), ("g", "versicolor"), ("g", "other")])
    with pytest.raises(HierarchyError, match=r"'virginica' are not leaves.*'other' have no training label"):
        GPClassifier(partial, objective="map").fit(X, y)


def test_tree_leaves_are_matched_to_labels_by_name_in_any_order():
    """Two listings of one tree (leaves in another order) give one model: the probabilities follow the
    label names, not the position of a leaf in the tree."""
    X, y = _iris_like()
    a = _anova([("r", "setosa"), ("r", "g"), ("g", "versicolor"), ("g", "virginica")])
    b = _anova([("r", "g"), ("g", "virginica"), ("g", "versicolor"), ("r", "setosa")])
    assert a.tree.classes != b.tree.classes
    pa = GPClassifier(a, objective="map").fit(X, y)
    pb = GPClassifier(b, objective="map").fit(X, y)
    np.testing.assert_allclose(pa.predict_proba(X), pb.predict_proba(X), rtol=1e-8, atol=1e-12)
    assert list(pa.classes_) == ["setosa", "versicolor", "virginica"]
    # the tree puts versicolor and virginica under one inner node: they share its latent function
    flat = GPClassifier(IndependentGP(RBF(0.5), "tied", sigma2=1.0), objective="map").fit(X, y)
    assert np.abs(pa.predict_proba(X) - flat.predict_proba(X)).max() > 1e-3
    assert pa.score(X, y) > 0.8


@pytest.mark.parametrize("labels", ["text", "int"])
def test_save_writes_a_model_folder_that_gpmodels_predict_and_load_classifier_read(tmp_path, labels):
    from gpmodels.cli import main
    from gpmodels.driver.saved import load_model

    X, y = _blobs(n=60, d=3)
    y = np.array(["b", "a", "c"])[y] if labels == "text" else y + 3
    est = _quiet_fit(GPClassifier(objective=CV(LearnOptions(outer=OuterOptions(max_iter=2))), random_state=0), X, y)
    Xt = _blobs(n=20, d=3, seed=5)[0]
    folder = est.save(tmp_path / "model")
    predictor = load_model(folder)
    P = est.predict_proba(Xt)
    order = [list(predictor.classes).index(str(c)) for c in est.classes_]
    np.testing.assert_allclose(predictor.predict_proba(Xt)[:, order], P, rtol=1e-12, atol=1e-15)
    back = load_classifier(folder)
    np.testing.assert_array_equal(back.classes_, est.classes_)
    np.testing.assert_allclose(back.predict_proba(Xt), P, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(back.predict(Xt), est.predict(Xt))
    assert back.kernel_.theta == est.kernel_.theta
    np.savez(tmp_path / "new.npz", X=Xt)
    main(["predict", str(folder), str(tmp_path / "new.npz"), "--out", str(tmp_path / "p.csv")])
    with open(tmp_path / "p.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["prediction"] for r in rows] == [str(c) for c in est.predict(Xt)]


def test_an_anova_model_folder_round_trips_its_tree(tmp_path):
    X, y = _iris_like()
    prior = _anova([("r", "g"), ("g", "virginica"), ("g", "versicolor"), ("r", "setosa")])
    est = GPClassifier(prior, objective="map").fit(X, y)
    back = load_classifier(est.save(tmp_path / "anova"))
    np.testing.assert_allclose(back.predict_proba(X), est.predict_proba(X), rtol=1e-12, atol=1e-15)
    assert back.kernel_.prior.tree.classes == prior.tree.classes


def test_save_names_what_a_model_folder_cannot_hold(tmp_path):
    from gpmodels.kernels.linear import Linear

    X, y = _blobs(n=30)
    grouped = IndependentGP(Linear(), None, 1.0, 1.0, kernel_groups=[[0, 1, 2]], variance_groups=[[0, 1, 2]])
    est = GPClassifier(grouped, objective="map").fit(X, y)
    with pytest.raises(InputError, match="IndependentGP has no spec form: pickle the estimator instead"):
        est.save(tmp_path / "m")


def test_a_user_prior_without_class_names_takes_any_labels():
    class PlainPrior:  # only the prior protocol's operator(X, n_classes)
        def operator(self, X, n_classes):
            return IndependentGP(RBF(0.5), "tied", sigma2=1.0).operator(X, n_classes)

    X, y = _blobs(n=30)
    est = GPClassifier(PlainPrior(), objective="map").fit(X, np.array(["z", "x", "y"])[y])
    ref = GPClassifier(IndependentGP(RBF(0.5), "tied", sigma2=1.0), objective="map").fit(X, y)
    assert list(est.classes_) == ["x", "y", "z"] and est.kernel_.class_names is None
    np.testing.assert_allclose(est.predict_proba(X)[:, [2, 0, 1]], ref.predict_proba(X), rtol=1e-10)
