"""Feature scaling fitted on the training inputs and applied to both train and test.

- ``none``: inputs as given;
- ``standardize``: per feature (x - mean) / std with training statistics (dense inputs; sparse
  inputs are only divided by the std so that they stay sparse); constant features are left as
  they are;
- ``unit_norm``: every row scaled to Euclidean norm 1 (Seeger 2008, Sec. 6.1 for text); zero rows
  stay zero.
"""

from __future__ import annotations

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.errors import InputError

__all__ = ["FEATURE_SCALINGS", "FeatureScaler", "scale_features", "auto_rbf_w"]

#: the choices of the feature scaling (module docstring)
FEATURE_SCALINGS = ("none", "standardize", "unit_norm")


def _row_norms(X) -> np.ndarray:
    """Euclidean norm of every row of a dense or sparse matrix, shape (n,)."""
    if sp.issparse(X):
        return np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def _unit_rows(X):
    norms = _row_norms(X)
    inv = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)
    return sp.diags(inv) @ X if sp.issparse(X) else X * inv[:, None]


def _column_var(X) -> np.ndarray:
    if sp.issparse(X):
        mean = np.asarray(X.mean(axis=0)).ravel()
        return np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean**2
    return X.var(axis=0)


@attrs.frozen(eq=False)
class FeatureScaler:
    """A scaling fitted on training inputs: ``kind`` plus the training statistics it needs.

    ``transform`` applies it to any inputs (train, test or new data at prediction time);
    ``to_arrays`` / ``from_arrays`` store it in a model file without pickle.
    """

    kind: str
    mean: np.ndarray | None = None  # shape: (d,), standardize on dense inputs
    std: np.ndarray | None = None  # shape: (d,), standardize

    @classmethod
    def fit(cls, kind: str, X_train) -> FeatureScaler:
        if kind not in FEATURE_SCALINGS:
            raise InputError(f"scaling must be one of {FEATURE_SCALINGS}; got {kind!r}")
        if kind != "standardize":
            return cls(kind)
        std = np.sqrt(np.maximum(_column_var(X_train), 0.0))
        std = np.where(std > 0, std, 1.0)
        mean = None if sp.issparse(X_train) else np.asarray(X_train.mean(axis=0))
        return cls(kind, mean, std)

    def transform(self, X):
        if self.kind == "none":
            return X
        if self.kind == "unit_norm":
            return _unit_rows(X)
        if X.shape[1] != self.std.size:
            raise InputError(f"the scaler was fitted on {self.std.size} features; got inputs with {X.shape[1]}")
        if sp.issparse(X):
            if self.mean is not None:
                X = X.toarray()
            else:
                return (X @ sp.diags(1.0 / self.std)).tocsr()
        return (X - (self.mean if self.mean is not None else 0.0)) / self.std

    def to_arrays(self, prefix: str = "scaler_") -> dict:
        out = {f"{prefix}kind": np.array(self.kind)}
        if self.mean is not None:
            out[f"{prefix}mean"] = self.mean
        if self.std is not None:
            out[f"{prefix}std"] = self.std
        return out

    @classmethod
    def from_arrays(cls, arrays, prefix: str = "scaler_") -> FeatureScaler:
        get = lambda k: arrays[f"{prefix}{k}"] if f"{prefix}{k}" in arrays else None  # noqa: E731
        return cls(str(arrays[f"{prefix}kind"]), get("mean"), get("std"))


def scale_features(kind: str, X_train, X_test=None):
    """Scale (X_train, X_test) by ``kind`` fitted on X_train; returns the pair (X_test may be None)."""
    scaler = FeatureScaler.fit(kind, X_train)
    return scaler.transform(X_train), (None if X_test is None else scaler.transform(X_test))


def auto_rbf_w(X) -> float:
    """w = 1 / Σ_j Var[x_j] (Seeger 2008, Sec. 6.2: 0.017 on satimage)."""
    total = float(np.sum(_column_var(X)))
    if not total > 0:
        raise InputError(
            f"cannot set w automatically: the training inputs (n_samples = {X.shape[0]}) have zero "
            "variance; give w a value"
        )
    return 1.0 / total
