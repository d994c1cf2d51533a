"""A precomputed Gram matrix over a fixed universe of N points.

Inputs are not features but indices into the universe: an input matrix X of shape (n, 1)
holds in row a the index of point a.  This keeps ``restrict``, ``cross`` and prediction working
unchanged: training points are some indices, test points others, and
M(X1, X2) = G[X1[:, 0]][:, X2[:, 0]].  :func:`index_inputs` builds such an X.
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.kernels.base import ParameterFreeKernel
from gpmodels.validation import check_finite

__all__ = ["Precomputed", "index_inputs"]


def index_inputs(indices) -> np.ndarray:
    """Turn point indices into the (n, 1) float input matrix a Precomputed kernel takes."""
    return np.asarray(indices, dtype=np.float64).reshape(-1, 1)


def _check_gram(instance, attribute, G):
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise InputError(f"Precomputed gram must be a square matrix; got shape {G.shape}")
    check_finite("Precomputed gram", G)
    if not np.allclose(G, G.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(G).max(initial=0.0)))):
        raise InputError("Precomputed gram must be symmetric")


@attrs.frozen(eq=False)
class Precomputed(ParameterFreeKernel):
    """Gram matrix G given in full; inputs are (n, 1) arrays of indices into G."""

    gram_matrix: np.ndarray = attrs.field(converter=lambda G: np.asarray(G, dtype=np.float64), validator=_check_gram)
    supports_sparse = False

    def _idx(self, X) -> np.ndarray:
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != 1:
            raise InputError(f"inputs of a Precomputed kernel must be an (n, 1) array of indices; got shape {X.shape}")
        idx = X[:, 0]
        N = self.gram_matrix.shape[0]
        if np.any(idx != np.round(idx)) or np.any(idx < 0) or np.any(idx >= N):
            raise InputError(f"inputs of a Precomputed kernel must be integer indices in 0..{N - 1}")
        return idx.astype(np.intp)

    def gram(self, X1, X2) -> np.ndarray:
        return self.gram_matrix[np.ix_(self._idx(X1), self._idx(X2))]

    def diag(self, X) -> np.ndarray:
        i = self._idx(X)
        return self.gram_matrix[i, i]

    def grad_contract(self, X1, X2, G, gram=None) -> np.ndarray:
        return np.zeros(0)

    def diag_grad_contract(self, X, g) -> np.ndarray:
        return np.zeros(0)

    def key(self) -> tuple:
        return ("Precomputed", id(self.gram_matrix))
