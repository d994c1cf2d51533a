"""Y = M B for a symmetric float32 matrix M, reading one triangle and accumulating in float64.

The CV refits spend most of their time in products with stored kernel matrices: one column per class
matrix for separate kernels (mc-sep), one n x C product where classes share a matrix (tied, semi,
and mc-sep at a start where all classes are equal); one column is memory-bound. BLAS offers no product
that reads float32 and accumulates in float64: ``ssymv`` accumulates in float32 (relative error
~1e-7 at n = 1600, not acceptable inside Newton–CG and Ψ's gradient), and
:func:`~gpmodels.kernels.mixed_precision.stored_matmul` converts float32 tiles into a float64 buffer
for ``dgemm`` (float64 accuracy, but 0.89 ms against 0.38 ms of float64 ``dsymv`` at n = 1600).
:func:`symm_float32` is that product compiled by Numba: the lower triangle of M, 8 rows at a time
(rows i..i+7 give Σ_{j<i} M_rj v_j to y_r and Σ_r M_rj v_r to every y_j, so v_j and y_j are loaded
once per 8 entries), each float32 entry widened to float64 before its multiply-add, so the only
difference to the float64 product of the same float32 numbers is float64 round-off. Measured on one
thread (2 cores, idle), float32 against ``dsymv`` on the float64 matrix: n = 1600 0.13 ms against
0.19 ms; n = 3548 (a satimage CV fold) 1.23 ms against 2.60 ms; n = 6000 4.0 ms against 7.8 ms (one
row at a time it had taken 3.5 ms at n = 3548: the y traffic, not the matrix, bounded it). On two
threads (row ranges of equal work) it only pays from about 4000 rows (:data:`MIN_ROWS_PER_THREAD`).
With k columns the 8 rows stay in cache while the columns pass over them, so M is read once: n =
3548, 6 columns 2.2 ms against 8.6 ms for the tiled dgemm, one thread (:data:`MAX_COLUMNS`).

Numba is the optional extra ``fast`` (``pip install gpmodels[fast]``): where it is missing,
:data:`AVAILABLE` is False and stored float32 matrices use the tiled product.  The compiled code is
cached on disk after its first compilation (about 1 s); a process's first product imports Numba and
loads it (about 0.7 s).
"""

from __future__ import annotations

import importlib.util

import numpy as np

from gpmodels.linalg.blas_threads import blas_threads, thread_pool

__all__ = ["AVAILABLE", "symm_float32", "symv_float32"]

#: below this many rows per thread one thread does the product.  Measured (2 cores, idle), one thread
#: against two: n = 3000 0.69 against 1.15 ms; n = 3548 1.23 / 1.31 ms (best / median) against
#: 0.79 / 1.66 ms; n = 6000 4.0 / 4.2 ms against 3.0 / 3.6 ms
MIN_ROWS_PER_THREAD = 2000

#: :func:`symm_float32` passes over M with at most this many columns at a time (wider B: one pass per
#: chunk of columns).  Measured (one thread, idle) against the tiled dgemm: n = 3548, k = 1 / 6 / 20 / 30 /
#: 60 / 100 columns: 0.9 / 2.2 / 6.4 / 9.4 / 18.8 / 31.7 ms against 3.8 / 8.6 / 13.8 / 18.9 / 31.7 / 54.3 ms;
#: n = 6000: 2.5 / 6.1 / 18.7 / 26.7 / 51.5 / 87.6 ms against 9.1 / 23.6 / 38.4 / 53.3 / 89.6 / 149.0 ms.
#: Wider, in chunks of 100 (n = 4435, two threads): 130 / 200 / 240 columns 34.6 / 52.4 / 64.5 ms against
#: 54.5 / 81.9 / 100.7 ms.  The CV folds in lockstep multiply K̃ with C F columns at once, their
#: preconditioners' eigensolvers with F (r + 8).
MAX_COLUMNS = 100

#: whether Numba is installed (imported on the first product only: it takes about 0.5 s)
AVAILABLE = importlib.util.find_spec("numba") is not None


def _symm_lower_rows(M, Vt, Yt, lo, hi):  # pragma: no cover - compiled (its results are tested)
    """Yt[c] += (rows lo..hi-1 of the lower triangle of M) Vt[c] and their mirror images, for every
    column c, 8 rows at a time.

    Each pass over j < i serves 8 rows: v_j and y_j are loaded and y_j stored once for 8 entries
    of M (one row at a time, they were once per entry, and the y traffic made the loop compute-bound:
    3.5 ms against 1.2 ms at n = 3548, one column, one thread).  The 8 rows stay in the core's cache
    while the columns pass over them, so M is read from memory once for all columns."""
    i = lo
    while i + 8 <= hi:
        r0, r1, r2, r3, r4, r5, r6, r7 = M[i], M[i + 1], M[i + 2], M[i + 3], M[i + 4], M[i + 5], M[i + 6], M[i + 7]
        for c in range(Vt.shape[0]):
            v, y = Vt[c], Yt[c]
            v0, v1, v2, v3, v4, v5, v6, v7 = v[i], v[i + 1], v[i + 2], v[i + 3], v[i + 4], v[i + 5], v[i + 6], v[i + 7]
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
            for j in range(i):
                vj = v[j]
                m0, m1 = np.float64(r0[j]), np.float64(r1[j])
                m2, m3 = np.float64(r2[j]), np.float64(r3[j])
                m4, m5 = np.float64(r4[j]), np.float64(r5[j])
                m6, m7 = np.float64(r6[j]), np.float64(r7[j])
                a0 += m0 * vj
                a1 += m1 * vj
                a2 += m2 * vj
                a3 += m3 * vj
                a4 += m4 * vj
                a5 += m5 * vj
                a6 += m6 * vj
                a7 += m7 * vj
                y[j] += m0 * v0 + m1 * v1 + m2 * v2 + m3 * v3 + m4 * v4 + m5 * v5 + m6 * v6 + m7 * v7
            y[i] += a0
            y[i + 1] += a1
            y[i + 2] += a2
            y[i + 3] += a3
            y[i + 4] += a4
            y[i + 5] += a5
            y[i + 6] += a6
            y[i + 7] += a7
            for r in range(i, i + 8):  # the 8 x 8 diagonal block's lower triangle
                vr = v[r]
                acc = 0.0
                row = M[r]
                for j in range(i, r):
                    m = np.float64(row[j])
                    acc += m * v[j]
                    y[j] += m * vr
                y[r] += acc + np.float64(row[r]) * vr
        i += 8
    for r in range(i, hi):  # the last < 8 rows, one at a time
        row = M[r]
        for c in range(Vt.shape[0]):
            v, y = Vt[c], Yt[c]
            vr = v[r]
            acc = 0.0
            for j in range(r):
                m = np.float64(row[j])
                acc += m * v[j]
                y[j] += m * vr
            y[r] += acc + np.float64(row[r]) * vr


_compiled = None


def _kernel():
    global _compiled
    if _compiled is None:
        if not AVAILABLE:
            raise ImportError("symv_float32 needs Numba: pip install 'gpmodels[fast]'")
        import numba

        # reassociation lets the row sums use vector registers (0.30 ms against 0.81 ms in IEEE
        # order, n = 1600): the last bits then depend on the machine's vector width, as BLAS's do
        _compiled = numba.njit(cache=True, boundscheck=False, nogil=True, fastmath={"reassoc", "contract"})(
            _symm_lower_rows
        )
    return _compiled


def symm_float32(M: np.ndarray, B: np.ndarray, threads: int | None = None) -> np.ndarray:
    """M B accumulated in float64 for a C-contiguous symmetric float32 M (n, n) and B (n, k); only
    the lower triangle of M is read, once for every :data:`MAX_COLUMNS` columns.  Needs Numba
    (:data:`AVAILABLE`).

    ``threads`` (default: as many as the BLAS may use, :func:`blas_threads`): row ranges of equal
    triangle area on that many threads, each into its own output, summed in a fixed order (the
    compiled loop releases the GIL)."""
    if B.shape[1] > MAX_COLUMNS:
        return np.hstack([_symm(M, B[:, s : s + MAX_COLUMNS], threads) for s in range(0, B.shape[1], MAX_COLUMNS)])
    return _symm(M, B, threads)


def _symm(M: np.ndarray, B: np.ndarray, threads: int | None) -> np.ndarray:
    kernel = _kernel()
    n = B.shape[0]
    Vt = np.ascontiguousarray(B.T, dtype=np.float64)
    most = n // MIN_ROWS_PER_THREAD  # the BLAS threads are only asked where they could matter
    threads = 1 if most <= 1 else min(blas_threads() if threads is None else max(1, int(threads)), most)
    if threads == 1:
        Yt = np.zeros_like(Vt)
        kernel(M, Vt, Yt, 0, n)
        return Yt.T
    cuts = [int(round(n * np.sqrt(k / threads))) for k in range(threads + 1)]  # row i costs ~i
    parts = np.zeros((threads,) + Vt.shape)
    list(thread_pool(threads).map(lambda k: kernel(M, Vt, parts[k], cuts[k], cuts[k + 1]), range(threads)))
    return parts.sum(axis=0).T


def symv_float32(M: np.ndarray, v: np.ndarray, threads: int | None = None) -> np.ndarray:
    """M v for a vector v (n,): :func:`symm_float32` with one column."""
    return symm_float32(M, v[:, None], threads)[:, 0]
