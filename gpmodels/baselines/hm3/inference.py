"""Edge labelings, edge losses and the two-pass dynamic programme of H-M^3 (Rousu et al. 2006).

Edges.  Edge p joins node p to its parent (the root for top-level nodes); there are P edges, one
per non-root node, in the tree's breadth-first order.  An edge labeling u = (a, b) of (parent,
child), with 1 = positive, is stored at index u = 2a + b: 0 = (−,−), 1 = (−,+), 2 = (+,−),
3 = (+,+).  Per-edge arrays have shape (n, P, 4).  The root is always positive and is not a
variable: labelings of a top-level edge with a = 0 never occur (their entries are ignored).
Index 1 (parent negative, child positive) is the only inconsistent labeling.

Losses (Sec. 2.1) split over edges: ℓ_Δ with node weights c_j puts c_j [y_j ≠ u_j]/N(j) on each
of the N(j) = 1 + |children(j)| edges at node j; ℓ_H̃ puts c_j [y_j ≠ u_j & y_pa(j) = u_pa(j)] on
the edge (pa(j), j), the only edge that sees both microlabels (its exact decomposition).

Inference (Sec. 3.4): argmax_y Σ_e g_e(y_e) over labelings y of the non-root nodes, by a bottom-up
pass S_b(j) = Σ_{c child of j} G_b(c), G_a(c) = max_b g_c(a, b) + S_b(c), and a top-down pass
choosing each child's label given its parent's; both vectorised over examples and over the nodes
of a tree level.  ``consistent=True`` excludes the labeling (−,+) (prediction over unions of
partial paths, Sec. 5); training directions range over all labelings.
Max-marginals (:func:`node_max_marginals`): the best value with node j clamped to − or +, for
every j at once, by an outside (top-down) pass after the same inside pass; their difference is the
per-node margin that the scikit-learn façade reports as its decision function.
"""

from __future__ import annotations

import numpy as np

from gpmodels.hierarchy import ClassTree
from gpmodels.scoring.multilabel import node_weights

__all__ = [
    "parent_bits",
    "edge_onehot",
    "edge_losses",
    "best_labelings",
    "node_max_marginals",
    "labeling_scores",
    "best_single_paths",
    "TRAIN_LOSSES",
]

TRAIN_LOSSES = ("delta", "htilde")


def edge_onehot(Y: np.ndarray, tree: ClassTree) -> np.ndarray:
    """One-hot edge labelings of multilabels Y (n, P) bool -> (n, P, 4) float."""
    Y = np.asarray(Y, dtype=bool)
    n, P = Y.shape
    u = 2 * parent_bits(Y, tree).astype(np.intp) + Y
    out = np.zeros((n, P, 4))
    np.put_along_axis(out, u[:, :, None], 1.0, axis=2)
    return out


def edge_losses(Y: np.ndarray, tree: ClassTree, loss: str = "delta", scaling: str = "uniform") -> np.ndarray:
    """ℓ_e(i, u) for every example, edge and labeling (module docstring), shape (n, P, 4)."""
    Y = np.asarray(Y, dtype=bool)
    n, P = Y.shape
    c = node_weights(tree, scaling)
    b = np.array([0, 1, 0, 1], dtype=bool)  # child bit of u
    a = np.array([0, 0, 1, 1], dtype=bool)  # parent bit of u
    child_wrong = Y[:, :, None] != b[None, None, :]
    hp = tree.parent >= 0
    if loss == "delta":
        nb = 1.0 + np.array([len(ch) for ch in tree.children])
        L = child_wrong * (c / nb)[None, :, None]
        if hp.any():
            q = tree.parent[hp]
            L[:, hp] += (Y[:, q][:, :, None] != a[None, None, :]) * (c[q] / nb[q])[None, :, None]
        return L
    if loss == "htilde":
        par_right = np.ones((n, P, 4), dtype=bool)
        if hp.any():
            par_right[:, hp] = Y[:, tree.parent[hp]][:, :, None] == a[None, None, :]
        return (child_wrong & par_right) * c[None, :, None]
    raise ValueError(f"loss must be one of {TRAIN_LOSSES}; got {loss!r}")


def parent_bits(lab: np.ndarray, tree: ClassTree) -> np.ndarray:
    """Each node's parent label (the root counts as positive), shape like ``lab`` (n, P) bool."""
    ext = np.concatenate([lab, np.ones(lab.shape[:-1] + (1,), dtype=bool)], axis=-1)
    return ext[..., np.where(tree.parent >= 0, tree.parent, tree.n_nodes)]


def _inside(g: np.ndarray, tree: ClassTree, consistent: bool):
    """Bottom-up pass of the DP: S_b(j) (best value below node j given y_j = b, j's own edge
    excluded), G_a(j) = max_b g_j(a, b) + S_b(j) (j's contribution to its parent given the parent's
    label a), the best child labels given the parent's, and the value of the best labeling."""
    n, P, _ = g.shape
    g0, g1, g2, g3 = g[:, :, 0], g[:, :, 1], g[:, :, 2], g[:, :, 3]
    if consistent:
        g1 = np.full_like(g1, -np.inf)
    S0 = np.zeros((n, P))  # best value below node j given y_j = − / +
    S1 = np.zeros((n, P))
    G0 = np.empty((n, P))
    G1 = np.empty((n, P))
    ch_neg = np.empty((n, P), dtype=bool)  # best child label given a negative parent
    ch_pos = np.empty((n, P), dtype=bool)  # ... given a positive parent
    levels = tree.levels
    root_val = np.zeros(n)
    for d in range(len(levels) - 1, -1, -1):  # bottom-up
        nodes, par, starts, uniq = levels[d]
        s0, s1 = S0[:, nodes], S1[:, nodes]
        t00, t01 = g0[:, nodes] + s0, g1[:, nodes] + s1  # parent −: child −, +
        t10, t11 = g2[:, nodes] + s0, g3[:, nodes] + s1  # parent +: child −, +
        ch_neg[:, nodes] = t01 > t00
        ch_pos[:, nodes] = t11 > t10
        G0[:, nodes] = np.maximum(t00, t01)
        G1[:, nodes] = np.maximum(t10, t11)
        if d == 0:
            root_val = G1[:, nodes].sum(axis=1)  # the root is positive
        else:
            S0[:, uniq] += np.add.reduceat(G0[:, nodes], starts, axis=1)
            S1[:, uniq] += np.add.reduceat(G1[:, nodes], starts, axis=1)
    return (g0, g1, g2, g3), S0, S1, G0, G1, ch_neg, ch_pos, root_val


def best_labelings(g: np.ndarray, tree: ClassTree, consistent: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """argmax_y Σ_e g_e(y_e) by the two-pass DP; (labels (n, P) bool, values (n,)).  # shape: g (n, P, 4)"""
    n, P, _ = g.shape
    g = np.asarray(g, dtype=np.float64)
    _, _, _, _, _, ch_neg, ch_pos, root_val = _inside(g, tree, consistent)
    lab = np.empty((n, P), dtype=bool)
    for d, (nodes, par, _, _) in enumerate(tree.levels):  # top-down
        if d == 0:
            lab[:, nodes] = ch_pos[:, nodes]
        else:
            lab[:, nodes] = np.where(lab[:, par], ch_pos[:, nodes], ch_neg[:, nodes])
    return lab, root_val


def node_max_marginals(g: np.ndarray, tree: ClassTree, consistent: bool = True) -> np.ndarray:
    """MM_b(j) = max over labelings y with y_j = b of Σ_e g_e(y_e), shape (n, P, 2).  # shape: g (n, P, 4)

    Max-product inside-outside on the tree: the inside pass of :func:`best_labelings` gives S_b(j)
    and G_a(j); top-down, the value of everything outside subtree(j) except edge j given the
    parent's label a is O_a(j) = MM_a(pa(j)) − G_a(j) (O_1 = root value − G_1(j), O_0 = −∞ below
    the root, which is positive), and MM_b(j) = max_a [O_a(j) + g_j(a, b)] + S_b(j).  O(nP), the
    cost of one DP.  ``consistent=True`` ranges over unions of partial paths only (Sec. 5).
    """
    n, P, _ = g.shape
    g = np.asarray(g, dtype=np.float64)
    (g0, g1, g2, g3), S0, S1, G0, G1, _, _, root_val = _inside(g, tree, consistent)
    MM = np.empty((n, P, 2))
    for d, (nodes, par, _, _) in enumerate(tree.levels):  # top-down
        if d == 0:
            O0 = np.full((n, nodes.size), -np.inf)
            O1 = root_val[:, None] - G1[:, nodes]
        else:
            O0 = MM[:, par, 0] - G0[:, nodes]
            O1 = MM[:, par, 1] - G1[:, nodes]
        MM[:, nodes, 0] = np.maximum(O0 + g0[:, nodes], O1 + g2[:, nodes]) + S0[:, nodes]
        MM[:, nodes, 1] = np.maximum(O0 + g1[:, nodes], O1 + g3[:, nodes]) + S1[:, nodes]
    return MM


def labeling_scores(g: np.ndarray, Y: np.ndarray, tree: ClassTree) -> np.ndarray:
    """Σ_e g_e(y_e) for given labelings Y (n, P) bool -> (n,).  # shape: g (n, P, 4)"""
    return np.einsum("npu,npu->n", g, edge_onehot(Y, tree))


def best_single_paths(g: np.ndarray, tree: ClassTree) -> np.ndarray:
    """The class (leaf) whose root-to-leaf path, alone positive, scores highest; (n,) in 0..C-1.

    score(c) = base + Σ_{j on path(c)} δ_j with base the all-negative labeling and
    δ_j = [g_j(+,+) − g_j(+,−)] + Σ_{c' child of j} [g_c'(+,−) − g_c'(−,−)], summed along the
    paths by Φ_L (``tree.phi``).  # shape: g (n, P, 4)
    """
    hp = tree.parent >= 0
    delta = g[:, :, 3] - g[:, :, 2]
    gain = g[:, :, 2] - g[:, :, 0]  # child-edge change when its parent turns positive
    if hp.any():
        np.add.at(delta.T, tree.parent[hp], gain[:, hp].T)
    return np.argmax(tree.phi(delta), axis=1)
