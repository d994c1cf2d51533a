"""The hierarchical multilabel max-margin learner H-M^3 (Rousu et al., JMLR 2006) as a scikit-learn classifier."""

from __future__ import annotations

import os
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from gpmodels.baselines.hm3.inference import node_max_marginals
from gpmodels.baselines.hm3.solver import HM3Options, fit_hm3
from gpmodels.errors import InputError
from gpmodels.estimators._common import (
    ConvergenceWarning,
    check_fitted,
    check_label_types,
    check_positive,
    check_X,
    classifier_tags,
    forward_params,
    kernel_by_name,
    record_features,
    seed_from,
    store_params,
)
from gpmodels.hierarchy import ClassTree
from gpmodels.scoring.multilabel import check_multilabels, micro_prf
from gpmodels.validation import check_features

__all__ = ["HM3Classifier", "as_tree"]


def as_tree(hierarchy, owner: str) -> ClassTree:
    """A :class:`ClassTree` from a ClassTree, a networkx DiGraph (parent -> child), an edge list or a
    ``hierarchy.tsv`` path."""
    if isinstance(hierarchy, ClassTree):
        return hierarchy
    if hasattr(hierarchy, "is_directed") and hasattr(hierarchy, "edges"):
        return ClassTree.from_networkx(hierarchy)
    if isinstance(hierarchy, (str, os.PathLike)):
        return ClassTree.from_tsv(hierarchy)
    allowed = (
        "a gpmodels.hierarchy.ClassTree, a networkx DiGraph with edges parent -> child, a list of "
        "(parent, child) pairs or the path of a hierarchy.tsv file"
    )
    if hierarchy is None or not hasattr(hierarchy, "__iter__"):
        raise InputError(f"The 'hierarchy' parameter of {owner} must be {allowed}; got {hierarchy!r} instead")
    edges = list(hierarchy)
    bad = [e for e in edges if isinstance(e, str) or not hasattr(e, "__len__") or len(e) != 2]
    if bad:
        raise InputError(
            f"The 'hierarchy' parameter of {owner} must be {allowed}; entry {bad[0]!r} of the "
            f"edge list is not a (parent, child) pair"
        )
    return ClassTree(edges)


class HM3Classifier(ClassifierMixin, BaseEstimator):
    """Hierarchical multilabel max-margin classifier H-M^3 (Rousu et al., JMLR 2006).

    Targets are hierarchical multilabels (:mod:`gpmodels.scoring.multilabel`): ``Y`` is an (n, P) 0/1 (or
    bool, or ±1) indicator matrix with one column per non-root node of ``hierarchy``, in the tree's
    breadth-first node order (``ClassTree.nodes``, ``classes_`` after fitting), and every row a
    union of partial paths (a positive node's parent is positive; the root is implicit).  Single-label
    classes become such rows by :func:`gpmodels.scoring.multilabel.paths_to_multilabels`.

    ``hierarchy``: a :class:`~gpmodels.hierarchy.ClassTree`, a networkx DiGraph (edges parent ->
    child), a list of (parent, child) pairs or the path of a ``hierarchy.tsv`` file.  The model
    (Sec. 2.3) scores a labeling y of the tree by Σ_e w_e^{y_e}·φ(x) over the edges e, with edge
    features on the x-kernel ``kernel`` (as :class:`CrammerSingerSVC`: 'rbf', 'ard', 'linear',
    'polynomial' or a Kernel; ``w``, ``degree``, ``offset``); it is trained on the marginal dual (8)
    by Algorithms 1–2 with ``C``, training ``loss`` ('delta' = ℓ_Δ, 'htilde' = ℓ_H̃) and its node
    ``scaling`` ('uniform', 'sibling', 'subtree'), ``working_set`` ('gap_sampling', drawn with the
    random generator seeded by ``random_state``, or 'cyclic'), ``chunk_size``, ``iteration_limit``,
    ``direction`` ('dp' or 'lp', an LP solved by HiGHS), until the relative duality gap is below
    ``gap_tol`` or after ``max_passes`` passes; see :mod:`gpmodels.baselines.hm3.solver`.
    ``random_state`` (default 0: reproducible fits) seeds gap sampling.

    ``predict``: the union of partial paths of highest score, by the DP of Sec. 3.4 / 5, as an (n, P)
    0/1 int matrix — hierarchy-consistent by construction.  ``decision_function``: per node j the
    max-marginal margin d_j(x) = max_{y: y_j = 1} F(x, y) − max_{y: y_j = 0} F(x, y) over consistent
    labelings (:func:`~gpmodels.baselines.hm3.inference.node_max_marginals`), so ``predict`` has
    node j on where d_j > 0 and off where d_j < 0; d_child ≤ d_parent, so thresholding d at any
    level also gives consistent labelings.  ``score``: the micro-averaged F1 of the positive
    microlabels (Rousu et al., Table 2; :func:`gpmodels.scoring.multilabel.micro_prf`), higher is better.
    There is no ``predict_proba``: the model is a max-margin one, without probabilities.

    Fitted attributes: ``tree_`` (the ClassTree), ``classes_`` (node names, the columns of Y),
    ``n_features_in_``, ``kernel_``, ``support_`` (training examples with ν_i ≠ 0),
    ``dual_coef_`` ((n_SV, P, 4): ν of the support vectors, edge scores H(x) = Σ_i K(x, x_i) ν_i),
    ``n_iter_`` (passes of Algorithm 1), ``model_`` (the :class:`~gpmodels.baselines.hm3.solver.HM3Model`,
    whose ``result`` holds the objectives, the gap and the trace).
    """

    def __init__(
        self,
        hierarchy,
        kernel="rbf",
        w="auto",
        degree=2,
        offset=1.0,
        C=1.0,
        loss="delta",
        scaling="uniform",
        working_set="gap_sampling",
        chunk_size=200,
        iteration_limit=10,
        direction="dp",
        gap_tol=1e-2,
        max_passes=200,
        random_state=0,
    ):
        store_params(self, locals())

    def __sklearn_tags__(self):
        return classifier_tags(multi_label=True, poor_score=True)

    def _check_Y(self, Y, tree: ClassTree, n: int) -> np.ndarray:
        """Y as an (n, P) bool array over ``tree``'s nodes, or a clear error (wrong width, values, closure)."""
        owner = type(self).__name__
        if Y is None:
            raise InputError(
                f"{owner} requires y to be passed, but the target y is None (Y: an (n, P) indicator "
                "matrix over the hierarchy's nodes)"
            )
        check_label_types(Y)
        Y = np.asarray(Y)
        if Y.dtype.kind == "O":
            Y = np.asarray(Y.tolist())  # numbers or strings only (checked above)
        if Y.dtype.kind == "f" and not np.all(np.isfinite(Y) & (Y == np.round(Y))):
            raise InputError(
                "Unknown label type: continuous. Y must be a 0/1 indicator matrix over the hierarchy's "
                "nodes; it has non-integral or non-finite values (a regression target?)"
            )
        P = tree.n_nodes
        if Y.ndim != 2 or Y.shape[1] != P:
            shown = ", ".join(map(repr, tree.nodes[:6])) + (", ..." if P > 6 else "")
            hint = (
                " (a 1-D array of classes? convert it with gpmodels.scoring.multilabel.paths_to_multilabels)"
                if Y.ndim == 1
                else ""
            )
            raise InputError(
                f"Dimension mismatch: Y must be an (n, {P}) 0/1 indicator matrix with one column per "
                f"non-root node of the hierarchy, in the order {shown}; got shape {Y.shape}{hint}"
            )
        if Y.shape[0] != n:
            raise InputError(f"X has {n} samples but Y has {Y.shape[0]}")
        return check_multilabels(Y, tree, "Y")

    def fit(self, X, y):
        """Fit on inputs X (n, d), dense or CSR, and the indicator matrix y = Y (n, P) (class docstring)."""
        owner = type(self).__name__
        tree = as_tree(self.hierarchy, owner)
        C = check_positive(owner, "C", self.C)
        opts = forward_params(self, HM3Options, C=C, seed=seed_from(owner, self.random_state))
        X_raw, X = X, check_features("X", X)
        Y = self._check_Y(y, tree, X.shape[0])
        kernel = kernel_by_name(owner, self.kernel, self.w, self.degree, self.offset, X)
        model = fit_hm3(kernel, X, Y, tree, opts)
        result = model.result
        if not result.converged:
            warnings.warn(
                f"{owner} stopped before the relative duality gap reached gap_tol = {self.gap_tol:g} "
                f"({result.message}; gap {result.gap:.3g}, primal {result.primal:.3g}); raise max_passes",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.tree_ = tree
        self.classes_ = np.array(tree.nodes, dtype=object)
        record_features(self, X_raw, X)
        self.kernel_ = kernel
        self.model_ = model
        self.support_ = model.support_
        self.dual_coef_ = model.nu_support_
        self.n_iter_ = result.passes
        return self

    def _edge_scores(self, X) -> np.ndarray:
        check_fitted(self)
        return self.model_.edge_scores(check_X(self, X))  # shape: (n, P, 4)

    def decision_function(self, X):
        """Max-marginal margins d_j(x) (class docstring), shape (n, P)."""
        MM = node_max_marginals(self._edge_scores(X), self.tree_, consistent=True)
        return MM[:, :, 1] - MM[:, :, 0]

    def predict(self, X):
        """The consistent multilabel of highest score, (n, P) 0/1 int over ``classes_``."""
        check_fitted(self)
        return self.model_.predict(check_X(self, X)).astype(np.int64)

    def score(self, X, y) -> float:
        """Micro-averaged F1 of ``predict(X)`` against y = Y (n, P) (Rousu et al. 2006, Table 2); 0 when
        neither has a positive microlabel.  Higher is better, as scikit-learn's scorers expect."""
        check_fitted(self)
        X = check_X(self, X)
        Y = self._check_Y(y, self.tree_, X.shape[0])
        return float(micro_prf(Y, self.model_.predict(X), self.tree_)[2])
