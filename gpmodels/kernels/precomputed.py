"""A precomputed Gram matrix over a fixed universe of N points.

Inputs are not features but indices into the universe: an input matrix X of shape (n, 1)
holds in row a the index of point a.  This keeps ``restrict``, ``cross`` and prediction working
unchanged: training points are some indices, test points others, and
M(X1, X2) = G[X1[:, 0]][:, X2[:, 0]].  :func:`index_inputs` builds such an X.
"""

from __future__ import annotations

import attrs
import numpy as np
import scipy.linalg

from gpmodels.errors import InputError
from gpmodels.kernels.base import ParameterFreeKernel
from gpmodels.validation import check_finite

__all__ = ["Precomputed", "index_inputs", "check_gram", "GRAM_JITTER"]


def index_inputs(indices) -> np.ndarray:
    """Turn point indices into the (n, 1) float input matrix a Precomputed kernel takes."""
    return np.asarray(indices, dtype=np.float64).reshape(-1, 1)


#: the relative jitter of the positive semi-definiteness test: G + GRAM_JITTER * mean(diag G) * I must have a
#: Cholesky factor (the jitter MKL adds to its kernel sums, MKLOptions.jitter)
GRAM_JITTER = 1e-8


def check_gram(G, what: str = "Precomputed gram") -> np.ndarray:
    """A Gram matrix checked as a kernel matrix: square, finite, symmetric (to 1e-10 relative) and
    positive semi-definite within the stated tolerance: the Cholesky factorisation of
    G + ε I, ε = ``GRAM_JITTER`` times the mean diagonal, must exist.  A matrix that fails says how far it
    is from one: its smallest eigenvalue relative to the mean diagonal (or the negative diagonal entries).
    Returns G as float64."""
    G = np.asarray(G, dtype=np.float64)
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise InputError(f"{what} must be a square matrix; got shape {G.shape}")
    check_finite(what, G)
    scale = max(1.0, float(np.abs(G).max(initial=0.0)))
    if not np.allclose(G, G.T, rtol=1e-10, atol=1e-12 * scale):
        gap = float(np.abs(G - G.T).max()) / scale
        raise InputError(f"{what} must be symmetric; |G - G^T| reaches {gap:.3g} of its largest entry")
    d = np.diag(G)
    if G.size and np.any(d < 0):
        raise InputError(
            f"{what} must be positive semi-definite; {int(np.sum(d < 0))} diagonal entries are negative "
            f"(the smallest {float(d.min()):.3g}): a kernel matrix has K(x, x) >= 0"
        )
    mean_diag = max(float(np.mean(d)) if d.size else 0.0, np.finfo(float).tiny)
    eps = GRAM_JITTER * mean_diag
    try:
        scipy.linalg.cholesky(G + eps * np.eye(G.shape[0]), lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        lam = float(scipy.linalg.eigvalsh(G, subset_by_index=[0, 0], check_finite=False)[0])
        raise InputError(
            f"{what} must be positive semi-definite within a jitter of {GRAM_JITTER:g} x its mean diagonal "
            f"({eps:.3g}); its smallest eigenvalue is {lam:.3g}, {lam / mean_diag:.3g} x the mean "
            "diagonal: it is no kernel matrix (a fit on it would be meaningless)"
        ) from None
    return G


def _check_gram(instance, attribute, G):
    check_gram(G)


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
