"""Hierarchical scores and Bayes decision rules against brute force on random trees."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tree_strategies import random_trees

from gpmodels import metrics as M
from gpmodels.errors import InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.scoring.decisions import bayes_decision, decide, max_expected_parent_accuracy, min_expected_taxo


def _nx_taxo(edges, tree):
    """Δ(c, c') = half the shortest path length between leaves, by networkx on the undirected tree."""
    G = nx.Graph(edges)
    names = tree.classes
    return np.array([[nx.shortest_path_length(G, a, b) / 2.0 for b in names] for a in names])


def _nx_parent(edges, tree):
    parent = {b: a for a, b in edges}
    return [parent[c] for c in tree.classes]


@given(random_trees(max_nodes=10), st.integers(0, 2**31 - 1))
def test_taxo_matrix_lca_and_paths_against_networkx(edges, seed):
    tree = ClassTree(edges)
    np.testing.assert_allclose(tree.taxo_matrix(), _nx_taxo(edges, tree))
    G, D = nx.DiGraph(edges), nx.Graph(edges)
    r = np.random.default_rng(seed)
    for _ in range(5):
        p, q = r.integers(0, tree.n_nodes, 2)
        lca = nx.lowest_common_ancestor(G, tree.nodes[p], tree.nodes[q])
        assert tree.lca(p, q) == (-1 if lca == tree.root else tree.index(lca))
        assert tree.path_length(p, q) == nx.shortest_path_length(D, tree.nodes[p], tree.nodes[q])


@given(random_trees(max_nodes=10), st.integers(0, 2**31 - 1), st.booleans())
def test_decision_rules_minimise_the_expected_loss_by_brute_force(edges, seed, peaked):
    tree = ClassTree(edges)
    C = tree.n_classes
    r = np.random.default_rng(seed)
    P = r.dirichlet(np.full(C, 0.3 if peaked else 2.0), size=12)
    if r.random() < 0.3:  # exact ties
        P[0] = 1.0 / C
    taxo = _nx_taxo(edges, tree)
    par = _nx_parent(edges, tree)
    ploss = np.array([[0.0 if par[a] == par[b] else 1.0 for b in range(C)] for a in range(C)])
    for rule, loss in (("taxo", taxo), ("parent", ploss)):
        got = decide(P, tree, rule)
        for j in range(P.shape[0]):
            risks = [sum(P[j, c] * loss[y, c] for c in range(C)) for y in range(C)]
            best = min(risks)
            assert risks[got[j]] <= best + 1e-12, (rule, j)
            tied = [y for y in range(C) if risks[y] <= best + 1e-12]
            assert P[j, got[j]] == max(P[j, y] for y in tied)  # ties go to the most probable class
    np.testing.assert_array_equal(decide(P, tree, "argmax"), P.argmax(axis=1))
    np.testing.assert_array_equal(bayes_decision(P, 1.0 - np.eye(C)), P.argmax(axis=1))


def test_footnote_11_parent_rule_on_a_hand_example():
    # parent 'a' has leaves a1, a2 (0.3 + 0.3); parent 'b' has b1 alone (0.4): a wins, a1/a2 tie -> first
    tree = ClassTree([("r", "a"), ("r", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1")], classes=["a1", "a2", "b1"])
    P = np.array([[0.3, 0.3, 0.4], [0.1, 0.2, 0.7]])
    np.testing.assert_array_equal(max_expected_parent_accuracy(P, tree), [0, 2])
    # taxo: Δ(a1, a2) = 1, Δ(a*, b1) = 2: expected loss a1 = 0.3 + 0.8 = 1.1, b1 = 1.2 -> a1
    np.testing.assert_array_equal(min_expected_taxo(P, tree), [0, 2])
    assert M.taxo_loss([0, 2], [1, 2], tree) == pytest.approx(0.5)
    assert M.parent_accuracy([0, 2], [1, 0], tree) == pytest.approx(0.5)


def test_level_confusion_and_report():
    tree = ClassTree(
        [("r", "a"), ("r", "b"), ("a", "a1"), ("a", "a2"), ("a2", "x"), ("a2", "y"), ("b", "b1"), ("b", "b2")],
        classes=["a1", "x", "y", "b1", "b2"],
    )
    y = np.array([0, 1, 2, 3, 4, 1])
    y_pred = np.array([0, 2, 1, 4, 0, 1])
    lv = M.level_confusion(y_pred, y, tree)
    assert sorted(lv) == [1, 2, 3]
    assert lv[1]["nodes"] == ["a", "b"] and lv[1]["accuracy"] == pytest.approx(5 / 6)
    np.testing.assert_array_equal(lv[1]["confusion"], [[4, 0], [1, 1]])
    assert lv[2]["accuracy"] == pytest.approx(4 / 6)  # level 2: x and y both map to a2
    assert lv[3]["accuracy"] == pytest.approx(np.mean(y == y_pred))
    for d in lv:
        assert lv[d]["confusion"].sum() == y.size
    P = np.eye(5)[y_pred] * 0.6 + 0.08
    rep = M.hierarchical_report(P, y, tree, "argmax")
    assert rep["acc"] == pytest.approx(np.mean(y == y_pred)) and rep["level3_acc"] == pytest.approx(rep["acc"])
    assert rep["taxo"] == pytest.approx(M.taxo_loss(y_pred, y, tree))
    bayes = M.hierarchical_report(P, y, tree, "expected_loss")
    assert bayes["acc"] == rep["acc"] and bayes["prec"] == rep["prec"]


def test_bad_inputs_to_scores_and_rules():
    tree = ClassTree([("r", "a"), ("r", "b")])
    with pytest.raises(InputError, match="decision rule must be one of"):
        decide(np.full((1, 2), 0.5), tree, "median")
    with pytest.raises(InputError, match="one column per class"):
        min_expected_taxo(np.full((1, 3), 1 / 3), tree)
    with pytest.raises(InputError, match="needs a class tree"):
        decide(np.full((1, 2), 0.5), None, "taxo")
    with pytest.raises(InputError, match="class indices in 0..1"):
        M.taxo_loss([0, 5], [0, 1], tree)
    with pytest.raises(InputError, match="decision must be"):
        M.hierarchical_report(np.full((1, 2), 0.5), [0], tree, "bayes")
