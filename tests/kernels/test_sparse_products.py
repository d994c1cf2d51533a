"""The row-major CSR x dense product (kernels/sparse_products.py), the feature form built on it
(float32 storage, column panels) and `auto`'s costed choice between X (X^T B) and a stored Gram matrix."""

import numpy as np
import pytest
import scipy.sparse as sp

from gpmodels.errors import InputError
from gpmodels.kernels import feature_gram, sparse_products
from gpmodels.kernels.feature_gram import FeatureGram
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.memory_budget import LinearShape, linear_choice
from gpmodels.kernels.product_cost import ProductRates, features_cost, stored_cost
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.kernels.stored_gram import StoredGram
from gpmodels.linalg.blas_threads import limit_blas_threads
from gpmodels.linalg.compiled_loops import compiled_threads
from gpmodels.operators.blockdiag import BlockDiagonal

needs_numba = pytest.mark.skipif(not sparse_products.AVAILABLE, reason="the compiled product needs Numba (fast)")


def _sparse(rng, n, d, density, dtype=np.float64):
    A = sp.random(n, d, density=density, format="csr", random_state=rng, dtype=np.float64)
    A.data = rng.normal(size=A.nnz)
    A = A.astype(dtype)
    A.sort_indices()
    return A


@pytest.mark.parametrize("shape", [(1, 1, 1), (40, 30, 1), (97, 53, 7), (300, 80, 260)])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_csr_matmat_is_the_float64_product(rng, shape, threads, monkeypatch):
    monkeypatch.setattr(sparse_products, "MIN_PARALLEL_WORK", 0)  # threads even for small products
    n, d, k = shape
    A = _sparse(rng, n, d, 0.2)
    keep = np.ones(n)
    keep[min(3, n - 1)] = 0.0  # an empty row
    A = (sp.diags(keep) @ A).tocsr()
    A.eliminate_zeros()
    B = rng.normal(size=(d, k))
    exact = A.toarray() @ B
    got = sparse_products.csr_matmat(A, B, threads=threads)
    assert got.dtype == np.float64 and got.shape == (n, k)
    np.testing.assert_allclose(got, exact, rtol=1e-12, atol=1e-12 * (1 + np.abs(exact).max()))
    np.testing.assert_allclose(sparse_products.csr_matmat(A, B[:, 0]), exact[:, 0], rtol=1e-12, atol=1e-12)


def test_csr_matmat_without_numba_and_on_other_formats_is_scipys_product(rng, monkeypatch):
    A = _sparse(rng, 60, 40, 0.3)
    B = rng.normal(size=(40, 5))
    compiled = sparse_products.csr_matmat(A, B)
    np.testing.assert_allclose(sparse_products.csr_matmat(A.tocsc(), B), compiled, rtol=1e-12, atol=1e-12)
    monkeypatch.setattr(sparse_products, "AVAILABLE", False)
    np.testing.assert_allclose(sparse_products.csr_matmat(A, B), compiled, rtol=1e-12, atol=1e-12)
    f32 = sparse_products.csr_matmat(A.astype(np.float32), B.astype(np.float32), out_dtype=np.float32)
    assert f32.dtype == np.float32


def test_csr_matmat_refuses_mismatched_shapes_and_dense_matrices(rng):
    A = _sparse(rng, 6, 4, 0.5)
    with pytest.raises(InputError, match="must have 4 rows"):
        sparse_products.csr_matmat(A, np.ones((5, 2)))
    with pytest.raises(InputError, match="scipy.sparse"):
        sparse_products.csr_matmat(A.toarray(), np.ones((4, 2)))


def test_nnz_balanced_cuts_cover_the_rows_in_order_with_about_equal_nonzeros(rng):
    A = _sparse(rng, 500, 300, 0.05)
    A = sp.vstack([A, sp.csr_matrix(np.ones((1, 300)))]).tocsr()  # one heavy row
    for parts in (1, 2, 7, 64):
        cuts = sparse_products.nnz_balanced_cuts(A.indptr, parts)
        assert cuts[0] == 0 and cuts[-1] == A.shape[0] and np.all(np.diff(cuts) >= 0)
        per_part = np.diff(A.indptr[cuts])
        assert per_part.sum() == A.nnz and per_part.max() <= A.nnz / parts + 300 + A.getnnz(axis=1).max()
    assert sparse_products.nnz_balanced_cuts(np.zeros(1, dtype=np.int64), 4).tolist() == [0]


@needs_numba
def test_the_compiled_products_take_the_blas_thread_limit():
    with limit_blas_threads(1):
        assert compiled_threads() == 1
    assert compiled_threads(1) == 1


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_csr_matmat_columns_writes_the_panel_product_in_place(rng, threads, dtype, monkeypatch):
    monkeypatch.setattr(sparse_products, "MIN_PARALLEL_WORK", 0)
    A = _sparse(rng, 60, 45, 0.2)
    B = rng.normal(size=(45, 23)).astype(dtype)
    out = np.full((60, 30), 7.0, dtype=dtype)
    got = sparse_products.csr_matmat_columns(A, B, slice(5, 16), out, 12, threads=threads)
    assert got is out
    ref = sparse_products.csr_matmat(A, np.ascontiguousarray(B[:, 5:16]), out_dtype=dtype, threads=threads)
    np.testing.assert_array_equal(out[:, 12:23], ref)  # the same sums as the product of a copied panel
    assert np.all(out[:, :12] == 7.0) and np.all(out[:, 23:] == 7.0)
    with pytest.raises(InputError, match="unit step"):
        sparse_products.csr_matmat_columns(A, B, slice(0, 10, 2), out)


def test_csr_matmat_columns_of_other_matrices_is_scipys_product(rng):
    A = _sparse(rng, 30, 20, 0.3)
    B = rng.normal(size=(20, 9))
    out = np.zeros((30, 9))
    sparse_products.csr_matmat_columns(A.T.T.tocsc(), B, slice(2, 8), out, 1)  # CSC: scipy's product
    np.testing.assert_allclose(out[:, 1:7], A.toarray() @ B[:, 2:8], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("columns", [1, 3, 600])  # 600: more than one panel of columns (C >= 500)
def test_feature_gram_products_against_the_dense_gram(rng, columns, monkeypatch):
    X = _sparse(rng, 150, 400, 0.03)
    M = (X @ X.T).toarray()
    rep = FeatureGram(X)
    B = rng.normal(size=(150, columns))
    np.testing.assert_allclose(rep.mvm(B), M @ B, rtol=1e-11, atol=1e-11 * np.abs(M @ B).max())
    monkeypatch.setattr(feature_gram, "PANEL_BYTES", 400 * 7 * 8)  # panels of 7 columns, a ragged last one
    np.testing.assert_allclose(rep.mvm(B), M @ B, rtol=1e-11, atol=1e-11 * np.abs(M @ B).max())
    np.testing.assert_allclose(rep.mvm(B[:, 0]), M @ B[:, 0], rtol=1e-11, atol=1e-11 * np.abs(M @ B).max())
    np.testing.assert_allclose(  # a vector through float32 storage: one rounding of X, B and X^T B
        FeatureGram(X, dtype="float32").mvm(B[:, 0]), M @ B[:, 0], rtol=1e-5, atol=1e-5 * np.abs(M @ B).max()
    )
    I, J = np.arange(0, 150, 2), np.arange(1, 150, 3)
    block = rep.cross(I, J)
    np.testing.assert_allclose(block.mvm(B[J]), M[np.ix_(I, J)] @ B[J], rtol=1e-11, atol=1e-10)
    np.testing.assert_allclose(block.rmvm(B[I]), M[np.ix_(I, J)].T @ B[I], rtol=1e-11, atol=1e-10)


def test_float32_storage_loses_one_rounding_and_no_more(rng):
    """float32 X, X^T and intermediate with float64 sums: relative error of a product ~1e-7, far from
    what float32 sums would lose, and far below any Newton-CG tolerance (>= 1e-6 relative)."""
    X = _sparse(rng, 400, 2000, 0.02)
    X.data = np.abs(X.data) * np.logspace(0, 3, X.nnz)  # spread magnitudes (tf-idf-like weights)
    B = rng.normal(size=(400, 40))
    exact = FeatureGram(X).mvm(B)
    rep32 = FeatureGram(X, dtype="float32")
    got = rep32.mvm(B)
    assert got.dtype == np.float64
    rel = np.abs(got - exact).max() / np.abs(exact).max()
    assert 0 < rel < 1e-6
    assert rep32._X2T.dtype == np.float32 and rep32.X1.dtype == np.float32
    assert rep32.nbytes == 2 * (8 * X.nnz + 4 * (2000 + 1) + 4 * (400 + 1)) - 4 * (2000 + 400 + 2)
    np.testing.assert_allclose(rep32.diag(), FeatureGram(X).diag())


def test_feature_gram_refuses_a_storage_type_it_does_not_have(rng):
    with pytest.raises(InputError, match="float64"):
        FeatureGram(_sparse(rng, 5, 5, 0.5), dtype="float16")


def test_cost_model_counts_the_bytes_and_flops_of_one_product():
    f = features_cost(10, 20, 30, 4, sparse=True)
    assert f.flops == 4 * 30 * 4 and f.bytes == 2 * 30 * 12 + 8 * 30 + 2 * 30 * 4 * 8 + 20 * 4 * 8 + 10 * 4 * 8
    assert features_cost(10, 20, 30, 4, sparse=True, itemsize=4).bytes < f.bytes
    assert features_cost(10, 20, 200, 4, sparse=False).flops == 4 * 10 * 20 * 4
    s = stored_cost(10, 4)
    assert s.flops == 2 * 100 * 4 and s.bytes == 800 + 16 * 40
    assert s.seconds(ProductRates(bandwidth=1.0, flops=1e12)) == s.bytes


def test_auto_chooses_features_at_section_b_and_says_why():
    """WIPO-alpha section B: n = 9794, d = 30 000, ~150 entries per row, 1319 columns."""
    n, shape = 9794, LinearShape(30_000, 9794 * 150, True, 1319)
    choice = linear_choice(n, 1, 64 * 2**30, None, "test", shape, ProductRates())
    assert choice.kind == "features"
    assert "1319 columns" in choice.reason and "GFlop" in choice.reason and "stored" in choice.reason
    small_budget = linear_choice(n, 1, 2**20, None, "test", shape, ProductRates())
    assert small_budget.kind == "features" and "does not fit" in small_budget.reason


def test_auto_stores_the_gram_matrix_of_long_rows_and_builds_it(rng):
    X = _sparse(rng, 120, 3000, 0.5)  # ~1500 entries per row at n = 120: M is far cheaper to apply
    rep = RepresentationConfig(memory_gb=1.0, columns=10).build(X, Linear())
    assert isinstance(rep, StoredGram) and rep.choice.kind == "stored"
    assert "costs less stored" in rep.choice.reason and "10 columns" in rep.choice.reason
    B = rng.normal(size=(120, 10))
    np.testing.assert_allclose(rep.mvm(B), (X @ (X.T @ B)), rtol=1e-10, atol=1e-10)
    sparse_rows = _sparse(rng, 2000, 3000, 0.002)  # ~6 entries per row: M would be read for nothing
    assert isinstance(RepresentationConfig(memory_gb=1.0, columns=10).build(sparse_rows, Linear()), FeatureGram)


def test_block_diagonal_costs_auto_with_its_number_of_classes(rng):
    X = _sparse(rng, 50, 200, 0.05)
    op = BlockDiagonal.from_sharing(X, Linear(), 520, "tied", representation=RepresentationConfig(memory_gb=1.0))
    rep = op.rep_groups[0][0]
    assert "520 columns" in rep.choice.reason
    fixed = RepresentationConfig(memory_gb=1.0, columns=3)
    op = BlockDiagonal.from_sharing(X, Linear(), 520, "tied", representation=fixed)
    assert "3 columns" in op.rep_groups[0][0].choice.reason


def test_auto_with_float32_stores_sparse_features_in_float32(rng):
    X = _sparse(rng, 3000, 5000, 0.001)
    rep = RepresentationConfig(memory_gb=1.0, dtype="float32").build(X, Linear())
    assert isinstance(rep, FeatureGram) and rep.dtype == "float32" and rep.choice.dtype == "float32"
    rep = RepresentationConfig(kind="features", dtype="float32").build(X, Linear())
    assert rep.dtype == "float32"


@needs_numba
def test_a_forked_child_and_concurrent_threads_run_the_parallel_product(rng, monkeypatch):
    """GNU OpenMP would abort a forked child of a process that used it; the engines fork their workers and run
    products on threads (linalg/compiled_loops.py: a fork-safe layer, one launch at a time)."""
    import multiprocessing
    import threading

    monkeypatch.setattr(sparse_products, "MIN_PARALLEL_WORK", 0)
    A = _sparse(rng, 400, 200, 0.05)
    B = rng.normal(size=(200, 6))
    expected = sparse_products.csr_matmat(A, B, threads=2)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=lambda: queue.put(sparse_products.csr_matmat(A, B, threads=2)))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    np.testing.assert_allclose(queue.get(timeout=5), expected, rtol=1e-12, atol=1e-12)
    results = []
    workers = [
        threading.Thread(target=lambda: results.extend(sparse_products.csr_matmat(A, B, threads=2) for _ in range(5)))
        for _ in range(3)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(results) == 15 and all(np.allclose(r, expected, rtol=1e-12, atol=1e-12) for r in results)


@pytest.mark.parametrize(
    "rows,columns,itemsize,width",
    [(30_000, 1172, 8, 1172), (30_000, 1172, 4, 1172), (100_000, 1172, 8, 586), (10, 5, 8, 5), (10**8, 3, 8, 1)],
)
def test_panels_bound_the_intermediate(rows, columns, itemsize, width):
    """Whole products while the intermediate fits PANEL_BYTES, else equal panels that each fit (1 column at
    the least)."""
    got = feature_gram.panel_columns(rows, columns, itemsize)
    assert got == width
    assert got == 1 or rows * got * itemsize <= feature_gram.PANEL_BYTES
