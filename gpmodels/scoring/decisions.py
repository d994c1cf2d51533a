"""Bayes decision rules for hierarchical classification (Seeger 2008, Sec. 6.1 and footnote 11).

Given a predictive distribution p_j over the C classes (leaves of a class tree), the decision
y(x_j) that minimises the expected loss E_{c ~ p_j}[ℓ(y, c)] depends on the score:

- ``argmax``: y = argmax_c p_jc maximises expected accuracy (and precision);
- ``taxo``: y = argmin_y Σ_c p_jc Δ(y, c) minimises the expected taxo-loss, Δ = half the tree path
  length between leaves (:meth:`ClassTree.taxo_matrix`);
- ``parent``: maximises the expected parent accuracy (footnote 11): the parent node p(j) whose leaf
  children carry the most mass under p_j is chosen, then y is the most probable leaf child of p(j).
  (The root counts as the parent of the leaves directly below it.)

Ties in expected loss are broken towards the most probable class.  P has shape (m, C).
"""

from __future__ import annotations

import numpy as np

from gpmodels.errors import InputError
from gpmodels.hierarchy import ClassTree

__all__ = [
    "DECISION_RULES",
    "expected_loss",
    "bayes_decision",
    "argmax_rule",
    "min_expected_taxo",
    "max_expected_parent_accuracy",
    "decide",
]

DECISION_RULES = ("argmax", "taxo", "parent")


def _check_P(P, C: int | None = None) -> np.ndarray:
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2:
        raise InputError(f"P must be a 2-D array (m, C) of predictive probabilities; got shape {P.shape}")
    if C is not None and P.shape[1] != C:
        raise InputError(f"P must have one column per class of the tree ({C}); got {P.shape[1]}")
    if not np.all(np.isfinite(P)):
        raise InputError("P must be finite")
    return P


def expected_loss(P, loss) -> np.ndarray:
    """R_jy = Σ_c p_jc loss(y, c) for every candidate y; shape (m, C)."""
    P = _check_P(P)
    loss = np.asarray(loss, dtype=np.float64)
    if loss.shape != (P.shape[1], P.shape[1]):
        raise InputError(f"loss must be a (C, C) matrix with C = {P.shape[1]}; got shape {loss.shape}")
    return P @ loss.T


def bayes_decision(P, loss) -> np.ndarray:
    """argmin_y Σ_c p_jc loss(y, c) per row; ties (within 1e-12 relative) go to the most probable y."""
    P = _check_P(P)
    R = expected_loss(P, loss)
    best = R.min(axis=1, keepdims=True)
    tol = 1e-12 * np.maximum(1.0, np.abs(best))
    return np.argmax(np.where(R <= best + tol, P, -np.inf), axis=1)


def argmax_rule(P) -> np.ndarray:
    """The standard prediction argmax_c p_jc (maximises expected accuracy)."""
    return np.argmax(_check_P(P), axis=1)


def min_expected_taxo(P, tree: ClassTree) -> np.ndarray:
    """argmin_y Σ_c p_jc Δ(y, c): the Bayes rule for the taxo-loss."""
    return bayes_decision(_check_P(P, tree.n_classes), tree.taxo_matrix())


def max_expected_parent_accuracy(P, tree: ClassTree) -> np.ndarray:
    """Footnote 11: the most probable leaf child of the parent node with the largest leaf-child mass."""
    P = _check_P(P, tree.n_classes)
    parents = tree.class_parents  # (C,), -1 = root
    uniq, group = np.unique(parents, return_inverse=True)
    G = np.zeros((tree.n_classes, uniq.size))
    G[np.arange(tree.n_classes), group] = 1.0
    mass = P @ G  # shape: (m, groups): mass of each parent's leaf children
    best = mass.max(axis=1, keepdims=True)
    tol = 1e-12 * np.maximum(1.0, best)
    ok_group = mass >= best - tol  # parents attaining the maximum (ties: keep all)
    ok_class = ok_group[:, group]  # shape: (m, C)
    return np.argmax(np.where(ok_class, P, -np.inf), axis=1)


def decide(P, tree: ClassTree | None, rule: str = "argmax") -> np.ndarray:
    """Class decisions by ``rule`` (one of ``DECISION_RULES``); ``taxo``/``parent`` need the tree."""
    if rule not in DECISION_RULES:
        raise InputError(f"decision rule must be one of {DECISION_RULES}; got {rule!r}")
    if rule == "argmax":
        return argmax_rule(P)
    if tree is None:
        raise InputError(f"decision rule {rule!r} needs a class tree")
    return min_expected_taxo(P, tree) if rule == "taxo" else max_expected_parent_accuracy(P, tree)
