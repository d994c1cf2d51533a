"""y = M v for a symmetric float32 matrix M, reading one triangle and accumulating in float64.

The CV refits of separate kernels (mc-sep) spend most of their time in one-column products with
each class's stored kernel matrix; those are memory-bound.  BLAS offers no product that reads float32
and accumulates in float64: ``ssymv`` accumulates in float32 (relative error ~1e-7 at n = 1600,
not acceptable inside Newton–CG and Ψ's gradient), and :func:`~gpmodels.kernels.mixed_precision.stored_matmul`
converts float32 tiles into a float64 buffer for ``dgemm`` (float64 accuracy, but 0.89 ms against
0.38 ms of float64 ``dsymv`` at n = 1600).  :func:`symv_float32` is that product compiled by
Numba: the lower triangle of M row by row (row i gives Σ_{j<i} M_ij v_j to y_i and M_ij v_i to
every y_j), each float32 entry widened to float64 before its multiply-add, so the only difference
to the float64 product of the same float32 numbers is float64 round-off.  Measured at n = 1600,
6 matrices, one thread: 0.26 ms per matrix against 0.40 ms for ``dsymv`` on the float64 matrix;
two processes at once (the CV fold workers): 0.31 ms against 0.48–0.63 ms.  On two threads (row
ranges of equal work) it only pays from a few thousand rows (:data:`MIN_ROWS_PER_THREAD`); below
that a process with two BLAS threads multiplies float64 matrices faster (dsymv 0.20 ms at n = 1600).

Numba is the optional extra ``fast`` (``pip install gpmodels[fast]``): where it is missing,
:data:`AVAILABLE` is False and stored float32 matrices use the tiled product.  The compiled code is
cached on disk after its first compilation (about 1 s); a process's first product imports Numba and
loads it (about 0.7 s).
"""

from __future__ import annotations

import importlib.util

import numpy as np

from gpmodels.kernels.mixed_precision import _executor
from gpmodels.linalg.blas_threads import blas_threads

__all__ = ["AVAILABLE", "symv_float32"]

#: below this many rows per thread one thread does the product.  Measured (2 cores, idle): n = 2000
#: 0.43 ms on one thread, 0.53 ms on two; n = 3548 1.43 ms against 0.91 ms (float64 dsymv on 2 BLAS
#: threads 0.93 ms)
MIN_ROWS_PER_THREAD = 1500

#: whether Numba is installed (imported on the first product only: it takes about 0.5 s)
AVAILABLE = importlib.util.find_spec("numba") is not None


def _symv_lower_rows(M, v, y, lo, hi):  # pragma: no cover - compiled (its results are tested)
    for i in range(lo, hi):
        vi = v[i]
        acc = 0.0
        row = M[i]
        for j in range(i):
            m = np.float64(row[j])
            acc += m * v[j]
            y[j] += m * vi
        y[i] += acc + np.float64(row[i]) * vi


_compiled = None


def _kernel():
    global _compiled
    if _compiled is None:
        if not AVAILABLE:
            raise ImportError("symv_float32 needs Numba: pip install 'gpmodels[fast]'")
        import numba

        # reassociation lets the row sums use vector registers (0.30 ms against 0.81 ms in IEEE
        # order, n = 1600): the last bits then depend on the machine's vector width, as BLAS's do
        _compiled = numba.njit(cache=True, boundscheck=False, nogil=True,
                               fastmath={"reassoc", "contract"})(_symv_lower_rows)
    return _compiled


def symv_float32(M: np.ndarray, v: np.ndarray, threads: int | None = None) -> np.ndarray:
    """M v accumulated in float64 for a C-contiguous symmetric float32 M (n, n) and v (n,); only the
    lower triangle of M is read.  Needs Numba (:data:`AVAILABLE`).

    ``threads`` (default: as many as the BLAS may use, :func:`blas_threads`): row ranges of equal
    triangle area on that many threads, each into its own output, summed in a fixed order (the
    compiled loop releases the GIL)."""
    kernel = _kernel()
    n = v.shape[0]
    v = np.ascontiguousarray(v, dtype=np.float64)
    threads = max(1, min(blas_threads() if threads is None else int(threads), n // MIN_ROWS_PER_THREAD))
    if threads == 1:
        y = np.zeros(n)
        kernel(M, v, y, 0, n)
        return y
    cuts = [int(round(n * np.sqrt(k / threads))) for k in range(threads + 1)]  # row i costs ~i
    parts = np.zeros((threads, n))
    list(_executor(threads).map(lambda k: kernel(M, v, parts[k], cuts[k], cuts[k + 1]), range(threads)))
    return parts.sum(axis=0)
