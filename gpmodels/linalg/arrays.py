"""The array primitives an operator's algebra and a preconditioner's P^{-1} are written over, once for host and
device arrays.

A composite operator's product (the intercept's K V + σ² 1 1^T V, a restriction's P_J^T K P_J V, the
block-diagonal layout of classes over kernel matrices, ...) is one function of ``ops``, the primitives of
the arrays it is given: :data:`HOST` for numpy arrays on the host, or a device backend
(:class:`~gpmodels.kernels.device.backend.ArrayBackend`, whose ``xp`` is an array-API namespace) for
arrays on its device.  The algebra calls ``ops.xp`` for what numpy (from 1.24) and the array API standard
spell alike (``reshape`` without ``copy``, ``zeros_like``, the operators ``+ * @`` and in-place updates)
and the methods below for the rest; where the host has a faster way (assignment into a buffer where the
array API has no scatter, a stacked product in one thread) :class:`HostArrays` takes it, so that no
operator keeps a second, host-only product.

The primitives (both kinds):

- ``from_host(a, dtype)``, ``to_host(a)``: arrays across (on the host: float64 in C order, as they are);
- ``row_sum(V)``: the sum over axis 0 kept as one row (on the host the array's own method, without
  numpy's dispatch of ``np.sum``);
- ``indices(idx)``: integer positions as an array of these (on the host: numpy's own);
- ``take(a, idx, axis)``: entries at the positions ``idx`` from :meth:`indices` along ``axis``;
- ``scatter_map(rows, n)`` and ``scatter(V, map)``: V's rows at the rows ``rows`` (distinct) of an n-row
  array, zero elsewhere (the map made once per ``rows`` and kept by its caller);
- ``class_matrix(S)`` and ``mix_classes(V, S')``: V S per point, the rows of each column of V (n, C[, k])
  times a C x C matrix S (prepared once by ``class_matrix``), flattened to (n, C k) (on the host one
  stacked product S v_i, in one thread; on a device one GEMM of V's rows);
- ``concat(arrays, axis)``;
- ``columns(A, cols)`` and ``join_columns(parts, columns, order, scale)``: the columns ``cols`` (a slice or
  :meth:`indices`) of a 2-D A; results side by side, ``parts[g]`` at the columns ``columns[g]``, every column
  times its entry of ``scale`` (1, width) (``order``: the indices that put the concatenated parts in column
  order, None where they are; the host writes each part into its columns as it comes instead);
- ``product(part)``, ``rproduct(part)``: the linear map of an operator's part (an operator, a kernel
  representation or a block of one) and of a block's transpose on these arrays: its ``mvm`` / ``rmvm`` on
  the host, its ``device_mvm`` / ``device_rmvm`` on a device;
- ``buffer(shape)``, ``multiply(a, b, out)``, ``fill_where(a, mask, value)``: an array to write results into
  and a * b into it, a with ``value`` where ``mask`` (on the host in place; a device allocates: no buffer);
- ``spd_solver(blocks)``: b -> diag(H_1, ..., H_F)^{-1} b for SPD host blocks (on the host by Cholesky and
  LAPACK's potrs without scipy's checks; on a device one product with the uploaded inverse);
- ``stack_tmv(F, X)``, ``stack_mv(F, Z)``: F_k^T x_k and F_k z_k for each k of a stack F (K, C, s) and rows
  X (K, C), Z (K, s) (on the host numpy's einsum);
- ``vectors``: CG's vector operations on these arrays (:mod:`gpmodels.linalg.cg`); ``device_backend``: the device
  backend they are (None on the host);
- ``block_rows(parts, factor, join)``: diag(M_1, ..., M_F) of the maps ``M_k.on(ops, factor of rows_k)`` over
  consecutive row ranges, ``parts`` (rows_k, M_k); ``join()``: the one map of all rows, or None (on the host
  each block writes its rows of one output; on a device, where each call is a launch, the joined map).

An operator or kernel block declares its primitives once, as ``arrays`` (:data:`HOST`, or the backend where its
matrices live), and every product takes them from there.  A fit's CG vectors on the host run on :data:`HOST` or
:data:`SWEPT_HOST` (their updates as compiled row sweeps), as the execution plan decides once (its ``sweeps``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.linalg as sla

from gpmodels.linalg.cg import HOST_VECTORS, SWEPT_VECTORS

__all__ = ["HostArrays", "SweptHostArrays", "HOST", "SWEPT_HOST", "Made"]


class HostArrays:
    """The primitives (module docstring) of numpy arrays on the host."""

    xp = np
    vectors = HOST_VECTORS
    device_backend = None

    def from_host(self, a, dtype=np.float64) -> np.ndarray:
        return np.ascontiguousarray(a, dtype=dtype)

    def row_sum(self, V: np.ndarray) -> np.ndarray:
        return V.sum(axis=0, keepdims=True)

    def to_host(self, a) -> np.ndarray:
        return a

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

    def concat(self, arrays, axis: int = 0) -> np.ndarray:
        return np.concatenate(arrays, axis=axis)

    def columns(self, A: np.ndarray, cols) -> np.ndarray:
        return np.ascontiguousarray(A[:, cols])

    def join_columns(self, parts, columns, order, scale) -> np.ndarray:
        out = None
        for part, cols in zip(parts, columns):  # each part scaled into its columns as it comes: no concatenation
            if out is None:
                out = np.empty((part.shape[0], scale.shape[1]))
            if isinstance(cols, slice):
                np.multiply(part, scale[:, cols], out=out[:, cols])
            else:
                out[:, cols] = part * scale[:, cols]
        return out

    def product(self, part):
        return part.mvm

    def rproduct(self, part):
        return part.rmvm

    def buffer(self, shape) -> np.ndarray:
        return np.empty(shape)

    def multiply(self, a, b, out: np.ndarray) -> np.ndarray:
        return np.multiply(a, b, out=out)

    def fill_where(self, a: np.ndarray, mask: np.ndarray, value: float) -> np.ndarray:
        np.copyto(a, value, where=mask)
        return a

    def spd_solver(self, blocks):
        chol, _ = sla.cho_factor(sla.block_diag(*blocks), lower=True)
        (potrs,) = sla.get_lapack_funcs(("potrs",), (chol,))

        def solve(b):
            x, info = potrs(chol, b, lower=1)
            if info != 0:
                raise np.linalg.LinAlgError(f"potrs failed (info = {info})")
            return x

        return solve

    def stack_tmv(self, F: np.ndarray, X: np.ndarray) -> np.ndarray:
        return np.einsum("kcs,kc->ks", F, X)

    def stack_mv(self, F: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return np.einsum("kcs,ks->kc", F, Z)

    def block_rows(self, parts, factor, join):
        applies = [(rows, m.on(self, factor.rows(rows))) for rows, m in parts]

        def apply(r):
            out = np.empty_like(r)
            for rows, part in applies:
                out[rows] = part(r[rows])
            return out

        return apply

    def __repr__(self) -> str:
        return "HOST"


class SweptHostArrays(HostArrays):
    """The host's primitives with CG's updates as compiled parallel row sweeps (:mod:`gpmodels.linalg.row_kernels`)."""

    vectors = SWEPT_VECTORS

    def __repr__(self) -> str:
        return "SWEPT_HOST"


#: the primitives of host numpy arrays
HOST = HostArrays()
#: the same, CG's updates as compiled row sweeps
SWEPT_HOST = SweptHostArrays()


class Made:
    """Values made once per key (the primitives whose arrays they are, and what else they depend on), for the
    lifetime of their owner in one process: a device's arrays stay in the process that made them, so a pickled
    copy starts empty and makes them again where it is used."""

    def __init__(self):
        self._values: dict = {}

    def get(self, key, make: Callable):
        """The value of ``key``, ``make()`` the first time."""
        if key not in self._values:
            self._values[key] = make()
        return self._values[key]

    def __getstate__(self) -> dict:
        return {"_values": {}}
