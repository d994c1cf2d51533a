"""A (n, d) sparse CSR times B (d, k) dense, row-major, on every core the thread policy allows.

The linear kernel's products X (X^T B) (Seeger 2008, App. D.3, :mod:`gpmodels.kernels.feature_gram`)
are two CSR x dense products over the latent vectors in their (n, C, k) layout, B of shape (n, C k)
read row by row.  Row i of A B is Σ_{j in row i} A_ij B_j: every nonzero reads one contiguous row of
B (k numbers) and the output row stays in the core's cache while those rows pass over it, so the product
streams B's rows at memory speed.  :func:`csr_matmat` runs it on row ranges of equal nonzero count
(Zipf-distributed word counts make the rows of X^T very unequal) in Numba's parallel loops (``prange``),
accumulating in float64 whatever A and B are stored in (float32 storage halves the bytes that stream),
and writing float64 or float32 output.

Threads: as many as the BLAS may use (:func:`~gpmodels.linalg.blas_threads.blas_threads`), so an engine's
workers, which limit their BLAS threads, do not oversubscribe the cores with these products either
(Numba's thread count is set per calling thread before each product).

Numba is the optional extra ``fast`` (``pip install gpmodels[fast]``); where it is missing, or for a
sparse format other than CSR, the product is scipy.sparse's (one core, float64 accumulation as well), with
the same results up to float64 round-off.
"""

from __future__ import annotations

import threading

import numpy as np
import scipy.sparse as sp

from gpmodels.errors import InputError
from gpmodels.linalg.compiled_loops import AVAILABLE, compile_parallel, compiled_threads, numba_threads

__all__ = ["AVAILABLE", "csr_matmat", "csr_matmat_columns", "nnz_balanced_cuts", "CHUNKS_PER_THREAD"]

#: row ranges per thread: more ranges than threads even out what equal nonzero counts leave unequal
#: (the rows' cache behaviour), at a few microseconds each
CHUNKS_PER_THREAD = 4

#: below this many multiply-adds (nnz x k, ~10 ms on one core) the product runs on one thread.  Waking the
#: team costs ~10 us on idle cores but tens of ms where the cores are busy: measured at load 24 on 2 cores,
#: n = 300, 7488 stored entries, k = 40: one thread 0.22 ms, two 50 ms; n = 3000, 3.1e5 entries, k = 100:
#: one thread 0.13 s, two 0.17 s (scipy 0.27 s)
MIN_PARALLEL_WORK = 10_000_000


def _csr_rows(indptr, indices, data, B, b0, out, o0, k, cuts):  # pragma: no cover - compiled (results tested)
    """out[i, o0:o0+k] = Σ_p data[p] B[indices[p], b0:b0+k] for the rows i of the ranges cuts[t]..cuts[t+1],
    accumulated in a float64 row that stays in cache; the ranges run in parallel."""
    for t in _prange(cuts.size - 1):
        acc = np.empty(k, dtype=np.float64)
        for i in range(cuts[t], cuts[t + 1]):
            acc[:] = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                a = np.float64(data[p])
                row = B[indices[p], b0 : b0 + k]
                for c in range(k):
                    acc[c] += a * row[c]
            o = out[i, o0 : o0 + k]
            for c in range(k):
                o[c] = acc[c]


def _prange(n):  # numba.prange in the compiled kernel (:func:`compile_parallel`); range when run as Python
    return range(n)


_compiled = None
_compile_lock = threading.Lock()


def _kernel():
    global _compiled
    with _compile_lock:
        if _compiled is None:
            if not AVAILABLE:
                raise ImportError("the parallel sparse product needs Numba: pip install 'gpmodels[fast]'")
            _compiled = compile_parallel(_csr_rows)
    return _compiled


def nnz_balanced_cuts(indptr: np.ndarray, parts: int) -> np.ndarray:
    """Row boundaries 0 = r_0 <= ... <= r_parts = rows that split a CSR matrix's nonzeros into ``parts``
    ranges of about equal count (rows are not split)."""
    rows, nnz = indptr.size - 1, int(indptr[-1])
    if rows == 0:
        return np.zeros(1, dtype=np.int64)
    parts = max(1, min(int(parts), rows))
    cuts = np.searchsorted(indptr, np.linspace(0, nnz, parts + 1), side="left").astype(np.int64)
    cuts[0], cuts[-1] = 0, rows
    return np.maximum.accumulate(np.minimum(cuts, rows))


def _threads(requested: int | None, work: int) -> int:
    return 1 if work < MIN_PARALLEL_WORK else compiled_threads(requested)


def csr_matmat(A, B: np.ndarray, *, out_dtype=np.float64, threads: int | None = None) -> np.ndarray:
    """A B for sparse A (rows, d) and dense B (d, k) (or (d,)), accumulated in float64, as ``out_dtype``.

    CSR A with Numba (:data:`AVAILABLE`): the parallel row-range product (module docstring) on ``threads``
    threads (default: :func:`blas_threads`); otherwise scipy.sparse's product."""
    if not sp.issparse(A):
        raise InputError(f"csr_matmat multiplies a scipy.sparse matrix; got {type(A).__name__}")
    vector = np.ndim(B) == 1
    B2 = np.asarray(B)[:, None] if vector else np.asarray(B)
    if B2.ndim != 2 or B2.shape[0] != A.shape[1]:
        raise InputError(f"Dimension mismatch: B must have {A.shape[1]} rows (A is {A.shape}); got shape {B2.shape}")
    out_dtype = np.dtype(out_dtype)
    if not AVAILABLE or A.format != "csr" or B2.dtype not in (np.float32, np.float64) or A.dtype.kind != "f":
        Bf = B2 if B2.dtype == np.float64 else B2.astype(np.float64)
        Af = A if A.dtype == np.float64 else A.astype(np.float64)
        out = np.asarray(Af @ Bf).astype(out_dtype, copy=False)
    else:
        out = _compiled_product(A, np.ascontiguousarray(B2), out_dtype, threads)
    return out[:, 0] if vector else out


def _compiled_product(A, B: np.ndarray, out_dtype, threads: int | None) -> np.ndarray:
    out = np.empty((A.shape[0], B.shape[1]), dtype=out_dtype)
    _launch(A, B, 0, out, 0, B.shape[1], threads)
    return out


def _launch(A, B: np.ndarray, b0: int, out: np.ndarray, o0: int, k: int, threads: int | None) -> None:
    kernel = _kernel()  # compiled first: that chooses the threading layer before numba_threads starts one
    t = _threads(threads, int(A.nnz) * k)
    cuts = nnz_balanced_cuts(A.indptr, t * CHUNKS_PER_THREAD if t > 1 else 1)
    with numba_threads(t):  # per calling thread: an engine's worker keeps its own count
        kernel(A.indptr, A.indices, A.data, B, b0, out, o0, k, cuts)


def csr_matmat_columns(A, B: np.ndarray, columns: slice, out: np.ndarray, out_start: int = 0, *, threads=None):
    """out[:, out_start:out_start + m] = A B[:, columns] (m columns, a unit-step slice) for CSR A and
    C-contiguous float B and out, without copying the panel of B or of the result; float64 sums as
    :func:`csr_matmat`.  Returns ``out``.  Without Numba, or for other arrays, through scipy.sparse."""
    start, stop, step = columns.indices(B.shape[1])
    if step != 1:
        raise InputError(f"csr_matmat_columns takes a slice of unit step; got step {step}")
    m = max(0, stop - start)
    fits = (
        AVAILABLE
        and sp.issparse(A)
        and A.format == "csr"
        and A.dtype.kind == "f"
        and B.dtype in (np.float32, np.float64)
        and out.dtype in (np.float32, np.float64)
        and B.flags.c_contiguous
        and out.flags.c_contiguous
        and B.ndim == out.ndim == 2
        and B.shape[0] == A.shape[1]
        and out.shape[0] == A.shape[0]
        and 0 <= out_start <= out.shape[1] - m
    )
    if fits:
        _launch(A, B, start, out, int(out_start), m, threads)
    else:
        out[:, out_start : out_start + m] = csr_matmat(A, B[:, start:stop], out_dtype=out.dtype, threads=threads)
    return out
