"""Rousu et al. 2006, Algorithm 2 (conditional subspace gradient ascent) as a function of its own: the vertex
oracle against brute force, one step against its closed form, many steps against the cvxpy optimum of (8)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_strategies import random_trees

from gpmodels.baselines.hm3.inference import edge_losses, edge_onehot, labeling_scores
from gpmodels.baselines.hm3.lp import solve_marginal_qp
from gpmodels.baselines.hm3.solver import (
    best_vertex,
    conditional_gradient_ascent,
    edge_gradients,
)
from gpmodels.hierarchy import ClassTree

SMALL_TREE = [("root", "a"), ("root", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1"), ("a1", "x")]
Y_SMALL = np.array([[1, 0, 1, 0, 0, 1]], dtype=bool)  # a, a1, x positive: one partial path


def _dual(mu, L, Yoh, k_ii):
    """f = μ·ℓ − ½ k_ii Σ_e ||ν_e||² of (8) for one example, ν = m Y − μ."""
    nu = mu.sum(axis=1)[:1] * Yoh - mu
    return float(np.vdot(mu, L) - 0.5 * k_ii * np.sum(nu**2))


def _small():
    tree = ClassTree(SMALL_TREE)
    return tree, edge_losses(Y_SMALL, tree)[0], edge_onehot(Y_SMALL, tree)[0]


@settings(max_examples=25)
@given(random_trees(max_nodes=7), st.integers(0, 2**31 - 1), st.floats(0.1, 3.0))
def test_best_vertex_maximises_the_linear_objective_over_all_labelings(edges, seed, C):
    tree = ClassTree(edges)
    g = np.random.default_rng(seed).normal(size=(tree.n_nodes, 4))
    allY = np.array(list(itertools.product([False, True], repeat=tree.n_nodes)), dtype=bool)
    best = labeling_scores(np.broadcast_to(g, (len(allY),) + g.shape), allY, tree).max()
    star = best_vertex(g, tree, C)
    assert np.vdot(g, star) == pytest.approx(max(C * best, 0.0), abs=1e-10)
    # C times a vertex of the marginal polytope: one labeling per edge, or the zero vertex
    per_edge = (star > 0).sum(axis=1)
    assert np.all(per_edge == per_edge[0]) and per_edge[0] in (0, 1)
    assert set(np.unique(star)) <= {0.0, C}


def test_one_step_is_the_clipped_exact_line_search():
    tree, L, Yoh = _small()
    k_ii, C = 0.7, 1.5
    mu, _, steps = conditional_gradient_ascent(L, np.zeros_like(L), Yoh, k_ii, tree, C, 1)
    star = best_vertex(L, tree, C)
    nu_star = star.sum(axis=1)[:1] * Yoh - star
    q = float(np.vdot(L, star))
    r = k_ii * float(np.sum(nu_star**2))  # Δμᵀ K_ii Δμ = k_ii Σ_e ||Δν_e||² (Sec. 3.5)
    tau = min(q / r, 1.0)
    assert steps == 1
    np.testing.assert_allclose(mu, tau * star, rtol=1e-14, atol=0)
    np.testing.assert_allclose(_dual(mu, L, Yoh, k_ii), tau * q - 0.5 * tau**2 * r, rtol=1e-12)


def test_returned_gradient_is_that_of_the_returned_mu_and_inputs_are_untouched():
    tree, L, Yoh = _small()
    k_ii, C = 1.3, 1.0
    mu0 = 0.25 * best_vertex(L, tree, C)
    nu0 = mu0.sum(axis=1)[:1] * Yoh - mu0
    g0 = edge_gradients(L, k_ii * nu0, np.argmax(Yoh, axis=1))
    mu0_copy, g0_copy = mu0.copy(), g0.copy()
    mu, g, _ = conditional_gradient_ascent(g0, mu0, Yoh, k_ii, tree, C, 7)
    nu = mu.sum(axis=1)[:1] * Yoh - mu
    np.testing.assert_allclose(g, edge_gradients(L, k_ii * nu, np.argmax(Yoh, axis=1)), atol=1e-12)
    assert np.array_equal(mu0, mu0_copy) and np.array_equal(g0, g0_copy)


def test_the_dual_increases_step_by_step():
    tree, L, Yoh = _small()
    values = [
        _dual(conditional_gradient_ascent(L, np.zeros_like(L), Yoh, 0.3, tree, 2.0, n)[0], L, Yoh, 0.3)
        for n in range(12)
    ]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(values)) and values[-1] > values[0]


@pytest.mark.parametrize("k_ii,C,rel", [(1.0, 1.0, 1e-8), (2.0, 0.5, 1e-8), (0.3, 2.0, 1e-3)])
def test_many_steps_reach_the_cvxpy_optimum_of_one_example(k_ii, C, rel):
    tree, L, Yoh = _small()
    mu, _, _ = conditional_gradient_ascent(L, np.zeros_like(L), Yoh, k_ii, tree, C, 400)
    _, value = solve_marginal_qp(np.array([[k_ii]]), L[None], Yoh[None], tree, C)
    assert _dual(mu, L, Yoh, k_ii) == pytest.approx(value, rel=rel)
    assert mu.min() >= 0.0 and mu.sum(axis=1).max() <= C * (1 + 1e-12)
