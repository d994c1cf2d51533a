"""Uncertain targets in hierarchical classification: pseudo-targets (Seeger 2008, Sec. 7.4.2).

A pseudo-target ỹ_i is any node of the class tree: a leaf is a certain label; an inner node p
says "the class lies somewhere in the subtree below p", L_p being the set of its leaves (the root
stands for "any class", L_0 = L).  The likelihood factor of point i is

    P(ỹ_i | u_i) = Σ_{c ∈ L_ỹi} P(y_i = c | u_i) = Σ_{c ∈ L_ỹi} π_ic,

which is not log-concave when |L_ỹi| > 1; it is fitted by EM (:func:`gpmodels.inference.map.em.fit_em`)
with the E-step q_ic ∝ 1{c ∈ L_ỹi} π_ic implemented here.  Everything is in log space:
log P(ỹ_i | u_i) = logsumexp_{c ∈ L_ỹi} u_ic - logsumexp_c u_ic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import logsumexp

from gpmodels.errors import HierarchyError, InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.likelihoods.softmax import log_softmax

__all__ = ["PseudoTargets", "coarsen_labels"]


class PseudoTargets:
    """Pseudo-targets ỹ (one tree node per point, -1 = the root) with their leaf masks (n, C)."""

    def __init__(self, tree: ClassTree, nodes):
        if not isinstance(tree, ClassTree):
            raise HierarchyError(f"pseudo-targets need a ClassTree; got {type(tree).__name__}")
        arr = np.asarray(nodes)
        if arr.ndim != 1:
            raise InputError(f"pseudo-targets must be a 1-D array with one node per point; got shape {arr.shape}")
        if arr.size == 0:
            raise InputError("pseudo-targets must not be empty")
        if arr.dtype.kind not in "iu":
            raise InputError(
                f"pseudo-target node indices must be integers (-1 for the root, 0..{tree.n_nodes - 1} "
                f"for nodes); got dtype {arr.dtype}. Use PseudoTargets.from_names for node names"
            )
        bad = np.flatnonzero((arr < -1) | (arr >= tree.n_nodes))
        if bad.size:
            raise InputError(
                f"pseudo-target {bad[0]} is node index {int(arr[bad[0]])}; allowed: -1 (the root) or "
                f"0..{tree.n_nodes - 1} ({bad.size} such entries)"
            )
        self.tree = tree
        self.nodes = arr.astype(np.intp)
        self.nodes.setflags(write=False)
        self.mask = tree.leaf_mask(self.nodes)  # shape: (n, C), 1{c ∈ L_ỹi}
        self.mask.setflags(write=False)

    @classmethod
    def from_names(cls, tree: ClassTree, names: Sequence[str]) -> PseudoTargets:
        """From node names (leaf names, inner node names or the root's name)."""
        return cls(tree, tree.node_index(names))

    @classmethod
    def from_labels(cls, tree: ClassTree, y) -> PseudoTargets:
        """Certain targets: class indices 0..C-1 mapped to their leaves."""
        y = np.asarray(y)
        if y.ndim != 1 or y.dtype.kind not in "iu" or (y.size and (y.min() < 0 or y.max() >= tree.n_classes)):
            raise InputError(f"labels must be a 1-D integer array with values in 0..{tree.n_classes - 1}")
        return cls(tree, tree.leaves[y])

    @property
    def n_points(self) -> int:
        return int(self.nodes.size)

    @property
    def n_classes(self) -> int:
        return self.tree.n_classes

    @property
    def certain(self) -> np.ndarray:
        """(n,) True where the pseudo-target is a leaf (|L_ỹi| = 1)."""
        return self.mask.sum(axis=1) == 1

    def check_points(self, n: int) -> None:
        if self.n_points != n:
            raise InputError(
                f"there are {self.n_points} pseudo-targets but the operator has {n} points; give one per training point"
            )

    def log_likelihood(self, U) -> float:
        """Σ_i log Σ_{c ∈ L_ỹi} π_ic at latent values U (n, C)."""
        U = np.asarray(U, dtype=np.float64)
        masked = np.where(self.mask, U, -np.inf)
        return float(np.sum(logsumexp(masked, axis=1) - logsumexp(U, axis=1)))

    def e_step(self, U) -> np.ndarray:
        """q_ic ∝ 1{c ∈ L_ỹi} π_ic (Sec. 7.4.2), rows summing to 1; shape (n, C)."""
        logp = np.where(self.mask, log_softmax(np.asarray(U, dtype=np.float64)), -np.inf)
        q = np.exp(logp - logsumexp(logp, axis=1, keepdims=True))
        return q / q.sum(axis=1, keepdims=True)

    def names(self) -> list[str]:
        return [self.tree.root if p < 0 else self.tree.nodes[p] for p in self.nodes]


def coarsen_labels(tree: ClassTree, y, fraction: float, levels_up: int = 1, seed: int = 0) -> PseudoTargets:
    """Pseudo-targets from labels: a seeded random ``fraction`` of the points get, instead of their
    leaf, its ancestor ``levels_up`` levels higher (never above a child of the root, so a leaf at
    depth 1 stays certain).  For experiments with uncertain targets (Sec. 7.4.2)."""
    y = np.asarray(y)
    if not 0.0 <= fraction <= 1.0:
        raise InputError(f"fraction must lie in [0, 1]; got {fraction}")
    if int(levels_up) != levels_up or levels_up < 1:
        raise InputError(f"levels_up must be an integer >= 1; got {levels_up}")
    nodes = tree.leaves[np.asarray(y, dtype=np.intp)].copy()
    rng = np.random.default_rng(seed)
    pick = rng.permutation(y.size)[: int(round(fraction * y.size))]
    for i in pick:
        p = int(nodes[i])
        for _ in range(int(levels_up)):
            if tree.parent[p] < 0:
                break
            p = int(tree.parent[p])
        nodes[i] = p
    return PseudoTargets(tree, nodes)
