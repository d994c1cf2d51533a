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
two processes at once (the CV fold workers): 0.31 ms against 0.48–0.63 ms.

Numba is the optional extra ``fast`` (``pip install gpmodels[fast]``): where it is missing,
:data:`AVAILABLE` is False and stored float32 matrices use the tiled product.  The compiled code is
cached on disk after its first compilation (about 1 s); a process's first product imports Numba and
loads it (about 0.7 s).
"""

from __future__ import annotations

import importlib.util

import numpy as np

__all__ = ["AVAILABLE", "symv_float32"]

#: whether Numba is installed (imported on the first product only: it takes about 0.5 s)
AVAILABLE = importlib.util.find_spec("numba") is not None


def _symv_lower(M, v, y):  # pragma: no cover - compiled (its results are tested)
    n = v.shape[0]
    for i in range(n):
        vi = v[i]
        acc = 0.0
        row = M[i]
        for j in range(i):
            m = np.float64(row[j])
            acc += m * v[j]
            y[j] += m * vi
        y[i] += acc + np.float64(row[i]) * vi


_compiled = None


def symv_float32(M: np.ndarray, v: np.ndarray) -> np.ndarray:
    """M v accumulated in float64 for a C-contiguous symmetric float32 M (n, n) and v (n,); only the
    lower triangle of M is read.  Needs Numba (:data:`AVAILABLE`)."""
    global _compiled
    if _compiled is None:
        if not AVAILABLE:
            raise ImportError("symv_float32 needs Numba: pip install 'gpmodels[fast]'")
        import numba

        # reassociation lets the row sums use vector registers (0.30 ms against 0.81 ms in IEEE
        # order, n = 1600): the last bits then depend on the machine's vector width, as BLAS's do
        _compiled = numba.njit(cache=True, boundscheck=False, nogil=True,
                               fastmath={"reassoc", "contract"})(_symv_lower)
    y = np.zeros(v.shape[0])
    _compiled(M, np.ascontiguousarray(v, dtype=np.float64), y)
    return y
