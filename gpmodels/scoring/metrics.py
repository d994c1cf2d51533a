"""Scores of predictive distributions (Seeger 2008, Sec. 6).

All take P of shape (m, C) (rows are predictive distributions) and true labels y (m,).
- ``error``: fraction of argmax predictions that are wrong;
- ``log_loss``: mean -log P(y_j) (natural log), P clipped below at 1e-300;
- ``prec``: mean reciprocal rank of the true class (classes ranked by P, ties broken in favour
  of the true class' competitors, i.e. pessimistically); the papers' name, not a precision;
- ``error_reject_curve``: reject the fraction a of test points with the lowest max_c P, report
  the error on the rest (Sec. 6.2, Fig. 3);
- hierarchical scores on a class tree (Sec. 6.1): ``parent_accuracy``, ``taxo_loss``,
  ``level_confusion`` and ``hierarchical_report`` (see the section at the end), which adds the
  hierarchical precision, recall and F1 of :mod:`gpmodels.scoring.hierarchical_prf`.
"""

from __future__ import annotations

import numpy as np

from gpmodels.errors import InputError
from gpmodels.scoring.decisions import argmax_rule, max_expected_parent_accuracy, min_expected_taxo
from gpmodels.scoring.hierarchical_prf import hierarchical_prf
from gpmodels.validation import check_shape

__all__ = [
    "accuracy",
    "error",
    "log_loss",
    "prec",
    "error_reject_curve",
    "classification_report",
    "parent_accuracy",
    "taxo_loss",
    "level_confusion",
    "hierarchical_report",
]


def _check(P, y):
    P = np.asarray(P, dtype=np.float64)
    y = np.asarray(y)
    if P.ndim != 2:
        raise InputError(f"P must be a 2-D array (m, C) of probabilities; got shape {P.shape}")
    check_shape("y", y, (P.shape[0],))
    if y.size and (y.min() < 0 or y.max() >= P.shape[1]):
        raise InputError(f"labels must lie in 0..{P.shape[1] - 1}; got values from {y.min()} to {y.max()}")
    return P, y.astype(np.intp)


def accuracy(P, y) -> float:
    P, y = _check(P, y)
    return float(np.mean(np.argmax(P, axis=1) == y))


def error(P, y) -> float:
    return 1.0 - accuracy(P, y)


def log_loss(P, y) -> float:
    P, y = _check(P, y)
    return float(-np.mean(np.log(np.maximum(P[np.arange(y.size), y], 1e-300))))


def prec(P, y) -> float:
    """Mean 1/rank of the true class, the mean reciprocal rank; rank 1 = most probable (Cai & Hofmann 2004;
    Seeger 2008, Sec. 6.1, calls it "prec").  Not scikit-learn's precision (true positives over predicted)."""
    P, y = _check(P, y)
    p_true = P[np.arange(y.size), y]
    rank = np.sum(P >= p_true[:, None], axis=1)  # ties count against the true class
    return float(np.mean(1.0 / rank))


def error_reject_curve(P, y, fractions=None) -> list[tuple[float, float]]:
    """(rejected fraction, error on the accepted points) pairs, rejecting least confident first."""
    P, y = _check(P, y)
    if fractions is None:
        fractions = np.linspace(0.0, 0.5, 11)
    conf = P.max(axis=1)
    order = np.argsort(-conf, kind="stable")  # most confident first
    wrong = (np.argmax(P, axis=1) != y)[order]
    m = y.size
    out = []
    for a in fractions:
        if not 0.0 <= a < 1.0:
            raise InputError(f"rejection fractions must lie in [0, 1); got {a}")
        keep = max(1, int(round((1.0 - a) * m)))
        out.append((float(a), float(np.mean(wrong[:keep]))))
    return out


def classification_report(P, y) -> dict:
    """error, log-loss and prec in one dictionary."""
    return {"error": error(P, y), "log_loss": log_loss(P, y), "prec": prec(P, y)}


# ---------------------------------------------------------------------------- hierarchical scores
# Seeger 2008, Sec. 6.1 (after Cai & Hofmann 2004): acc, prec, parent accuracy (pacc) and the
# taxo-loss of decisions y_pred against true classes y on a class tree; decisions by
# :mod:`gpmodels.scoring.decisions`.  ``level_confusion`` summarises the errors per tree level.


def _check_pred(y_pred, y, tree):
    y_pred, y = np.asarray(y_pred), np.asarray(y)
    if y_pred.shape != y.shape or y.ndim != 1:
        raise InputError(f"y_pred and y must be 1-D arrays of the same length; got shapes {y_pred.shape} and {y.shape}")
    C = tree.n_classes
    for name, a in (("y_pred", y_pred), ("y", y)):
        if a.size and (a.dtype.kind not in "iu" or a.min() < 0 or a.max() >= C):
            raise InputError(f"{name} must hold class indices in 0..{C - 1}")
    return y_pred.astype(np.intp), y.astype(np.intp)


def parent_accuracy(y_pred, y, tree) -> float:
    """pacc = mean 1{par(L(y_pred)) = par(L(y))} (the root is the parent of depth-1 leaves)."""
    y_pred, y = _check_pred(y_pred, y, tree)
    par = tree.class_parents
    return float(np.mean(par[y_pred] == par[y]))


def taxo_loss(y_pred, y, tree) -> float:
    """Mean Δ(y_pred, y), Δ = half the tree path length between the leaves."""
    y_pred, y = _check_pred(y_pred, y, tree)
    return float(np.mean(tree.taxo_matrix()[y_pred, y]))


def level_confusion(y_pred, y, tree) -> dict:
    """Per tree depth d = 1..D: the confusion matrix between the depth-d ancestors of true and
    predicted leaves (a leaf shallower than d stands for itself) and the accuracy at that level.

    Returns {d: {"nodes": names, "confusion": (G, G) counts (rows: true), "accuracy": float}}.
    """
    y_pred, y = _check_pred(y_pred, y, tree)
    out = {}
    for d, anc in enumerate(tree.leaf_ancestors_by_depth(), start=1):  # anc: class -> node at level d
        nodes, idx = np.unique(anc, return_inverse=True)
        t, p = idx[y], idx[y_pred]
        conf = np.zeros((nodes.size, nodes.size), dtype=np.int64)
        np.add.at(conf, (t, p), 1)
        out[d] = {
            "nodes": [tree.nodes[q] for q in nodes],
            "confusion": conf,
            "accuracy": float(np.mean(t == p)) if y.size else float("nan"),
        }
    return out


def hierarchical_report(P, y, tree, decision: str = "argmax") -> dict:
    """acc, prec, pacc, taxo, per-level accuracies (``level{d}_acc``) and the hierarchical precision,
    recall and F1 (``hier_precision``, ``hier_recall``, ``hier_f1``: Kiritchenko et al., micro-averaged,
    :func:`~gpmodels.scoring.hierarchical_prf.hierarchical_prf`) of predictive distributions P.

    ``decision``: ``argmax`` scores every decision-based score with the argmax rule;
    ``expected_loss`` uses each score's Bayes rule (argmax for acc, the expected-pacc rule for pacc,
    the expected-taxo rule for taxo, for the per-level summaries and for the hierarchical P/R/F1),
    Seeger 2008, Sec. 6.1.
    """
    P, y = _check(P, y)
    if decision not in ("argmax", "expected_loss"):
        raise InputError(f"decision must be 'argmax' or 'expected_loss'; got {decision!r}")
    y_arg = argmax_rule(P)
    y_pacc = y_arg if decision == "argmax" else max_expected_parent_accuracy(P, tree)
    y_taxo = y_arg if decision == "argmax" else min_expected_taxo(P, tree)
    out = {
        "acc": float(np.mean(y_arg == y)),
        "prec": prec(P, y),
        "pacc": parent_accuracy(y_pacc, y, tree),
        "taxo": taxo_loss(y_taxo, y, tree),
    }
    for d, summary in level_confusion(y_taxo, y, tree).items():
        out[f"level{d}_acc"] = summary["accuracy"]
    h = hierarchical_prf(y, y_taxo, tree)
    out.update({"hier_precision": h["hP"], "hier_recall": h["hR"], "hier_f1": h["hF"]})
    return out
