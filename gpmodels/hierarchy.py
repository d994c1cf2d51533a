"""Class hierarchies: rooted trees whose leaves are the classes (Seeger 2008, Sec. 3).

A :class:`ClassTree` is built from a networkx DiGraph, an edge list or a ``hierarchy.tsv`` file
(``parent<TAB>child`` per line) and validated: exactly one root, no cycles, every node reachable,
one parent per node, no duplicate edges or self-loops.  Node names are any strings.

Numbering follows the paper: the non-root nodes are numbered breadth first, p = 0..P-1 here
(the paper's 1..P); the classes are the leaves, c = 0..C-1, in the order given by ``classes`` (for
instance a data set's ``classes.txt``) or else in breadth-first order.  Leaves may sit at any depth.

The mixing matrix Φ (P x P, u = Φ ŭ: u_p is the sum of ŭ over the path root -> p) and its leaf rows
Φ_L (C x P) are never stored: :meth:`ClassTree.mix` applies Φ_L by walking down the tree level by
level and :meth:`ClassTree.mix_t` applies Φ_L^T by accumulating up the levels, each in O(P) per
point and vectorised over points (Sec. 3, 5.3).  Arrays carry nodes or classes on axis 1:
(n, P[, k]) <-> (n, C[, k]).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from .errors import HierarchyError

__all__ = ["ClassTree"]


class ClassTree:
    """A validated rooted tree over string node names; leaves are the classes."""

    def __init__(self, edges: Iterable[tuple[str, str]], classes: Sequence[str] | None = None):
        edges = [(str(a), str(b)) for a, b in edges]
        if not edges:
            raise HierarchyError("a hierarchy needs at least one edge")
        dup = [e for e, k in Counter(edges).items() if k > 1]
        if dup:
            raise HierarchyError(f"duplicate edge {dup[0][0]!r} -> {dup[0][1]!r} ({len(dup)} duplicated edges)")
        loops = [a for a, b in edges if a == b]
        if loops:
            raise HierarchyError(f"self-loop at node {loops[0]!r}")
        parents: dict[str, list[str]] = {}
        children: dict[str, list[str]] = {}
        for a, b in edges:
            parents.setdefault(b, []).append(a)
            children.setdefault(a, []).append(b)
            children.setdefault(b, [])
        multi = [(b, ps) for b, ps in parents.items() if len(ps) > 1]
        if multi:
            b, ps = multi[0]
            raise HierarchyError(f"not a tree: node {b!r} has {len(ps)} parents ({', '.join(map(repr, ps))})")
        roots = [v for v in children if v not in parents]
        if not roots:
            raise HierarchyError("the hierarchy has a cycle and no root (every node has a parent)")
        if len(roots) > 1:
            shown = ", ".join(map(repr, roots[:5])) + (" ..." if len(roots) > 5 else "")
            raise HierarchyError(f"the hierarchy must have exactly one root; found {len(roots)}: {shown}")
        root = roots[0]
        order, depth = [], {root: 0}
        frontier = [root]
        while frontier:
            nxt = []
            for v in frontier:
                for w in children[v]:
                    depth[w] = depth[v] + 1
                    order.append(w)
                    nxt.append(w)
            frontier = nxt
        unreached = [v for v in children if v != root and v not in depth]
        if unreached:
            raise HierarchyError(f"nodes not reachable from the root {root!r} (they lie on a cycle): "
                                 f"{', '.join(map(repr, unreached[:5]))}")
        self.root = root
        self.nodes: tuple[str, ...] = tuple(order)
        self._index = {v: p for p, v in enumerate(order)}
        self.parent = np.array([self._index.get(parents[v][0], -1) for v in order], dtype=np.intp)  # -1: root
        self.depth = np.array([depth[v] for v in order], dtype=np.intp)
        self.children: tuple[tuple[int, ...], ...] = tuple(tuple(self._index[w] for w in children[v]) for v in order)
        self.root_children = tuple(self._index[w] for w in children[root])
        leaf_nodes = [p for p, ch in enumerate(self.children) if not ch]
        if classes is None:
            self.leaves = np.array(leaf_nodes, dtype=np.intp)
        else:
            classes = [str(c) for c in classes]
            unknown = [c for c in classes if c not in self._index]
            if unknown:
                raise HierarchyError(f"class {unknown[0]!r} is not a node of the hierarchy ({len(unknown)} such classes)")
            inner = [c for c in classes if self.children[self._index[c]]]
            if inner:
                raise HierarchyError(f"class {inner[0]!r} is not a leaf of the hierarchy (it has children); classes must be leaves")
            if len(set(classes)) != len(classes):
                raise HierarchyError("the class list repeats a name")
            missing = [self.nodes[p] for p in leaf_nodes if self.nodes[p] not in set(classes)]
            if missing:
                raise HierarchyError(f"leaf {missing[0]!r} is not among the classes ({len(missing)} such leaves); "
                                     "every leaf must be a class")
            self.leaves = np.array([self._index[c] for c in classes], dtype=np.intp)
        self._leaf_of_node = np.full(len(order), -1, dtype=np.intp)
        self._leaf_of_node[self.leaves] = np.arange(self.leaves.size)
        # levels for the vectorised walks: nodes of depth d, sorted by parent, with group starts
        self._levels = []
        for d in range(1, int(self.depth.max()) + 1):
            nodes_d = np.flatnonzero(self.depth == d)
            nodes_d = nodes_d[np.argsort(self.parent[nodes_d], kind="stable")]
            par = self.parent[nodes_d]
            starts = np.flatnonzero(np.r_[True, par[1:] != par[:-1]])
            self._levels.append((nodes_d, par, starts, par[starts]))

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_networkx(cls, graph, classes: Sequence[str] | None = None) -> "ClassTree":
        """From a networkx DiGraph with edges parent -> child."""
        if not getattr(graph, "is_directed", lambda: False)():
            raise HierarchyError("the hierarchy graph must be a directed graph (networkx.DiGraph), edges parent -> child")
        isolated = [v for v in graph.nodes if graph.degree(v) == 0]
        if isolated and graph.number_of_nodes() > 1:
            raise HierarchyError(f"node {isolated[0]!r} has no edges: it is not reachable from the root")
        return cls([(str(a), str(b)) for a, b in graph.edges], classes)

    @classmethod
    def from_tsv(cls, path, classes: Sequence[str] | None = None) -> "ClassTree":
        """From a file of ``parent<TAB>child`` lines (blank lines and ``#`` comments skipped)."""
        path = Path(path)
        if not path.is_file():
            raise HierarchyError(f"hierarchy file not found: {path}")
        edges = []
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            line = line.split("#", 1)[0].rstrip("\r\n")
            if not line.strip():
                continue
            parts = line.split("\t")
            if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
                raise HierarchyError(f"{path}:{lineno}: expected 'parent<TAB>child', got {line!r}")
            edges.append((parts[0].strip(), parts[1].strip()))
        return cls(edges, classes)

    # ------------------------------------------------------------------ structure
    @property
    def n_nodes(self) -> int:
        """P, the number of non-root nodes."""
        return len(self.nodes)

    @property
    def n_classes(self) -> int:
        """C, the number of leaves (classes)."""
        return int(self.leaves.size)

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(self.nodes[p] for p in self.leaves)

    @property
    def levels(self) -> tuple:
        """Per depth d = 1, 2, ...: (nodes of depth d sorted by parent, their parents (-1: root),
        start offsets of each parent's group, the distinct parents) — for level-wise vectorised
        passes (np.add.reduceat over the groups)."""
        return tuple(self._levels)

    def index(self, name: str) -> int:
        """Node index p of a node name (the root has none)."""
        try:
            return self._index[str(name)]
        except KeyError:
            raise HierarchyError(f"{name!r} is not a node of the hierarchy") from None

    def class_of_node(self, p: int) -> int:
        """Class index of leaf node p, or -1 for an inner node."""
        return int(self._leaf_of_node[p])

    def path(self, p: int) -> list[int]:
        """Nodes from the root's child down to p (inclusive)."""
        out = []
        while p >= 0:
            out.append(int(p))
            p = int(self.parent[p])
        return out[::-1]

    def leaves_below(self, p: int) -> np.ndarray:
        """Class indices of the leaves in the subtree rooted at node p (L_p of Sec. 7.4.2)."""
        stack, out = [p], []
        while stack:
            q = stack.pop()
            if self._leaf_of_node[q] >= 0:
                out.append(self._leaf_of_node[q])
            stack.extend(self.children[q])
        return np.sort(np.array(out, dtype=np.intp))

    def phi_leaf_matrix(self) -> np.ndarray:
        """Φ_L (C x P) as a dense 0/1 matrix — for tests and small trees only."""
        M = np.zeros((self.n_classes, self.n_nodes))
        for c, p in enumerate(self.leaves):
            M[c, self.path(int(p))] = 1.0
        return M

    # ------------------------------------------------------------------ Φ_L and Φ_L^T
    def mix(self, U_nodes: np.ndarray) -> np.ndarray:
        """Φ_L applied along axis 1: (n, P[, k]) -> (n, C[, k]); u_c = Σ_{p on path(c)} ŭ_p."""
        U_nodes = np.asarray(U_nodes)
        if U_nodes.shape[1] != self.n_nodes:
            raise HierarchyError(f"mix expects {self.n_nodes} nodes on axis 1; got shape {U_nodes.shape}")
        acc = U_nodes.copy()
        for nodes_d, par, _, _ in self._levels[1:]:
            acc[:, nodes_d] += acc[:, par]
        return acc[:, self.leaves]

    def mix_t(self, E: np.ndarray) -> np.ndarray:
        """Φ_L^T applied along axis 1: (n, C[, k]) -> (n, P[, k]); ẽ_p = Σ_{leaves c below p} e_c."""
        E = np.asarray(E)
        if E.shape[1] != self.n_classes:
            raise HierarchyError(f"mix_t expects {self.n_classes} classes on axis 1; got shape {E.shape}")
        acc = np.zeros((E.shape[0], self.n_nodes) + E.shape[2:], dtype=np.result_type(E, float))
        acc[:, self.leaves] = E
        for nodes_d, par, starts, uniq in reversed(self._levels[1:]):
            acc[:, uniq] += np.add.reduceat(acc[:, nodes_d], starts, axis=1)
        return acc

    # ------------------------------------------------------------------ transformations
    def pruned(self) -> "ClassTree":
        """The tree without inner nodes that have a single child (Sec. 3, footnote 5).

        A pruned node's child takes its place under the pruned node's parent; leaves and the
        class order are kept.
        """
        keep_parent = {}
        for p, v in enumerate(self.nodes):
            q = int(self.parent[p])
            while q >= 0 and len(self.children[q]) == 1:
                q = int(self.parent[q])
            keep_parent[p] = q
        edges = []
        for p, v in enumerate(self.nodes):
            if self.children[p] and len(self.children[p]) == 1:
                continue
            q = keep_parent[p]
            edges.append((self.root if q < 0 else self.nodes[q], v))
        return ClassTree(edges, self.classes)

    def to_networkx(self):
        import networkx as nx

        G = nx.DiGraph()
        for p, v in enumerate(self.nodes):
            G.add_edge(self.root if self.parent[p] < 0 else self.nodes[self.parent[p]], v)
        return G

    def __repr__(self) -> str:
        return f"ClassTree(root={self.root!r}, P={self.n_nodes}, C={self.n_classes}, depth={int(self.depth.max())})"
