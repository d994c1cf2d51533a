"""Synthetic text taxonomies at the sizes of the WIPO-alpha sections (Seeger NIPS 2007, Sec. 6.2).

WIPO-alpha (patents under the IPC taxonomy) is not obtainable offline, so its regime — hundreds to a
thousand leaf classes in a 4-level tree, a few documents per leaf, sparse bag-of-words — is generated.

**Sizes.**  Sec. 6.2 gives, per section subtask, the training size n, the leaves C and the non-root
nodes P, and (F2/H2) the number of subtrees below the root: section D has n = 1140, C = 160, P = 187
and 7 subtrees; section B n = 9794, C = 1172, P = 1319 and 34 subtrees.  The tree has the IPC's 4
levels: the root (the section) -> classes (the subtrees) -> subclasses -> main groups (the leaves), so
level 2 holds P - C - (subtrees) nodes (D: 7 / 20 / 160; B: 34 / 113 / 1172).  :func:`taxonomy_size`
gives these presets (``"D"``, ``"B"``) and the sizes between: ``size`` = t in [0, 1] interpolates every
count geometrically, n(t) = n_D^(1-t) n_B^t (t = 0: D, t = 1: B).

**Tree.**  Each node of level d+1 is dealt to a parent of level d so that every parent has at least
one child and the rest are spread by a seeded multinomial over Dirichlet(2) weights (uneven fan-outs,
as the IPC's).  Node names are paths: ``"c03"``, ``"c03.s02"``, ``"c03.s02.g05"``.

**Documents** (a hierarchical topic model).  The root draws a background distribution over the
V-term vocabulary (Zipf, exponent 1.05, terms in a seeded random order), and every other node p a
topic: ``topic_terms`` terms drawn from the background (common terms are likelier) with
Dirichlet(0.5) weights.  A document of leaf c mixes the topics on its path: it draws weights
w ~ Dirichlet(concentration * mix) over (root, level 1, level 2, leaf) and then each of its tokens
from topic k with probability w_k.  The default ``mix`` puts most of the topical mass on the inner
nodes, so siblings share most of their vocabulary and a leaf is told from its siblings by a few
terms: with few documents per leaf, a prior that shares along the tree (ANOVA, Seeger 2008 Sec. 3)
beats a flat one.  Token counts are chosen so that a document holds about ``terms_per_doc``
distinct terms (150 by default, over V = 30 000 terms).

Leaves get documents in skewed proportions (lognormal weights, at least ``min_per_leaf`` training
documents each).  The test set (``n_test``, default n) is drawn from the same leaf proportions.
Inputs are term counts as float64 CSR (scale rows to unit norm as Sec. 6.2 does:
``scale_features("unit_norm", X)``).  Everything is a function of ``seed``.
"""

from __future__ import annotations

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.data.datasets import Dataset
from gpmodels.data.splits import rng_from
from gpmodels.errors import InputError
from gpmodels.hierarchy import ClassTree

__all__ = ["TaxonomySize", "SyntheticTaxonomy", "WIPO_SECTIONS", "taxonomy_size", "synthetic_taxonomy"]


@attrs.frozen
class TaxonomySize:
    """Training documents ``n`` and the node counts of tree levels 1, 2, 3 (level 3: the leaves)."""

    n: int
    levels: tuple[int, int, int]

    @property
    def n_classes(self) -> int:
        return self.levels[2]

    @property
    def n_nodes(self) -> int:
        return sum(self.levels)


#: Seeger NIPS 2007, Sec. 6.2: sections D (n = 1140, C = 160, P = 187, 7 subtrees) and B (n = 9794,
#: C = 1172, P = 1319, 34 subtrees)
WIPO_SECTIONS = {"D": TaxonomySize(1140, (7, 20, 160)), "B": TaxonomySize(9794, (34, 113, 1172))}


def taxonomy_size(size) -> TaxonomySize:
    """The preset ``"D"`` / ``"B"``, or t in [0, 1] between them (geometric interpolation of n and of
    every level's count, rounded; t = 0 is D, t = 1 is B)."""
    if isinstance(size, str):
        if size not in WIPO_SECTIONS:
            raise InputError(
                f"taxonomy size must be one of {', '.join(WIPO_SECTIONS)} or a number in [0, 1]; got {size!r}"
            )
        return WIPO_SECTIONS[size]
    if isinstance(size, bool) or not isinstance(size, (int, float)) or not 0.0 <= float(size) <= 1.0:
        raise InputError(f"taxonomy size must be one of {', '.join(WIPO_SECTIONS)} or a number in [0, 1]; got {size!r}")
    d, b, t = WIPO_SECTIONS["D"], WIPO_SECTIONS["B"], float(size)

    def interp(x, y):
        return int(round(x ** (1.0 - t) * y**t))

    return TaxonomySize(interp(d.n, b.n), tuple(interp(x, y) for x, y in zip(d.levels, b.levels)))


@attrs.frozen
class SyntheticTaxonomy:
    """A generated taxonomy data set: CSR term counts (float64), labels 0..C-1 (the tree's classes) and the tree."""

    X_train: sp.csr_matrix
    y_train: np.ndarray
    X_test: sp.csr_matrix
    y_test: np.ndarray
    tree: ClassTree
    size: TaxonomySize
    seed: int

    @property
    def n_classes(self) -> int:
        return self.tree.n_classes

    def dataset(self, name: str | None = None):
        """The same data as a :class:`~gpmodels.data.datasets.Dataset` (classes = the tree's leaf names)."""
        return Dataset(
            name or f"taxonomy-C{self.n_classes}",
            self.X_train,
            self.y_train,
            self.X_test,
            self.y_test,
            self.tree.classes,
        )


def _deal(n_children: int, n_parents: int, rng) -> np.ndarray:
    """(n_children,) parent index of each child, sorted; every parent gets at least one child."""
    if n_children < n_parents:
        raise InputError(
            f"a tree level needs at least as many nodes as the level above; got {n_children} < {n_parents}"
        )
    extra = rng.multinomial(n_children - n_parents, rng.dirichlet(np.full(n_parents, 2.0)))
    return np.repeat(np.arange(n_parents), 1 + extra)


def _tree(size: TaxonomySize, rng) -> tuple[ClassTree, np.ndarray]:
    """The tree, and the (C, 3) node indices (into a per-level numbering) of every leaf's path."""
    l1, l2, l3 = size.levels
    par2, par3 = _deal(l2, l1, rng), _deal(l3, l2, rng)
    names1 = [f"c{i:02d}" for i in range(l1)]
    rank2 = np.arange(l2) - np.searchsorted(par2, par2)  # index among its siblings
    names2 = [f"{names1[p]}.s{r:02d}" for p, r in zip(par2, rank2)]
    rank3 = np.arange(l3) - np.searchsorted(par3, par3)
    names3 = [f"{names2[p]}.g{r:02d}" for p, r in zip(par3, rank3)]
    edges = [("root", a) for a in names1]
    edges += [(names1[p], b) for p, b in zip(par2, names2)]
    edges += [(names2[p], c) for p, c in zip(par3, names3)]
    paths = np.stack([par2[par3], par3, np.arange(l3)], axis=1)  # shape: (C, 3)
    return ClassTree(edges, names3), paths


def _topics(size: TaxonomySize, vocab: int, topic_terms: int, rng) -> tuple[np.ndarray, list]:
    """The root's background (V,) and per level a list of (terms, cumulative weights) per node."""
    ranks = np.arange(1, vocab + 1, dtype=np.float64)
    background = np.empty(vocab)
    background[rng.permutation(vocab)] = ranks**-1.05
    background /= background.sum()
    levels = []
    for count in size.levels:
        nodes = []
        for _ in range(count):
            terms = rng.choice(vocab, size=topic_terms, replace=False, p=background)
            nodes.append((terms, np.cumsum(rng.dirichlet(np.full(topic_terms, 0.5)))))
        levels.append(nodes)
    return background, levels


def _documents(labels, paths, background, levels, tokens: int, weights, rng) -> sp.csr_matrix:
    """CSR counts: each document's ``tokens`` tokens drawn from its path's topics mixed by ``weights``."""
    m, vocab = labels.size, background.size
    source = (rng.random((m, tokens))[:, :, None] > np.cumsum(weights, axis=1)[:, None, :-1]).sum(axis=2)
    words = np.empty((m, tokens), dtype=np.int64)
    u = rng.random((m, tokens))
    root = source == 0
    words[root] = np.minimum(np.searchsorted(np.cumsum(background), u[root]), vocab - 1)
    for k in (1, 2, 3):
        node = paths[labels, k - 1]  # shape: (m,)
        rows, cols = np.nonzero(source == k)
        by_node = node[rows]
        order = np.argsort(by_node, kind="stable")
        rows, cols, by_node = rows[order], cols[order], by_node[order]
        bounds = np.searchsorted(by_node, np.arange(len(levels[k - 1]) + 1))
        for p, (terms, cdf) in enumerate(levels[k - 1]):
            r, c = rows[bounds[p] : bounds[p + 1]], cols[bounds[p] : bounds[p + 1]]
            words[r, c] = terms[np.minimum(np.searchsorted(cdf, u[r, c]), terms.size - 1)]
    rows = np.repeat(np.arange(m), tokens)
    X = sp.csr_matrix((np.ones(m * tokens), (rows, words.ravel())), shape=(m, vocab))
    X.sum_duplicates()
    return X


def _leaf_counts(size: TaxonomySize, min_per_leaf: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Training documents per leaf (>= min_per_leaf, summing to n) and the leaf proportions."""
    C = size.n_classes
    if size.n < min_per_leaf * C:
        raise InputError(f"n = {size.n} cannot give each of the {C} leaves {min_per_leaf} training documents")
    share = rng.lognormal(0.0, 0.8, size=C)
    share /= share.sum()
    return min_per_leaf + rng.multinomial(size.n - min_per_leaf * C, share), share


def _check(terms_per_doc, vocab, topic_terms, mix, concentration, n_test, min_per_leaf):
    if not 10 <= terms_per_doc <= vocab // 10:
        raise InputError(
            f"terms_per_doc must lie in 10..{vocab // 10} (a tenth of the vocabulary); got {terms_per_doc}"
        )
    if not terms_per_doc <= topic_terms <= vocab:
        raise InputError(f"topic_terms must lie in terms_per_doc..vocab ({terms_per_doc}..{vocab}); got {topic_terms}")
    mix = np.asarray(mix, dtype=np.float64)
    if mix.shape != (4,) or np.any(mix <= 0):
        raise InputError(f"mix must be 4 positive weights (root, level 1, level 2, leaf); got {mix.tolist()}")
    if not concentration > 0:
        raise InputError(f"concentration must be positive; got {concentration}")
    if n_test is not None and n_test < 1:
        raise InputError(f"n_test must be a positive number of test documents; got {n_test}")
    if min_per_leaf < 1:
        raise InputError(f"min_per_leaf must be at least 1; got {min_per_leaf}")
    return mix / mix.sum()


def _tokens_for(terms_per_doc: int, background, levels, pilot_weights, rng) -> int:
    """Tokens per document that give about ``terms_per_doc`` distinct terms (doubling, then bisection on a
    pilot sample of documents of leaf 0 of the same model, mixed by ``pilot_weights``)."""
    paths = np.zeros((1, 3), dtype=np.intp)
    labels = np.zeros(pilot_weights.shape[0], dtype=np.intp)

    def distinct(t):
        X = _documents(labels, paths, background, levels, t, pilot_weights, np.random.default_rng(rng.integers(2**32)))
        return float(np.mean(np.diff(X.indptr)))

    lo, hi = terms_per_doc, 2 * terms_per_doc
    while distinct(hi) < terms_per_doc:
        lo, hi = hi, 2 * hi
    for _ in range(8):
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if distinct(mid) < terms_per_doc else (lo, mid)
    return hi


def synthetic_taxonomy(
    size="D",
    *,
    seed: int = 0,
    n_test: int | None = None,
    vocab: int = 30_000,
    terms_per_doc: int = 150,
    topic_terms: int = 400,
    mix=(0.3, 0.3, 0.25, 0.15),
    concentration: float = 20.0,
    min_per_leaf: int = 2,
) -> SyntheticTaxonomy:
    """A seeded synthetic taxonomy data set at a WIPO-alpha section's size (see the module docstring).

    ``size``: ``"D"``, ``"B"``, a number t in [0, 1] between them (:func:`taxonomy_size`) or a
    :class:`TaxonomySize`; ``n_test``: test documents (default n); ``mix``: mean weights of the root's
    background and the level 1, 2 and leaf topics in a document, ``concentration`` their Dirichlet
    concentration; ``topic_terms``: terms per node topic.
    """
    size = size if isinstance(size, TaxonomySize) else taxonomy_size(size)
    mix = _check(terms_per_doc, vocab, topic_terms, mix, concentration, n_test, min_per_leaf)
    rng = rng_from(seed)
    tree, paths = _tree(size, rng)
    background, levels = _topics(size, vocab, topic_terms, rng)
    counts, share = _leaf_counts(size, min_per_leaf, rng)
    m_test = size.n if n_test is None else int(n_test)
    y_train = np.repeat(np.arange(size.n_classes), counts)
    y_test = np.sort(rng.choice(size.n_classes, size=m_test, p=share))
    weights = rng.dirichlet(concentration * mix, size=size.n + m_test)
    pilot = rng.dirichlet(concentration * mix, size=50)
    tokens = _tokens_for(terms_per_doc, background, [lv[:1] for lv in levels], pilot, rng)
    X = _documents(np.concatenate([y_train, y_test]), paths, background, levels, tokens, weights, rng)
    return SyntheticTaxonomy(X[: size.n], y_train, X[size.n :], y_test, tree, size, int(seed))
