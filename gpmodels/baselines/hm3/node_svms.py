"""Per-node binary SVM baselines of Rousu et al. (2006), Table 2: "SVM" and "H-SVM".

- ``flat`` (SVM): one binary SVM per node, trained on all examples with the node's microlabel;
- ``hierarchical`` (H-SVM): the SVM of node j is trained only on the examples whose parent of j is
  positive (all examples for the top-level nodes).
Both predict each node's microlabel and then make the multilabel consistent top-down (Sec. 5,
"Obtaining consistent labelings"): visiting the tree breadth first, a node predicted negative
makes all of its descendants negative.

The binary SVM is the Crammer–Singer machine with k = 2 (:mod:`gpmodels.baselines.crammer_singer`): with M_2 = −M_1
at the optimum and w = M_1 − M_2, (7) becomes ¼β||w||² + Σ_i ξ_i, i.e. the soft-margin SVM
½||w||² + C Σ_i ξ_i for β = 2/C.  A bias is obtained as the paper suggests (Sec. 3): the kernel
K + 1 (``intercept=True``), which regularises the bias like a weight.  The Gram matrices on the
training set (m x m) and between test and training set are computed once and shared by all nodes.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from gpmodels.baselines.crammer_singer.solver import CSOptions, fit_crammer_singer
from gpmodels.errors import InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.kernels.base import Kernel
from gpmodels.scoring.multilabel import check_multilabels
from gpmodels.validation import check_features

__all__ = ["NodeSVMs", "fit_node_svms", "top_down_consistent", "NODE_SVM_MODES"]

NODE_SVM_MODES = ("flat", "hierarchical")


def top_down_consistent(U: np.ndarray, tree: ClassTree) -> np.ndarray:
    """Breadth first, a negative node makes its descendants negative; (n, P) bool -> (n, P) bool."""
    U = np.array(U, dtype=bool)
    for d, (nodes, par, _, _) in enumerate(tree.levels):
        if d > 0:
            U[:, nodes] &= U[:, par]
    return U


@attrs.define
class NodeSVMs:
    """Fitted per-node SVMs: for node j, (training indices, support indices, τ of the positive class)."""

    kernel: Kernel
    X_train: object
    tree: ClassTree
    mode: str
    beta: float
    intercept: bool
    nodes: list  # per node: None (constant) or (support indices into X_train, coefficients)
    constants: np.ndarray  # per node: the constant prediction where no SVM was fitted
    seconds: float
    updates: int

    def decision_function(self, X_new) -> np.ndarray:
        """Per-node scores w_j·φ(x) (+ bias), (n, P); +inf/-inf for constant nodes."""
        X_new = check_features("X_new", X_new)
        K = np.asarray(self.kernel.gram(X_new, self.X_train), dtype=np.float64)
        if self.intercept:
            K = K + 1.0
        out = np.empty((K.shape[0], self.tree.n_nodes))
        for j, fit in enumerate(self.nodes):
            if fit is None:
                out[:, j] = np.inf if self.constants[j] else -np.inf
            else:
                sv, coef = fit
                out[:, j] = K[:, sv] @ coef
        return out

    def predict(self, X_new) -> np.ndarray:
        """Microlabels by sign, made consistent top-down, (n, P) bool."""
        return top_down_consistent(self.decision_function(X_new) > 0.0, self.tree)


def fit_node_svms(
    kernel: Kernel,
    X,
    Y,
    tree: ClassTree,
    *,
    C: float = 1.0,
    mode: str = "flat",
    intercept: bool = True,
    epsilon: float = 1e-3,
) -> NodeSVMs:
    """Train one binary SVM per node (module docstring).  # shape: X (m, d), Y (m, P)"""
    if mode not in NODE_SVM_MODES:
        raise InputError(f"mode must be one of {NODE_SVM_MODES}; got {mode!r}")
    if not (np.isfinite(C) and C > 0):
        raise InputError(f"C must be a positive number; got {C!r}")
    X = check_features("X", X, allow_sparse=kernel.supports_sparse)
    Y = check_multilabels(Y, tree)
    if Y.shape[0] != X.shape[0]:
        raise InputError(f"Dimension mismatch: Y has {Y.shape[0]} rows but X has {X.shape[0]}")
    t0 = time.perf_counter()
    G = np.asarray(kernel.gram(X, X), dtype=np.float64)
    if intercept:
        G += 1.0
    beta = 2.0 / C
    opts = CSOptions(beta=beta, epsilon=epsilon, cache_mb=0.0)
    fits, const, updates = [], np.zeros(tree.n_nodes, dtype=bool), 0
    everyone = np.arange(X.shape[0])
    for j in range(tree.n_nodes):
        q = int(tree.parent[j])
        rows = everyone if (mode == "flat" or q < 0) else np.flatnonzero(Y[:, q])
        y = Y[rows, j].astype(np.intp)
        if rows.size == 0 or y.min() == y.max():
            fits.append(None)
            const[j] = bool(rows.size and y[0] == 1)
            continue
        Gj = G if rows.size == G.shape[0] else G[np.ix_(rows, rows)]
        model = fit_crammer_singer(None, None, y, opts, n_classes=2, gram=Gj)
        updates += model.result.updates
        # score of the positive class minus the negative one: f_1 − f_0 = β^{-1} Σ_i (τ_i1 − τ_i0) K(x, x_i)
        coef = (model.tau_support_[:, 1] - model.tau_support_[:, 0]) / beta
        fits.append((rows[model.support_], coef))
    return NodeSVMs(kernel, X, tree, mode, beta, intercept, fits, const, time.perf_counter() - t0, updates)
