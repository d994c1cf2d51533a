"""Class-count-dependent paths at C >= 500 (a synthetic taxonomy of 600 leaves, NIPS 2007 Sec. 6.2's regime):
shapes, memory (no (n, C, C) arrays where O(n C) suffices) and correctness against dense references.

The dense references form Φ_L (C x P) and the per-point blocks explicitly, at few points."""

import tracemalloc

import numpy as np
import pytest

from gpmodels import metrics as M
from gpmodels.data.scaling import scale_features
from gpmodels.data.splits import kfold_partition
from gpmodels.data.taxonomy import TaxonomySize, synthetic_taxonomy
from gpmodels.errors import InputError
from gpmodels.inference.cv.criterion import cv_criterion
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.map.newton import NewtonOptions
from gpmodels.inference.map.newton_cg import newton_cg
from gpmodels.inference.map.preconditioners import DiagonalPreconditioner, make_preconditioner, point_blocks_bytes
from gpmodels.kernels.linear import Linear
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.priors.anova import ANOVAPrior
from gpmodels.scoring.decisions import max_expected_parent_accuracy, min_expected_taxo
from gpmodels.scoring.hierarchical_prf import hierarchical_prf
from gpmodels.scoring.metrics import hierarchical_report

C_BIG = 600


@pytest.fixture(scope="module")
def big():
    d = synthetic_taxonomy(
        TaxonomySize(2 * C_BIG, (12, 60, C_BIG)), seed=1, vocab=3000, terms_per_doc=20, topic_terms=80, n_test=40
    )
    X, _ = scale_features("unit_norm", d.X_train)
    return d, X


def _dense_lca_depth(tree):
    Phi = tree.phi_leaf_matrix()  # shape: (C, P), 0/1
    return Phi @ Phi.T  # non-root nodes shared by two leaves' paths = depth of their LCA


def test_taxo_matrix_against_the_dense_phi(big):
    d, _ = big
    tree = d.tree
    assert tree.n_classes == C_BIG
    depth = tree.depth[tree.leaves].astype(float)
    dense = 0.5 * (depth[:, None] + depth[None, :] - 2.0 * _dense_lca_depth(tree))
    np.testing.assert_array_equal(tree.taxo_matrix(), dense)
    rng = np.random.default_rng(0)
    for a, b in rng.integers(0, C_BIG, size=(20, 2)):  # path lengths walked on the tree
        assert dense[a, b] == 0.5 * tree.path_length(int(tree.leaves[a]), int(tree.leaves[b]))


def test_bayes_decisions_against_dense_references(big):
    d, _ = big
    tree = d.tree
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.full(C_BIG, 0.05), size=30)  # shape: (30, C)
    depth = tree.depth[tree.leaves].astype(float)
    delta = 0.5 * (depth[:, None] + depth[None, :] - 2.0 * _dense_lca_depth(tree))
    np.testing.assert_array_equal(min_expected_taxo(P, tree), np.argmin(P @ delta, axis=1))
    parents = tree.class_parents
    ref = []
    for p in P:  # the parent with the most leaf-child mass, then its most probable leaf
        mass = {q: p[parents == q].sum() for q in np.unique(parents)}
        best = max(mass, key=mass.get)
        kids = np.flatnonzero(parents == best)
        ref.append(kids[np.argmax(p[kids])])
    np.testing.assert_array_equal(max_expected_parent_accuracy(P, tree), ref)


def test_hierarchical_report_at_600_classes(big):
    d, _ = big
    tree = d.tree
    rng = np.random.default_rng(2)
    y = rng.integers(0, C_BIG, size=50)
    P = rng.dirichlet(np.full(C_BIG, 0.1), size=50)
    P[np.arange(25), y[:25]] += 5.0
    P /= P.sum(axis=1, keepdims=True)
    rep = hierarchical_report(P, y, tree, decision="expected_loss")
    assert {"acc", "prec", "pacc", "taxo", "level1_acc", "level3_acc", "hier_f1"} <= set(rep)
    y_taxo = min_expected_taxo(P, tree)
    assert rep["taxo"] == pytest.approx(M.taxo_loss(y_taxo, y, tree))
    h = hierarchical_prf(y, y_taxo, tree)
    anc = [set(tree.path(int(tree.leaves[c]))) for c in range(C_BIG)]  # a leaf's label set: its path
    inter = sum(len(anc[a] & anc[b]) for a, b in zip(y_taxo, y))
    assert h["hP"] == pytest.approx(inter / sum(len(anc[a]) for a in y_taxo))
    assert rep["hier_f1"] == pytest.approx(h["hF"])


def test_anova_diag_and_point_products_match_the_dense_blocks_at_600_classes(big):
    d, X = big
    prior = ANOVAPrior(d.tree, Linear(), sharing="level", variance=[1.0, 2.0, 3.0], sigma2=0.01)
    op = prior.operator(X[:6], C_BIG)
    blocks = op.point_blocks()  # shape: (6, C, C), the dense reference at few points
    np.testing.assert_allclose(op.diag(), np.einsum("icc->ic", blocks), rtol=1e-12)
    V = np.random.default_rng(3).normal(size=(6, C_BIG))
    np.testing.assert_allclose(op.point_block_mvm(V), np.einsum("icd,id->ic", blocks, V), rtol=1e-10, atol=1e-12)


def test_diag_needs_no_per_point_class_blocks(big):
    d, X = big
    op = ANOVAPrior(d.tree, Linear(), sharing="level", variance=2.0, sigma2=0.01).operator(X, C_BIG)
    n = X.shape[0]
    tracemalloc.start()
    diag = op.diag()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert diag.shape == (n, C_BIG)
    assert peak < 8 * 8 * n * (C_BIG + d.tree.n_nodes)  # a few (n, P) arrays, never (n, C, C) = 600x more


def test_auto_preconditioner_keeps_the_diagonal_where_class_blocks_would_not_fit(big):
    d, X = big
    op = ANOVAPrior(d.tree, Linear(), sharing="level", variance=2.0, sigma2=0.01).operator(X, C_BIG)
    assert point_blocks_bytes(op) > 2**30  # 1200 x 600^2 floats = 3.2 GiB
    assert isinstance(make_preconditioner("auto", op), DiagonalPreconditioner)
    for name in ("lowrank", "lowrank_block", "block"):
        with pytest.raises(InputError, match=rf"preconditioner '{name}' forms the per-point C x C blocks.*diagonal"):
            make_preconditioner(name, op)


def test_newton_cg_and_one_cv_evaluation_at_600_classes_stay_within_a_small_multiple_of_nC(big):
    """A MAP fit and one Ψ evaluation (3 folds, with its gradient) on n = 1200, C = 600: the peak of traced memory
    stays within r n C floats for a small r (the paper's implementation: r n C, Sec. 5)."""
    d, X = big
    tree = d.tree
    n = X.shape[0]
    op = ANOVAPrior(tree, Linear(), sharing="level", variance=2.0, sigma2=0.01).operator(X, C_BIG)
    lik, Y = Softmax(), np.eye(C_BIG)[d.y_train]
    nC_bytes = 8 * n * C_BIG
    tracemalloc.start()
    res = newton_cg(op, lik, Y, NewtonOptions(max_iter=2, cg_max_iter=8))
    fit_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    folds = kfold_partition(n, 3, 0, y=d.y_train)
    ev = cv_criterion(op, lik, Y, folds, CVOptions(newton=NewtonOptions(max_iter=1, cg_max_iter=6), k3=4, fail_tol=1e6))
    cv_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert res.alpha.shape == (n, C_BIG) and np.isfinite(res.phi)
    assert np.isfinite(ev.psi) and ev.gradient.shape == op.params.shape
    assert fit_peak < 40 * nC_bytes, fit_peak / nC_bytes
    assert cv_peak < 60 * nC_bytes, cv_peak / nC_bytes
    print(f"peak traced memory: fit {fit_peak / nC_bytes:.1f} nC floats, CV evaluation {cv_peak / nC_bytes:.1f}")
