"""``HierarchicalGPClassifier``: GP classification of label paths (HiClass's format) under the ANOVA prior.

Each example's label is a path from the top level down to its class, e.g. ``["Animal", "Mammal", "Cat"]``
(shorter paths padded with ""), as HiClass takes them.  ``fit`` builds the class tree from the paths
(:meth:`gpmodels.hierarchy.ClassTree.from_paths`: every prefix is a node, the paths' ends are the
classes, the leaves) and fits a :class:`~gpmodels.estimators.GPClassifier` whose prior is, by default,
the ANOVA prior over that tree (Seeger 2008, Sec. 3: u_c = Σ_{p on the path of c} ŭ_p, one latent
function per node, variances and kernels shared per level, H1 of Sec. 6.1).  ``predict`` returns paths;
``score`` is the hierarchical F1 of Kiritchenko et al. (HiClass's ``f1``).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from gpmodels.errors import InputError
from gpmodels.estimators._common import check_fitted, classifier_tags, store_params
from gpmodels.estimators.gp import GPClassifier
from gpmodels.hierarchy import ClassTree
from gpmodels.kernels.factory import make_kernel
from gpmodels.priors.anova import ANOVAPrior
from gpmodels.scoring.hierarchical_prf import hierarchical_f1

__all__ = ["HierarchicalGPClassifier", "anova_prior"]


def anova_prior(tree: ClassTree, X) -> ANOVAPrior:
    """The default prior of :class:`HierarchicalGPClassifier`: the ANOVA prior over ``tree`` with an RBF
    kernel, w = 1 / Σ_j Var[x_j] of the training inputs, variances and kernels per tree level (H1),
    variance 1 and intercept variance σ² = 1."""
    return ANOVAPrior(tree, make_kernel("rbf", X=X, w="auto"), sharing="level", variance=1.0, sigma2=1.0)


def _paths(y) -> list[tuple[str, ...]]:
    """The label paths of y as tuples (validated by ClassTree.from_paths); y: (n, depth) or a list of lists."""
    if y is None:
        raise InputError("HierarchicalGPClassifier requires y: one label path per example, such as "
                         "['Animal', 'Mammal', 'Cat']")
    if isinstance(y, np.ndarray) and y.ndim == 1 and y.dtype.kind != "O":
        raise InputError("y must hold one label path per example (a 2-D array or a list of lists of labels); got "
                         "a 1-D array of single labels: use GPClassifier for flat classes")
    return [tuple("" if v is None else str(v) for v in row) for row in y]


class HierarchicalGPClassifier(ClassifierMixin, BaseEstimator):
    """GP classifier of label paths (module docstring).

    ``prior``: None (the ANOVA prior of :func:`anova_prior`) or a function ``prior(tree, X)`` returning a
    prior over the tree's leaves (e.g. an :class:`~gpmodels.priors.ANOVAPrior` with another kernel or
    sharing).  ``separator``: None names every node by its label (a label may then occur under one parent
    only); a string such as "/" names nodes by their whole paths.  ``objective``, ``solver``, ``cv``,
    ``predictive``, ``n_jobs``, ``random_state``: as :class:`~gpmodels.estimators.GPClassifier`'s.

    Fitted attributes: ``tree_`` (the :class:`~gpmodels.hierarchy.ClassTree`), ``paths_`` (the label path
    of each class, in the order of ``classes_``), ``classes_`` (the leaf node names), ``estimator_``
    (the fitted GPClassifier over the leaves), ``n_features_in_``.
    """

    def __init__(self, prior=None, objective="cv", solver="newton-cg", cv=5, predictive="plugin", n_jobs=None,
                 random_state=None, separator=None):
        store_params(self, locals())

    def __sklearn_tags__(self):
        tags = classifier_tags()
        tags.target_tags.multi_output = True
        return tags

    def fit(self, X, y):
        """Build the tree from the label paths y and fit the GP classifier over its leaves."""
        paths = _paths(y)
        tree = ClassTree.from_paths(paths, separator=self.separator)
        codes = tree.classes_of_paths(paths)
        leaf_names = np.array(tree.classes, dtype=object)
        prior = anova_prior(tree, np.asarray(X) if not hasattr(X, "tocsr") else X) if self.prior is None \
            else self.prior(tree, X)
        est = GPClassifier(prior, objective=self.objective, solver=self.solver, cv=self.cv,
                           predictive=self.predictive, n_jobs=self.n_jobs, random_state=self.random_state)
        est.fit(X, leaf_names[codes])
        by_code = {}
        for code, path in zip(codes, paths):
            by_code.setdefault(int(code), tuple(v for v in path if v != ""))
        leaf_path = {leaf_names[c]: p for c, p in by_code.items()}
        self.tree_ = tree
        self.estimator_ = est
        self.classes_ = est.classes_
        self.paths_ = [leaf_path[c] for c in est.classes_]
        self.n_features_in_ = est.n_features_in_
        if hasattr(est, "feature_names_in_"):
            self.feature_names_in_ = est.feature_names_in_
        return self

    def predict_proba(self, X):
        """Probabilities (m, C) of the classes (leaves, ``classes_`` / ``paths_`` order)."""
        check_fitted(self)
        return self.estimator_.predict_proba(X)

    def predict(self, X) -> np.ndarray:
        """The most probable class' label path per example, (m, depth) padded with "" as HiClass does."""
        P = self.predict_proba(X)
        depth = max(len(p) for p in self.paths_)
        table = np.array([list(p) + [""] * (depth - len(p)) for p in self.paths_], dtype=object)
        return table[np.argmax(P, axis=1)]

    def score(self, X, y, sample_weight=None) -> float:
        """Hierarchical F1, micro-averaged (Kiritchenko et al. 2005; HiClass's ``f1``), of ``predict(X)``
        against the label paths y; higher is better, as scikit-learn's scorers expect."""
        if sample_weight is not None:
            raise InputError("HierarchicalGPClassifier.score takes no sample_weight (hierarchical F1 pools the "
                             "label counts of all examples)")
        return float(hierarchical_f1(_paths(y), [list(p) for p in self.predict(X)]))
