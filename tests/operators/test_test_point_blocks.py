"""Operator.test_point_blocks(X_new): the prior C x C blocks K̃_** at new points.

Oracle: the same operator built on the training inputs and X_new together; block j is the
(j, j) point block of its dense matrix at the new point j.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from minimal_operator import DenseTestOperator

from gpmodels.errors import InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.precomputed import Precomputed, index_inputs
from gpmodels.kernels.rbf import ARD, RBF
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.coupled import Coupled
from gpmodels.operators.intercept import Intercept
from gpmodels.operators.sum import Sum
from gpmodels.priors.anova import ANOVAPrior
from gpmodels.testing import assert_close

STORED = RepresentationConfig(kind="stored")
TREE = ClassTree([("root", "a"), ("root", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2"), ("b", "b3")])


def _blockdiag(X, C=3, mode="separate"):
    v = 0.7 if mode == "tied" else np.linspace(0.5, 2.0, C)
    return BlockDiagonal.from_sharing(X, RBF(w=0.8), C, mode, v, STORED)


def _groups(X):
    return BlockDiagonal(X, [RBF(w=0.5), ARD(w=[0.3, 2.0])], [[0, 2], [1]], [1.5, 0.4], [[0], [1, 2]], STORED)


FACTORIES = {
    "blockdiag-separate": lambda X: _blockdiag(X),
    "blockdiag-tied": lambda X: _blockdiag(X, mode="tied"),
    "blockdiag-groups": _groups,
    "intercept": lambda X: Intercept(_blockdiag(X, mode="semi"), 0.6),
    "sum": lambda X: Sum([_blockdiag(X), Intercept(_groups(X), 0.3)], [0.4, 1.7]),
    "coupled-square": lambda X: Coupled(_blockdiag(X), np.array([[1.0, 0.2, 0.0], [-0.5, 1.0, 0.3], [0.1, 0.4, 0.9]])),
    "coupled-loadings": lambda X: Coupled(
        _blockdiag(X, C=2), np.array([[1.0, 0.2], [-0.5, 1.0], [0.1, 0.4], [0.3, -0.2]])
    ),
    "anova-level": lambda X: ANOVAPrior(
        TREE, RBF(w=0.6), sharing="level", variance=[1.2, 0.5], representation=STORED
    ).operator(X, TREE.n_classes),
    "anova-node-intercept": lambda X: ANOVAPrior(
        TREE, RBF(w=0.6), sharing="node", variance=0.8, sigma2=0.5, representation=STORED
    ).operator(X, TREE.n_classes),
}


def _oracle(factory, X, X_new):
    n, m = X.shape[0], X_new.shape[0]
    full = factory(np.vstack([X, X_new]))
    C = full.n_classes
    D = full.dense().reshape(n + m, C, n + m, C)
    return np.stack([D[n + j, :, n + j, :] for j in range(m)])


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_blocks_equal_the_operator_built_on_all_points(name):
    rng = np.random.default_rng(3)
    X, X_new = rng.normal(size=(6, 2)), rng.normal(size=(4, 2))
    op = FACTORIES[name](X)
    got = op.test_point_blocks(X_new)
    assert got.shape == (4, op.n_classes, op.n_classes)
    assert_close(f"{name}: test_point_blocks", got, _oracle(FACTORIES[name], X, X_new), 1e-12, 1e-12)


def test_low_rank_and_feature_representations_use_the_exact_diagonal():
    rng = np.random.default_rng(4)
    X, X_new = rng.normal(size=(8, 3)), rng.normal(size=(3, 3))
    low = BlockDiagonal.from_sharing(X, RBF(w=0.5), 2, "semi", [0.5, 2.0], RepresentationConfig(kind="lowrank", rank=2))
    expect = np.stack([np.diag([0.5, 2.0])] * 3)  # RBF: M(x, x) = 1
    assert_close("low rank", low.test_point_blocks(X_new), expect, 1e-12, 1e-12)
    Xs, Xs_new = sp.csr_matrix(X), sp.csr_matrix(X_new)
    feat = BlockDiagonal.from_sharing(Xs, Linear(), 2, "tied", 1.5, RepresentationConfig(kind="features"))
    d = 1.5 * np.sum(X_new**2, axis=1)
    assert_close("features", feat.test_point_blocks(Xs_new), d[:, None, None] * np.eye(2)[None], 1e-12, 1e-12)


def test_precomputed_kernel_reads_the_gram_diagonal():
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(7, 7))
    G = Z @ Z.T
    op = BlockDiagonal.from_sharing(index_inputs([0, 2, 4]), Precomputed(G), 2, "semi", [1.0, 3.0], STORED)
    got = op.test_point_blocks(index_inputs([1, 6]))
    expect = np.stack([np.diag([G[i, i], 3 * G[i, i]]) for i in (1, 6)])
    assert_close("precomputed", got, expect, 1e-12, 1e-12)


def test_an_operator_without_the_capability_names_itself():
    op = DenseTestOperator.random(np.random.default_rng(0), 3, 2)
    with pytest.raises(InputError, match="DenseTestOperator.*test_point_blocks"):
        op.test_point_blocks(np.zeros((2, 1)))


def test_new_points_with_the_wrong_width_are_refused():
    op = _blockdiag(np.zeros((4, 2)))
    with pytest.raises(InputError, match="features"):
        op.test_point_blocks(np.zeros((2, 3)))
