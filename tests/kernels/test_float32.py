"""float32 storage of stored Gram matrices with float64 accumulation (gpmodels/kernels/mixed_precision.py).

Tolerances: storing M in float32 rounds every entry once, |fl32(M_ab) - M_ab| <= 2^-24 |M_ab| (≈ 6e-8
relative); all products accumulate in float64.  So (i) against the float32-rounded matrix an MVM is
exact up to float64 rounding (1e-12), and (ii) against the float64 representation the error of
(M B)_ik is bounded entrywise by 2^-24 Σ_b |M_ib| |B_bk| (plus float64 rounding) -- the bound the
tests check, rather than a loose global tolerance.
"""

import numpy as np
import pytest
from conftest import toy_classification
from oracles import block_diagonal_cross, block_diagonal_dense, naive_gram

import gpmodels.kernels.mixed_precision as mp
from gpmodels.estimators import GPClassifier
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions
from gpmodels.kernels.rbf import ARD, RBF
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.kernels.stored_gram import StoredGram
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.priors import IndependentGP
from gpmodels.testing import assert_close, check_operator

U32 = 2.0**-24


def _rounded(M):
    return M.astype(np.float32).astype(np.float64)


def _within_rounding_bound(what, got, exact, M, B):
    bound = U32 * (np.abs(M) @ np.abs(B)) * 1.01 + 1e-13 * np.abs(M).max() * np.abs(B).sum(axis=0)
    excess = np.abs(got - exact) - bound
    assert np.all(excess <= 0), f"{what}: float32 error exceeds 2^-24 sum |M||B| by {excess.max():.3g}"


@pytest.mark.parametrize("m", [1, 10])
def test_float32_mvm_against_float64_within_the_rounding_bound(rng, m):
    X = rng.normal(size=(300, 4))
    k = RBF(0.7)
    r64, r32 = StoredGram(X, k), StoredGram(X, k, dtype="float32")
    assert r32.M.dtype == np.float32 and r32.nbytes == r64.nbytes // 2
    B = rng.normal(size=(300, m))
    _within_rounding_bound("mvm", r32.mvm(B), r64.mvm(B), r64.M, B)
    assert_close("mvm vs the float32-rounded matrix in float64", r32.mvm(B), _rounded(r64.M) @ B, 1e-12)
    J, I = np.arange(0, 300, 2), np.arange(1, 300, 3)
    sub = r32.restrict(J)
    assert sub.M.dtype == np.float32
    assert_close("restrict", sub.mvm(B[J]), _rounded(r64.M)[np.ix_(J, J)] @ B[J], 1e-12)
    cr = r32.cross(I, J)
    assert_close("cross mvm", cr.mvm(B[J]), _rounded(r64.M)[np.ix_(I, J)] @ B[J], 1e-12)
    assert_close("cross rmvm", cr.rmvm(B[I]), _rounded(r64.M)[np.ix_(I, J)].T @ B[I], 1e-12)
    assert cr.dense().dtype == np.float64


def test_tiled_products_on_several_row_and_column_tiles(rng, monkeypatch):
    monkeypatch.setattr(mp, "TILE_ROWS", 7)
    monkeypatch.setattr(mp, "TILE_COLS", 5)
    M = rng.normal(size=(23, 17)).astype(np.float32)
    B, Bt = rng.normal(size=(17, 3)), rng.normal(size=(23, 2))
    assert_close("tiled M B", mp.stored_matmul(M, B), M.astype(np.float64) @ B, 1e-13)
    assert_close("tiled M^T B", mp.stored_rmatmul(M, Bt), M.astype(np.float64).T @ Bt, 1e-13)
    assert_close("one column", mp.stored_matmul(M, B[:, :1]), M.astype(np.float64) @ B[:, :1], 1e-13)
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):  # rows split over 2 Python threads
        assert_close("tiled M B, 2 workers", mp.stored_matmul(M, B), M.astype(np.float64) @ B, 1e-13)


class _RecordingRBF(RBF):
    def gram(self, X1, X2):
        self.shapes.append((X1.shape[0], X2.shape[0]))
        return super().gram(X1, X2)


def test_float32_gram_is_built_in_row_blocks_without_a_float64_copy(rng):
    X = rng.normal(size=(200, 3))
    k = _RecordingRBF(1.3)
    object.__setattr__(k, "shapes", [])
    rep = StoredGram(X, k, cross_memory_mb=8 * 200 * 30 / 2**20, dtype="float32")  # 30 rows per block
    assert max(r for r, _ in k.shapes) == 30 and sum(r for r, _ in k.shapes) == 200
    assert_close("blocked float32 build", rep.dense(), _rounded(RBF(1.3).gram(X, X)), 0.0, 0.0)
    k.shapes.clear()
    E, F = rng.normal(size=(200, 4)), rng.normal(size=(200, 4))
    g32 = rep.grad_contract(E, F)
    assert not k.shapes, "grad_contract recomputed M instead of using the stored blocks"
    assert_close("grad_contract float32 vs float64", g32, StoredGram(X, RBF(1.3)).grad_contract(E, F), 1e-6)


@pytest.mark.parametrize("mode", ["tied", "semi", "separate"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_float32_block_diagonal_passes_the_operator_conformance_checks(mode, seed):
    r = np.random.default_rng(seed)
    n, C = 6, 3
    X, X_new = r.normal(size=(n, 2)), r.normal(size=(3, 2))
    k = ARD([0.5, 2.0]) if seed % 2 else RBF(0.8)
    v = 1.5 if mode == "tied" else list(r.uniform(0.5, 2.0, size=C))
    rep = RepresentationConfig(kind="stored", dtype="float32", memory_mb=8 * 2 * n / 2**20)
    op = BlockDiagonal.from_sharing(X, k, C, mode, v, rep)
    assert op._rep_list[0].M.dtype == np.float32
    # the operator stands for the float32-rounded M exactly; predictions use float64 cross blocks
    dense = block_diagonal_dense([_rounded(naive_gram(k, X, X))] * C, op.class_variances)
    cross = block_diagonal_cross([naive_gram(k, X_new, X)] * C, op.class_variances)
    check_operator(op, r, dense=dense, X_new=X_new, cross_dense=cross, rtol=1e-12)
    E, F = r.normal(size=(n, C, 2)), r.normal(size=(n, C, 2))
    op64 = BlockDiagonal.from_sharing(X, k, C, mode, v, RepresentationConfig(kind="stored"))
    assert_close("grad_trace float32 vs float64", op.grad_trace(E, F), op64.grad_trace(E, F), 1e-6)


def test_newton_cg_fit_float32_matches_float64():
    """Φ and α move by O(2^-24 κ): Φ agrees to 1e-6 relative, probabilities to 1e-5, labels exactly."""
    X, y = toy_classification(n=300, C=4, d=3, seed=3, spread=1.5)
    Xt, _ = toy_classification(n=200, C=4, d=3, seed=4, spread=1.5)
    common = dict(objective="map", solver=NewtonCG(NewtonOptions(grad_tol=1e-9, max_iter=50)))
    f64 = GPClassifier(
        IndependentGP(RBF(0.5), "tied", sigma2=1.0, representation=RepresentationConfig(kind="stored")), **common
    ).fit(X, y)
    f32 = GPClassifier(
        IndependentGP(
            RBF(0.5), "tied", sigma2=1.0, representation=RepresentationConfig(kind="stored", dtype="float32")
        ),
        **common,
    ).fit(X, y)
    op = f32.model_.operator
    assert getattr(op, "inner", op)._rep_list[0].M.dtype == np.float32
    phi64, phi32 = f64.model_.result.phi, f32.model_.result.phi
    assert abs(phi32 - phi64) <= 1e-6 * abs(phi64), (phi32, phi64)
    assert_close("predict_proba", f32.predict_proba(Xt), f64.predict_proba(Xt), 1e-5)
    assert np.array_equal(f32.predict(Xt), f64.predict(Xt))
