"""M recomputed in row blocks under a memory bound, for n too large to store: :class:`BlockedGram` over
the training points and its blocks :class:`GramCross` (also the prediction blocks of a stored matrix)."""

from __future__ import annotations

import numpy as np

from gpmodels.kernels.base import Kernel
from gpmodels.kernels.mixed_precision import block_rows
from gpmodels.kernels.representation_base import CrossRepresentation, RowBlockRepresentation, take_rows

__all__ = ["BlockedGram", "GramCross"]


class GramCross(CrossRepresentation):
    """A block M(X1, X2) computed on the fly in row blocks of at most ``memory_mb``."""

    def __init__(self, kernel: Kernel, X1, X2, memory_mb: float):
        self.kernel, self.X1, self.X2, self.memory_mb = kernel, X1, X2, memory_mb
        self.shape = (X1.shape[0], X2.shape[0])

    def _blocks(self):
        n1 = self.shape[0]
        step = block_rows(n1, self.shape[1], self.memory_mb)
        for s in range(0, n1, step):
            yield slice(s, min(n1, s + step))

    def mvm(self, B):
        out = np.empty((self.shape[0], B.shape[1]))
        for b in self._blocks():
            out[b] = self.kernel.gram(take_rows(self.X1, b), self.X2) @ B
        return out

    def rmvm(self, B):
        # M^T B = Σ_blocks M_{b,.}^T B_b over the same row blocks as ``mvm``
        out = np.zeros((self.shape[1], B.shape[1]))
        for b in self._blocks():
            out += self.kernel.gram(take_rows(self.X1, b), self.X2).T @ B[b]
        return out

    def dense(self):
        return self.kernel.gram(self.X1, self.X2)


class BlockedGram(RowBlockRepresentation, GramCross):
    """M recomputed in row blocks at every MVM; at most ``memory_mb`` of it exists at a time."""

    def __init__(self, X, kernel: Kernel, memory_mb: float = 256.0):
        self.X, self.kernel, self.memory_mb = X, kernel, memory_mb
        self.X1 = self.X2 = X
        self._diag = kernel.diag(X)

    def diag(self):
        return self._diag

    def restrict(self, J):
        return BlockedGram(take_rows(self.X, J), self.kernel, self.memory_mb)

    def cross(self, I, J):
        return GramCross(self.kernel, take_rows(self.X, I), take_rows(self.X, J), self.memory_mb)

    def cross_test(self, X_new):
        return GramCross(self.kernel, X_new, self.X, self.memory_mb)

    def _grad_blocks(self):
        return self._blocks()

    def _grad_contract_block(self, b, W) -> np.ndarray:
        return self.kernel.grad_contract(take_rows(self.X, b), self.X, W)

    def with_kernel(self, kernel):
        return self if kernel.key() == self.kernel.key() else BlockedGram(self.X, kernel, self.memory_mb)
