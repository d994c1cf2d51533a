"""The array primitives an operator's algebra is written over, once for host and device arrays.

A composite operator's product (the intercept's K V + σ² 1 1^T V, a restriction's P_J^T K P_J V, the
block-diagonal layout of classes over kernel matrices, ...) is one function of ``ops``, the primitives of
the arrays it is given: :data:`HOST` for numpy arrays on the host, or a device backend
(:class:`~gpmodels.kernels.device.backend.ArrayBackend`, whose ``xp`` is an array-API namespace) for
arrays on its device.  The algebra calls ``ops.xp`` for what numpy (from 1.24) and the array API standard
spell alike (``sum``, ``reshape`` without ``copy``, ``zeros_like``, the operators ``+ * @`` and in-place
updates) and the methods below for the rest; where the host has a faster way (assignment into a buffer
where the array API has no scatter) :class:`HostArrays` takes it, so that no operator keeps a second,
host-only product.

The primitives (both kinds):

- ``indices(idx)``: integer positions as an array of these (on the host: numpy's own);
- ``take(a, idx, axis)``: entries at the positions ``idx`` from :meth:`indices` along ``axis``;
- ``scatter_map(rows, n)`` and ``scatter(V, map)``: V's rows at the rows ``rows`` (distinct) of an n-row
  array, zero elsewhere (the map made once per ``rows`` and kept by its caller);
- ``class_matrix(S)`` and ``mix_classes(V, S')``: V S per point, the rows of each column of V (n, C[, k])
  times a C x C matrix S (prepared once by ``class_matrix``), flattened to (n, C k) (on the host one
  stacked product S v_i, in one thread; on a device one GEMM of V's rows);
- ``product(part)``: the linear map of an operator's part (an operator, a kernel representation or a
  block of one) on these arrays: its ``mvm`` on the host, its ``device_mvm`` on a device.
"""

from __future__ import annotations

import numpy as np

__all__ = ["HostArrays", "HOST"]


class HostArrays:
    """The primitives (module docstring) of numpy arrays on the host."""

    xp = np
    label = "host (numpy)"

    def indices(self, idx) -> np.ndarray:
        return np.ascontiguousarray(idx, dtype=np.intp)

    def take(self, a, idx, axis: int = 0) -> np.ndarray:
        return np.take(a, idx, axis=axis)

    def scatter_map(self, rows, n: int) -> tuple[np.ndarray, int]:
        return self.indices(rows), int(n)

    def scatter(self, V: np.ndarray, scatter_map) -> np.ndarray:
        rows, n = scatter_map  # an assignment into zeros, where the array API needs a padded take
        out = np.zeros((n, *V.shape[1:]))
        out[rows] = V
        return out

    def class_matrix(self, S: np.ndarray) -> np.ndarray:
        return S

    def mix_classes(self, V: np.ndarray, S: np.ndarray) -> np.ndarray:
        if V.ndim == 2:
            return V @ S.T
        # a stacked product S v_i per point runs in one thread: a single multithreaded BLAS call of this
        # size pays more in thread wake-up and spinning than it computes
        return np.matmul(S, V).reshape(V.shape[0], -1)

    def product(self, part):
        return part.mvm

    def __repr__(self) -> str:
        return "HOST"


#: the primitives of host numpy arrays
HOST = HostArrays()
