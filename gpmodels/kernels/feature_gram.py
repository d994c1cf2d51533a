"""The linear kernel as X (X^T B) on dense or sparse CSR X, never forming M (Seeger 2008, App. D.3):
:class:`FeatureGram` over the training points and its blocks :class:`FeatureCross`.  B's rows are
contiguous, which is what makes sparse products fast."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gpmodels.errors import InputError
from gpmodels.kernels.base import Kernel, sq_norms
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.representation_base import CrossRepresentation, Representation, take_rows

__all__ = ["FeatureGram", "FeatureCross"]


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


class FeatureGram(Representation, FeatureCross):
    """Linear kernel M = X X^T applied as X (X^T B), X dense or sparse CSR (Seeger 2008, App. D.3)."""

    def __init__(self, X, kernel: Kernel | None = None):
        kernel = Linear() if kernel is None else kernel
        if not kernel.is_linear:
            raise InputError(
                f"the 'features' representation is for the linear kernel only; got {type(kernel).__name__}"
            )
        self.X, self.kernel = X, kernel
        self.X1 = self.X2 = X
        self._X2T = X.T.tocsr() if sp.issparse(X) else np.ascontiguousarray(X.T)
        self._diag = sq_norms(X)

    def diag(self):
        return self._diag

    def restrict(self, J):
        return FeatureGram(take_rows(self.X, J), self.kernel)

    def cross(self, I, J):
        return FeatureCross(take_rows(self.X, I), take_rows(self.X, J))

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
