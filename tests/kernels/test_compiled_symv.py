"""The compiled float32-storage product (optional extra ``fast``): float64 accumulation, one triangle."""

import numpy as np
import pytest

from gpmodels.kernels import compiled_symv
from gpmodels.kernels.rbf import RBF
from gpmodels.kernels.representations import RepresentationConfig

pytest.importorskip("numba")


@pytest.mark.parametrize("n", [1, 2, 8, 9, 17, 64, 301])  # 8-row blocks and their remainders
def test_symv_float32_is_the_float64_product_of_the_float32_numbers(rng, n):
    A = rng.normal(size=(n, n)).astype(np.float32)
    M = np.ascontiguousarray(np.tril(A) + np.tril(A, -1).T)  # symmetric float32
    v = rng.normal(size=n) * np.logspace(0, 6, n)  # spread magnitudes: float32 sums would lose digits
    exact = M.astype(np.float64) @ v
    got = compiled_symv.symv_float32(M, v)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, exact, rtol=0, atol=1e-13 * np.abs(M).max() * np.abs(v).sum())
    if n >= 17:  # float32 sums (BLAS ssymv's) are far off: the accumulation is float64
        float32_sums = (M @ v.astype(np.float32)).astype(np.float64)
        assert np.abs(float32_sums - exact).max() > 100 * np.abs(got - exact).max()


def test_symv_float32_on_threads_gives_the_one_thread_product(rng, monkeypatch):
    monkeypatch.setattr(compiled_symv, "MIN_ROWS_PER_THREAD", 10)
    A = rng.normal(size=(97, 97)).astype(np.float32)
    M = np.ascontiguousarray(np.tril(A) + np.tril(A, -1).T)
    v = rng.normal(size=97)
    one = compiled_symv.symv_float32(M, v, threads=1)
    for threads in (2, 3):
        np.testing.assert_allclose(
            compiled_symv.symv_float32(M, v, threads=threads), one, rtol=1e-13, atol=1e-13 * np.abs(one).max()
        )


def test_symv_float32_reads_only_the_lower_triangle(rng):
    A = rng.normal(size=(40, 40)).astype(np.float32)
    lower = np.ascontiguousarray(np.tril(A) + np.tril(A, -1).T)
    garbage_upper = np.ascontiguousarray(np.tril(A) + np.triu(np.full_like(A, np.nan), 1))
    v = rng.normal(size=40)
    np.testing.assert_array_equal(compiled_symv.symv_float32(garbage_upper, v), compiled_symv.symv_float32(lower, v))


def test_stored_float32_one_column_products_use_it_and_agree_with_the_tiled_product(rng, monkeypatch):
    X = rng.normal(size=(120, 4))
    rep = RepresentationConfig(kind="stored", dtype="float32").build(X, RBF(0.3))
    B = rng.normal(size=(120, 1))
    calls = []
    real = compiled_symv.symm_float32
    monkeypatch.setattr(compiled_symv, "symm_float32", lambda M, B: calls.append(1) or real(M, B, threads=1))
    compiled = rep.mvm(B)
    assert calls == [1]
    monkeypatch.setattr(compiled_symv, "AVAILABLE", False)
    tiled = rep.mvm(B)
    np.testing.assert_allclose(compiled, tiled, rtol=1e-13, atol=1e-13 * np.abs(tiled).max())


@pytest.mark.parametrize("n, k", [(1, 3), (9, 2), (64, 6), (301, 5)])
def test_symm_float32_is_the_float64_product_for_every_column(rng, monkeypatch, n, k):
    monkeypatch.setattr(compiled_symv, "MIN_ROWS_PER_THREAD", 4)  # two threads from 8 rows
    A = rng.normal(size=(n, n)).astype(np.float32)
    M = np.ascontiguousarray(np.tril(A) + np.tril(A, -1).T)
    B = rng.normal(size=(n, k)) * np.logspace(0, 6, n)[:, None]
    exact = M.astype(np.float64) @ B
    for threads in (1, 2):
        got = compiled_symv.symm_float32(M, B, threads=threads)
        assert got.shape == (n, k) and got.dtype == np.float64
        np.testing.assert_allclose(got, exact, rtol=0, atol=1e-13 * np.abs(M).max() * np.abs(B).sum(axis=0).max())


def test_stored_float32_products_of_any_width_use_it_max_columns_at_a_time(rng, monkeypatch):
    X = rng.normal(size=(60, 3))
    rep = RepresentationConfig(kind="stored", dtype="float32").build(X, RBF(0.3))
    passes = []
    real = compiled_symv._symm
    monkeypatch.setattr(compiled_symv, "_symm", lambda M, B, threads: passes.append(B.shape[1]) or real(M, B, 1))
    monkeypatch.setattr(compiled_symv, "MAX_COLUMNS", 4)
    for k in (1, 4, 9):
        B = rng.normal(size=(60, k))
        np.testing.assert_allclose(rep.mvm(B), rep.M.astype(np.float64) @ B, rtol=1e-12, atol=1e-12)
    assert passes == [1, 4, 4, 4, 1]  # nine columns: three passes over the triangle


def test_one_triangle_is_read_for_one_float64_column_and_any_width_in_float32(rng, monkeypatch):
    X = rng.normal(size=(40, 3))
    f64 = RepresentationConfig(kind="stored").build(X, RBF(0.3))
    f32 = RepresentationConfig(kind="stored", dtype="float32").build(X, RBF(0.3))
    monkeypatch.setattr(compiled_symv, "MAX_COLUMNS", 4)
    assert [f64.reads_one_triangle(k) for k in (1, 2)] == [True, False]
    assert [f32.reads_one_triangle(k) for k in (1, 4, 5)] == [True, True, True]
    for rep in (f64, f32):  # every path is the product with the stored numbers
        for k in (1, 2, 5):
            B = rng.normal(size=(40, k))
            np.testing.assert_allclose(rep.mvm(B), rep.M.astype(np.float64) @ B, rtol=1e-12, atol=1e-12)
    monkeypatch.setattr(compiled_symv, "AVAILABLE", False)
    assert not f32.reads_one_triangle(1)
