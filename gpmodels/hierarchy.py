"""Class hierarchies: rooted trees whose leaves are the classes (Seeger 2008, Sec. 3).

A :class:`ClassTree` is built from a networkx DiGraph (read as it is: networkx is no dependency), an edge
list or a ``hierarchy.tsv`` file (``parent<TAB>child`` per line) and validated: exactly one root, no
cycles, every node reachable, one parent per node, no duplicate edges or self-loops.  Node names are any
strings.

Numbering follows the paper: the non-root nodes are numbered breadth first, p = 0..P-1 here
(the paper's 1..P); the classes are the leaves, c = 0..C-1, in the order given by ``classes`` (for
instance a data set's ``classes.txt``) or else in breadth-first order.  Leaves may sit at any depth.

The mixing matrix Φ (P x P, u = Φ ŭ: u_p is the sum of ŭ over the path root -> p) and its leaf rows
Φ_L (C x P) are never stored: :meth:`ClassTree.phi` applies Φ_L by walking down the tree level by
level and :meth:`ClassTree.phi_t` applies Φ_L^T by accumulating up the levels, each in O(P) per
point and vectorised over points (Sec. 3, 5.3).  Arrays carry nodes or classes on axis 1:
(n, P[, k]) <-> (n, C[, k]).

Paths and scores (Sec. 6.1): :meth:`ClassTree.lca`, :meth:`ClassTree.path_length`, the taxo-loss
matrix Δ(c, c') = half the path length between leaves L(c), L(c') (:meth:`ClassTree.taxo_matrix`),
the parents of the leaves (parent accuracy) and the ancestors at a given depth (per-level
summaries).  Sharing groups of hyperparameters over nodes or classes (Sec. 6.1: tied, per level,
per subtree rooted at a child of the root, per node) come from :meth:`ClassTree.node_groups` and
:meth:`ClassTree.class_groups`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from gpmodels import tree_products
from gpmodels.errors import DataError, HierarchyError, OptionalDependencyError
from gpmodels.numerals import decode_text

__all__ = ["ClassTree", "TREE_SHARING"]

_SPACE = " \t\r\f\v"  # ASCII white space: the only white space stripped from a name

#: sharing modes of hyperparameters over tree nodes (Seeger 2008, Sec. 6.1: F1/H1 tied or per
#: level, F2/H2 per subtree rooted at a child of the root, or one per node).
TREE_SHARING = ("tied", "level", "subtree", "node")


def _parent_map(edges: list[tuple[str, str]]) -> dict[str, str]:
    """child -> parent of an edge list that has edges, no duplicate edge, no self-loop and one parent per node."""
    if not edges:
        raise HierarchyError("a hierarchy needs at least one edge")
    if len(set(edges)) != len(edges):
        dup = [e for e, k in Counter(edges).items() if k > 1]
        raise HierarchyError(f"duplicate edge {dup[0][0]!r} -> {dup[0][1]!r} ({len(dup)} duplicated edges)")
    loops = [a for a, b in edges if a == b]
    if loops:
        raise HierarchyError(f"self-loop at node {loops[0]!r}")
    parent_of = dict(zip([b for _, b in edges], [a for a, _ in edges]))
    if len(parent_of) != len(edges):  # some node is the child of two edges
        parents: dict[str, list[str]] = {}
        for a, b in edges:
            parents.setdefault(b, []).append(a)
        b, ps = next((b, ps) for b, ps in parents.items() if len(ps) > 1)
        raise HierarchyError(f"not a tree: node {b!r} has {len(ps)} parents ({', '.join(map(repr, ps))})")
    return parent_of


def _single_root(names, parent_of: dict[str, str]) -> str:
    """The one node without a parent; HierarchyError for none (a cycle) or several."""
    roots = [v for v in names if v not in parent_of]
    if not roots:
        raise HierarchyError("the hierarchy has a cycle and no root (every node has a parent)")
    if len(roots) > 1:
        shown = ", ".join(map(repr, roots[:5])) + (" ..." if len(roots) > 5 else "")
        raise HierarchyError(f"the hierarchy must have exactly one root; found {len(roots)}: {shown}")
    return roots[0]


def _breadth_first(root: str, children: dict[str, list[str]]) -> tuple[list[str], dict[str, int]]:
    """The non-root nodes reachable from ``root`` in breadth-first order, and the depth of every reached node."""
    order, depth = [root], {root: 0}  # a FIFO walk over one growing list
    i = 0
    while i < len(order):
        v = order[i]
        i += 1
        ch = children.get(v)
        if ch:
            d = depth[v] + 1
            for w in ch:
                depth[w] = d
            order.extend(ch)
    return order[1:], depth


class ClassTree:
    """A validated rooted tree over string node names; leaves are the classes."""

    def __init__(self, edges: Iterable[tuple[str, str]], classes: Sequence[str] | None = None):
        edges = [(str(a), str(b)) for a, b in edges]
        parent_of = _parent_map(edges)
        children: dict[str, list[str]] = {}
        for a, b in edges:
            children.setdefault(a, []).append(b)
        names = dict.fromkeys(v for e in edges for v in e)  # first appearance order
        root = _single_root(names, parent_of)
        order, depth = _breadth_first(root, children)
        unreached = [v for v in names if v != root and v not in depth]
        if unreached:
            raise HierarchyError(
                f"nodes not reachable from the root {root!r} (they lie on a cycle): "
                f"{', '.join(map(repr, unreached[:5]))}"
            )
        self.root = root
        self.nodes: tuple[str, ...] = tuple(order)
        self._index = {v: p for p, v in enumerate(order)}
        self.parent = np.array([self._index.get(parent_of[v], -1) for v in order], dtype=np.intp)  # -1: root
        self.depth = np.array([depth[v] for v in order], dtype=np.intp)
        index = self._index
        self.children: tuple[tuple[int, ...], ...] = tuple(
            tuple([index[w] for w in children[v]]) if v in children else () for v in order
        )
        self.root_children = tuple(index[w] for w in children[root])
        self.leaves = self._leaves_for(classes)
        self._leaf_of_node = np.full(len(order), -1, dtype=np.intp)
        self._leaf_of_node[self.leaves] = np.arange(self.leaves.size)
        self._level_cache = None  # built on first use by the level-wise walks (:attr:`levels`)
        self._path_classes: dict | None = None  # label path -> class, for trees built by from_paths

    def _leaves_for(self, classes: Sequence[str] | None) -> np.ndarray:
        """Node indices of the classes: every leaf in tree order, or ``classes`` checked to be exactly the leaves."""
        leaf_nodes = [p for p, ch in enumerate(self.children) if not ch]
        if classes is None:
            return np.array(leaf_nodes, dtype=np.intp)
        classes = [str(c) for c in classes]
        unknown = [c for c in classes if c not in self._index]
        if unknown:
            raise HierarchyError(f"class {unknown[0]!r} is not a node of the hierarchy ({len(unknown)} such classes)")
        inner = [c for c in classes if self.children[self._index[c]]]
        if inner:
            raise HierarchyError(
                f"class {inner[0]!r} is not a leaf of the hierarchy (it has children); classes must be leaves"
            )
        if len(set(classes)) != len(classes):
            raise HierarchyError("the class list repeats a name")
        missing = [self.nodes[p] for p in leaf_nodes if self.nodes[p] not in set(classes)]
        if missing:
            raise HierarchyError(
                f"leaf {missing[0]!r} is not among the classes ({len(missing)} such leaves); every leaf must be a class"
            )
        return np.array([self._index[c] for c in classes], dtype=np.intp)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_networkx(cls, graph, classes: Sequence[str] | None = None) -> ClassTree:
        """From a networkx DiGraph with edges parent -> child."""
        if not getattr(graph, "is_directed", lambda: False)():
            raise HierarchyError(
                "the hierarchy graph must be a directed graph (networkx.DiGraph), edges parent -> child"
            )
        isolated = [v for v in graph.nodes if graph.degree(v) == 0]
        if isolated and graph.number_of_nodes() > 1:
            raise HierarchyError(f"node {isolated[0]!r} has no edges: it is not reachable from the root")
        return cls([(str(a), str(b)) for a, b in graph.edges], classes)

    @classmethod
    def from_tsv(cls, path, classes: Sequence[str] | None = None) -> ClassTree:
        """From a file of ``parent<TAB>child`` lines (blank lines and ``#`` comments skipped): UTF-8 (a
        byte-order mark stripped, UTF-16 refused; :func:`gpmodels.numerals.decode_text`), lines split at
        ``\n`` only, names stripped of ASCII spaces only (a name is matched to a class name exactly)."""
        path = Path(path)
        if not path.is_file():
            raise HierarchyError(f"hierarchy file not found: {path}")
        try:
            text = decode_text(path.read_bytes(), path, "a hierarchy file of 'parent<TAB>child' lines")
        except DataError as exc:
            raise HierarchyError(str(exc)) from None
        edges = []
        for lineno, line in enumerate(text.split("\n"), start=1):
            line = line.split("#", 1)[0].rstrip("\r")
            if not line.strip(_SPACE):
                continue
            parts = [p.strip(_SPACE) for p in line.split("\t")]
            if len(parts) != 2 or not parts[0] or not parts[1]:  # (the line is never quoted)
                raise HierarchyError(
                    f"{path}:{lineno}: expected 'parent<TAB>child' (two names separated by one "
                    f"tab); the line has {len(parts) - 1} tabs and {len(line)} characters"
                )
            edges.append((parts[0], parts[1]))
        return cls(edges, classes)

    @classmethod
    def from_paths(
        cls,
        paths: Iterable[Sequence[str]],
        *,
        root: str = "root",
        separator: str | None = None,
    ) -> ClassTree:
        """From label paths, HiClass's format: one sequence of labels per example, from the top level down
        to its class, e.g. ``["Animal", "Mammal", "Cat"]``; trailing empty labels ("" or None) pad shorter
        paths and are dropped.  Every prefix of a path is a node under the implicit ``root``; the last
        label of each path is its class, and the classes are the leaves, in sorted order of their paths.

        Node names are the labels themselves, so a label must not occur under two parents; with
        ``separator`` (e.g. "/") every node is named by its whole path instead ("Animal/Mammal/Cat"), which
        allows repeated labels.  Refused, with the path named: an empty path, an empty label followed by a
        non-empty one, a path that ends at an inner node of another path (classes must be leaves), a
        label equal to ``root``.  Map paths to class indices with :meth:`classes_of_paths`.
        """
        prefixes = [_path_tuple(q, i) for i, q in enumerate(paths)]
        if not prefixes:
            raise HierarchyError("from_paths needs at least one label path")
        name = (lambda t: separator.join(t)) if separator is not None else (lambda t: t[-1])
        nodes: dict[tuple[str, ...], str] = {}
        owner: dict[str, tuple[str, ...]] = {}
        for t in sorted(set(prefixes)):
            for k in range(1, len(t) + 1):
                pre = t[:k]
                if pre in nodes:
                    continue
                v = name(pre)
                if v == root:
                    raise HierarchyError(
                        f"label path {list(t)} uses the root's name {root!r} as a label; pass another root="
                    )
                if v in owner:
                    raise HierarchyError(
                        f"label {v!r} occurs under two parents ({' > '.join(owner[v][:-1]) or root!r} and "
                        f"{' > '.join(pre[:-1]) or root!r}); node names must be unique in a class tree: rename "
                        "one, or pass separator='/' to name every node by its whole path"
                    )
                nodes[pre], owner[v] = v, pre
        leaves = sorted(set(prefixes))
        proper = {t[:k] for t in leaves for k in range(1, len(t))}
        inner = next((t for t in leaves if t in proper), None)
        if inner is not None:
            raise HierarchyError(
                f"label path {list(inner)} ends at an inner node (other paths continue below "
                f"{inner[-1]!r}); each path must end at a leaf, its class"
            )
        edges = [(nodes[pre[:-1]] if len(pre) > 1 else root, v) for pre, v in nodes.items()]
        tree = cls(edges, [nodes[t] for t in leaves])
        tree._path_classes = {t: c for c, t in enumerate(leaves)}
        return tree

    def classes_of_paths(self, paths: Iterable[Sequence[str]]) -> np.ndarray:
        """(n,) class index of each label path (the format of :meth:`from_paths`); the tree must have been
        built by :meth:`from_paths`.  An unknown path is refused with its position."""
        table = getattr(self, "_path_classes", None)
        if table is None:
            raise HierarchyError("classes_of_paths needs a tree built by ClassTree.from_paths")
        out = []
        for i, q in enumerate(paths):
            t = _path_tuple(q, i)
            if t not in table:
                raise HierarchyError(
                    f"label path {i} {list(t)} is not a class of the tree (its classes are the "
                    f"{len(table)} paths it was built from)"
                )
            out.append(table[t])
        return np.array(out, dtype=np.intp)

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

    def __getstate__(self) -> dict:
        """Pickled (and hashed, copied) without the level cache: a tree that was walked equals a fresh one."""
        state = self.__dict__.copy()
        state["_level_cache"] = None
        return state

    @property
    def _levels(self) -> list:
        """Nodes of depth d sorted by parent, with group starts, for d = 1..max_depth (see :attr:`levels`):
        one sort by (depth, parent) and slices of it, linear in P up to the sort whatever the depth."""
        if self._level_cache is None:
            by_level = np.lexsort((self.parent, self.depth))
            dep, par = self.depth[by_level], self.parent[by_level]
            bounds = np.searchsorted(dep, np.arange(1, int(dep[-1]) + 2))
            new_group = np.ones(by_level.size, dtype=bool)
            new_group[1:] = (par[1:] != par[:-1]) | (dep[1:] != dep[:-1])
            group_starts = np.flatnonzero(new_group)
            group_bounds = np.searchsorted(group_starts, bounds)
            levels = []
            for a, b, ga, gb in zip(bounds[:-1], bounds[1:], group_bounds[:-1], group_bounds[1:]):
                starts = group_starts[ga:gb]
                levels.append((by_level[a:b], par[a:b], starts - a, par[starts]))
            self._level_cache = levels
        return self._level_cache

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
            c = self.class_of_node(q)
            if c >= 0:
                out.append(c)
            stack.extend(self.children[q])
        return np.sort(np.array(out, dtype=np.intp))

    def phi_leaf_matrix(self) -> np.ndarray:
        """Φ_L (C x P) as a dense 0/1 matrix — for tests and small trees only."""
        M = np.zeros((self.n_classes, self.n_nodes))
        for c, p in enumerate(self.leaves):
            M[c, self.path(int(p))] = 1.0
        return M

    # ------------------------------------------------------------------ Φ_L and Φ_L^T
    def phi(self, U_nodes: np.ndarray) -> np.ndarray:
        """Φ_L applied along axis 1: (n, P[, k]) -> (n, C[, k]); u_c = Σ_{p on path(c)} ŭ_p, by adding
        parents down the tree (Seeger 2008, Sec. 3: u = (Φ_L ⊗ I) ŭ): compiled, one sweep per point
        (:mod:`gpmodels.tree_products`), or without Numba level by level."""
        U_nodes = np.asarray(U_nodes)
        if U_nodes.shape[1] != self.n_nodes:
            raise HierarchyError(f"phi expects {self.n_nodes} nodes on axis 1; got shape {U_nodes.shape}")
        if _compiled_sweep(U_nodes):
            return tree_products.phi_rows(U_nodes, self.parent, self.leaves)
        acc = U_nodes.copy()
        for nodes_d, par, _, _ in self._levels[1:]:
            acc[:, nodes_d] += acc[:, par]
        return acc[:, self.leaves]

    def phi_t(self, E: np.ndarray) -> np.ndarray:
        """Φ_L^T applied along axis 1: (n, C[, k]) -> (n, P[, k]); ẽ_p = Σ_{leaves c below p} e_c, by
        accumulating the leaves up the tree (compiled, or without Numba level by level)."""
        E = np.asarray(E)
        if E.shape[1] != self.n_classes:
            raise HierarchyError(f"phi_t expects {self.n_classes} classes on axis 1; got shape {E.shape}")
        if _compiled_sweep(E):
            return tree_products.phi_t_rows(E, self.parent, self.leaves)
        acc = np.zeros((E.shape[0], self.n_nodes) + E.shape[2:], dtype=np.result_type(E, float))
        acc[:, self.leaves] = E
        for nodes_d, _par, starts, uniq in reversed(self._levels[1:]):
            acc[:, uniq] += np.add.reduceat(acc[:, nodes_d], starts, axis=1)
        return acc

    def mix(self, V: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Φ_L diag(weights) Φ_L^T along axis 1: (n, C[, k]) -> (n, C[, k]), the class mixing of the node
        weights (P,) (a merged ANOVA product, Sec. 3); compiled without an (n, P, k) intermediate."""
        V = np.asarray(V)
        if _compiled_sweep(V) and V.shape[1] == self.n_classes:
            return tree_products.mix_rows(V, self.parent, self.leaves, weights)
        Vt = self.phi_t(V)
        return self.phi(Vt * np.reshape(weights, (1, -1) + (1,) * (Vt.ndim - 2)))

    # ------------------------------------------------------------------ paths and scores
    def lca(self, p: int, q: int) -> int:
        """Lowest common ancestor of nodes p and q (p itself when q is below p); -1 for the root."""
        a, b = int(p), int(q)
        if not (0 <= a < self.n_nodes and 0 <= b < self.n_nodes):
            raise HierarchyError(f"node indices must lie in 0..{self.n_nodes - 1}; got {p} and {q}")
        while self.depth[a] > self.depth[b]:
            a = int(self.parent[a])
        while self.depth[b] > self.depth[a]:
            b = int(self.parent[b])
        while a != b:
            a, b = int(self.parent[a]), int(self.parent[b])
        return a

    def path_length(self, p: int, q: int) -> int:
        """Number of edges on the shortest path between nodes p and q (the root is node -1)."""
        dp = 0 if p < 0 else int(self.depth[p])
        dq = 0 if q < 0 else int(self.depth[q])
        if p < 0 or q < 0:
            return dp + dq
        r = self.lca(p, q)
        return dp + dq - 2 * (0 if r < 0 else int(self.depth[r]))

    def lca_depth_matrix(self) -> np.ndarray:
        """(C, C) depth of the lowest common ancestor of two leaves (0: the root).

        The number of non-root nodes shared by the paths of L(c), L(c') is (Φ_L Φ_L^T)_{cc'}; it is
        computed by the tree walks as Φ_L (Φ_L^T I) without forming Φ_L.
        """
        C = self.n_classes
        return np.rint(self.phi(self.phi_t(np.eye(C)))).astype(np.intp)

    def taxo_matrix(self) -> np.ndarray:
        """(C, C) taxo-loss Δ(c, c'): half the length of the shortest path between the leaves
        L(c) and L(c') (Seeger 2008, Sec. 6.1; Cai & Hofmann 2004)."""
        d = self.depth[self.leaves].astype(float)
        return 0.5 * (d[:, None] + d[None, :] - 2.0 * self.lca_depth_matrix())

    @property
    def class_parents(self) -> np.ndarray:
        """(C,) parent node of each leaf L(c); -1 where the parent is the root (parent accuracy)."""
        return self.parent[self.leaves].copy()

    def ancestors_at_depth(self, d: int) -> np.ndarray:
        """(P,) the ancestor at depth d of every node; a node of depth <= d maps to itself."""
        if d < 1:
            raise HierarchyError(f"depth must be >= 1 (the root's children); got {d}")
        out = np.arange(self.n_nodes)
        for nodes_e, par, _, _ in self._levels[int(d) :]:  # depths d+1, d+2, ...: parents are final first
            out[nodes_e] = out[par]
        return out

    def leaf_ancestors_by_depth(self) -> list[np.ndarray]:
        """[(C,) the ancestor at depth d of every leaf, for d = 1..max_depth] (a leaf of depth <= d
        stands for itself), in O(C · max_depth) by walking the leaves up one level at a time."""
        out = []
        anc = self.leaves.copy()
        for d in range(self.max_depth, 0, -1):
            deeper = self.depth[anc] > d
            anc = np.where(deeper, self.parent[anc], anc)
            out.append(anc)
        return out[::-1]

    @property
    def max_depth(self) -> int:
        return int(self.depth.max())

    def node_groups(self, mode: str) -> np.ndarray:
        """(P,) group index 0..G-1 of every node under a sharing mode (see ``TREE_SHARING``).

        ``tied``: one group; ``level``: one per depth; ``subtree``: one per child of the root (the
        subtree the node lies in); ``node``: one per node (Seeger 2008, Sec. 6.1).
        """
        return self._groups(mode, np.arange(self.n_nodes))

    def class_groups(self, mode: str) -> np.ndarray:
        """(C,) group index 0..G-1 of every class (leaf) under a sharing mode: the groups of
        :meth:`node_groups` restricted to the leaves, renumbered without gaps (``level`` groups
        leaves by their depth; ``subtree`` is F2 of Seeger 2008, Sec. 6.1)."""
        return self._groups(mode, self.leaves)

    def _groups(self, mode: str, nodes: np.ndarray) -> np.ndarray:
        if mode == "tied":
            key = np.zeros(nodes.size, dtype=np.intp)
        elif mode == "level":
            key = self.depth[nodes]
        elif mode == "subtree":
            key = self.ancestors_at_depth(1)[nodes]
        elif mode == "node":
            key = np.asarray(nodes)
        else:
            raise HierarchyError(f"tree sharing mode must be one of {TREE_SHARING}; got {mode!r}")
        return np.unique(key, return_inverse=True)[1].astype(np.intp).ravel()

    def leaf_mask(self, nodes) -> np.ndarray:
        """(m, C) boolean: entry (j, c) says that leaf L(c) lies below node ``nodes[j]`` (L_p of
        Sec. 7.4.2); node -1 (the root) has every leaf below it."""
        nodes = np.asarray(nodes, dtype=np.intp).ravel()
        if nodes.size and (nodes.min() < -1 or nodes.max() >= self.n_nodes):
            raise HierarchyError(
                f"node indices must lie in -1..{self.n_nodes - 1} (-1: the root); "
                f"got values from {nodes.min()} to {nodes.max()}"
            )
        uniq, inv = np.unique(nodes, return_inverse=True)
        rows = np.zeros((uniq.size, self.n_classes), dtype=bool)
        for j, p in enumerate(uniq):
            if p < 0:
                rows[j] = True
            else:
                rows[j, self.leaves_below(int(p))] = True
        return rows[inv.ravel()]

    def node_index(self, names) -> np.ndarray:
        """Node indices of node names (the root's name gives -1); unknown names are an error."""
        names = [str(v) for v in names]
        out = np.empty(len(names), dtype=np.intp)
        bad = []
        for j, v in enumerate(names):
            if v == self.root:
                out[j] = -1
            elif v in self._index:
                out[j] = self._index[v]
            else:
                bad.append((j, v))
        if bad:
            j, v = bad[0]
            raise HierarchyError(
                f"entry {j}: {v!r} is not a node of the hierarchy ({len(bad)} unknown names); "
                f"allowed: the root {self.root!r} or one of {len(self.nodes)} nodes such as "
                f"{', '.join(map(repr, self.nodes[:4]))}"
            )
        return out

    def edges(self) -> list[tuple[str, str]]:
        """(parent, child) name pairs in breadth-first order of the children."""
        return [(self.root if self.parent[p] < 0 else self.nodes[self.parent[p]], v) for p, v in enumerate(self.nodes)]

    # ------------------------------------------------------------------ transformations
    def pruned(self) -> ClassTree:
        """The tree without inner nodes that have a single child (Sec. 3, footnote 5).

        A pruned node's child takes its place under the pruned node's parent; leaves and the
        class order are kept.
        """
        keep_parent = {}
        for p in range(self.n_nodes):  # breadth first: a parent's kept parent is known before its children
            q = int(self.parent[p])
            keep_parent[p] = keep_parent[q] if q >= 0 and len(self.children[q]) == 1 else q
        edges = []
        for p, v in enumerate(self.nodes):
            if self.children[p] and len(self.children[p]) == 1:
                continue
            q = keep_parent[p]
            edges.append((self.root if q < 0 else self.nodes[q], v))
        return ClassTree(edges, self.classes)

    def to_networkx(self):
        """The tree as a networkx DiGraph (edges parent -> child); networkx is not a dependency of gpmodels."""
        try:
            import networkx as nx
        except ImportError:
            raise OptionalDependencyError(
                "ClassTree.to_networkx needs networkx, which is not installed: pip install networkx"
            ) from None

        return nx.DiGraph(self.edges())

    def __repr__(self) -> str:
        return f"ClassTree(root={self.root!r}, P={self.n_nodes}, C={self.n_classes}, depth={int(self.depth.max())})"


def _compiled_sweep(A: np.ndarray) -> bool:
    """Whether the compiled tree sweeps take A: Numba installed, a real float64 array of 2 or more axes."""
    return tree_products.AVAILABLE and A.dtype == np.float64 and A.ndim >= 2 and A.shape[0] > 0


def _path_tuple(path, i: int) -> tuple[str, ...]:
    """One label path as a tuple of non-empty strings; trailing "" / None padding dropped (HiClass)."""
    if isinstance(path, str):
        raise HierarchyError(
            f"label path {i} must be a sequence of labels such as ['Animal', 'Cat']; got the string {path!r}"
        )
    labels = ["" if v is None else str(v) for v in path]
    while labels and labels[-1] == "":
        labels.pop()
    if not labels:
        raise HierarchyError(f"label path {i} is empty")
    if "" in labels:
        raise HierarchyError(f"label path {i} {labels} has an empty label above a non-empty one")
    return tuple(labels)
