"""``HierarchicalGPClassifier``: GP classification of label paths (HiClass's format) under the ANOVA prior.

Each example's label is a path from the top level down to its class, e.g. ``["Animal", "Mammal", "Cat"]``
(shorter paths padded with ""), as HiClass takes them.  ``fit`` builds the class tree from the paths
(:meth:`gpmodels.hierarchy.ClassTree.from_paths`: every prefix is a node, the paths' ends are the
classes, the leaves) and fits a :class:`~gpmodels.estimators.GPClassifier` whose prior is, by default,
the ANOVA prior over that tree (Seeger 2008, Sec. 3: u_c = Σ_{p on the path of c} ŭ_p, one latent
function per node, variances and kernels shared per level, H1 of Sec. 6.1).  ``predict`` returns paths;
``score`` is the hierarchical F1 of Kiritchenko et al. (HiClass's ``f1``).  A 1-D y (one label per
example) is a one-level hierarchy: the estimator then behaves as a flat scikit-learn classifier
(``classes_`` the sorted labels, ``predict`` one label per example), and passes scikit-learn's
``check_estimator`` but for its multilabel-indicator check (tests/estimators/test_hierarchical.py says why).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from gpmodels.errors import InputError
from gpmodels.estimators._common import (
    NestedParamsRouting,
    check_fitted,
    check_label_types,
    classifier_tags,
    encode_targets,
    forward_params,
    store_params,
)
from gpmodels.estimators.gp import GPClassifier
from gpmodels.hierarchy import ClassTree
from gpmodels.priors.anova import ANOVAPrior
from gpmodels.priors.kernel_slot import default_kernel
from gpmodels.scoring.hierarchical_prf import hierarchical_f1
from gpmodels.validation import check_features

__all__ = ["HierarchicalGPClassifier", "anova_prior"]


def anova_prior(tree: ClassTree, X=None) -> ANOVAPrior:
    """The default prior of :class:`HierarchicalGPClassifier`: the ANOVA prior over ``tree`` without a kernel
    of its own (the estimator's ``kernel=``, else RBF with w = 1 / Σ_j Var[x_j] of the training inputs,
    set when it meets them), variances and kernels per tree level (H1), variance 1 and intercept variance
    σ² = 1.  ``X`` is not needed (kept for the form ``prior(tree, X)`` of the estimator's ``prior``)."""
    return ANOVAPrior(tree, None, sharing="level", variance=1.0, sigma2=1.0)


def _padding(v) -> bool:
    return v is None or (isinstance(v, (str, np.str_)) and v == "")


def _paths(rows) -> list[tuple[str, ...]]:
    """The label paths of ``rows`` as tuples of text (padding "" / None kept as ""; validated by
    ClassTree.from_paths)."""
    return [tuple("" if _padding(v) else str(v) for v in row) for row in rows]


def _label_rows(y):
    """(rows, flat, dtype): the labels of y as one sequence per example, whether y is 1-D (one label per
    example: a one-level hierarchy), and y's array dtype (None for a list or an object array).

    A 1-D y is checked as a classifier's labels (:func:`~gpmodels.estimators._common.encode_targets`:
    no None, no mix of strings and numbers, no continuous values, two classes at least); a 2-D y (or a
    list of lists, ragged allowed) holds label paths, checked for label types and continuous values."""
    if y is None:
        raise InputError(
            "HierarchicalGPClassifier requires y to be passed, but the target y is None; give one "
            "label path per example, such as ['Animal', 'Mammal', 'Cat'], or one label per example"
        )
    if isinstance(y, (list, tuple)) and any(isinstance(r, (list, tuple, np.ndarray)) for r in y):
        check_label_types([v for r in y for v in (r if isinstance(r, (list, tuple, np.ndarray)) else [r])])
        return [list(r) if isinstance(r, (list, tuple, np.ndarray)) else [r] for r in y], False, None
    arr = np.asarray(y)
    if arr.ndim == 1:
        classes, codes = encode_targets(arr)
        return [[c] for c in classes[codes]], True, classes.dtype
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise InputError(
            f"y must hold one label path per example (a 2-D array or a list of lists of labels) or one "
            f"label per example (1-D); got shape {arr.shape}"
        )
    check_label_types(arr)
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr) & (arr == np.round(arr))):
        raise InputError(
            "Unknown label type: continuous-multioutput. A classifier needs class labels; y has "
            "non-integral or non-finite float values (a regression target?)"
        )
    return arr.tolist(), False, (None if arr.dtype.kind == "O" else arr.dtype)


class HierarchicalGPClassifier(NestedParamsRouting, ClassifierMixin, BaseEstimator):
    """GP classifier of label paths (module docstring).

    ``prior``: None (the ANOVA prior of :func:`anova_prior`) or a function ``prior(tree, X)`` returning a
    prior over the tree's leaves (e.g. an :class:`~gpmodels.priors.ANOVAPrior` with another kernel or
    sharing).  ``kernel``: the kernel of that prior, as :class:`~gpmodels.estimators.GPClassifier`'s
    ``kernel`` (a gpmodels or scikit-learn kernel; None: RBF of width ``'auto'``); with a ``prior`` function
    whose prior carries its own kernel it is refused.  ``separator``: None names every node by its label (a
    label may then occur under one parent only); a string such as "/" names nodes by their whole paths.
    ``objective``, ``solver``, ``cv``, ``predictive``, ``n_jobs``, ``random_state``: as
    :class:`~gpmodels.estimators.GPClassifier`'s.

    Fitted attributes: ``tree_`` (the :class:`~gpmodels.hierarchy.ClassTree`), ``paths_`` (the label path
    of each class as given, in the order of ``classes_``), ``classes_`` (the leaf node names; after a 1-D
    y, the labels), ``estimator_`` (the fitted GPClassifier over the leaves), ``n_features_in_``.
    """

    def __init__(
        self,
        prior=None,
        objective="cv",
        solver="newton-cg",
        cv=5,
        predictive="plugin",
        n_jobs=None,
        random_state=None,
        separator=None,
        kernel=None,
    ):
        store_params(self, locals())

    nested_defaults = {"kernel": default_kernel}

    def __sklearn_tags__(self):
        tags = classifier_tags()
        tags.target_tags.multi_output = True
        return tags

    def fit(self, X, y):
        """Build the tree from the label paths y (a 1-D y: one label per example, a one-level tree) and fit the
        GP classifier over its leaves."""
        X_raw, X = X, check_features("X", X)
        rows, flat, dtype = _label_rows(y)
        if len(rows) != X.shape[0]:
            raise InputError(f"X has {X.shape[0]} samples but y has {len(rows)}")
        paths = _paths(rows)
        tree = ClassTree.from_paths(paths, separator=self.separator)
        codes = tree.classes_of_paths(paths)
        leaf_names = np.array(tree.classes, dtype=object)
        prior = anova_prior(tree, X) if self.prior is None else self.prior(tree, X)
        est = forward_params(self, GPClassifier, prior=prior)
        est.fit(X_raw, leaf_names[codes])
        given = {}  # leaf name -> the path of the first example of that class, as given (padding dropped)
        for code, row in zip(codes, rows):
            given.setdefault(leaf_names[code], tuple(v for v in row if not _padding(v)))
        inner = list(est.classes_)
        if flat:  # the classes are the labels themselves, sorted as scikit-learn sorts them
            self.classes_ = np.unique(np.array([given[c][0] for c in inner], dtype=dtype))
            self._columns = np.array([inner.index(str(c)) for c in self.classes_], dtype=np.intp)
        else:
            self.classes_ = est.classes_
            self._columns = np.arange(len(inner), dtype=np.intp)
        self.paths_ = [given[inner[j]] for j in self._columns]
        self._flat, self._label_dtype = flat, dtype
        self.tree_ = tree
        self.estimator_ = est
        self.n_features_in_ = est.n_features_in_
        if hasattr(est, "feature_names_in_"):
            self.feature_names_in_ = est.feature_names_in_
        else:
            self.__dict__.pop("feature_names_in_", None)
        return self

    def predict_proba(self, X):
        """Probabilities (m, C) of the classes (leaves, ``classes_`` / ``paths_`` order)."""
        check_fitted(self)
        return self.estimator_.predict_proba(X)[:, self._columns]

    def predict(self, X) -> np.ndarray:
        """The most probable class per example: its label path, (m, depth) padded with "" as HiClass does
        (with y's dtype when y was an array whose paths need no padding); after a 1-D y, its label (m,)."""
        best = np.argmax(self.predict_proba(X), axis=1)
        if self._flat:
            return self.classes_[best]
        depth = max(len(p) for p in self.paths_)
        table = np.array([list(p) + [""] * (depth - len(p)) for p in self.paths_], dtype=object)
        if self._label_dtype is not None and all(len(p) == depth for p in self.paths_):
            table = table.astype(self._label_dtype)
        return table[best]

    def score(self, X, y, sample_weight=None) -> float:
        """Hierarchical F1, micro-averaged (Kiritchenko et al. 2005; HiClass's ``f1``), of ``predict(X)``
        against the label paths y; higher is better, as scikit-learn's scorers expect."""
        if sample_weight is not None:
            raise InputError(
                "HierarchicalGPClassifier.score takes no sample_weight (hierarchical F1 pools the "
                "label counts of all examples)"
            )
        truth = _paths(_label_rows(y)[0])
        pred = self.predict(X)
        return float(hierarchical_f1(truth, _paths(pred[:, None] if self._flat else pred)))
