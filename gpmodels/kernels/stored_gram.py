"""M stored in memory (Seeger 2008, App. D.1): :class:`StoredGram` over the training points, its
blocks :class:`MatrixCross`, and the squared-distance cache :class:`SqDistCache` that rebuilds M at new
parameters of a kernel with ``has_sq_dist_form``.

One GEMM per MVM (BLAS symv on one triangle for a single float64 column); float64 or float32 storage
with float64 accumulation either way (:mod:`gpmodels.kernels.mixed_precision`).
"""

from __future__ import annotations

import threading

import numpy as np
import scipy.linalg as sla

from gpmodels.kernels import compiled_symv
from gpmodels.kernels.base import Kernel, sq_dists
from gpmodels.kernels.blocked_gram import GramCross
from gpmodels.kernels.mixed_precision import block_rows, gram_in_row_blocks, stored_matmul, stored_rmatmul
from gpmodels.kernels.representation_base import CrossRepresentation, RowBlockRepresentation, take_rows
from gpmodels.linalg.blas_threads import blas_threads, limit_blas_threads, thread_pool

__all__ = ["StoredGram", "MatrixCross", "SqDistCache"]

#: Row blocks of ``StoredGram.grad_contract``'s temporaries (E F^T per block): blocks of a few MB
#: come back from the heap, where one n x n temporary is fresh pages each call.  Measured on
#: satimage-2000 mc-sep CV learning (n = 2000, 5 columns): E F^T 18 ms per class at 256 MB, 6 ms at 4 MB.
GRAD_BLOCK_MB = 4.0


def _over_threads(fn, items: list) -> list:
    """[fn(x) for x in items] on as many threads of this process as the BLAS may use (the engine's
    share of the cores), each with a one-thread BLAS, the results in the items' order.  For the
    gradient contraction of the CV criterion, which runs in the main process after the folds while
    the fold workers wait: its exp, casts and products over each row block of M release the GIL.  In
    this process's main thread only: the BLAS limit is process-wide."""
    workers = max(1, min(blas_threads(), len(items)))
    if workers == 1 or threading.current_thread() is not threading.main_thread():
        return [fn(x) for x in items]
    with limit_blas_threads(1):
        return list(thread_pool(workers).map(fn, items))


def _submatrix(M: np.ndarray, I: np.ndarray, J: np.ndarray) -> np.ndarray:
    """The copy M[I][:, J] (rows by ``take``, then columns): the same numbers as ``M[np.ix_(I, J)]``
    in 60 % of its time, which matters at one copy per CV fold and kernel matrix per evaluation."""
    return M.take(I, axis=0).take(J, axis=1)


class SqDistCache:
    """The training points' squared distances D_ab = ||x_a - x_b||^2, computed on first use and
    shared by the stored matrices of every parameter value of a kernel with ``has_sq_dist_form``
    (an RBF matrix at a new w is then one exp over D, not a GEMM over the features as well).

    ``block(I, J)`` = D[I][:, J] is kept (up to ``max_block_bytes`` in all) for the next request of
    the same index sets: CV folds restrict every evaluation's matrices to the same J_k and take
    the same I_k x J_k blocks, which are then one exp each, not a copy of a freshly built n x n
    matrix (whose build is skipped: :class:`StoredGram` builds M only when it is used)."""

    def __init__(self, X, max_block_bytes: float = 0.0):
        self.X = X
        self.max_block_bytes = max_block_bytes
        self._D = None
        self._blocks: dict = {}

    def get(self) -> np.ndarray:
        if self._D is None:
            self._D = sq_dists(self.X, self.X)
        return self._D

    def block(self, I: np.ndarray, J: np.ndarray) -> np.ndarray:
        key = (I.tobytes(), J.tobytes())
        out = self._blocks.get(key)
        if out is None:
            out = _submatrix(self.get(), I, J)
            if out.nbytes + sum(b.nbytes for b in self._blocks.values()) <= self.max_block_bytes:
                self._blocks[key] = out
        return out

    @property
    def nbytes(self) -> int:
        return 8 * self.X.shape[0] ** 2


class MatrixCross(CrossRepresentation):
    """A stored block (a copy made once, e.g. once per CV fold), float64 or float32 (float64 accumulation)."""

    def __init__(self, M: np.ndarray):
        self.M = np.ascontiguousarray(M)
        self.shape = M.shape

    def mvm(self, B):
        return stored_matmul(self.M, B)

    def rmvm(self, B):
        return stored_rmatmul(self.M, B)

    def dense(self):
        return self.M.astype(np.float64)


class StoredGram(RowBlockRepresentation, MatrixCross):
    """M stored in memory (Seeger 2008, App. D.1); MVMs are single GEMMs.

    ``dtype`` float32 halves the memory: M is built in row blocks straight into float32 (no n x n
    float64 temporary) and every product accumulates in float64 (:func:`stored_matmul`).
    """

    def __init__(
        self,
        X,
        kernel: Kernel,
        M: np.ndarray | None = None,
        cross_memory_mb: float = 256.0,
        dtype: str = "float64",
        sq_dists: SqDistCache | None = None,
    ):
        self.X, self.kernel, self.cross_memory_mb = X, kernel, cross_memory_mb
        self.sq_dists = sq_dists if M is None else None
        if self.sq_dists is not None and not kernel.has_sq_dist_form:
            self.sq_dists = None
        if M is None and self.sq_dists is None:
            M = gram_in_row_blocks(kernel, X, X, np.dtype(dtype), cross_memory_mb)
        # with a squared-distance cache M is built on first use: CV folds only need their blocks
        self._M = None if M is None else np.ascontiguousarray(M)
        self.dtype = np.dtype(dtype).name if M is None else self._M.dtype.name
        self._diag = None

    @property
    def M(self) -> np.ndarray:
        if self._M is None:
            self._M = self._from_sq_dists(self.sq_dists.get())
        return self._M

    def _from_sq_dists(self, D: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(self.kernel.gram_from_sq_dists(D), dtype=self.dtype)

    def reads_one_triangle(self, columns: int) -> bool:
        """Whether :meth:`mvm` with this many columns reads only one triangle of M: BLAS symv for
        one float64 column (separate kernels: one per class; half of gemv's memory traffic, 1.7x
        faster at n = 3548), the compiled float32 product for any number of columns (float64 sums;
        one pass over the triangle per :data:`~gpmodels.kernels.compiled_symv.MAX_COLUMNS`);
        otherwise a GEMM (or the tiled float32 product, without Numba) streams all of M."""
        if self.M.dtype == np.float64:
            return columns == 1
        return compiled_symv.AVAILABLE

    def mvm(self, B):
        if not self.reads_one_triangle(B.shape[1]):
            return stored_matmul(self.M, B)
        if self.M.dtype == np.float64:
            return sla.blas.dsymv(1.0, self.M.T, B[:, 0], lower=1)[:, None]
        return compiled_symv.symm_float32(self.M, B)

    def diag(self):
        if self._diag is None:
            self._diag = np.diag(self.M).astype(np.float64)
        return self._diag

    def _block(self, I, J) -> np.ndarray:
        """M[I][:, J]: from the cached squared distances while M is not built (the same numbers)."""
        if self.sq_dists is not None and self._M is None:
            return self._from_sq_dists(self.sq_dists.block(I, J))
        return _submatrix(self.M, I, J)

    def restrict(self, J):
        return StoredGram(take_rows(self.X, J), self.kernel, self._block(J, J), self.cross_memory_mb)

    def cross(self, I, J):
        return MatrixCross(self._block(I, J))

    def cross_test(self, X_new):
        return GramCross(self.kernel, X_new, self.X, self.cross_memory_mb)

    def _grad_blocks(self):
        step = block_rows(self.n, self.n, min(self.cross_memory_mb, GRAD_BLOCK_MB))
        return (slice(s, min(self.n, s + step)) for s in range(0, self.n, step))

    def _grad_contract_block(self, b, W) -> np.ndarray:
        gram = np.asarray(self.M[b], dtype=np.float64)
        if self.sq_dists is not None:  # a kernel with a squared-distance form contracts from D's rows
            part = self.kernel.grad_contract_from_sq_dists(self.sq_dists.get()[b], W, gram)
            if part is not None:
                return part
        return self.kernel.grad_contract(take_rows(self.X, b), self.X, W, gram=gram)

    def contractions(self, E, F, weights):
        # while M is not built (the CV parent's operator at θ): one pass over row blocks of M rebuilt
        # from the squared distances, for both contractions, and no n x n matrix
        if self._M is not None or self.sq_dists is None or not self.kernel.params.size:
            return super().contractions(E, F, weights)
        D = self.sq_dists.get()
        Ew = E * weights[None, :]
        step = block_rows(self.n, self.n, min(self.cross_memory_mb, GRAD_BLOCK_MB))
        blocks = [slice(s, min(self.n, s + step)) for s in range(0, self.n, step)]

        def contract(b):
            gram = self._from_sq_dists(D[b]).astype(np.float64, copy=False)  # float32: M's own numbers
            values = np.einsum("ij,ij->j", E[b], gram @ F)
            return values, self.kernel.grad_contract_from_sq_dists(D[b], Ew[b] @ F.T, gram)

        parts = _over_threads(contract, blocks)
        values, grad = np.zeros(E.shape[1]), np.zeros(self.kernel.params.size)
        for v, g in parts:  # summed in the blocks' order: the same numbers on any number of threads
            values += v
            grad += g
        return values, grad

    def with_kernel(self, kernel):
        if kernel.key() == self.kernel.key():
            return self
        return StoredGram(self.X, kernel, None, self.cross_memory_mb, self.dtype, self.sq_dists)

    @property
    def nbytes(self):
        return self.n * self.n * np.dtype(self.dtype).itemsize
