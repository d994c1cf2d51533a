"""The byte accounting of bench/cv_bandwidth.py (issue 12, goal 5): what each stored-kernel read counts."""

import sys

import numpy as np
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))


def test_metered_counts_the_bytes_each_stored_read_touches_and_restores_the_classes():
    import cv_bandwidth as B

    from gpmodels.kernels import RBF
    from gpmodels.kernels import stored_gram as R

    X = np.random.default_rng(0).normal(size=(50, 3))
    rep = R.StoredGram(X, RBF(w=0.5))
    cross = rep.cross(np.arange(10), np.arange(10, 50))
    b = rep.M.itemsize  # bytes per stored entry
    originals = (R.StoredGram.mvm, R.MatrixCross.mvm, R.MatrixCross.rmvm)
    with B.metered(B.new_meter()) as meter:
        one = rep.mvm(np.ones((50, 1)))  # symv: one triangle, 50 * 51 / 2 doubles
        assert meter["bytes"] == 50 * 51 / 2 * b
        rep.mvm(np.ones((50, 3)))  # GEMM: the whole matrix
        assert meter["bytes"] == 50 * 51 / 2 * b + 50 * 50 * b
        cross.mvm(np.ones((40, 2)))
        cross.rmvm(np.ones((10, 1)))  # a cross block is read whole either way
        assert meter["bytes"] == 50 * 51 / 2 * b + 50 * 50 * b + 2 * 10 * 40 * cross.M.itemsize
        assert meter["calls"] == 4 and meter["seconds"] > 0
    assert (R.StoredGram.mvm, R.MatrixCross.mvm, R.MatrixCross.rmvm) == originals
    np.testing.assert_allclose(one[:, 0], rep.dense().sum(axis=1))  # the wrapper returns what the call did


def test_a_float32_matrix_times_a_few_columns_counts_one_triangle_where_the_compiled_product_runs():
    import cv_bandwidth as B

    from gpmodels.kernels import RBF, compiled_symv
    from gpmodels.kernels import representations as R

    X = np.random.default_rng(0).normal(size=(30, 3))
    rep = R.RepresentationConfig(kind="stored", dtype="float32").build(X, RBF(w=0.5))
    with B.metered(B.new_meter()) as meter:
        rep.mvm(np.ones((30, 3)))
    whole, triangle = 30 * 30 * 4, 30 * 31 / 2 * 4
    assert meter["bytes"] == (triangle if compiled_symv.AVAILABLE else whole)
