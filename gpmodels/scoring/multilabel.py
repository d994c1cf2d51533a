"""Hierarchical multilabels on a class tree and their scores (Rousu et al., JMLR 2006, Sec. 2.1, 5).

A multilabel is a union of partial paths of a :class:`~gpmodels.hierarchy.ClassTree`: one
microlabel per non-root node p = 0..P-1 (tree order), positive or negative, and a positive node's
parent is positive (the root is always positive and carries no microlabel).  Arrays are boolean
(n, P) (True = +1); :func:`check_multilabels` accepts {0, 1}, {-1, +1} or bool and checks the
ancestor closure.

Losses of a prediction U against the truth Y (per example, then averaged over examples):
- ℓ_0/1 = [Y ≠ U];
- ℓ_Δ = Σ_j [y_j ≠ u_j] (symmetric difference);
- ℓ_H̃ = Σ_j c_j [y_j ≠ u_j  &  y_pa(j) = u_pa(j)] with node weights c_j: ``uniform`` c_j = 1,
  ``sibling`` c_root = 1, c_j = c_pa(j)/|sibl(j)| (siblings including j), ``subtree``
  c_j = |T(j)|/|T(root)| (node counts of the subtrees, the root's including the root);
- ℓ_H (the first mistake on each path, Cesa-Bianchi et al.) for reference.
Micro precision / recall / F1 count positive microlabels over all examples and nodes (Table 2);
per-level P/R/F1 restrict the count to the nodes of one depth (Table 3).
"""

from __future__ import annotations

import numpy as np

from gpmodels.errors import HierarchyError, InputError
from gpmodels.hierarchy import ClassTree

__all__ = [
    "NODE_WEIGHTINGS",
    "check_multilabels",
    "paths_to_multilabels",
    "node_weights",
    "zero_one_loss",
    "symmetric_difference_loss",
    "htilde_loss",
    "h_loss",
    "micro_prf",
    "per_level_prf",
    "multilabel_report",
]

#: the choices of the node weights c_j of the multilabel losses (:func:`node_weights`)
NODE_WEIGHTINGS = ("uniform", "sibling", "subtree")


def check_multilabels(Y, tree: ClassTree, name: str = "Y") -> np.ndarray:
    """Validate multilabels of shape (n, P) over ``tree``'s nodes; returns a bool array.

    Values must be {0, 1}, {-1, +1} or bool, and ancestor-closed (a positive node's parent is
    positive); otherwise a :class:`HierarchyError` names the first offending example and node.
    """
    Y = np.asarray(Y)
    if Y.ndim != 2 or Y.shape[1] != tree.n_nodes:
        raise InputError(
            f"Dimension mismatch: {name} must have shape (n, {tree.n_nodes}) (one column per "
            f"non-root node of the tree); got {Y.shape}"
        )
    if Y.dtype != bool:
        vals = np.unique(Y)
        if np.all(np.isin(vals, (0, 1))):
            Y = Y == 1
        elif np.all(np.isin(vals, (-1, 1))):
            Y = Y == 1
        else:
            raise InputError(f"{name} entries must be 0/1, -1/+1 or bool; found values {vals[:6].tolist()}")
    has_parent = tree.parent >= 0
    bad = Y[:, has_parent] & ~Y[:, tree.parent[has_parent]]
    if bad.any():
        i, jj = np.argwhere(bad)[0]
        j = int(np.flatnonzero(has_parent)[jj])
        raise HierarchyError(
            f"{name} is not a union of partial paths: example {int(i)} has node "
            f"{tree.nodes[j]!r} positive but its parent {tree.nodes[tree.parent[j]]!r} negative "
            f"({int(bad.sum())} such entries); positive nodes need positive ancestors"
        )
    return Y


def paths_to_multilabels(y, tree: ClassTree) -> np.ndarray:
    """Single-label classes 0..C-1 -> the multilabel of each class' root-to-leaf path, (n, P) bool."""
    y = np.asarray(y)
    if y.ndim != 1 or (y.size and (y.min() < 0 or y.max() >= tree.n_classes)):
        raise HierarchyError(
            f"labels must be class indices 0..{tree.n_classes - 1} of the tree; "
            f"got {y.min() if y.size else '-'}..{y.max() if y.size else '-'}"
        )
    table = np.zeros((tree.n_classes, tree.n_nodes), dtype=bool)
    for c, p in enumerate(tree.leaves):
        table[c, tree.path(int(p))] = True
    return table[y]


def node_weights(tree: ClassTree, scaling: str) -> np.ndarray:
    """The c_j of ℓ_H̃ for every non-root node (module docstring), shape (P,)."""
    P = tree.n_nodes
    if scaling == "uniform":
        return np.ones(P)
    if scaling == "sibling":
        c = np.empty(P)
        n_root_children = len(tree.root_children)
        for p in range(P):  # breadth first: parents before children
            q = int(tree.parent[p])
            c[p] = 1.0 / n_root_children if q < 0 else c[q] / len(tree.children[q])
        return c
    if scaling == "subtree":
        size = np.ones(P)
        for p in range(P - 1, -1, -1):  # children after parents in breadth-first order
            q = int(tree.parent[p])
            if q >= 0:
                size[q] += size[p]
        return size / (P + 1)
    raise InputError(f"scaling must be one of {', '.join(NODE_WEIGHTINGS)}; got {scaling!r}")


def _pair(Y, U, tree):
    Y = check_multilabels(Y, tree, "Y")
    U = check_multilabels(U, tree, "U")
    if Y.shape != U.shape:
        raise InputError(f"Dimension mismatch: predictions {U.shape} and truth {Y.shape}")
    return Y, U


def zero_one_loss(Y, U, tree: ClassTree) -> float:
    Y, U = _pair(Y, U, tree)
    return float(np.mean(np.any(Y != U, axis=1)))


def symmetric_difference_loss(Y, U, tree: ClassTree) -> float:
    Y, U = _pair(Y, U, tree)
    return float(np.mean(np.sum(Y != U, axis=1)))


def htilde_loss(Y, U, tree: ClassTree, scaling: str = "uniform") -> float:
    """Mean ℓ_H̃: a mistake at j counts (c_j) when the parent's microlabel is right."""
    Y, U = _pair(Y, U, tree)
    c = node_weights(tree, scaling)
    wrong = Y != U
    par_ok = np.ones_like(wrong)
    hp = tree.parent >= 0
    par_ok[:, hp] = ~wrong[:, tree.parent[hp]]
    return float(np.mean((wrong & par_ok) @ c))


def h_loss(Y, U, tree: ClassTree, scaling: str = "uniform") -> float:
    """Mean ℓ_H: a mistake at j counts (c_j) when every ancestor is right."""
    Y, U = _pair(Y, U, tree)
    c = node_weights(tree, scaling)
    wrong = Y != U
    anc_ok = np.ones_like(wrong)
    for p in range(tree.n_nodes):  # breadth first
        q = int(tree.parent[p])
        if q >= 0:
            anc_ok[:, p] = anc_ok[:, q] & ~wrong[:, q]
    return float(np.mean((wrong & anc_ok) @ c))


def _prf(tp: float, n_pred: float, n_true: float) -> tuple[float, float, float]:
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_true if n_true else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def micro_prf(Y, U, tree: ClassTree) -> tuple[float, float, float]:
    """Precision, recall, F1 over all positive microlabel predictions (Rousu Table 2)."""
    Y, U = _pair(Y, U, tree)
    return _prf(float(np.sum(Y & U)), float(U.sum()), float(Y.sum()))


def per_level_prf(Y, U, tree: ClassTree) -> list[tuple[int, float, float, float]]:
    """(depth, P, R, F1) for every depth 1..max (Rousu Table 3)."""
    Y, U = _pair(Y, U, tree)
    D = int(tree.depth.max())
    # per-node counts, then summed per depth: O(n P) whatever the depth
    tp, n_pred, n_true = (np.bincount(tree.depth, weights=A.sum(axis=0), minlength=D + 1) for A in (Y & U, U, Y))
    return [(d, *_prf(float(tp[d]), float(n_pred[d]), float(n_true[d]))) for d in range(1, D + 1)]


def multilabel_report(Y, U, tree: ClassTree) -> dict:
    """ℓ_0/1, ℓ_Δ, ℓ_H̃ (three scalings), micro P/R/F1 and per-level P/R/F1 as a flat dict."""
    Y, U = _pair(Y, U, tree)
    out = {"zero_one": zero_one_loss(Y, U, tree), "delta": symmetric_difference_loss(Y, U, tree)}
    for s in NODE_WEIGHTINGS:
        out[f"htilde_{s}"] = htilde_loss(Y, U, tree, s)
    out["precision"], out["recall"], out["f1"] = micro_prf(Y, U, tree)
    for d, p, r, f in per_level_prf(Y, U, tree):
        out[f"level{d}_precision"], out[f"level{d}_recall"], out[f"level{d}_f1"] = p, r, f
    return out
