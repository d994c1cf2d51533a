"""The synthetic WIPO-sized taxonomies: sizes of NIPS 2007 Sec. 6.2, the 4-level tree, sparse documents of about
150 distinct terms, determinism per seed, and a small size on which the ANOVA prior beats the flat one."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from gpmodels import metrics as M
from gpmodels.data.scaling import scale_features
from gpmodels.data.taxonomy import WIPO_SECTIONS, TaxonomySize, synthetic_taxonomy, taxonomy_size
from gpmodels.errors import InputError
from gpmodels.inference.map.newton import NewtonOptions
from gpmodels.inference.map.newton_cg import newton_cg
from gpmodels.kernels.linear import Linear
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.priors.anova import ANOVAPrior
from gpmodels.priors.independent import IndependentGP
from gpmodels.scoring.decisions import max_expected_parent_accuracy, min_expected_taxo


@pytest.fixture(scope="module")
def section_d():
    return synthetic_taxonomy("D", seed=0)


def test_the_presets_are_the_papers_sections():
    d, b = WIPO_SECTIONS["D"], WIPO_SECTIONS["B"]
    assert (d.n, d.n_classes, d.n_nodes, d.levels[0]) == (1140, 160, 187, 7)
    assert (b.n, b.n_classes, b.n_nodes, b.levels[0]) == (9794, 1172, 1319, 34)
    assert taxonomy_size(0.0) == d and taxonomy_size(1) == b and taxonomy_size("B") == b


def test_sizes_between_grow_monotonically():
    sizes = [taxonomy_size(t) for t in np.linspace(0, 1, 6)]
    for a, b in zip(sizes, sizes[1:]):
        assert a.n < b.n and all(x <= y for x, y in zip(a.levels, b.levels)) and a.n_classes < b.n_classes
    with pytest.raises(InputError, match="one of D, B or a number in"):
        taxonomy_size(1.5)
    with pytest.raises(InputError, match="one of D, B or a number in"):
        taxonomy_size("Z")


def test_section_d_shapes_tree_and_sparsity(section_d):
    d = section_d
    tree = d.tree
    assert (tree.n_classes, tree.n_nodes) == (160, 187)
    assert len(tree.root_children) == 7 and np.all(tree.depth[tree.leaves] == 3)  # root + 3 levels: 4 levels
    assert np.bincount(tree.depth)[1:].tolist() == [7, 20, 160]
    assert d.X_train.shape == (1140, 30000) and d.X_test.shape == (1140, 30000)
    for X in (d.X_train, d.X_test):
        assert sp.isspmatrix_csr(X) and X.dtype == np.float64 and X.has_canonical_format
    distinct = np.diff(d.X_train.indptr)
    assert 135 <= distinct.mean() <= 165 and distinct.min() > 50  # about 150 distinct terms per document
    assert d.y_train.min() == 0 and d.y_train.max() == 159 and np.bincount(d.y_train).min() >= 2
    assert set(np.unique(d.y_test)) <= set(range(160))
    ds = d.dataset()
    assert ds.classes == tree.classes and ds.n_classes == 160 and ds.sparse


def test_the_same_seed_gives_the_same_data_and_another_seed_other_data():
    size = TaxonomySize(120, (3, 6, 30))
    a, b = synthetic_taxonomy(size, seed=3, vocab=3000), synthetic_taxonomy(size, seed=3, vocab=3000)
    c = synthetic_taxonomy(size, seed=4, vocab=3000)
    assert (a.X_train != b.X_train).nnz == 0 and (a.X_test != b.X_test).nnz == 0
    assert np.array_equal(a.y_test, b.y_test) and a.tree.edges() == b.tree.edges()
    assert (a.X_train != c.X_train).nnz > 0


@settings(max_examples=8, deadline=None)
@given(
    l1=st.integers(1, 5),
    extra2=st.integers(0, 6),
    extra3=st.integers(0, 20),
    per_leaf=st.integers(2, 4),
    seed=st.integers(0, 2**16),
)
def test_any_level_counts_give_that_tree(l1, extra2, extra3, per_leaf, seed):
    l2 = l1 + extra2
    l3 = l2 + extra3
    size = TaxonomySize(per_leaf * l3 + 5, (l1, l2, l3))
    d = synthetic_taxonomy(size, seed=seed, vocab=2000, terms_per_doc=20, topic_terms=60, n_test=7)
    tree = d.tree
    assert np.bincount(tree.depth)[1:].tolist() == [l1, l2, l3]
    assert all(len(tree.children[p]) >= 1 for p in range(tree.n_nodes) if tree.depth[p] < 3)
    assert d.X_train.shape == (size.n, 2000) and d.X_test.shape == (7, 2000)
    assert np.bincount(d.y_train, minlength=l3).min() >= 2


def test_bad_arguments_are_refused():
    with pytest.raises(InputError, match="terms_per_doc must lie in"):
        synthetic_taxonomy("D", terms_per_doc=5)
    with pytest.raises(InputError, match="mix must be 4 positive weights"):
        synthetic_taxonomy("D", mix=(1, 1, 1))
    with pytest.raises(InputError, match="cannot give each of the 30 leaves 2 training documents"):
        synthetic_taxonomy(TaxonomySize(40, (3, 6, 30)), vocab=3000)
    with pytest.raises(InputError, match="at least as many nodes as the level above"):
        synthetic_taxonomy(TaxonomySize(100, (5, 3, 30)), vocab=3000)


def test_the_hierarchy_helps_at_few_documents_per_leaf():
    """ANOVA (H1, one variance per level) against the flat prior (F1) at the same v on 60 leaves with 4 documents
    each: the tree-shared topics give the ANOVA model a lower taxo-loss and a higher parent accuracy (Bayes rules)
    and a lower log loss."""
    d = synthetic_taxonomy(TaxonomySize(240, (4, 10, 60)), seed=0, vocab=5000, n_test=300, min_per_leaf=4)
    Xtr, _ = scale_features("unit_norm", d.X_train)
    Xte, _ = scale_features("unit_norm", d.X_test)
    tree, lik, y = d.tree, Softmax(), d.y_test
    Y = np.eye(tree.n_classes)[d.y_train]
    opts = NewtonOptions(max_iter=10, cg_max_iter=40)
    scores = {}
    for name, prior in (
        ("flat", IndependentGP(Linear(), sharing="tied", variance=5.0, sigma2=0.01)),
        ("anova", ANOVAPrior(tree, Linear(), sharing="level", variance=5.0, sigma2=0.01)),
    ):
        op = prior.operator(Xtr, tree.n_classes)
        res = newton_cg(op, lik, Y, opts)
        P = lik.predict(op.cross_test(Xte).mvm(res.alpha))
        scores[name] = (
            M.taxo_loss(min_expected_taxo(P, tree), y, tree),
            M.parent_accuracy(max_expected_parent_accuracy(P, tree), y, tree),
            M.log_loss(P, y),
        )
    (taxo_f, pacc_f, ll_f), (taxo_h, pacc_h, ll_h) = scores["flat"], scores["anova"]
    assert taxo_h < taxo_f - 0.05 and pacc_h > pacc_f + 0.03 and ll_h < ll_f, scores
