"""Bad input gets a clear error naming what is wrong and what is allowed."""

import numpy as np
import pytest

from gpmodels.errors import InputError
from gpmodels.kernels.rbf import RBF
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.intercept import Intercept
from gpmodels.priors.independent import IndependentGP
from gpmodels.validation import labels_to_targets


def _X():
    return np.random.default_rng(0).normal(size=(6, 2))


@pytest.mark.parametrize("bad, shown", [(np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_non_finite_inputs(bad, shown):
    X = _X()
    X[2, 1] = bad
    with pytest.raises(InputError, match=rf"X must be finite \(no NaN or inf\); found {shown} at index \(2, 1\)"):
        BlockDiagonal.from_sharing(X, RBF(1.0), 3)
    op = BlockDiagonal.from_sharing(_X(), RBF(1.0), 3)
    with pytest.raises(InputError, match="X_new must be finite"):
        op.cross_test(X)


def test_labels_outside_the_classes():
    with pytest.raises(InputError, match=r"label 3 at position 1 is outside the classes 0..2"):
        labels_to_targets(np.array([0, 3, 1]), 3)
    with pytest.raises(InputError, match="integers"):
        labels_to_targets(np.array([0.5, 1.0]), 3)


def test_shape_mismatches_are_named():
    op = BlockDiagonal.from_sharing(_X(), RBF(1.0), 3)
    with pytest.raises(InputError, match=r"V must have shape \(6, 3\) or \(6, 3, k\); got \(6, 2\)"):
        op.mvm(np.zeros((6, 2)))
    with pytest.raises(InputError, match="E and F must have the same shape"):
        op.grad_trace(np.zeros((6, 3, 2)), np.zeros((6, 3, 1)))
    with pytest.raises(InputError, match="J must index range"):
        op.restrict([0, 9])
    with pytest.raises(InputError, match="must not repeat"):
        op.restrict([0, 0])
    with pytest.raises(InputError, match="X_new must have 2 features"):
        op.cross_test(np.zeros((2, 5)))
    with pytest.raises(InputError, match=r"has 6 parameters .*; got 2 values"):
        op.with_params([0.0, 0.0])
    with pytest.raises(InputError, match="finite"):
        op.with_params([0.0, np.nan, 0.0, 0.0, 0.0, 0.0])


@pytest.mark.parametrize("v", [0.0, -1.0, np.nan])
def test_non_positive_hyperparameters(v):
    with pytest.raises(InputError, match="variances must be positive"):
        BlockDiagonal.from_sharing(_X(), RBF(1.0), 2, "tied", v)
    with pytest.raises(InputError, match="sigma2"):
        Intercept(BlockDiagonal.from_sharing(_X(), RBF(1.0), 2), v)


def test_sharing_and_groups_are_checked():
    with pytest.raises(InputError, match="sharing must be one of"):
        BlockDiagonal.from_sharing(_X(), RBF(1.0), 2, "shared")
    with pytest.raises(InputError, match="needs 3 variances; got 2"):
        BlockDiagonal.from_sharing(_X(), RBF(1.0), 3, "semi", [1.0, 2.0])
    with pytest.raises(InputError, match="class 1 appears in more than one group"):
        BlockDiagonal(_X(), [RBF(1.0), RBF(2.0)], [[0, 1], [1, 2]], [1.0], [[0, 1, 2]])
    with pytest.raises(InputError, match="kernel groups but 1 kernels"):
        BlockDiagonal(_X(), [RBF(1.0)], [0, 1, 1], [1.0], [0, 0, 0])
    with pytest.raises(InputError, match="the groups cover 3 classes but the data have 4"):
        IndependentGP(RBF(1.0), None, 1.0, 0.0, [[0, 1, 2]], [[0, 1, 2]]).operator(_X(), 4)
    with pytest.raises(InputError, match="either a sharing mode or"):
        IndependentGP(RBF(1.0), "tied", 1.0, 0.0, [[0]], [[0]]).operator(_X(), 1)
