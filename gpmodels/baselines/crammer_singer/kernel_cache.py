"""Kernel rows K(x_p, X) on demand, with an LRU cache under a memory bound (Crammer & Singer 2001,
Sec. 7 "Caching"; Joachims 1998).

A :class:`KernelRows` serves rows of the m x m kernel matrix of a kernel object
(:mod:`gpmodels.kernels`) on training inputs X (dense or CSR), or of a given Gram matrix.  With a
cache, computed rows are kept in an ordered map; when the next row would exceed ``memory_mb`` the
least recently used row is evicted.  ``memory_mb = 0`` or ``enabled = False`` recomputes every
row (the baseline of Fig. 7).

Rows of the isotropic RBF and the linear kernel are computed from the kernel's own parameters with
the squared norms of X precomputed once (one GEMV, or one sparse mat-vec, per row); every other
kernel goes through ``kernel.gram(X[p], X)``.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import scipy.sparse as sp

from gpmodels.errors import InputError
from gpmodels.kernels.base import Kernel, sq_norms

__all__ = ["KernelRows"]

_MB = 1024.0 * 1024.0


class KernelRows:
    """Rows of K on the training inputs, LRU-cached within ``memory_mb`` megabytes."""

    def __init__(
        self,
        kernel: Kernel | None,
        X=None,
        *,
        gram: np.ndarray | None = None,
        memory_mb: float = 200.0,
        enabled: bool = True,
    ):
        if gram is None:
            if kernel is None or X is None:
                raise InputError("KernelRows needs a kernel and inputs X, or a Gram matrix `gram`")
            kernel.check_inputs(X)
            self.m = X.shape[0]
        else:
            gram = np.asarray(gram, dtype=np.float64)
            if gram.ndim != 2 or gram.shape[0] != gram.shape[1]:
                raise InputError(f"gram must be a square matrix; got shape {gram.shape}")
            self.m = gram.shape[0]
        if not np.isfinite(memory_mb) or memory_mb < 0:
            raise InputError(f"memory_mb must be a finite number >= 0; got {memory_mb!r}")
        self.kernel, self.X, self.gram = kernel, X, gram
        self.capacity = int(memory_mb * _MB // (8 * max(self.m, 1))) if enabled and gram is None else 0
        self._rows: OrderedDict[int, np.ndarray] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self._fast = None
        if gram is None:
            if kernel.has_sq_dist_form:  # rows from the squared distances, by one GEMV
                self._fast = "sq_dists"
                self._norms = sq_norms(X)
            elif kernel.is_linear:
                self._fast = "linear"
        self._diag = None

    # ------------------------------------------------------------------ rows
    def _dense_row_vector(self, p: int):
        X = self.X
        if sp.issparse(X):
            v = np.zeros(X.shape[1])
            a, b = X.indptr[p], X.indptr[p + 1]
            v[X.indices[a:b]] = X.data[a:b]
            return v
        return X[p]

    def _compute(self, p: int) -> np.ndarray:
        if self.gram is not None:
            return self.gram[p]
        return self.compute_into(p, np.empty(self.m))

    def compute_into(self, p: int, out: np.ndarray) -> np.ndarray:
        """Compute K(x_p, x_i), i = 0..m-1, into ``out`` (shape (m,)), bypassing the cache; returns ``out``.

        The compiled Crammer–Singer loop calls this for the rows missing from its own LRU pool.
        """
        if self.gram is not None:
            out[:] = self.gram[p]
            return out
        if self._fast is not None:
            X = self.X
            if isinstance(X, np.ndarray) and X.dtype == np.float64 and X.flags.c_contiguous:
                np.dot(X, X[p], out=out)  # one GEMV
            else:  # CSR: one sparse mat-vec
                out[:] = np.asarray(X @ self._dense_row_vector(p), dtype=np.float64).ravel()
            if self._fast == "linear":
                return out
            # d2 = ||x_i||² + (||x_p||² − 2 x_i·x_p), in place
            out *= -2.0
            out += self._norms[p]
            out += self._norms
            np.maximum(out, 0.0, out=out)
            out[p] = 0.0
            out[:] = self.kernel.gram_from_sq_dists(out)
            return out
        out[:] = np.asarray(self.kernel.gram(self.X[p : p + 1], self.X), dtype=np.float64).ravel()
        return out

    def row(self, p: int) -> np.ndarray:
        """K(x_p, x_i) for i = 0..m-1, shape (m,).  Do not modify the returned array."""
        if self.capacity == 0:
            self.misses += 1
            return self._compute(p)
        rows = self._rows
        r = rows.get(p)
        if r is not None:
            rows.move_to_end(p)
            self.hits += 1
            return r
        self.misses += 1
        r = self._compute(p)
        if len(rows) >= self.capacity:
            rows.popitem(last=False)
            self.evictions += 1
        rows[p] = r
        return r

    def block(self, idx) -> np.ndarray:
        """K(X, X[idx]) as an (m, len(idx)) array (columns), computed in one call; not cached."""
        idx = np.asarray(idx, dtype=np.intp)
        if self.gram is not None:
            return self.gram[:, idx]
        return np.asarray(self.kernel.gram(self.X, self.X[idx]), dtype=np.float64)

    def diag(self) -> np.ndarray:
        """K(x_i, x_i), shape (m,)."""
        if self._diag is None:
            self._diag = (
                np.diag(self.gram).copy()
                if self.gram is not None
                else np.asarray(self.kernel.diag(self.X), dtype=np.float64)
            )
        return self._diag

    def stats(self) -> dict:
        return {
            "cache_rows": self.capacity,
            "cache_hits": self.hits,
            "kernel_rows_computed": self.misses,
            "cache_evictions": self.evictions,
        }
