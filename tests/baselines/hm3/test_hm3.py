"""H-M^3: DP against brute force, the marginal QP (8) against cvxpy, LP directions, losses, baselines,
multilabel scores and bad input."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tree_strategies import random_trees

from gpmodels.baselines.hm3.inference import (
    best_labelings,
    best_single_paths,
    edge_losses,
    edge_onehot,
    labeling_scores,
    node_max_marginals,
)
from gpmodels.baselines.hm3.lp import DirectionLP, polytope_constraints, solve_marginal_qp
from gpmodels.baselines.hm3.node_svms import fit_node_svms, top_down_consistent
from gpmodels.baselines.hm3.solver import HM3Options, fit_hm3
from gpmodels.errors import HierarchyError, InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.kernels import RBF
from gpmodels.scoring.multilabel import (
    check_multilabels,
    h_loss,
    htilde_loss,
    micro_prf,
    multilabel_report,
    node_weights,
    paths_to_multilabels,
    per_level_prf,
    symmetric_difference_loss,
    zero_one_loss,
)

SMALL_TREE = [("root", "a"), ("root", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1"), ("a1", "x")]


def _all_labelings(P):
    return np.array(list(itertools.product([False, True], repeat=P)), dtype=bool)


def _consistent(Y, tree):
    hp = tree.parent >= 0
    return ~np.any(Y[:, hp] & ~Y[:, tree.parent[hp]], axis=1)


@settings(max_examples=30)
@given(random_trees(max_nodes=7), st.integers(0, 2**31 - 1))
def test_dp_against_brute_force(edges, seed):
    tree = ClassTree(edges)
    r = np.random.default_rng(seed)
    g = r.normal(size=(3, tree.n_nodes, 4))
    allY = _all_labelings(tree.n_nodes)
    for consistent in (False, True):
        Ys = allY[_consistent(allY, tree)] if consistent else allY
        brute = np.stack([labeling_scores(np.broadcast_to(gi, (len(Ys),) + gi.shape), Ys, tree) for gi in g])
        lab, val = best_labelings(g, tree, consistent=consistent)
        np.testing.assert_allclose(val, brute.max(axis=1), atol=1e-10)
        np.testing.assert_allclose(labeling_scores(g, lab, tree), val, atol=1e-10)
        if consistent:
            assert np.all(_consistent(lab, tree))


@settings(max_examples=30)
@given(random_trees(max_nodes=7), st.integers(0, 2**31 - 1))
def test_node_max_marginals_against_brute_force(edges, seed):
    tree = ClassTree(edges)
    g = np.random.default_rng(seed).normal(size=(3, tree.n_nodes, 4))
    allY = _all_labelings(tree.n_nodes)
    for consistent in (False, True):
        Ys = allY[_consistent(allY, tree)] if consistent else allY
        brute = np.stack([labeling_scores(np.broadcast_to(gi, (len(Ys),) + gi.shape), Ys, tree) for gi in g])
        MM = node_max_marginals(g, tree, consistent=consistent)
        for j in range(tree.n_nodes):
            for b in (False, True):
                np.testing.assert_allclose(MM[:, j, int(b)], brute[:, Ys[:, j] == b].max(axis=1), atol=1e-10)
        # the best labeling attains both its own max-marginals, node by node
        lab, val = best_labelings(g, tree, consistent=consistent)
        np.testing.assert_allclose(
            np.take_along_axis(MM, lab[:, :, None].astype(int), axis=2)[:, :, 0],
            np.broadcast_to(val[:, None], lab.shape),
            atol=1e-10,
        )


@settings(max_examples=20)
@given(random_trees(max_nodes=9), st.integers(0, 2**31 - 1))
def test_best_single_path_against_brute_force(edges, seed):
    tree = ClassTree(edges)
    g = np.random.default_rng(seed).normal(size=(4, tree.n_nodes, 4))
    paths = paths_to_multilabels(np.arange(tree.n_classes), tree)
    scores = np.stack([labeling_scores(np.broadcast_to(gi, (tree.n_classes,) + gi.shape), paths, tree) for gi in g])
    best = best_single_paths(g, tree)
    np.testing.assert_allclose(scores[np.arange(4), best], scores.max(axis=1), atol=1e-10)


def _loss_reference(y, u, tree, loss, scaling):
    c = node_weights(tree, scaling)
    total = 0.0
    for j in range(tree.n_nodes):
        q = tree.parent[j]
        if loss == "delta":
            total += c[j] * (y[j] != u[j])
        else:
            par_ok = True if q < 0 else y[q] == u[q]
            total += c[j] * ((y[j] != u[j]) and par_ok)
    return total


@settings(max_examples=15)
@given(random_trees(max_nodes=6), st.integers(0, 2**31 - 1))
def test_edge_losses_add_up_to_the_multilabel_loss(edges, seed):
    tree = ClassTree(edges)
    allY = _all_labelings(tree.n_nodes)
    r = np.random.default_rng(seed)
    y = allY[r.integers(len(allY))]
    for loss in ("delta", "htilde"):
        for scaling in ("uniform", "sibling", "subtree"):
            L = edge_losses(y[None], tree, loss, scaling)[0]
            got = labeling_scores(np.broadcast_to(L, (len(allY),) + L.shape), allY, tree)
            ref = [_loss_reference(y, u, tree, loss, scaling) for u in allY]
            np.testing.assert_allclose(got, ref, atol=1e-12)


def test_node_weights():
    t = ClassTree(SMALL_TREE)  # nodes a, b, a1, a2, b1, x
    np.testing.assert_allclose(node_weights(t, "sibling"), [0.5, 0.5, 0.25, 0.25, 0.5, 0.25])
    np.testing.assert_allclose(node_weights(t, "subtree"), np.array([4, 2, 2, 1, 1, 1]) / 7)


def _toy(m=14, seed=0, d=3):
    r = np.random.default_rng(seed)
    tree = ClassTree(SMALL_TREE)
    X = r.normal(size=(m, d))
    Y = np.zeros((m, tree.n_nodes), dtype=bool)
    for i in range(m):  # a union of 0-2 partial paths, correlated with X[:, 0]
        for p in r.choice(tree.n_nodes, size=r.integers(0, 3), replace=False):
            Y[i, tree.path(int(p))] = True
        if X[i, 0] > 0.5:
            Y[i, tree.path(tree.index("x"))] = True
    return tree, X, Y


@pytest.mark.parametrize("loss,scaling,ws", [("delta", "uniform", "gap_sampling"), ("htilde", "sibling", "cyclic")])
def test_marginal_dual_against_cvxpy(loss, scaling, ws):
    tree, X, Y = _toy()
    k, C = RBF(w=0.5), 1.0
    model = fit_hm3(
        k,
        X,
        Y,
        tree,
        HM3Options(C=C, loss=loss, scaling=scaling, working_set=ws, chunk_size=6, gap_tol=8e-4, max_passes=5000),
    )
    r = model.result
    mu_ref, val = solve_marginal_qp(k.gram(X, X), edge_losses(Y, tree, loss, scaling), edge_onehot(Y, tree), tree, C)
    assert r.converged and r.dual == pytest.approx(val, rel=1e-3)
    assert r.dual <= val * (1 + 1e-6) + 1e-9 <= r.primal * (1 + 1e-5) + 1e-8  # weak duality around the optimum
    # μ in the marginal polytope: box, non-negative, consistent node marginals, root positive
    mu = r.mu
    assert mu.min() >= -1e-12 and mu.sum(axis=2).max() <= C + 1e-9
    tops = list(tree.root_children)
    assert np.abs(mu[:, tops, :2]).max() < 1e-12
    for j in range(tree.n_nodes):
        for c in tree.children[j]:
            np.testing.assert_allclose(mu[:, c, 0] + mu[:, c, 1], mu[:, j, 0] + mu[:, j, 2], atol=1e-9)
    # the same predictions as the cvxpy solution on new points
    Xn = np.random.default_rng(9).normal(size=(25, 3))
    nu_ref = mu_ref.sum(axis=2, keepdims=True)[:, :1] * edge_onehot(Y, tree) - mu_ref
    H_ref = (k.gram(Xn, X) @ nu_ref.reshape(len(X), -1)).reshape(25, -1, 4)
    lab_ref, v_ref = best_labelings(H_ref, tree, consistent=True)
    H = model.edge_scores(Xn)
    np.testing.assert_allclose(H, H_ref, atol=0.05 * np.abs(H_ref).max())
    # compare where the reference's best labeling wins clearly over the runner-up
    allY = _all_labelings(tree.n_nodes)
    allY = allY[_consistent(allY, tree)]
    sc = np.stack([labeling_scores(np.broadcast_to(h, (len(allY),) + h.shape), allY, tree) for h in H_ref])
    top2 = np.sort(sc, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 0.05 * np.abs(H_ref).max()
    assert clear.sum() >= 10
    assert np.array_equal(model.predict(Xn)[clear], lab_ref[clear])


def test_lp_directions_match_the_dp():
    tree, X, Y = _toy(m=1)
    lp = DirectionLP(tree, C=2.0)
    r = np.random.default_rng(3)
    for _ in range(5):
        g = r.normal(size=(tree.n_nodes, 4))
        lab, val = best_labelings(g[None], tree)
        v = lp.solve(g)
        assert np.vdot(g, v) == pytest.approx(max(2.0 * val[0], 0.0), abs=1e-6)
    # the LP variant trains to the same optimum
    tree, X, Y = _toy(m=5, seed=2)
    dp = fit_hm3(RBF(w=0.5), X, Y, tree, HM3Options(gap_tol=3e-3, working_set="cyclic", max_passes=3000))
    lpm = fit_hm3(
        RBF(w=0.5), X, Y, tree, HM3Options(gap_tol=3e-3, working_set="cyclic", max_passes=3000, direction="lp")
    )
    assert lpm.result.converged and lpm.result.dual == pytest.approx(dp.result.dual, rel=6e-3)


# capfd is read out at the start of each example, so sharing it between examples is safe
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=random_trees(max_nodes=7), seed=st.integers(0, 2**31 - 1), C=st.floats(0.5, 3.0))
def test_lp_direction_reaches_the_cvxpy_optimum_quietly(capfd, edges, seed, C):
    """HiGHS (scipy) against cvxpy on the same LP (11); the value must agree (the maximiser need not be
    unique), the point must satisfy the polytope's constraints, and nothing may reach stdout."""
    cp = pytest.importorskip("cvxpy")
    tree = ClassTree(edges)
    capfd.readouterr()
    g = np.random.default_rng(seed).normal(size=(tree.n_nodes, 4))
    lp = DirectionLP(tree, C)
    v_star = lp.solve(g)
    assert capfd.readouterr().out == ""
    v = cp.Variable((tree.n_nodes, 4))
    ref = cp.Problem(cp.Maximize(cp.sum(cp.multiply(g, v))), polytope_constraints(v, tree, C))
    ref.solve()
    assert np.vdot(g, v_star) == pytest.approx(ref.value, abs=1e-6 * max(1.0, abs(ref.value)))
    check = cp.Parameter((tree.n_nodes, 4), value=v_star)
    assert all(np.all(np.abs(np.atleast_1d(c.violation())) < 1e-7) for c in polytope_constraints(check, tree, C))


def test_node_svm_baselines_and_consistency():
    tree, X, Y = _toy(m=40, seed=4)
    for mode in ("flat", "hierarchical"):
        s = fit_node_svms(RBF(w=0.5), X, Y, tree, C=10.0, mode=mode)
        U = s.predict(X)
        check_multilabels(U, tree)  # consistent after the top-down pass
        assert np.mean(U == Y) > 0.8  # fits its training data well at C = 10
    U = np.array([[False, True, True, True, True, True]])
    np.testing.assert_array_equal(top_down_consistent(U, tree), [[False, True, False, False, True, False]])


def test_multilabel_scores_by_hand():
    t = ClassTree(SMALL_TREE)  # a, b, a1, a2, b1, x
    Y = np.array([[1, 0, 1, 0, 0, 1], [1, 1, 0, 1, 1, 0]], dtype=bool)
    U = np.array([[1, 0, 1, 0, 0, 0], [0, 1, 0, 0, 1, 0]], dtype=bool)
    assert zero_one_loss(Y, U, t) == 1.0
    assert symmetric_difference_loss(Y, U, t) == pytest.approx((1 + 2) / 2)
    # ℓ_H̃ uniform: ex.0 x wrong (parent a1 right) = 1; ex.1 a wrong (root) = 1, a2 wrong but a wrong -> 0
    assert htilde_loss(Y, U, t) == pytest.approx(1.0)
    assert h_loss(Y, U, t) == pytest.approx(1.0)
    assert htilde_loss(Y, U, t, "sibling") == pytest.approx((0.25 + 0.5) / 2)
    p, r_, f = micro_prf(Y, U, t)
    assert (p, r_) == (pytest.approx(4 / 4), pytest.approx(4 / 7))
    levels = per_level_prf(Y, U, t)
    assert [lv[0] for lv in levels] == [1, 2, 3] and levels[2][1:3] == (0.0, 0.0)
    rep = multilabel_report(Y, U, t)
    assert rep["f1"] == pytest.approx(f) and "htilde_subtree" in rep and "level2_recall" in rep


def test_bad_input_is_refused():
    t = ClassTree(SMALL_TREE)
    with pytest.raises(HierarchyError, match="partial paths.*'x' positive but its parent 'a1' negative"):
        check_multilabels(np.array([[1, 0, 0, 0, 0, 1]]), t)
    with pytest.raises(InputError, match=r"shape \(n, 6\)"):
        check_multilabels(np.zeros((2, 5)), t)
    with pytest.raises(InputError, match="0/1, -1/\\+1 or bool"):
        check_multilabels(np.full((1, 6), 2), t)
    with pytest.raises(HierarchyError, match="class indices"):
        paths_to_multilabels(np.array([0, 7]), t)
    with pytest.raises(HierarchyError, match="2 parents"):
        ClassTree([("root", "a"), ("root", "b"), ("a", "c"), ("b", "c")])
    with pytest.raises(HierarchyError, match="cycle"):
        ClassTree([("a", "b"), ("b", "a")])
    with pytest.raises(HierarchyError, match="not a node"):
        ClassTree(SMALL_TREE, classes=["x", "a2", "b1", "zz"])
    tree, X, Y = _toy()
    Yb = Y.copy()
    Yb[0] = [0, 0, 0, 0, 0, 1]
    with pytest.raises(HierarchyError, match="example 0"):
        fit_hm3(RBF(w=1.0), X, Yb, tree)
    with pytest.raises(InputError, match="rows"):
        fit_hm3(RBF(w=1.0), X[:-1], Y, tree)
    with pytest.raises(InputError, match="loss"):
        HM3Options(loss="hinge")
    with pytest.raises(HierarchyError):
        fit_node_svms(RBF(w=1.0), X, Yb, tree)
