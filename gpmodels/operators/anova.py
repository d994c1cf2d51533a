"""The ANOVA class-tree prior as an operator composition: K = (Φ_L ⊗ I) K̆ (Φ_L^T ⊗ I).

Seeger 2008, Sec. 3 and 5.3.  Every non-root node p of a class tree carries an independent latent
function ŭ_p; the function of node p is u_p = Σ_{p' on the path root -> p} ŭ_{p'}, i.e.
u = (Φ ⊗ I) ŭ, and the classes are the leaves, u_c = u_{L(c)}.  With ŭ ~ N(0, K̆), K̆
block-diagonal over the P nodes (any operator with P "classes", typically a
:class:`~gpmodels.operators.blockdiag.BlockDiagonal`), the class functions have the kernel matrix

    K = (Φ_L ⊗ I) K̆ (Φ_L^T ⊗ I)                                   (Seeger 2008, eq. 2)

Φ_L (C x P, the leaf rows of Φ) is never stored: Φ_L^T and Φ_L are applied by the tree sweeps of
:class:`~gpmodels.hierarchy.ClassTree` (``phi_t``: accumulate leaves up the tree; ``phi``: add
parents down; ``mix``: both with node weights between), O(P) per point and right-hand side, compiled
over points in parallel (:mod:`gpmodels.tree_products`; without Numba, numpy level by level).  In our
(n, C) layout a latent vector's row i holds all classes of point i, so (Φ_L^T ⊗ I) acts on axis 1.

- MVM: V (n, C, k) -> Φ_L^T along axis 1 (n, P, k) -> K̆ MVM -> Φ_L along axis 1 (n, C, k).
  Merged GEMMs: when K̆ is block-diagonal with nodes sharing a kernel matrix M_r over a node
  group G_r (``K̆.kernel_groups()``, e.g. a :class:`BlockDiagonal`), that group contributes
  (Φ_L D_r Φ_L^T) ⊗ M_r with D_r = diag(v_p 1{p in G_r}), i.e. M_r (V S_r) with the C x C
  matrix S_r = Φ_L D_r Φ_L^T applied by the tree sweeps (``tree.mix``: per point in a (P, k)
  scratch block, so a vector's MVM holds V, S_r V and the GEMM's output: about 3 n C k numbers).
  The GEMM with M_r then runs on C k columns instead of |G_r| k, so with one shared M (any variance
  sharing) the hierarchical MVM costs one flat GEMM plus O(nP) sweeps, below the P/C of Sec. 3.
  ``merge_gemm=False`` keeps the node-space order (the paper's three steps).  For C <= 64 the
  C x C matrix S_r itself (not Φ) is kept and V S_r is one stacked product S_r v_i instead of the
  walks (numpy's stacked matmul runs in one thread: a multithreaded BLAS call of this size costs
  more in thread wake-up and spinning than it computes, measurably so on a loaded machine).
- diag (Sec. 5.3): K_ic,ic = Σ_{p on path(L(c))} K̆_ip,ip when K̆ is block-diagonal, i.e. the
  recursion d_child = d_parent + K̆^(child)_i down the tree = ``phi`` of diag K̆.
- Per-point blocks (App. B): K_i = Φ_L K̆_i Φ_L^T, so K_i p_i = Φ_L (K̆_i (Φ_L^T p_i)); for a
  block-diagonal K̆ this is Φ_L (diag K̆_i ∘ Φ_L^T p_i), O(P) per point.
- Gradient (Sec. 5.3): Φ does not depend on hyperparameters, so
  tr E^T (dK) F = tr Ẽ^T (dK̆) F̃ with Ẽ = (Φ_L^T ⊗ I) E, F̃ = (Φ_L^T ⊗ I) F.
- restrict wraps the inner operator's; the cross blocks K_{I,J} and K_{*,X} are the three steps
  over the inner operator's blocks (the merged GEMMs are a square-only form of the same matrix).

Hyperparameters are those of K̆ (variances and kernel shapes per node group; the sharing modes
are set up by :class:`gpmodels.priors.ANOVAPrior`), optionally under more descriptive names.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

import numpy as np

from gpmodels.errors import HierarchyError, InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.kernels.representation_base import shared_arrays
from gpmodels.linalg.arrays import HOST, Made
from gpmodels.operators.base import Composite, Operator

__all__ = ["ANOVA", "DENSE_CLASS_MIX_MAX_C"]

#: up to this many classes the merged MVM multiplies by the C x C class matrices S_r = Φ_L D_r Φ_L^T
#: (O(n C^2) per column, one BLAS call) instead of walking the tree (O(n P) in many small steps).
DENSE_CLASS_MIX_MAX_C = 64


class ANOVA(Composite):
    """K = (Φ_L ⊗ I) K̆ (Φ_L^T ⊗ I) over a :class:`ClassTree`; see the module docstring.

    ``inner`` is the node operator K̆ with ``inner.n_classes == tree.n_nodes`` (P); ``names``
    optionally renames the inner hyperparameters (same length as ``inner.param_names``).
    """

    def __init__(
        self, inner: Operator, tree: ClassTree, names: Sequence[str] | None = None, *, merge_gemm: bool = True
    ):
        if not isinstance(tree, ClassTree):
            raise HierarchyError(f"ANOVA needs a ClassTree; got {type(tree).__name__}")
        if not isinstance(inner, Operator):
            raise InputError(f"ANOVA needs an Operator over the tree nodes as its inner K̆; got {type(inner).__name__}")
        if inner.n_classes != tree.n_nodes:
            raise InputError(
                f"the inner operator K̆ must have one block per non-root node: the tree has "
                f"{tree.n_nodes} nodes but K̆ has {inner.n_classes} blocks"
            )
        if names is not None:
            names = tuple(str(v) for v in names)
            if len(names) != inner.params.size:
                raise InputError(
                    f"names must give one name per inner hyperparameter ({inner.params.size}); got {len(names)}"
                )
        self.inner = inner
        self.tree = tree
        self._names = names
        self.merge_gemm = bool(merge_gemm)
        self._merged = None
        self._mixes = Made()  # the S_r on the arrays of each ops (HOST, a device)
        groups = inner.kernel_groups() if self.merge_gemm else None
        if groups is not None:
            C = tree.n_classes
            plan = []
            for rep, weights in groups:
                nodes = np.flatnonzero(weights)
                S = None
                if nodes.size >= C and C <= DENSE_CLASS_MIX_MAX_C:  # S_r = Φ_L D_r Φ_L^T by two tree walks
                    S = tree.phi(tree.phi(np.diag(weights)).T)
                plan.append((rep, nodes, weights, nodes.size >= C, S))
            self._merged = plan
            self._needs_walk = any(S is None for *_, S in plan)
        # a tree of depth 1 has Φ_L = a permutation onto the leaves: K stays class-diagonal
        self.is_class_diagonal = bool(inner.is_class_diagonal and tree.max_depth == 1)

    # ------------------------------------------------------------------ protocol
    n_points = property(attrgetter("inner.n_points"))
    n_classes = property(attrgetter("tree.n_classes"))
    n_nodes = property(attrgetter("tree.n_nodes"))

    def _parts(self):
        return (self.inner,)

    def _compose(self, ops, maps, V):
        # the paper's three steps, for K and its blocks alike; shape: (n, C, k) -> (n, P, k) -> (n, P, k) -> (n, C, k)
        return self.tree.phi(maps[0](self.tree.phi_t(V)))

    @property
    def arrays(self):
        """The primitives of the device every merged GEMM's matrix lives on, when they share one and need no tree
        walk; else the host's."""
        if self._merged is None or self._needs_walk:
            return HOST
        return shared_arrays([rep for rep, *_ in self._merged])

    def _mvm(self, V):
        if self._merged is None:
            return super()._mvm(V)
        ops = self.arrays  # on a device V crosses there once and the sum back once, not once per GEMM
        return ops.to_host(self._merged_product(ops, ops.from_host(V)))

    def _product(self, ops, V):  # a device backend is declared only for the merged GEMMs
        return self._merged_product(ops, V)

    def _class_matrices(self, ops) -> list:
        """Each group's S_r prepared for ``ops.mix_classes`` (None where the group walks the tree or works in node
        space), made once per ``ops``."""
        return self._mixes.get(ops, lambda: [None if S is None else ops.class_matrix(S) for *_, S in self._merged])

    def _merged_product(self, ops, V):
        """Σ_r M_r (V S_r) for class-space groups, Φ_L (D_r M_r (Φ_L^T V)_{G_r}) for the others; V (n, C[, k]) on
        the arrays of ``ops``.  The tree walks and node-space groups run on the host: a device is declared
        only where every group is class-space with its S_r."""
        n, C = V.shape[:2]
        node_space = any(not class_space for _, _, _, class_space, _ in self._merged)
        Vt = self.tree.phi_t(V) if node_space else None  # shape: (n, P, k)
        out = None
        node_part = None
        for (rep, nodes, weights, class_space, S), S_ops in zip(self._merged, self._class_matrices(ops)):
            if class_space:  # GEMM on C k columns: M_r (Φ_L D_r Φ_L^T V)
                if S is None:  # both tree sweeps per point, no (n, P, k) intermediate
                    W = np.ascontiguousarray(self.tree.mix(V, weights)).reshape(n, -1)
                else:  # (V S)_i = S v_i per point and column, flattened to (n, C k)
                    W = ops.mix_classes(V, S_ops)
                res = ops.product(rep)(W)
                if out is None:
                    out = res
                else:
                    out += res
            else:  # GEMM on |G_r| k columns in node space
                k = V.shape[2]
                if node_part is None:
                    node_part = np.zeros_like(Vt)
                res = rep.mvm(np.ascontiguousarray(Vt[:, nodes, :]).reshape(n, nodes.size * k))
                node_part[:, nodes, :] = res.reshape(n, nodes.size, k) * weights[nodes][None, :, None]
        if out is not None and V.ndim == 3:
            out = ops.xp.reshape(out, tuple(V.shape))
        if node_part is not None:
            mixed = self.tree.phi(node_part)
            out = mixed if out is None else out + mixed
        return out

    def _diag(self):
        if self.inner.is_class_diagonal:
            return self.tree.phi(self.inner._diag())  # Seeger 2008, Sec. 5.3 recursion
        return self._diag_from_blocks()

    def _diag_from_blocks(self):
        return np.einsum("icc->ic", self._point_blocks())

    def _point_block_mvm(self, P):
        # K_i p_i = Φ_L K̆_i Φ_L^T p_i (App. B); shape: P (n, C)
        return self.tree.phi(self.inner._point_block_mvm(self.tree.phi_t(P)))

    def _kron_terms(self):
        # (Φ_L ⊗ I)(M ⊗ S̆)(Φ_L^T ⊗ I) = M ⊗ Φ_L S̆ Φ_L^T, S̆ mixed on both sides by tree walks
        inner = self.inner._kron_terms()
        if inner is None:
            return None
        return [t.with_S(self.tree.phi(self.tree.phi(t.S).T)) for t in inner]

    @property
    def params(self) -> np.ndarray:
        return self.inner.params

    @property
    def param_names(self) -> tuple[str, ...]:
        return self._names if self._names is not None else self.inner.param_names

    @property
    def param_bounds(self) -> np.ndarray:
        return self.inner.param_bounds

    def with_params(self, theta) -> ANOVA:
        return ANOVA(self.inner.with_params(theta), self.tree, self._names, merge_gemm=self.merge_gemm)

    def _grad_trace(self, E, F):
        # Seeger 2008, Sec. 5.3: tr Ẽ^T (dK̆) F̃ with Ẽ = (Φ_L^T ⊗ I) E, F̃ = (Φ_L^T ⊗ I) F
        Et = np.ascontiguousarray(self.tree.phi_t(E))
        Ft = np.ascontiguousarray(self.tree.phi_t(F))
        return self.inner._grad_trace(Et, Ft)

    def _restrict(self, J):
        return ANOVA(self.inner._restrict(J), self.tree, self._names, merge_gemm=self.merge_gemm)

    def _test_point_blocks(self, X_new):
        # K_** = Φ_L K̆_** Φ_L^T per new point: two tree walks over the (m, P, P) node blocks
        inner = self.inner._test_point_blocks(X_new)  # shape: (m, P, P)
        left = self.tree.phi(inner)  # shape: (m, C, P)
        return np.ascontiguousarray(np.swapaxes(self.tree.phi(np.swapaxes(left, 1, 2)), 1, 2))

    def _dense(self):
        n, C, P = self.n_points, self.n_classes, self.n_nodes
        inner = self.inner._dense().reshape(n, P, n, P)
        # K[i c, j d] = Σ_{p, q} Φ_L[c, p] K̆[i p, j q] Φ_L[d, q], by two tree walks
        left = self.tree.phi(inner.reshape(n, P, n * P))  # (n, C, n P)
        left = left.reshape(n, C, n, P).transpose(2, 3, 0, 1).reshape(n, P, n * C)
        out = self.tree.phi(left).reshape(n, C, n, C).transpose(2, 3, 0, 1)
        return np.ascontiguousarray(out).reshape(n * C, n * C)

    def class_block(self, c: int) -> np.ndarray:
        """K_{.c,.c} = Σ_{p, q on path(L(c))} K̆_{.p,.q}; for a block-diagonal K̆ the sum over p = q."""
        if not 0 <= c < self.n_classes:
            raise InputError(f"class index must be in 0..{self.n_classes - 1}; got {c}")
        path = self.tree.path(int(self.tree.leaves[c]))
        if self.inner.is_class_diagonal:
            return sum(self.inner.class_block(p) for p in path)
        return super().class_block(c)

    def __repr__(self) -> str:
        return f"ANOVA({self.inner!r}, {self.tree!r})"
