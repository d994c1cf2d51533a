"""Hierarchical precision, recall and F1: HiClass's own small examples (tests/test_metrics.py of
scikit-learn-contrib/hiclass, expected values as published there), the tree form against the path form
and against sets built by brute force, and bad input."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tree_strategies import random_trees

from gpmodels.errors import InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.scoring.hierarchical_prf import (
    hierarchical_f1,
    hierarchical_precision,
    hierarchical_prf,
    hierarchical_recall,
)

# ----------------------------------------------------------------------- HiClass's examples
MERMAID_T = [[["human", "mermaid"], ["", ""]], [["human", "minotaur"], ["bull", "minotaur"]]]
MERMAID_P = [[["human", "mermaid"], ["fish", "mermaid"]], [["human", "minotaur"], ["bull", "minotaur"]]]


@pytest.mark.parametrize("wrap", [list, np.array])
def test_hiclass_precision_examples(wrap):
    assert hierarchical_precision(wrap([1, 2, 3, 4]), wrap([1, 2, 5, 6])) == 0.5
    assert hierarchical_precision(wrap([[1, 2, 3, 4], [1, 2, 5, 6]]), wrap([[1, 2, 5, 6], [1, 2, 3, 4]])) == 0.5
    assert hierarchical_precision(wrap([[1, 2, 3, 4], [1, 2, 5, 6]]), wrap([[1, 2, 3, 4], [1, 2, 5, 6]])) == 1
    assert hierarchical_precision(wrap([1, 2, 3, 4]), wrap([1, 5, 6, 7]), "macro") == 0.25
    assert (
        hierarchical_precision(wrap([[1, 2, 3, 4], [1, 2, 5, 6]]), wrap([[1, 5, 6, 7], [1, 2, 3, 4]]), "macro") == 0.375
    )
    for average in ("micro", "macro"):
        assert hierarchical_precision(wrap(MERMAID_T), wrap(MERMAID_P), average) == pytest.approx(0.8333, rel=1e-3)
        assert hierarchical_precision(wrap(MERMAID_T), wrap(MERMAID_T), average) == 1


@pytest.mark.parametrize("wrap", [list, np.array])
def test_hiclass_recall_examples(wrap):
    assert hierarchical_recall(wrap([1, 2, 3, 4]), wrap([1, 5, 6, 7])) == 0.25
    short, long = wrap([[1, 2], [1, 2]]), wrap([[1, 2, 5, 6], [1, 2, 3, 4]])
    assert hierarchical_recall(short, long) == 1
    assert hierarchical_recall(long, short) == 0.5
    assert hierarchical_recall(wrap([1, 2, 3, 5]), wrap([1, 5, 6, 7]), "macro") == 0.25
    assert hierarchical_recall(short, wrap([[1, 5, 6, 7], [1, 2, 3, 4]]), "macro") == 0.75
    assert hierarchical_recall(wrap([[1, 5, 6, 7], [1, 2, 3, 4]]), short, "macro") == 0.375
    for average in ("micro", "macro"):
        assert hierarchical_recall(wrap(MERMAID_P), wrap(MERMAID_T), average) == pytest.approx(0.8333, rel=1e-3)


@pytest.mark.parametrize("wrap", [list, np.array])
def test_hiclass_f1_examples(wrap):
    assert hierarchical_f1(wrap([1, 2, 3, 4]), wrap([1, 2, 5, 6])) == 0.5
    assert hierarchical_f1(wrap([[1, 2, 3, 4], [1, 2, 5, 6]]), wrap([[1, 2, 5, 6], [1, 2, 3, 4]])) == 0.5
    assert hierarchical_f1(wrap(MERMAID_P), wrap(MERMAID_T)) == pytest.approx(0.9090, rel=1e-3)
    assert hierarchical_f1(wrap([1, 2, 3, 4]), wrap([1, 2, 3, 4]), "macro") == 1
    # ragged predictions (lists only, as in HiClass)
    assert hierarchical_f1([[1, 2, 3, 4], [1, 2, 5, 6]], [[1, 5, 6], [1, 2, 3]], "macro") == pytest.approx(3 / 7)
    assert hierarchical_f1(wrap(MERMAID_P), wrap(MERMAID_T), "macro") == pytest.approx(0.9, rel=1e-3)


def test_hiclass_empty_level_examples():
    y_true = [["2", "3"], ["1"], ["4", "5", "6"]]
    y_pred = [["1"], ["2", "3"], ["4", "5", "6"]]
    assert hierarchical_f1(y_true, y_pred) == 0.5
    assert hierarchical_f1(y_true, y_true) == 1


def test_bad_input():
    with pytest.raises(InputError, match="as many examples"):
        hierarchical_precision([[1, 2, 3]] * 4, [[1, 2, 3]] * 2)
    with pytest.raises(InputError, match="average must be one of"):
        hierarchical_f1([[1]], [[1]], average="weighted")
    tree = ClassTree([("root", "a"), ("root", "b"), ("a", "a1"), ("a", "a2")])
    with pytest.raises(InputError, match="class indices in 0..2"):
        hierarchical_prf([0, 3], [0, 1], tree)


def test_nothing_predicted_scores_zero():
    assert hierarchical_precision([["a"]], [[""]]) == 0.0
    assert hierarchical_f1([["a"]], [[""]]) == 0.0


# ----------------------------------------------------------------------- the tree form
def _ancestor_set(tree, c):
    return set(tree.path(int(tree.leaves[c])))  # node indices root's child .. leaf: root excluded


@given(random_trees(), st.integers(0, 2**31 - 1), st.sampled_from(["micro", "macro"]))
def test_tree_form_against_brute_force_sets_and_the_path_form(edges, seed, average):
    tree = ClassTree(edges)
    r = np.random.default_rng(seed)
    n = int(r.integers(1, 12))
    y_true, y_pred = r.integers(0, tree.n_classes, n), r.integers(0, tree.n_classes, n)
    got = hierarchical_prf(y_true, y_pred, tree, average)
    S = [_ancestor_set(tree, c) for c in y_pred]
    T = [_ancestor_set(tree, c) for c in y_true]
    inter = np.array([len(s & t) for s, t in zip(S, T)])
    ns, nt = np.array([len(s) for s in S]), np.array([len(t) for t in T])
    if average == "micro":
        p, rr = inter.sum() / ns.sum(), inter.sum() / nt.sum()
        f = 2 * p * rr / (p + rr) if p + rr else 0.0
    else:
        pi, ri = inter / ns, inter / nt
        p, rr = pi.mean(), ri.mean()
        f = np.mean([2 * a * b / (a + b) if a + b else 0.0 for a, b in zip(pi, ri)])
    assert got == pytest.approx({"hP": p, "hR": rr, "hF": f})
    # the same examples as label paths (node names are unique in a tree)
    paths = lambda y: [[tree.nodes[q] for q in tree.path(int(tree.leaves[c]))] for c in y]  # noqa: E731
    assert hierarchical_precision(paths(y_true), paths(y_pred), average) == pytest.approx(p)
    assert hierarchical_recall(paths(y_true), paths(y_pred), average) == pytest.approx(rr)
    assert hierarchical_f1(paths(y_true), paths(y_pred), average) == pytest.approx(f)


def test_tree_form_by_hand():
    tree = ClassTree.from_paths(
        [["Animal", "Mammal", "Cat"], ["Animal", "Mammal", "Dog"], ["Animal", "Bird"], ["Plant", "Tree"]]
    )
    cls = tree.classes_of_paths([["Animal", "Mammal", "Cat"], ["Animal", "Bird"], ["Plant", "Tree"]])
    pred = tree.classes_of_paths([["Animal", "Mammal", "Dog"], ["Animal", "Mammal", "Cat"], ["Plant", "Tree"]])
    # |S ∩ T|: 2 (Animal, Mammal), 1 (Animal), 2; |S|: 3, 3, 2; |T|: 3, 2, 2
    got = hierarchical_prf(cls, pred, tree)
    assert got["hP"] == pytest.approx(5 / 8) and got["hR"] == pytest.approx(5 / 7)
    assert got["hF"] == pytest.approx(2 * (5 / 8) * (5 / 7) / (5 / 8 + 5 / 7))


def test_hierarchical_report_scores_the_decisions_of_its_rule():
    from gpmodels.scoring.decisions import argmax_rule, min_expected_taxo
    from gpmodels.scoring.metrics import hierarchical_report

    tree = ClassTree([("root", "a"), ("root", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2")])
    r = np.random.default_rng(0)
    P = r.dirichlet(np.ones(4) * 0.5, size=30)
    y = r.integers(0, 4, 30)
    for rule, decide in (("argmax", argmax_rule), ("expected_loss", lambda P: min_expected_taxo(P, tree))):
        rep = hierarchical_report(P, y, tree, rule)
        h = hierarchical_prf(y, decide(P), tree)
        assert (rep["hier_precision"], rep["hier_recall"], rep["hier_f1"]) == (h["hP"], h["hR"], h["hF"])
