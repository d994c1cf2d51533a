"""Feature scaling fitted on the training inputs and applied to both train and test.

- ``none``: inputs as given;
- ``standardize``: per feature (x - mean) / std with training statistics (dense inputs; sparse
  inputs are only divided by the std so that they stay sparse); constant features are left as
  they are;
- ``unit_norm``: every row scaled to Euclidean norm 1 (Seeger 2008, Sec. 6.1 for text); zero rows
  stay zero.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..kernels.base import sq_norms

__all__ = ["SCALINGS", "scale_features", "auto_rbf_w"]

SCALINGS = ("none", "standardize", "unit_norm")


def _unit_rows(X):
    norms = np.sqrt(sq_norms(X))
    inv = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)
    return sp.diags(inv) @ X if sp.issparse(X) else X * inv[:, None]


def _column_var(X) -> np.ndarray:
    if sp.issparse(X):
        mean = np.asarray(X.mean(axis=0)).ravel()
        return np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean**2
    return X.var(axis=0)


def scale_features(kind: str, X_train, X_test=None):
    """Scale (X_train, X_test) by ``kind``; returns the pair (X_test may be None)."""
    if kind not in SCALINGS:
        raise InputError(f"scaling must be one of {SCALINGS}; got {kind!r}")
    if kind == "none":
        return X_train, X_test
    if kind == "unit_norm":
        return _unit_rows(X_train), (None if X_test is None else _unit_rows(X_test))
    std = np.sqrt(np.maximum(_column_var(X_train), 0.0))
    std = np.where(std > 0, std, 1.0)
    if sp.issparse(X_train):
        D = sp.diags(1.0 / std)
        return (X_train @ D).tocsr(), (None if X_test is None else (X_test @ D).tocsr())
    mean = X_train.mean(axis=0)
    return (X_train - mean) / std, (None if X_test is None else (X_test - mean) / std)


def auto_rbf_w(X) -> float:
    """w = 1 / Σ_j Var[x_j] (Seeger 2008, Sec. 6.2: 0.017 on satimage)."""
    total = float(np.sum(_column_var(X)))
    if not total > 0:
        raise InputError("cannot set w automatically: the training inputs have zero variance")
    return 1.0 / total
