"""float32 storage of kernel matrices with float64 accumulation.

A stored Gram matrix in float32 takes half the memory of float64 (n = 60 000: 14.4 GB instead of
28.8 GB).  Its entries are the float64 entries rounded once (relative error <= 2^-24 ≈ 6e-8 per
entry); every product with it is accumulated in float64, so the only difference to the float64
representation is that one rounding of M.  A float32 GEMM (sgemm) would also accumulate in float32
(relative error ~5e-7 at n = 8000), so :func:`stored_matmul` converts cache-sized tiles of the
float32 matrix into a reusable float64 buffer and multiplies each tile with dgemm.

Measured (n = 8000, 10 columns, 2 cores): float64 dgemm 0.080 s; float32 sgemm 0.035 s (float32
accumulation); 64-row converted blocks 0.059 s, 256-row blocks 0.092 s.  Tiles are therefore
64 rows by at most 8192 columns (a 4 MiB float64 buffer) whatever n is.
"""

from __future__ import annotations

import numpy as np

from gpmodels.linalg.blas_threads import blas_threads, limit_blas_threads, thread_pool

__all__ = ["STORAGE_DTYPES", "stored_matmul", "stored_rmatmul", "gram_in_row_blocks", "block_rows"]

#: the storage types of stored kernel matrices
STORAGE_DTYPES = ("float64", "float32")

#: one float32 -> float64 conversion tile: rows x columns (64 x 8192 float64 = 4 MiB)
TILE_ROWS, TILE_COLS = 64, 8192


def block_rows(n_rows: int, n_cols: int, memory_mb: float, itemsize: int = 8) -> int:
    """Rows of an (rows, n_cols) block of ``itemsize``-byte numbers that fit in ``memory_mb``."""
    return int(max(1, min(n_rows, (memory_mb * 2**20) // (itemsize * max(1, n_cols)))))


def _tiles(n1: int, n2: int):
    for s in range(0, n1, TILE_ROWS):
        for c in range(0, n2, TILE_COLS):
            yield slice(s, min(n1, s + TILE_ROWS)), slice(c, min(n2, c + TILE_COLS))


def _matmul_rows(M, B, out, lo: int, hi: int) -> None:
    """out[lo:hi] = Σ_J float64(M[lo:hi, J]) B_J over 64 x 8192 tiles through one float64 buffer."""
    n2 = M.shape[1]
    buf = np.empty((min(TILE_ROWS, hi - lo), min(TILE_COLS, n2)))
    tmp = np.empty((buf.shape[0], B.shape[1]))
    for rows, cols in _tiles(hi - lo, n2):
        tile = buf[: rows.stop - rows.start, : cols.stop - cols.start]
        r = slice(lo + rows.start, lo + rows.stop)
        np.copyto(tile, M[r, cols])
        if n2 <= TILE_COLS:  # one column tile: write the product in place
            np.matmul(tile, B, out=out[r])
        else:
            t = tmp[: tile.shape[0]]
            np.matmul(tile, B[cols], out=t)
            out[r] += t


def stored_matmul(M: np.ndarray, B: np.ndarray) -> np.ndarray:
    """M B accumulated in float64; M (n1, n2) float64 or float32, B (n2, m) -> (n1, m) float64.

    float32 M: out_I = Σ_J float64(M_{I,J}) B_J over 64 x 8192 tiles (I, J), each converted into
    a reusable float64 buffer (see the module docstring for the measurements).  The tiles' GEMMs are
    too small for BLAS threads (2 BLAS threads on 64-row tiles: 0.66 s vs 0.10 s single-threaded,
    n = 5000, loaded machine), so the BLAS runs single-threaded here and the rows
    are split over as many Python threads as the BLAS had (numpy releases the GIL in both steps).
    """
    if M.dtype == np.float64:
        return M @ B
    B = np.ascontiguousarray(B, dtype=np.float64)
    n1 = M.shape[0]
    out = np.zeros((n1, B.shape[1]))
    workers = max(1, min(blas_threads(), -(-n1 // TILE_ROWS)))
    if workers == 1:
        _matmul_rows(M, B, out, 0, n1)
        return out
    cuts = [TILE_ROWS * (k * -(-n1 // TILE_ROWS) // workers) for k in range(workers)] + [n1]
    with limit_blas_threads(1):
        list(thread_pool(workers).map(lambda k: _matmul_rows(M, B, out, cuts[k], cuts[k + 1]), range(workers)))
    return out


def stored_rmatmul(M: np.ndarray, B: np.ndarray) -> np.ndarray:
    """M^T B accumulated in float64; M (n1, n2), B (n1, m) -> (n2, m): out_J = Σ_I float64(M_{I,J})^T B_I."""
    if M.dtype == np.float64:
        return M.T @ B
    B = np.ascontiguousarray(B, dtype=np.float64)
    n1, n2 = M.shape
    out = np.zeros((n2, B.shape[1]))
    buf = np.empty((min(TILE_ROWS, n1), min(TILE_COLS, n2)))
    for rows, cols in _tiles(n1, n2):
        tile = buf[: rows.stop - rows.start, : cols.stop - cols.start]
        np.copyto(tile, M[rows, cols])
        out[cols] += tile.T @ B[rows]
    return out


def gram_in_row_blocks(kernel, X1, X2, dtype: np.dtype, memory_mb: float) -> np.ndarray:
    """M(X1, X2) stored as ``dtype``, computed in float64 row blocks of at most ``memory_mb``.

    No (n1, n2) float64 temporary exists when ``dtype`` is float32: each block is rounded into
    the preallocated float32 matrix as soon as it is computed.
    """
    n1, n2 = X1.shape[0], X2.shape[0]
    if dtype == np.float64:
        return np.ascontiguousarray(kernel.gram(X1, X2))
    M = np.empty((n1, n2), dtype=dtype)
    step = block_rows(n1, n2, memory_mb)
    for s in range(0, n1, step):
        M[s : s + step] = kernel.gram(X1[s : s + step], X2)
    return M
