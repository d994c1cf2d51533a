import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tree_strategies import random_trees

from gpmodels.errors import HierarchyError
from gpmodels.hierarchy import ClassTree

SHARED_NEWS20 = "../shared/data/news20/hierarchy.tsv"


@given(random_trees(), st.integers(0, 2**31 - 1), st.integers(1, 3))
def test_phi_and_phi_t_against_the_explicit_matrix(edges, seed, k):
    t = ClassTree(edges)
    r = np.random.default_rng(seed)
    Phi = t.phi_leaf_matrix()
    U = r.normal(size=(4, t.n_nodes, k))
    np.testing.assert_allclose(t.phi(U), np.einsum("cp,npk->nck", Phi, U), atol=1e-12)
    E = r.normal(size=(4, t.n_classes))
    np.testing.assert_allclose(t.phi_t(E), E @ Phi, atol=1e-12)
    # explicit Φ_L built from paths independently: leaf row has ones on all ancestors and itself
    for c, p in enumerate(t.leaves):
        anc, q = set(), int(p)
        while q >= 0:
            anc.add(q)
            q = int(t.parent[q])
        assert set(np.flatnonzero(Phi[c])) == anc


@given(random_trees())
def test_structure_and_pruning(edges):
    t = ClassTree(edges)
    assert t.n_classes >= 1 and t.n_nodes == len(edges)
    assert all(t.depth[p] == (1 if t.parent[p] < 0 else t.depth[t.parent[p]] + 1) for p in range(t.n_nodes))
    for c in range(t.n_classes):
        assert t.leaves_below(int(t.leaves[c])).tolist() == [c]
    total = sum(t.leaves_below(p).size for p in t.root_children)
    assert total == t.n_classes
    pr = t.pruned()
    assert pr.classes == t.classes
    assert all(len(ch) != 1 for ch in pr.children)
    # pruning keeps the leaf paths' relative structure: two classes share an ancestor iff they did
    for a in range(t.n_classes):
        for b in range(t.n_classes):
            share = bool(set(t.path(int(t.leaves[a]))) & set(t.path(int(t.leaves[b]))))
            share_p = bool(set(pr.path(int(pr.leaves[a]))) & set(pr.path(int(pr.leaves[b]))))
            assert share == share_p


def test_builders_agree_and_class_order(tmp_path):
    edges = [("root", "a"), ("root", "b"), ("a", "a1"), ("a", "a2")]
    G = nx.DiGraph(edges)
    f = tmp_path / "h.tsv"
    f.write_text("".join(f"{p}\t{c}\n" for p, c in edges))
    for t in (ClassTree(edges), ClassTree.from_networkx(G), ClassTree.from_tsv(f)):
        assert t.classes == ("b", "a1", "a2") and t.nodes == ("a", "b", "a1", "a2")
    t = ClassTree(edges, classes=["a2", "b", "a1"])
    assert t.classes == ("a2", "b", "a1")


@pytest.mark.parametrize(
    "edges, message",
    [
        ([("r", "a"), ("a", "r")], "cycle"),
        ([("r", "a"), ("s", "b")], "exactly one root; found 2"),
        ([("r", "a"), ("a", "b"), ("b", "c"), ("c", "b")], "2 parents"),
        ([("r", "a"), ("r", "a")], "duplicate edge 'r' -> 'a'"),
        ([("r", "r")], "self-loop"),
        ([], "at least one edge"),
        ([("r", "a"), ("x", "y"), ("y", "x")], "reachable|parents"),
    ],
)
def test_bad_hierarchies(edges, message):
    with pytest.raises(HierarchyError, match=message):
        ClassTree(edges)


def test_classes_must_be_the_leaves():
    edges = [("root", "a"), ("a", "a1"), ("a", "a2"), ("root", "b")]
    with pytest.raises(HierarchyError, match="'a' is not a leaf"):
        ClassTree(edges, classes=["a", "a1", "a2", "b"])
    with pytest.raises(HierarchyError, match="'zz' is not a node"):
        ClassTree(edges, classes=["zz", "a1", "a2", "b"])
    with pytest.raises(HierarchyError, match="leaf 'b' is not among the classes"):
        ClassTree(edges, classes=["a1", "a2"])


def test_tsv_errors_name_the_line(tmp_path):
    f = tmp_path / "h.tsv"
    f.write_text("root\ta\nroot a\n")
    with pytest.raises(HierarchyError, match="h.tsv:2"):
        ClassTree.from_tsv(f)
    with pytest.raises(HierarchyError, match="not found"):
        ClassTree.from_tsv(tmp_path / "none.tsv")


def test_undirected_or_isolated_networkx_graphs_are_refused():
    with pytest.raises(HierarchyError, match="directed"):
        ClassTree.from_networkx(nx.Graph([("r", "a")]))
    G = nx.DiGraph([("r", "a"), ("r", "b")])
    G.add_node("lonely")
    with pytest.raises(HierarchyError, match="'lonely' has no edges"):
        ClassTree.from_networkx(G)


def test_news20_hierarchy_when_present():
    import os

    if not os.path.exists(SHARED_NEWS20):
        pytest.skip("../shared/data not present")
    classes = open("../shared/data/news20/classes.txt").read().split("\n")[:-1]
    t = ClassTree.from_tsv(SHARED_NEWS20, classes)
    assert (t.n_nodes, t.n_classes) == (27, 20)
    assert sorted(np.bincount(t.depth[t.leaves])[1:].tolist()) == [3, 7, 10]


def _naive_ancestor_at_depth(t, p, d):
    while t.depth[p] > d:
        p = int(t.parent[p])
    return p


@given(random_trees())
def test_ancestors_at_depth_and_leaf_ancestors_against_parent_walks(edges):
    t = ClassTree(edges)
    by_depth = t.leaf_ancestors_by_depth()
    assert len(by_depth) == t.max_depth
    for d in range(1, t.max_depth + 1):
        expect = [_naive_ancestor_at_depth(t, p, d) for p in range(t.n_nodes)]
        np.testing.assert_array_equal(t.ancestors_at_depth(d), expect)
        np.testing.assert_array_equal(by_depth[d - 1], np.asarray(expect)[t.leaves])


def _chain(n):
    return [("root", "n0")] + [(f"n{i}", f"n{i + 1}") for i in range(n - 1)]


def test_a_long_chain_builds_prunes_and_walks_in_linear_time():
    """Tree building was O(depth * P) (a 10^6-node chain never finished) and pruning O(depth^2)."""
    import time

    t0 = time.perf_counter()
    t = ClassTree(_chain(100_000))
    assert t.max_depth == 100_000 and t.n_classes == 1
    assert t.ancestors_at_depth(3)[-1] == 2
    pruned = t.pruned()
    assert pruned.n_nodes == 1 and pruned.classes == ("n99999",)
    assert time.perf_counter() - t0 < 20.0  # a few seconds on a loaded 2-core machine


def test_per_level_scores_of_a_deep_chain_are_fast():
    """level_confusion called ancestors_at_depth per level (O(depth^2 P)): minutes for 5000 levels."""
    import time

    from gpmodels.scoring.metrics import hierarchical_report, level_confusion
    from gpmodels.scoring.multilabel import per_level_prf

    edges = _chain(5000) + [("n10", "side")]  # two classes: n4999 (depth 5000) and side (depth 12)
    t = ClassTree(edges)
    y = np.array([0, 1, 1, 0])
    P = np.array([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.4, 0.6]])
    t0 = time.perf_counter()
    levels = level_confusion(np.argmax(P, axis=1), y, t)
    rep = hierarchical_report(P, y, t)
    Y = np.zeros((4, t.n_nodes), dtype=bool)
    prf = per_level_prf(Y, Y, t)
    assert time.perf_counter() - t0 < 10.0
    assert len(levels) == 5000 and len(prf) == 5000
    assert levels[11]["accuracy"] == 1.0 and levels[12]["accuracy"] == 0.5
    assert rep["level1_acc"] == 1.0 and rep["level5000_acc"] == 0.5


def test_walking_a_tree_does_not_change_its_pickled_state():
    """The level lists are built on first use; a walked tree must still pickle (and hash, as
    scikit-learn's check_estimators_overwrite_params does) like a fresh one."""
    import pickle

    t = ClassTree([("r", "a"), ("r", "b"), ("a", "c"), ("a", "d")])
    before = pickle.dumps(t)
    t.phi(np.ones((1, t.n_nodes)))
    assert pickle.dumps(t) == before
    np.testing.assert_array_equal(pickle.loads(before).phi(np.ones((1, 4))), t.phi(np.ones((1, 4))))


def test_from_paths_builds_the_tree_and_maps_paths_to_classes():
    paths = [
        ["Animal", "Mammal", "Cat"],
        ["Animal", "Mammal", "Dog"],
        ["Animal", "Bird", ""],
        ["Plant", "Tree"],
        ["Animal", "Mammal", "Cat"],
    ]
    t = ClassTree.from_paths(paths)
    assert set(t.edges()) == {
        ("root", "Animal"),
        ("root", "Plant"),
        ("Animal", "Mammal"),
        ("Animal", "Bird"),
        ("Mammal", "Cat"),
        ("Mammal", "Dog"),
        ("Plant", "Tree"),
    }
    assert t.classes == ("Bird", "Cat", "Dog", "Tree")  # sorted by path
    np.testing.assert_array_equal(t.classes_of_paths(paths), [1, 2, 0, 3, 1])
    np.testing.assert_array_equal(t.classes_of_paths(np.array([["Plant", "Tree", ""]])), [3])
    with pytest.raises(HierarchyError, match=r"label path 0 \['Plant', 'Shrub'\] is not a class"):
        t.classes_of_paths([["Plant", "Shrub"]])
    with pytest.raises(HierarchyError, match="built by ClassTree.from_paths"):
        ClassTree(t.edges()).classes_of_paths(paths)


def test_from_paths_repeated_labels_and_bad_paths():
    with pytest.raises(HierarchyError, match="'Other' occurs under two parents.*separator='/'"):
        ClassTree.from_paths([["A", "Other"], ["B", "Other"]])
    t = ClassTree.from_paths([["A", "Other"], ["B", "Other"]], separator="/")
    assert t.classes == ("A/Other", "B/Other")
    np.testing.assert_array_equal(t.classes_of_paths([["B", "Other"]]), [1])
    for bad, msg in [
        ([["A"], ["A", "B"]], "ends at an inner node"),
        ([[]], "label path 0 is empty"),
        ([["A", "", "B"]], "empty label above a non-empty one"),
        (["AB"], "got the string 'AB'"),
        ([["root", "x"]], "root's name 'root'"),
        ([], "at least one label path"),
    ]:
        with pytest.raises(HierarchyError, match=msg):
            ClassTree.from_paths(bad)
