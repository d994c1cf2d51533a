"""HierarchicalGPClassifier: label paths in HiClass's format, the tree built from them, the ANOVA prior."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone

from gpmodels.errors import HierarchyError, InputError
from gpmodels.estimators import GPClassifier, HierarchicalGPClassifier
from gpmodels.hierarchy import ClassTree
from gpmodels.kernels import RBF
from gpmodels.priors import ANOVAPrior, IndependentGP
from gpmodels.scoring.hierarchical_prf import hierarchical_f1

PATHS = [["Animal", "Mammal", "Cat"], ["Animal", "Mammal", "Dog"], ["Animal", "Bird", ""], ["Plant", "Tree", ""]]


def _data(n=80, seed=0):
    r = np.random.default_rng(seed)
    c = np.arange(n) % len(PATHS)
    centres = np.array([[0.0, 0.0], [1.5, 0.0], [0.0, 3.0], [5.0, 5.0]])
    X = centres[c] + 0.5 * r.standard_normal((n, 2))
    return X, [PATHS[k] for k in c], c


def test_fit_builds_the_tree_from_the_paths_and_predicts_paths():
    X, Y, c = _data()
    est = HierarchicalGPClassifier(objective="map").fit(X, Y)
    tree = est.tree_
    assert set(tree.classes) == {"Cat", "Dog", "Bird", "Tree"}
    assert tree.nodes[tree.parent[tree.index("Cat")]] == "Mammal"
    assert isinstance(est.estimator_.kernel_.prior, ANOVAPrior)
    pred = est.predict(X)
    assert pred.shape == (80, 3) and pred.dtype == object
    assert [list(p) for p in pred[:4]] == PATHS  # padded with "" as given
    assert est.score(X, Y) == pytest.approx(hierarchical_f1(Y, [list(p) for p in pred]))
    assert est.score(X, Y) > 0.9
    P = est.predict_proba(X)
    assert P.shape == (80, 4) and np.allclose(P.sum(axis=1), 1.0)
    assert [est.paths_[k][-1] for k in range(4)] == list(est.classes_)


def test_the_default_is_the_anova_prior_over_the_tree_and_equals_gpclassifier_with_it():
    X, Y, c = _data(seed=1)
    est = HierarchicalGPClassifier(objective="map").fit(X, Y)
    leaves = np.array([p[-1] if p[-1] else p[-2] for p in Y])
    tree = ClassTree.from_paths(Y)
    prior = ANOVAPrior(tree, est.estimator_.kernel_.prior.kernel, sharing="level", sigma2=1.0)
    ref = GPClassifier(prior, objective="map").fit(X, leaves)
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), rtol=1e-12, atol=1e-14)


def test_a_prior_function_and_learning_and_clone_and_pickle():
    X, Y, _ = _data(seed=2)
    flat = HierarchicalGPClassifier(prior=lambda tree, X: IndependentGP(RBF(0.5), "tied", sigma2=1.0),
                                    objective="map").fit(X, Y)
    assert isinstance(flat.estimator_.kernel_.prior, IndependentGP)
    learned = HierarchicalGPClassifier(cv=3, random_state=0).fit(X, Y)
    assert learned.estimator_.learning_result_ is not None
    twin = clone(learned)
    assert twin.get_params() == learned.get_params()
    back = pickle.loads(pickle.dumps(learned))
    np.testing.assert_array_equal(back.predict(X), learned.predict(X))


def test_bad_paths_are_named():
    X, Y, _ = _data(n=8)
    with pytest.raises(InputError, match="1-D array of single labels: use GPClassifier"):
        HierarchicalGPClassifier().fit(X, np.array(["a", "b"] * 4))
    with pytest.raises(HierarchyError, match="ends at an inner node"):
        HierarchicalGPClassifier().fit(X, [["Animal"], ["Animal", "Cat"]] * 4)
