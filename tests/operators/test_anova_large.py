"""ANOVA at hundreds of classes: the compiled tree sweeps (gpmodels/tree_products.py) against the dense
Φ_L and against the numpy level walks, and the operator's MVM at C >= 500 against a dense reference, with
its memory (a small multiple r of n C numbers per vector)."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from gpmodels import tree_products
from gpmodels.hierarchy import ClassTree
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.priors.anova import ANOVAPrior

needs_numba = pytest.mark.skipif(not tree_products.AVAILABLE, reason="the compiled sweeps need Numba (fast)")


def wipo_like_tree(branching=(8, 8, 9), seed=0) -> ClassTree:
    """A 3-level tree with about prod(branching) leaves, uneven fan-out, one leaf directly under level 1."""
    rng = np.random.default_rng(seed)
    edges, frontier = [], ["root"]
    for b in branching:
        nxt = []
        for parent in frontier:
            for j in range(int(rng.integers(max(1, b - 2), b + 3))):
                name = f"{parent}/{j}" if parent != "root" else f"s{j}"
                edges.append((parent, name))
                nxt.append(name)
        frontier = nxt
    edges.append(("s0", "s0/leaf"))  # a leaf at depth 2 among depth-3 leaves
    return ClassTree(edges)


@pytest.fixture(scope="module")
def tree():
    t = wipo_like_tree()
    assert t.n_classes >= 500
    return t


def test_the_tree_is_as_large_as_the_tests_need(tree):
    assert tree.n_classes >= 500 and tree.n_nodes > tree.n_classes and tree.max_depth == 3


@pytest.mark.parametrize("k", [None, 1, 3])
def test_phi_phi_t_and_mix_against_the_dense_leaf_matrix(tree, rng, k, monkeypatch):
    Phi = tree.phi_leaf_matrix()  # shape: (C, P)
    C, P = Phi.shape
    tail = () if k is None else (k,)
    U, E = rng.normal(size=(6, P) + tail), rng.normal(size=(6, C) + tail)
    w = rng.random(P)
    ref_phi = np.einsum("cp,ip...->ic...", Phi, U)
    ref_phi_t = np.einsum("cp,ic...->ip...", Phi, E)
    ref_mix = np.einsum("cd,id...->ic...", (Phi * w) @ Phi.T, E)
    runs = [True, False] if tree_products.AVAILABLE else [False]
    for compiled in runs:  # compiled sweeps and the numpy level walks give the same sums
        monkeypatch.setattr(tree_products, "AVAILABLE", compiled)
        np.testing.assert_allclose(tree.phi(U), ref_phi, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(tree.phi_t(E), ref_phi_t, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(tree.mix(E, w), ref_mix, rtol=1e-12, atol=1e-11)


@needs_numba
@pytest.mark.parametrize("k", [1, 2])  # 1: the sweeps of one right-hand side (_mix1)
def test_the_sweeps_on_several_threads_give_the_one_thread_sums(tree, rng, k, monkeypatch):
    monkeypatch.setattr(tree_products, "MIN_PARALLEL_WORK", 0)
    E = rng.normal(size=(13, tree.n_classes, k))
    w = rng.random(tree.n_nodes)
    one = tree_products.mix_rows(E, tree.parent, tree.leaves, w, threads=1)
    for threads in (2, 3):
        np.testing.assert_array_equal(tree_products.mix_rows(E, tree.parent, tree.leaves, w, threads=threads), one)
        np.testing.assert_array_equal(
            tree_products.phi_t_rows(E, tree.parent, tree.leaves, threads=threads),
            tree_products.phi_t_rows(E, tree.parent, tree.leaves, threads=1),
        )


@needs_numba
def test_the_one_column_mix_is_the_many_column_mix_column_by_column(tree, rng):
    E = rng.normal(size=(9, tree.n_classes))
    w = rng.random(tree.n_nodes)
    one = tree_products.mix_rows(E, tree.parent, tree.leaves, w)
    both = tree_products.mix_rows(np.stack([E, -E], axis=2), tree.parent, tree.leaves, w)
    np.testing.assert_array_equal(one, both[:, :, 0])
    np.testing.assert_array_equal(tree_products.mix_rows(E[:, :, None], tree.parent, tree.leaves, w)[:, :, 0], one)


def _anova(tree, X, sharing, rep_kind="features"):
    groups = tree.node_groups(sharing)
    v = np.linspace(0.5, 2.0, int(groups.max()) + 1)
    prior = ANOVAPrior(tree, Linear(), sharing=sharing, variance=list(v), representation=RepresentationConfig(rep_kind))
    return prior.operator(X, tree.n_classes), v[groups]


@pytest.mark.parametrize("sharing", ["tied", "level", "subtree"])
def test_anova_mvm_at_500_classes_against_the_dense_reference(tree, rng, sharing):
    n = 12
    X = sp.random(n, 40, density=0.3, format="csr", random_state=rng)
    op, v_nodes = _anova(tree, X, sharing)
    M = (X @ X.T).toarray()
    Phi = tree.phi_leaf_matrix()
    V = rng.normal(size=(n, tree.n_classes, 2))
    # K = (Φ_L ⊗ I)(diag(v) ⊗ M)(Φ_L^T ⊗ I) in the (n, C, k) layout (Seeger 2008, eq. 2)
    S = (Phi * v_nodes) @ Phi.T  # shape: (C, C)
    ref = np.einsum("cd,ij,jdk->ick", S, M, V, optimize=True)
    got = op.mvm(V)
    assert got.shape == V.shape
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
    np.testing.assert_allclose(op.diag(), np.einsum("cp,p,i->ic", Phi, v_nodes, np.diag(M)), rtol=1e-12)


@needs_numba
@pytest.mark.parametrize("sharing", ["level", "subtree"])
def test_anova_mvm_memory_is_a_small_multiple_of_n_c(tree, rng, sharing):
    """One merged product per shared kernel matrix, the class mixing without an (n, P, k) intermediate:
    the MVM's peak of new memory stays within r = 4 vectors of n C numbers (plus the feature form's
    d-row panel, here small)."""
    n = 400
    X = sp.random(n, 30, density=0.2, format="csr", random_state=rng)
    op, _ = _anova(tree, X, sharing)
    V = rng.normal(size=(n, tree.n_classes))
    op.mvm(V)  # compiled, warm
    tracemalloc.start()
    tracemalloc.reset_peak()
    op.mvm(V)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    r = peak / V.nbytes
    assert r <= 4.0, f"an ANOVA MVM took {r:.2f} vectors of n C numbers"
