"""The representation protocol: how a kernel matrix M = (M(x_a, x_b)) over the training points is held.

A representation gives MVMs B -> M B for B of shape (n, m) (the m columns are all classes and
right-hand sides of one kernel group, laid out C-contiguously), ``diag``, ``restrict`` (a
contiguous re-layout on a subset, Seeger 2008 App. D.2), cross blocks for held-out folds and new
points, and ``grad_contract(E, F)`` = d/dθ Σ_j e_j^T M f_j over the kernel's shape parameters.

Each way of holding M is written once, as a block over a row side and a column side
(:class:`CrossRepresentation`): a CV fold's M_{I,J} and a prediction's M(X_new, X) are those blocks,
and the square :class:`Representation` is its block over (X, X) plus the square-only methods (diag,
restrict, cross, derivatives, fast symmetric products).  The host forms are
:mod:`~gpmodels.kernels.stored_gram`, :mod:`~gpmodels.kernels.blocked_gram`,
:mod:`~gpmodels.kernels.feature_gram` and :mod:`~gpmodels.kernels.lowrank_gram`; a
:class:`RepresentationBuilder` (:class:`~gpmodels.kernels.representations.RepresentationConfig`, or an
engine's or a device's builder) makes one per kernel matrix.
"""

from __future__ import annotations

import abc

import numpy as np

from gpmodels.kernels.base import Kernel
from gpmodels.kernels.memory_budget import RepresentationChoice
from gpmodels.linalg.arrays import HOST

__all__ = [
    "CrossRepresentation",
    "Representation",
    "RowBlockRepresentation",
    "RepresentationBuilder",
    "take_rows",
    "shared_arrays",
]


def take_rows(X, idx):
    """The rows ``idx`` of X (dense or sparse CSR; an index array or a slice)."""
    return X[idx]


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
    #: the array primitives (:mod:`gpmodels.linalg.arrays`) of the block's numbers: :data:`HOST`, or for a block
    #: held on a device its backend, whose arrays ``device_mvm`` and ``device_rmvm`` take and return
    arrays = HOST

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


class Representation(CrossRepresentation):
    """M over the n training points: its block over (X, X), plus the square-only methods; see the
    module docstring.  M is symmetric, so ``rmvm`` is ``mvm``."""

    kernel: Kernel
    X: object
    #: what RepresentationConfig.build chose and why (None for representations made otherwise)
    choice: RepresentationChoice | None = None

    #: the stack of matrices over the same points this one is part of (a device stack of a block-diagonal
    #: operator's kernels, :mod:`gpmodels.kernels.device.stack`), and its index there; None: on its own
    stack = None
    stack_index = 0

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

    def grad_contract_dense(self, A: np.ndarray) -> np.ndarray:
        """d/dθ Σ_ab A_ab M_ab over the kernel's parameters for dense weights A (n, n): ``grad_contract``
        with E = A, F = I (a representation that holds M's rows gives the weights' rows directly)."""
        return self.grad_contract(A, np.eye(self.n))

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


class RowBlockRepresentation(Representation):
    """A representation that contracts the kernel's gradient over row blocks of M, never forming an n x n
    temporary: ``grad_contract`` (rows of E F^T) and ``grad_contract_dense`` (rows of A) both sum
    :meth:`_grad_contract_block` over the row blocks of :meth:`_grad_blocks` with the weights' rows W_b."""

    kernel: Kernel

    def grad_contract(self, E, F):
        return self._grad_contract_rows(lambda b: E[b] @ F.T)

    def grad_contract_dense(self, A):
        return self._grad_contract_rows(lambda b: A[b])

    def _grad_contract_rows(self, weights) -> np.ndarray:
        """Σ over row blocks b of d/dθ Σ_{a in b} W_{a,.} M_{a,.} with the rows W_b = ``weights(b)``."""
        total = np.zeros(self.kernel.params.size)
        if total.size:
            for b in self._grad_blocks():
                total += self._grad_contract_block(b, weights(b))
        return total

    @abc.abstractmethod
    def _grad_blocks(self):
        """The row blocks (slices of the training points) of the gradient contraction."""

    @abc.abstractmethod
    def _grad_contract_block(self, b: slice, W: np.ndarray) -> np.ndarray:
        """d/dθ Σ_{a in b} W_{a,.} M_{a,.} for the rows W (shape: (|b|, n)) of the row block b."""


class RepresentationBuilder(abc.ABC):
    """What builds the representation of each kernel matrix of an operator: a
    :class:`RepresentationConfig` (matrices in this process), or an engine's builder that holds them
    elsewhere (a Dask engine's, :mod:`gpmodels.engine.dask_gram`)."""

    #: bound of one on-the-fly block (MB): blocked MVMs, cross blocks, building M
    memory_mb: float

    @abc.abstractmethod
    def build(
        self, X, kernel: Kernel, n_matrices: int = 1, *, log: bool = False, like: Representation | None = None
    ) -> Representation:
        """The representation of M(X, X), one of ``n_matrices`` distinct kernel matrices."""

    def for_columns(self, columns: int) -> RepresentationBuilder:
        """This builder for an operator whose products have about ``columns`` columns per kernel matrix
        (what a cost-based choice weighs); by default the same builder."""
        return self

    def build_group(
        self, X, kernels: list[Kernel], n_matrices: int, *, log: bool = False, like: Representation | None = None
    ) -> list[Representation]:
        """The representations of M(X, X) for each of ``kernels`` (distinct kernels of one operator, of its
        ``n_matrices``): one ``build`` each, unless the builder holds them together (a device stack)."""
        return [self.build(X, k, n_matrices, log=log, like=like) for k in kernels]


def shared_arrays(blocks):
    """The array primitives (``arrays``) every block of ``blocks`` is held on, else :data:`HOST` (blocks on
    different devices, or none).  A composite operator over blocks on one device runs its algebra there from
    their ``device_mvm`` / ``device_rmvm``: one transfer each way per product, not one per block."""
    first = blocks[0].arrays if blocks else HOST
    return first if all(b.arrays is first for b in blocks) else HOST
