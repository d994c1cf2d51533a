"""Kernel matrix representations: how M = (M(x_a, x_b)) over the training points is held.

A representation gives MVMs B -> M B for B of shape (n, m) (the m columns are all classes and
right-hand sides of one kernel group, laid out C-contiguously), ``diag``, ``restrict`` (a
contiguous re-layout on a subset, Seeger 2008 App. D.2), cross blocks for held-out folds and new
points, and ``grad_contract(E, F)`` = d/dθ Σ_j e_j^T M f_j over the kernel's shape parameters.

- :class:`StoredGram` keeps M in memory (App. D.1): one GEMM per MVM; float64 or float32 storage
  (float64 accumulation either way, :mod:`gpmodels.kernels.mixed_precision`).
- :class:`BlockedGram` recomputes row blocks of M on the fly under a memory bound, for n too
  large to store.
- :class:`FeatureGram` is the linear kernel as X (X^T B) on dense or sparse CSR X, never forming
  M (App. D.3); B's rows are contiguous, which is what makes sparse products fast.
- :class:`LowRankGram` is the incomplete-Cholesky (pivoted) approximation with the diagonal
  correction of Sec. 7.4.3: M ≈ diag(M) + L L^T - diag(L L^T).  With the pivot set fixed it is the
  Nyström form K_{.,I} K_{I,I}^{-1} K_{I,.} plus that correction, which is what ``with_kernel``
  recomputes and ``grad_contract`` differentiates.

Each is written once, as a block over a row side and a column side (:class:`MatrixCross`,
:class:`GramCross`, :class:`FeatureCross`, :class:`LowRankCross`): a CV fold's M_{I,J} and a
prediction's M(X_new, X) are those blocks, and the square representation is its block over (X, X)
plus the square-only methods (diag, restrict, cross, derivatives, fast symmetric products).

:class:`RepresentationConfig` builds one of them per kernel matrix; its ``auto`` kind chooses within a
memory budget (:mod:`gpmodels.kernels.memory_budget`) and records the choice as ``rep.choice``.
"""

from __future__ import annotations

import abc
import logging

import attrs
import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from gpmodels.errors import DeviceError, InputError
from gpmodels.kernels import compiled_symv
from gpmodels.kernels.base import Kernel, sq_dists, sq_norms
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.memory_budget import GIB, RepresentationChoice, choose_representation, default_budget_bytes
from gpmodels.kernels.mixed_precision import (
    STORAGE_DTYPES,
    block_rows,
    gram_in_row_blocks,
    stored_matmul,
    stored_rmatmul,
)
from gpmodels.validation import (
    boolean,
    nonnegative_number,
    one_of,
    optional,
    positive_int,
    positive_number,
)

__all__ = ["Representation", "CrossRepresentation", "StoredGram", "BlockedGram", "FeatureGram", "LowRankGram",
           "RepresentationBuilder", "RepresentationConfig", "RepresentationChoice", "incomplete_cholesky"]

REPRESENTATION_KINDS = ("auto", "stored", "blocked", "features", "lowrank")
#: where kernel matrices live: ``cpu`` (these classes), ``cuda`` (:mod:`gpmodels.kernels.device` on PyTorch's
#: GPU, an error if there is none), ``auto`` (the GPU when there is one and the kernel has a device form)
DEVICES = ("cpu", "cuda", "auto")
#: the squared-distance cache of a stored matrix may take this share of the memory budget
SQ_DIST_CACHE_SHARE = 0.1
#: Row blocks of ``StoredGram.grad_contract``'s temporaries (E F^T per block): blocks of a few MB
#: come back from the heap, where one n x n temporary is fresh pages each call.  Measured on
#: satimage-2000 mc-sep CV learning (n = 2000, 5 columns): E F^T 18 ms per class at 256 MB, 6 ms at 4 MB.
GRAD_BLOCK_MB = 4.0


def _rows(X, idx):
    return X[idx]


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


_block_rows = block_rows


# ---------------------------------------------------------------------------- blocks and representations
class CrossRepresentation(abc.ABC):
    """A kernel block M_{R,C} = (M(x_a, x_b))_{a in R, b in C}: B (|C|, m) -> M_{R,C} B (|R|, m).

    Each way of holding M is written once, as a block over a row side R and a column side C (CV
    folds: training subsets I x J; prediction: new points x training points).  The square
    :class:`Representation` over the training points is the same class over (X, X) plus what only
    a square, symmetric M has (diag, restrict, cross blocks, derivatives), so ``rep.cross(I, J)``
    is an instance of one of ``type(rep)``'s own bases.

    Must be defined: ``shape`` and ``mvm``; for speed: ``rmvm`` and ``dense``.
    """

    shape: tuple[int, int]

    @abc.abstractmethod
    def mvm(self, B: np.ndarray) -> np.ndarray:
        """M_{R,C} B for B of shape (|C|, m)."""

    def rmvm(self, B: np.ndarray) -> np.ndarray:
        """M_{R,C}^T B for B of shape (|R|, m) -> (|C|, m).

        Generic default: the transpose of ``dense()`` (|C| unit-vector MVMs; slow, for new
        representations until they get a direct one).
        """
        return self.dense().T @ B

    def dense(self) -> np.ndarray:
        return self.mvm(np.eye(self.shape[1]))


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


class GramCross(CrossRepresentation):
    """A block M(X1, X2) computed on the fly in row blocks of at most ``memory_mb``."""

    def __init__(self, kernel: Kernel, X1, X2, memory_mb: float):
        self.kernel, self.X1, self.X2, self.memory_mb = kernel, X1, X2, memory_mb
        self.shape = (X1.shape[0], X2.shape[0])

    def _blocks(self):
        n1 = self.shape[0]
        step = _block_rows(n1, self.shape[1], self.memory_mb)
        for s in range(0, n1, step):
            yield slice(s, min(n1, s + step))

    def mvm(self, B):
        out = np.empty((self.shape[0], B.shape[1]))
        for b in self._blocks():
            out[b] = self.kernel.gram(_rows(self.X1, b), self.X2) @ B
        return out

    def rmvm(self, B):
        # M^T B = Σ_blocks M_{b,.}^T B_b over the same row blocks as ``mvm``
        out = np.zeros((self.shape[1], B.shape[1]))
        for b in self._blocks():
            out += self.kernel.gram(_rows(self.X1, b), self.X2).T @ B[b]
        return out

    def dense(self):
        return self.kernel.gram(self.X1, self.X2)


class FeatureCross(CrossRepresentation):
    """X1 X2^T B for the linear kernel, never forming the block.

    ``X2T``: X2^T as the MVMs read it; a block used for a few MVMs (a CV fold, a prediction) reads
    the transposed view, a representation used for many (:class:`FeatureGram`) passes a contiguous
    (CSR) copy made once.
    """

    def __init__(self, X1, X2, X2T=None):
        self.X1, self.X2 = X1, X2
        self._X2T = X2.T if X2T is None else X2T
        self.shape = (X1.shape[0], X2.shape[0])

    def mvm(self, B):
        return np.asarray(self.X1 @ np.asarray(self._X2T @ B))

    def rmvm(self, B):
        return np.asarray(self.X2 @ np.asarray(self.X1.T @ B))


class LowRankCross(CrossRepresentation):
    """L1 L2^T plus the diagonal correction of Sec. 7.4.3 where a row point is a column point.

    ``match``: (rows, cols, values) of the correction entries (one per matched point pair), or None.
    """

    def __init__(self, L1, L2, match: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None):
        self.L1, self.L2 = L1, L2
        self.shape = (L1.shape[0], L2.shape[0])
        self.match = match if match is not None and len(match[0]) else None

    def mvm(self, B):
        out = self.L1 @ (self.L2.T @ B)
        if self.match is not None:
            rows, cols, vals = self.match
            out[rows] += vals[:, None] * B[cols]
        return out

    def rmvm(self, B):
        out = self.L2 @ (self.L1.T @ B)
        if self.match is not None:
            rows, cols, vals = self.match
            out[cols] += vals[:, None] * B[rows]
        return out

    def dense(self):
        out = self.L1 @ self.L2.T
        if self.match is not None:
            rows, cols, vals = self.match
            out[rows, cols] += vals
        return out


class Representation(CrossRepresentation):
    """M over the n training points: its block over (X, X), plus the square-only methods; see the
    module docstring.  M is symmetric, so ``rmvm`` is ``mvm``."""

    kernel: Kernel
    X: object
    #: what RepresentationConfig.build chose and why (None for representations made otherwise)
    choice: RepresentationChoice | None = None

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.n)

    def rmvm(self, B: np.ndarray) -> np.ndarray:
        return self.mvm(B)

    @abc.abstractmethod
    def diag(self) -> np.ndarray: ...

    @abc.abstractmethod
    def restrict(self, J: np.ndarray) -> Representation: ...

    @abc.abstractmethod
    def cross(self, I: np.ndarray, J: np.ndarray) -> CrossRepresentation:
        """The block M_{I,J} (an instance of one of this class' bases)."""

    @abc.abstractmethod
    def cross_test(self, X_new) -> CrossRepresentation:
        """The block M(X_new, X) between new points and the training points."""

    @abc.abstractmethod
    def grad_contract(self, E: np.ndarray, F: np.ndarray) -> np.ndarray:
        """d/dθ Σ_j e_j^T M f_j over the kernel's parameters, E and F of shape (n, m)."""

    def contractions(self, E: np.ndarray, F: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(e_j^T M f_j for every column j, d/dθ Σ_j weights_j e_j^T M f_j over the kernel's
        parameters), E and F of shape (n, m): the two contractions of a gradient trace (eq. 6)."""
        values = np.einsum("ij,ij->j", E, self.mvm(F))
        grad = self.grad_contract(E * weights[None, :], F) if self.kernel.params.size else np.zeros(0)
        return values, grad

    @abc.abstractmethod
    def with_kernel(self, kernel: Kernel) -> Representation:
        """The same representation for another kernel (self if the kernel is unchanged)."""

    @property
    def nbytes(self) -> int:
        return 0


class StoredGram(Representation, MatrixCross):
    """M stored in memory (Seeger 2008, App. D.1); MVMs are single GEMMs.

    ``dtype`` float32 halves the memory: M is built in row blocks straight into float32 (no n x n
    float64 temporary) and every product accumulates in float64 (:func:`stored_matmul`).
    """

    def __init__(self, X, kernel: Kernel, M: np.ndarray | None = None, cross_memory_mb: float = 256.0,
                 dtype: str = "float64", sq_dists: SqDistCache | None = None):
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
        faster at n = 3548), the compiled float32 product for up to
        :data:`~gpmodels.kernels.compiled_symv.MAX_COLUMNS` (float64 sums); otherwise a GEMM (or
        the tiled float32 product) streams all of M."""
        if self.M.dtype == np.float64:
            return columns == 1
        return columns <= compiled_symv.MAX_COLUMNS and compiled_symv.AVAILABLE

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
        return StoredGram(_rows(self.X, J), self.kernel, self._block(J, J), self.cross_memory_mb)

    def cross(self, I, J):
        return MatrixCross(self._block(I, J))

    def cross_test(self, X_new):
        return GramCross(self.kernel, X_new, self.X, self.cross_memory_mb)

    def grad_contract(self, E, F):
        # Σ over row blocks b of d/dθ Σ_{a in b} (E F^T)_{a,.} M_{a,.}: no n x n float64 temporary
        if self.kernel.params.size == 0:
            return np.zeros(0)
        total = np.zeros(self.kernel.params.size)
        step = block_rows(self.n, self.n, min(self.cross_memory_mb, GRAD_BLOCK_MB))
        D = None if self.sq_dists is None else self.sq_dists.get()
        for s in range(0, self.n, step):
            b = slice(s, min(self.n, s + step))
            gram = np.asarray(self.M[b], dtype=np.float64)
            part = None if D is None else self.kernel.grad_contract_from_sq_dists(D[b], E[b] @ F.T, gram)
            if part is None:
                part = self.kernel.grad_contract(_rows(self.X, b), self.X, E[b] @ F.T, gram=gram)
            total += part
        return total

    def contractions(self, E, F, weights):
        # while M is not built (the CV parent's operator at θ): one pass over row blocks of M rebuilt
        # from the squared distances, for both contractions, and no n x n matrix
        if self._M is not None or self.sq_dists is None or not self.kernel.params.size:
            return super().contractions(E, F, weights)
        D = self.sq_dists.get()
        values, grad = np.zeros(E.shape[1]), np.zeros(self.kernel.params.size)
        Ew = E * weights[None, :]
        step = block_rows(self.n, self.n, min(self.cross_memory_mb, GRAD_BLOCK_MB))
        for s in range(0, self.n, step):
            b = slice(s, min(self.n, s + step))
            gram = self._from_sq_dists(D[b]).astype(np.float64, copy=False)  # float32: M's own numbers
            values += np.einsum("ij,ij->j", E[b], gram @ F)
            grad += self.kernel.grad_contract_from_sq_dists(D[b], Ew[b] @ F.T, gram)
        return values, grad

    def with_kernel(self, kernel):
        if kernel.key() == self.kernel.key():
            return self
        return StoredGram(self.X, kernel, None, self.cross_memory_mb, self.dtype, self.sq_dists)

    @property
    def nbytes(self):
        return self.n * self.n * np.dtype(self.dtype).itemsize


class BlockedGram(Representation, GramCross):
    """M recomputed in row blocks at every MVM; at most ``memory_mb`` of it exists at a time."""

    def __init__(self, X, kernel: Kernel, memory_mb: float = 256.0):
        self.X, self.kernel, self.memory_mb = X, kernel, memory_mb
        self.X1 = self.X2 = X
        self._diag = kernel.diag(X)

    def diag(self):
        return self._diag

    def restrict(self, J):
        return BlockedGram(_rows(self.X, J), self.kernel, self.memory_mb)

    def cross(self, I, J):
        return GramCross(self.kernel, _rows(self.X, I), _rows(self.X, J), self.memory_mb)

    def cross_test(self, X_new):
        return GramCross(self.kernel, X_new, self.X, self.memory_mb)

    def grad_contract(self, E, F):
        if self.kernel.params.size == 0:
            return np.zeros(0)
        total = np.zeros(self.kernel.params.size)
        for b in self._blocks():
            Xb = _rows(self.X, b)
            total += self.kernel.grad_contract(Xb, self.X, E[b] @ F.T)
        return total

    def with_kernel(self, kernel):
        return self if kernel.key() == self.kernel.key() else BlockedGram(self.X, kernel, self.memory_mb)


class FeatureGram(Representation, FeatureCross):
    """Linear kernel M = X X^T applied as X (X^T B), X dense or sparse CSR (Seeger 2008, App. D.3)."""

    def __init__(self, X, kernel: Kernel | None = None):
        kernel = Linear() if kernel is None else kernel
        if not kernel.is_linear:
            raise InputError("the 'features' representation is for the linear kernel only; "
                             f"got {type(kernel).__name__}")
        self.X, self.kernel = X, kernel
        self.X1 = self.X2 = X
        self._X2T = X.T.tocsr() if sp.issparse(X) else np.ascontiguousarray(X.T)
        self._diag = sq_norms(X)

    def diag(self):
        return self._diag

    def restrict(self, J):
        return FeatureGram(_rows(self.X, J), self.kernel)

    def cross(self, I, J):
        return FeatureCross(_rows(self.X, I), _rows(self.X, J))

    def cross_test(self, X_new):
        return FeatureCross(X_new, self.X)

    def grad_contract(self, E, F):
        return np.zeros(0)

    def with_kernel(self, kernel):
        return self if kernel.key() == self.kernel.key() else FeatureGram(self.X, kernel)

    @property
    def nbytes(self):
        if sp.issparse(self._X2T):
            return self._X2T.data.nbytes + self._X2T.indices.nbytes + self._X2T.indptr.nbytes
        return self._X2T.nbytes


def incomplete_cholesky(X, kernel: Kernel, max_rank: int, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Pivoted incomplete Cholesky of M(X, X): L (n, d) and the pivot indices (d,).

    Greedy pivoting on the largest residual diagonal; stops at ``max_rank`` columns or when the
    largest residual diagonal falls below ``tol`` times the largest diagonal.  Only d columns of M
    and its diagonal are ever evaluated (Bach & Jordan 2002; Seeger 2008, Sec. 7.4.3).
    """
    n = X.shape[0]
    d = kernel.diag(X).astype(np.float64).copy()
    scale = max(float(d.max(initial=0.0)), np.finfo(float).tiny)
    L = np.zeros((n, min(max_rank, n)))
    pivots = []
    for j in range(L.shape[1]):
        p = int(np.argmax(d))
        if d[p] <= tol * scale:
            break
        col = kernel.gram(X, _rows(X, slice(p, p + 1)))[:, 0]
        L[:, j] = (col - L[:, :j] @ L[p, :j]) / np.sqrt(d[p])
        d -= L[:, j] ** 2
        d[p] = 0.0
        pivots.append(p)
    return np.ascontiguousarray(L[:, : len(pivots)]), np.array(pivots, dtype=np.intp)


class LowRankGram(Representation, LowRankCross):
    """M ≈ diag(M) + L L^T - diag(L L^T) with L from a pivoted incomplete Cholesky (Sec. 7.4.3).

    With fixed pivot points X_p, L L^T = K_{.,p} K_{p,p}^{-1} K_{p,.}: the Nyström form that
    ``with_kernel`` recomputes for new kernel parameters (the pivot choice does not depend on them)
    and that ``grad_contract`` differentiates.
    """

    def __init__(self, X, kernel: Kernel, Xp, L: np.ndarray | None = None, jitter: float = 1e-10):
        self.X, self.kernel, self.Xp, self.jitter = X, kernel, Xp, jitter
        Kpp = kernel.gram(Xp, Xp)
        Kpp[np.diag_indices_from(Kpp)] += jitter * max(1.0, float(np.mean(np.diag(Kpp))))
        self.R = sla.cholesky(Kpp, lower=True)  # Kpp = R R^T
        if L is None:
            L = sla.solve_triangular(self.R, kernel.gram(Xp, X), lower=True).T  # L = K_{.,p} R^{-T}
        self._set_factor(np.ascontiguousarray(L), kernel.diag(X), None)

    def _set_factor(self, L: np.ndarray, full_diag: np.ndarray, dcorr: np.ndarray | None) -> None:
        """L, diag M and the correction diag(M) - diag(L L^T) on the diagonal of the (X, X) block."""
        self.L = self.L1 = self.L2 = L
        self._full_diag = full_diag
        self.dcorr = np.maximum(full_diag - np.einsum("ij,ij->i", L, L), 0.0) if dcorr is None else dcorr
        diagonal = np.arange(L.shape[0])
        self.match = (diagonal, diagonal, self.dcorr) if diagonal.size else None

    @classmethod
    def from_icf(cls, X, kernel: Kernel, max_rank: int = 200, tol: float = 1e-8) -> LowRankGram:
        L, piv = incomplete_cholesky(X, kernel, max_rank, tol)
        if piv.size == 0:
            raise InputError("incomplete Cholesky found no pivot: the kernel diagonal is zero")
        return cls(X, kernel, _rows(X, piv))

    @property
    def rank(self) -> int:
        return self.L.shape[1]

    def diag(self):
        return self._full_diag

    def restrict(self, J):
        out = object.__new__(LowRankGram)
        out.X, out.kernel, out.Xp, out.jitter, out.R = _rows(self.X, J), self.kernel, self.Xp, self.jitter, self.R
        out._set_factor(self.L[J], self._full_diag[J], self.dcorr[J])
        return out

    def cross(self, I, J):
        pos = {int(j): b for b, j in enumerate(J)}
        rows, cols = [], []
        for a, i in enumerate(I):
            b = pos.get(int(i))
            if b is not None:
                rows.append(a)
                cols.append(b)
        rows, cols = np.array(rows, dtype=np.intp), np.array(cols, dtype=np.intp)
        return LowRankCross(self.L[I], self.L[J], (rows, cols, self.dcorr[np.asarray(I, dtype=np.intp)[rows]]))

    def cross_test(self, X_new):
        Lnew = sla.solve_triangular(self.R, self.kernel.gram(self.Xp, X_new), lower=True).T
        return LowRankCross(Lnew, self.L)

    def _Z(self) -> np.ndarray:
        """Z = K_pp^{-1} K_{p,.} = R^{-T} L^T, shape (d, n)."""
        return sla.solve_triangular(self.R, self.L.T, lower=True, trans="T")

    def grad_contract(self, E, F):
        k = self.kernel
        if k.params.size == 0:
            return np.zeros(0)
        Z = self._Z()
        ZE, ZF = Z @ E, Z @ F
        g = np.einsum("aj,aj->a", E, F)
        # d(K_np Z) terms: dK_np Z + Z^T dK_pn - Z^T dK_pp Z  (Nyström derivative)
        total = k.grad_contract(self.X, self.Xp, E @ ZF.T)
        total += k.grad_contract(self.X, self.Xp, F @ ZE.T)
        total -= k.grad_contract(self.Xp, self.Xp, ZE @ ZF.T)
        # diagonal correction: d diag(M) - d diag(Q), weighted by g
        total += k.diag_grad_contract(self.X, g)
        total -= k.grad_contract(self.X, self.Xp, 2.0 * g[:, None] * Z.T)
        total += k.grad_contract(self.Xp, self.Xp, (Z * g) @ Z.T)
        return total

    def with_kernel(self, kernel):
        if kernel.key() == self.kernel.key():
            return self
        return LowRankGram(self.X, kernel, self.Xp, None, self.jitter)

    @property
    def nbytes(self):
        return self.L.nbytes


LOG = logging.getLogger("gpmodels")


class RepresentationBuilder(abc.ABC):
    """What builds the representation of each kernel matrix of an operator: a
    :class:`RepresentationConfig` (matrices in this process), or an engine's builder that holds them
    elsewhere (a Dask engine's, :mod:`gpmodels.engine.dask_gram`)."""

    #: bound of one on-the-fly block (MB): blocked MVMs, cross blocks, building M
    memory_mb: float

    @abc.abstractmethod
    def build(self, X, kernel: Kernel, n_matrices: int = 1, *, log: bool = False,
              like: Representation | None = None) -> Representation:
        """The representation of M(X, X), one of ``n_matrices`` distinct kernel matrices."""


@attrs.frozen
class RepresentationConfig(RepresentationBuilder):
    """How to represent each kernel matrix.

    ``kind``: ``stored`` / ``blocked`` / ``features`` / ``lowrank``, or ``auto``: chosen per kernel
    matrix from n, the number of distinct kernel matrices and the memory budget ``memory_gb`` (None:
    a fraction of the machine's available memory), see :mod:`gpmodels.kernels.memory_budget`.
    ``auto`` approximates (``lowrank``) only with ``allow_lowrank``; when nothing exact fits it raises.
    ``dtype``: storage of ``stored`` matrices (None: float64, or for ``auto`` the first that fits).
    ``memory_mb`` bounds one on-the-fly block (blocked MVMs, cross blocks, building M).

    ``device``: ``cpu``, ``cuda`` or ``auto`` (:data:`DEVICES`); off the CPU, ``build`` hands over to
    :meth:`device_builder` (``stored`` and ``auto`` keep their meaning there, ``blocked`` is the
    device's ``recomputed`` form).

    A configuration holds no engine: an engine that keeps kernel matrices on its workers wraps it
    (``engine.representation(config)``).
    """

    kind: str = attrs.field(default="auto", validator=one_of(REPRESENTATION_KINDS))
    memory_mb: float = attrs.field(default=256.0, validator=positive_number())
    rank: int = attrs.field(default=200, validator=positive_int())  # lowrank: maximal rank of the ICF
    tol: float = attrs.field(default=1e-8, validator=nonnegative_number())  # lowrank: ICF stopping tolerance
    dtype: str | None = attrs.field(default=None, validator=optional(one_of(STORAGE_DTYPES)))
    memory_gb: float | None = attrs.field(default=None, validator=optional(positive_number()))
    allow_lowrank: bool = attrs.field(default=False, validator=boolean())
    blocked_max_n: int = attrs.field(default=50_000, validator=positive_int())
    device: str = attrs.field(default="cpu", validator=one_of(DEVICES))

    def device_builder(self, kernel: Kernel, X=None) -> RepresentationBuilder | None:
        """The device configuration that builds ``kernel``'s matrices, or None for the CPU.  ``cuda``
        raises a :class:`~gpmodels.errors.DeviceError` naming what is missing (the extra, a CUDA build
        of PyTorch, a GPU, the kernel's device form); ``auto`` falls back to the CPU only then."""
        if self.device == "cpu":
            return None
        from gpmodels.kernels.device.backend import cuda_backend, cuda_status
        from gpmodels.kernels.device.gram import DeviceRepresentationConfig

        if self.device == "auto" and (self._why_cpu(kernel, X) is not None or cuda_status() is not None):
            return None
        if self.kind in ("features", "lowrank"):
            raise DeviceError(f"representation kind {self.kind!r} has no device form; on device 'cuda' "
                              "allowed: auto, stored, blocked (recomputed tiles)")
        kind = {"blocked": "recomputed"}.get(self.kind, self.kind)
        return DeviceRepresentationConfig(cuda_backend(), kind=kind, dtype=self.dtype, memory_mb=self.memory_mb,
                                          memory_gb=self.memory_gb)

    def budget_bytes(self) -> int:
        return default_budget_bytes() if self.memory_gb is None else int(self.memory_gb * GIB)

    def choose(self, n: int, kernel: Kernel, n_matrices: int = 1) -> RepresentationChoice:
        """The representation of one of ``n_matrices`` kernel matrices over n points, with its reason."""
        if self.kind != "auto":
            dtype = self.dtype or "float64"
            return RepresentationChoice(self.kind, dtype if self.kind == "stored" else "float64",
                                        "given in the configuration", 0, n_matrices, None)
        return choose_representation(n, n_matrices, linear=kernel.is_linear, budget_bytes=self.budget_bytes(),
                                     dtype=self.dtype, allow_lowrank=self.allow_lowrank, rank=self.rank,
                                     blocked_max_n=self.blocked_max_n, blocked_memory_mb=self.memory_mb)

    def build(self, X, kernel: Kernel, n_matrices: int = 1, *, log: bool = False,
              like: Representation | None = None) -> Representation:
        """The representation of M(X, X); ``n_matrices``: how many distinct kernel matrices the
        operator holds (``auto`` budgets for all of them); ``log``: say the choice on the
        ``gpmodels`` logger.  The choice is kept as ``rep.choice``.

        ``like``: a representation this configuration built on the same X for another kernel
        value (an operator at its previous hyperparameters); a stored matrix then reuses its
        squared-distance cache.  Stored matrices (float64 or float32) of kernels with ``has_sq_dist_form``
        get such a cache when it takes at most ``SQ_DIST_CACHE_SHARE`` of the memory budget
        (its kept blocks share the rest of that share)."""
        kernel.check_inputs(X)
        device = self.device_builder(kernel, X)
        if device is not None:
            return device.build(X, kernel, n_matrices, log=log, like=like)
        if isinstance(like, StoredGram) and like.sq_dists is not None and like.X is X:
            rep = StoredGram(X, kernel, cross_memory_mb=self.memory_mb, dtype=like.dtype, sq_dists=like.sq_dists)
            rep.choice = like.choice
            return rep
        choice = self.choose(X.shape[0], kernel, n_matrices)
        if log:
            LOG.info("representation %s: %s", self.kind, choice.describe())
        kind = choice.kind
        if kind == "stored":
            cache, share = None, SQ_DIST_CACHE_SHARE * self.budget_bytes()
            if kernel.has_sq_dist_form and 8 * X.shape[0] ** 2 <= share:
                cache = SqDistCache(X, max_block_bytes=share - 8 * X.shape[0] ** 2)
            rep = StoredGram(X, kernel, cross_memory_mb=self.memory_mb, dtype=choice.dtype, sq_dists=cache)
        elif kind == "blocked":
            rep = BlockedGram(X, kernel, self.memory_mb)
        elif kind == "features":
            rep = FeatureGram(X, kernel)
        else:
            rep = LowRankGram.from_icf(X, kernel, self.rank, self.tol)
        if self.device != "cpu":
            from gpmodels.kernels.device.backend import cuda_status

            why = self._why_cpu(kernel, X) or cuda_status()
            choice = attrs.evolve(choice, device=f"cpu (device auto: {why})")
        rep.choice = choice
        return rep

    def _why_cpu(self, kernel: Kernel, X) -> str | None:
        """Why this matrix cannot live on a device (None: it can, given a GPU)."""
        if kernel.distance_form is None:
            return f"the {type(kernel).__name__} kernel has no device form"
        if self.kind in ("features", "lowrank"):
            return f"kind {self.kind} has no device form"
        if X is not None and sp.issparse(X):
            return "sparse inputs"
        return None

    def keeps_full_matrix(self, kernel: Kernel) -> bool:
        """Whether this configuration keeps an exact full matrix of ``kernel`` (``stored``,
        ``blocked``, or ``auto`` for a kernel without a feature form): what an engine may hold on
        its workers instead."""
        return self.kind in ("stored", "blocked") or (self.kind == "auto" and not kernel.is_linear)
