"""The linear kernel as X (X^T B) on dense or sparse CSR X, never forming M (Seeger 2008, App. D.3):
:class:`FeatureGram` over the training points and its blocks :class:`FeatureCross`.

B's rows are contiguous (the (n, C, k) latent layout read as (n, C k)), which is what makes sparse
products fast: on sparse X both products are row-major CSR x dense products
(:func:`~gpmodels.kernels.sparse_products.csr_matmat`, parallel where Numba is installed), with the CSR
of X^T built once per representation, not per product.

``dtype="float32"`` (sparse X) stores X, X^T and the intermediate X^T B in float32 and reads B as float32 (half
the bytes streamed per product); every sum is accumulated in float64 and the result is float64, so the
difference to float64 storage is one rounding of X's entries, of B and of the intermediate (relative ~1e-7 of
the product; tested).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gpmodels.errors import InputError
from gpmodels.kernels.base import Kernel, sq_norms
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.representation_base import CrossRepresentation, Representation, take_rows
from gpmodels.kernels.sparse_products import csr_matmat, csr_matmat_columns

__all__ = ["FeatureGram", "FeatureCross", "FEATURE_DTYPES", "PANEL_BYTES", "panel_columns"]

#: storage types of the feature form's X, X^T and intermediate (sums are float64 either way)
FEATURE_DTYPES = ("float64", "float32")

#: a sparse product whose intermediate X^T B would take more bytes runs in column panels of equal width whose
#: intermediates take at most this many (:func:`panel_columns`), so that its memory is bounded whatever the
#: number of classes.  Wider is faster while the gathered rows stay in the last-level cache: at WIPO section
#: B's size (7835 x 30 000, 150 terms per row, 1172 columns; 2 cores, 300 MB L3) one X (X^T B) took 0.83 s in
#: panels of 256 columns and 0.63 s whole (0.49 s in float32 storage)
PANEL_BYTES = 512 * 2**20


def panel_columns(rows: int, columns: int, itemsize: int) -> int:
    """Columns per panel of a product whose intermediate has ``rows`` rows of ``itemsize`` bytes per number:
    all ``columns`` where they take at most :data:`PANEL_BYTES`, else equal panels that each do."""
    panels = max(1, -(-rows * columns * itemsize // PANEL_BYTES))
    return max(1, -(-columns // panels))


def _product(A, B, out_dtype=np.float64):
    """A B for sparse or dense A, B (rows, m) row-major; float64 sums."""
    if sp.issparse(A):
        return csr_matmat(A, B, out_dtype=out_dtype)
    return np.asarray(A @ B, dtype=out_dtype)


def _two_products(left, right, B: np.ndarray, mid) -> np.ndarray:
    """left (right B) for B (m, k), in column panels (:func:`panel_columns`) on sparse operands."""
    if not sp.issparse(right):
        return _product(left, _product(right, np.ascontiguousarray(B), mid))
    B = np.ascontiguousarray(B, dtype=mid)  # float32 storage: B read as float32
    width = 1 if B.ndim == 1 else panel_columns(right.shape[0], B.shape[1], np.dtype(mid).itemsize)
    if B.ndim == 1 or B.shape[1] <= width:
        return _product(left, _product(right, B, mid))
    out = np.empty((left.shape[0], B.shape[1]))
    sparse_left = sp.issparse(left)
    for a in range(0, B.shape[1], width):
        cols = slice(a, min(a + width, B.shape[1]))
        inner = np.empty((right.shape[0], cols.stop - a), dtype=mid)
        csr_matmat_columns(right, B, cols, inner)  # no copy of B's panel
        if sparse_left:  # written into its columns of out: no copy of the result
            csr_matmat_columns(left, inner, slice(None), out, a)
        else:
            out[:, cols] = _product(left, inner)
    return out


class FeatureCross(CrossRepresentation):
    """X1 X2^T B for the linear kernel, never forming the block.

    ``X2T``: X2^T as the MVMs read it; a block used for a few MVMs (a CV fold, a prediction) reads
    the transposed view, a representation used for many (:class:`FeatureGram`) passes a contiguous
    (CSR) copy made once.  ``dtype``: the storage type of the intermediate X2^T B.
    """

    def __init__(self, X1, X2, X2T=None, dtype: str = "float64"):
        self.X1, self.X2 = X1, X2
        self._X2T = X2.T if X2T is None else X2T
        self._mid = np.dtype(dtype)
        self.shape = (X1.shape[0], X2.shape[0])

    def mvm(self, B):
        return _two_products(self.X1, self._X2T, B, self._mid)  # shape: (n1, m)

    def rmvm(self, B):
        return _two_products(self.X2, self.X1.T, B, self._mid)


class FeatureGram(Representation, FeatureCross):
    """Linear kernel M = X X^T applied as X (X^T B), X dense or sparse CSR (Seeger 2008, App. D.3);
    ``dtype``: storage of X, X^T and the intermediate (module docstring)."""

    def __init__(self, X, kernel: Kernel | None = None, dtype: str = "float64"):
        kernel = Linear() if kernel is None else kernel
        if not kernel.is_linear:
            raise InputError(
                f"the 'features' representation is for the linear kernel only; got {type(kernel).__name__}"
            )
        if dtype not in FEATURE_DTYPES:
            raise InputError(f"the 'features' representation stores X as one of {FEATURE_DTYPES}; got {dtype!r}")
        self.X, self.kernel, self.dtype = X, kernel, dtype
        self._mid = np.dtype(dtype if sp.issparse(X) else "float64")
        if sp.issparse(X):
            X1 = X.tocsr()
            X1 = X1.astype(dtype) if X1.dtype != self._mid else X1
            self.X1, self._X2T = X1, X1.T.tocsr()
        else:
            self.X1 = np.ascontiguousarray(X, dtype=np.float64)  # dense: BLAS products, float64
            self._X2T = np.ascontiguousarray(self.X1.T)
        self.X2 = self.X1
        self._diag = sq_norms(X)

    def diag(self):
        return self._diag

    def restrict(self, J):
        return FeatureGram(take_rows(self.X, J), self.kernel, self.dtype)

    def cross(self, I, J):
        return FeatureCross(take_rows(self.X, I), take_rows(self.X, J), dtype=self.dtype)

    def cross_test(self, X_new):
        return FeatureCross(X_new, self.X, dtype=self.dtype)

    def grad_contract(self, E, F):
        return np.zeros(0)

    def with_kernel(self, kernel):
        return self if kernel.key() == self.kernel.key() else FeatureGram(self.X, kernel, self.dtype)

    @property
    def nbytes(self):
        """The bytes of X^T and (where it is a converted copy) X that this representation holds."""
        held = [self._X2T] + ([self.X1] if self.X1 is not self.X else [])
        return sum(_bytes_of(A) for A in held)


def _bytes_of(A) -> int:
    if sp.issparse(A):
        return A.data.nbytes + A.indices.nbytes + A.indptr.nbytes
    return A.nbytes
