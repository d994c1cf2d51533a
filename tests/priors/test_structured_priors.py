"""ANOVA and coupled priors beyond the conformance suite: sharing groups, special cases that must
reduce to known operators, B initialisations, MVM merging, errors."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from tree_strategies import random_trees

from gpmodels.errors import HierarchyError, InputError
from gpmodels.hierarchy import TREE_SHARING, ClassTree
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.rbf import RBF
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.operators.anova import ANOVA
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.coupled import Coupled
from gpmodels.priors import ANOVAPrior, CoupledPrior, IndependentGP, coupling_init

NEWS = [
    ("root", "alt"),
    ("root", "comp"),
    ("comp", "graphics"),
    ("comp", "sys"),
    ("sys", "ibm"),
    ("sys", "mac"),
    ("root", "rec"),
    ("rec", "autos"),
    ("rec", "sport"),
    ("sport", "baseball"),
    ("sport", "hockey"),
]


@given(random_trees(max_nodes=12))
def test_tree_sharing_groups_and_ancestors(edges):
    tree = ClassTree(edges)
    assert tree.node_groups("tied").tolist() == [0] * tree.n_nodes
    assert tree.node_groups("node").tolist() == list(range(tree.n_nodes))
    lv = tree.node_groups("level")
    assert all(
        (lv[p] == lv[q]) == (tree.depth[p] == tree.depth[q]) for p in range(tree.n_nodes) for q in range(tree.n_nodes)
    )
    top = tree.ancestors_at_depth(1)
    for p in range(tree.n_nodes):
        assert top[p] == tree.path(p)[0]
    st_ = tree.node_groups("subtree")
    assert all((st_[p] == st_[q]) == (top[p] == top[q]) for p in range(tree.n_nodes) for q in range(tree.n_nodes))
    for mode in TREE_SHARING:
        g = tree.class_groups(mode)
        assert sorted(set(g.tolist())) == list(range(int(g.max()) + 1))  # no gaps
    mask = tree.leaf_mask(np.arange(-1, tree.n_nodes))
    assert mask[0].all()
    np.testing.assert_array_equal(mask[1:].T, tree.phi_leaf_matrix().astype(bool))
    assert ClassTree(tree.edges(), tree.classes).nodes == tree.nodes


def test_sharing_modes_give_the_paper_parameter_counts_and_names():
    tree = ClassTree(NEWS)  # P = 11, depths 1..3, root children alt, comp, rec
    X = np.random.default_rng(0).normal(size=(6, 2))
    counts = {"tied": 1, "level": 3, "subtree": 3, "node": 11}
    for mode, k in counts.items():
        op = ANOVAPrior(tree, Linear(), mode, 2.0).operator(X, tree.n_classes)
        assert op.params.size == k
    op = ANOVAPrior(tree, RBF(0.5), "subtree", [1.0, 2.0, 3.0], kernel_sharing="tied", sigma2=0.1).operator(
        X, tree.n_classes
    )
    assert op.param_names == (
        "kernel.log_w",
        "log_variance[subtree:alt]",
        "log_variance[subtree:comp]",
        "log_variance[subtree:rec]",
    )
    with pytest.raises(InputError, match="3 variance groups .*level1, level2, level3.*got 2"):
        ANOVAPrior(tree, Linear(), "level", [1.0, 2.0]).operator(X, tree.n_classes)
    with pytest.raises(InputError, match="sharing must be one of"):
        ANOVAPrior(tree, Linear(), "per-class")
    with pytest.raises(HierarchyError, match="the data have 3 classes but the tree has 7 leaves"):
        ANOVAPrior(tree, Linear()).operator(X, 3)
    bd = BlockDiagonal.from_sharing(X, Linear(), 4, "tied", 1.0)
    with pytest.raises(InputError, match="the tree has 11 nodes but K̆ has 4 blocks"):
        ANOVA(bd, tree)


def test_flat_class_groups_are_the_F2_setup():
    tree = ClassTree(NEWS)
    X = np.random.default_rng(0).normal(size=(5, 2))
    groups = tree.class_groups("subtree")
    vg = [list(np.flatnonzero(groups == g)) for g in range(int(groups.max()) + 1)]
    op = IndependentGP(
        Linear(), None, [1.0, 2.0, 3.0], kernel_groups=[list(range(tree.n_classes))], variance_groups=vg
    ).operator(X, tree.n_classes)
    v = op.class_variances
    assert [v[tree.classes.index(c)] for c in ("alt", "graphics", "hockey")] == [1.0, 2.0, 3.0]


def test_a_depth_one_tree_is_the_flat_prior():
    tree = ClassTree([("r", "x"), ("r", "y"), ("r", "z")], classes=["z", "x", "y"])
    X = np.random.default_rng(1).normal(size=(6, 2))
    v = [1.0, 2.0, 3.0]  # per node x, y, z (breadth-first order)
    op = ANOVAPrior(tree, RBF(0.7), "node", v).operator(X, 3)
    assert op.is_class_diagonal
    flat = BlockDiagonal.from_sharing(X, RBF(0.7), 3, "semi", [3.0, 1.0, 2.0])
    np.testing.assert_allclose(op.dense(), flat.dense(), atol=1e-12)


@pytest.mark.parametrize("dense_max_c", [64, 0])
def test_merged_gemm_path_equals_the_node_space_path_on_sparse_text(monkeypatch, dense_max_c):
    import gpmodels.operators.anova as anova_mod

    monkeypatch.setattr(anova_mod, "DENSE_CLASS_MIX_MAX_C", dense_max_c)  # 0: class mixing by tree walks
    tree = ClassTree(NEWS)
    r = np.random.default_rng(2)
    X = sp.random(30, 50, density=0.1, random_state=3, format="csr")
    for mode in ("tied", "level", "node"):
        prior = ANOVAPrior(
            tree,
            Linear(),
            mode,
            [1.5, 0.7, 2.0] if mode == "level" else 1.5,
            representation=RepresentationConfig(kind="features"),
        )
        op = prior.operator(X, tree.n_classes)
        slow = ANOVA(op.inner, tree, merge_gemm=False)
        for k in (1, 3):
            V = r.normal(size=(30, tree.n_classes, k))
            np.testing.assert_allclose(op.mvm(V), slow.mvm(V), atol=1e-12)
            np.testing.assert_allclose(op.mvm(V[:, :, 0]), slow.mvm(V[:, :, 0]), atol=1e-12)


def test_square_tree_coupling_reproduces_the_anova_prior():
    """B = S^{1/2}, S = Φ_L Φ_L^T: (B ⊗ I)(I ⊗ vM)(B^T ⊗ I) = S ⊗ vM = ANOVA with tied v and M."""
    tree = ClassTree(NEWS)
    X = np.random.default_rng(3).normal(size=(5, 2))
    B = coupling_init(tree.n_classes, None, "tree", tree=tree)
    S = tree.lca_depth_matrix()
    np.testing.assert_allclose(B @ B.T, S / np.mean(np.diag(S)), atol=1e-12)
    scale = np.mean(np.diag(S))
    cop = CoupledPrior(RBF(0.5), B=B, variance=2.0 * scale).operator(X, tree.n_classes)
    aop = ANOVAPrior(tree, RBF(0.5), "tied", 2.0).operator(X, tree.n_classes)
    np.testing.assert_allclose(cop.dense(), aop.dense(), atol=1e-10)


@pytest.mark.parametrize("init, p", [("random", 3), ("tree", 4), ("random", 7)])
def test_loadings_initialisations_are_contrasts_with_unit_mean_variance(init, p):
    tree = ClassTree(NEWS)
    C = tree.n_classes
    B = coupling_init(C, p, init, tree=tree, seed=5)
    assert B.shape == (C, p)
    assert np.mean(np.sum(B * B, axis=1)) == pytest.approx(1.0)
    if p < C:
        np.testing.assert_allclose(B.sum(axis=0), 0.0, atol=1e-10)  # orthogonal to 1
        G = B.T @ B
        np.testing.assert_allclose(G, np.diag(np.diag(G)), atol=1e-10)  # orthogonal columns
    np.testing.assert_array_equal(coupling_init(C, p, init, tree=tree, seed=5), B)  # deterministic


def test_coupling_defaults_masks_and_errors():
    tree = ClassTree(NEWS)
    C = tree.n_classes
    X = np.random.default_rng(4).normal(size=(5, 2))
    np.testing.assert_array_equal(coupling_init(C), np.eye(C))
    assert coupling_init(C, 3, tree=tree).shape == (C, 3)  # auto -> tree
    op = CoupledPrior(RBF(0.5), sigma2=0.1).operator(X, C)
    flat = IndependentGP(RBF(0.5), "tied", 1.0, 0.1).operator(X, C)
    np.testing.assert_allclose(op.dense(), flat.dense(), atol=1e-12)  # identity start = flat model
    assert op.params.size == 2 + C * C
    mask = np.tril(np.ones((C, C), dtype=bool))
    cop = Coupled(op.inner.inner, np.eye(C), learn=mask)
    assert cop.params.size == 2 + mask.sum() and cop.param_names[2] == "B[0,0]"
    theta = cop.params.copy()
    theta[2:] += 0.5
    assert np.all(cop.with_params(theta).B[~mask] == 0.0)
    with pytest.raises(InputError, match="init 'identity' needs a square B"):
        coupling_init(C, 3, "identity")
    with pytest.raises(InputError, match="needs a class tree"):
        coupling_init(C, 3, "tree")
    with pytest.raises(InputError, match="p <= C columns"):
        Coupled(BlockDiagonal.from_sharing(X, RBF(0.5), 9, "tied", 1.0), np.ones((7, 9)))
    with pytest.raises(InputError, match="B has 4 columns but the inner operator has 3"):
        Coupled(BlockDiagonal.from_sharing(X, RBF(0.5), 3, "tied", 1.0), np.ones((7, 4)))
    with pytest.raises(InputError, match="boolean mask"):
        Coupled(BlockDiagonal.from_sharing(X, RBF(0.5), 3, "tied", 1.0), np.ones((7, 3)), learn=np.ones((2, 2), bool))


def test_builtin_priors_resolve_in_a_fresh_interpreter_without_the_spec_package():
    """The built-in priors are a table of the registry, not a side effect of importing gpmodels.driver."""
    import subprocess
    import sys

    code = (
        "import sys, gpmodels\n"
        "from gpmodels.priors import anova, coupled, independent, registry\n"
        "assert registry.resolve_prior('anova') is anova.build_anova\n"
        "assert registry.resolve_prior('independent') is independent.build_independent\n"
        "assert registry.resolve_prior('coupled') is registry.resolve_prior('loadings') is coupled.build_coupled\n"
        "assert registry.registered_priors() == ('independent', 'anova', 'coupled', 'loadings')\n"
        "assert not any(m.startswith('gpmodels.driver') for m in sys.modules), 'gpmodels.driver was imported'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_builtin_priors_cannot_be_replaced_but_re_registering_them_is_a_no_op():
    from gpmodels.priors import register_prior, unregister_prior
    from gpmodels.priors.registry import resolve_prior

    assert register_prior("anova", resolve_prior("anova")) is resolve_prior("anova")
    with pytest.raises(ValueError, match="built-in prior"):
        register_prior("anova", lambda ctx: None)
    with pytest.raises(ValueError, match="built-in prior"):
        unregister_prior("coupled")
