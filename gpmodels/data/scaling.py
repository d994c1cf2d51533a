"""Feature scaling fitted on the training inputs and applied to both train and test.

- ``none``: inputs as given;
- ``standardize``: per feature (x - mean) / std with training statistics (dense inputs; sparse
  inputs are only divided by the std so that they stay sparse); constant features are left as
  they are;
- ``unit_norm``: every row scaled to Euclidean norm 1 (Seeger 2008, Sec. 6.1 for text); zero rows
  stay zero;
- ``tfidf``: term counts weighted as tf-idf (Salton and Buckley 1988; the bag-of-words weighting of
  Rousu et al. 2006, Sec. 6), then every row scaled to norm 1:

      x_ij ↦ (1 + ln c_ij) · idf_j  for c_ij > 0 (0 otherwise),   idf_j = 1 + ln((1 + n) / (1 + df_j)),

  with df_j the number of the n training rows in which term j occurs (the smoothed idf of
  scikit-learn's ``TfidfTransformer(sublinear_tf=True)``, so that a term no training row holds keeps a
  finite weight).  The inputs must be term counts: zero or at least 1 (non-integer counts such as
  1.5 are taken as they are).
"""

from __future__ import annotations

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.errors import InputError

__all__ = ["FEATURE_SCALINGS", "SCALING_STATISTICS", "FeatureScaler", "scale_features", "auto_rbf_w"]

#: the training statistics (FeatureScaler fields) each scaling must hold; mean is optional (sparse inputs)
SCALING_STATISTICS = {"none": (), "standardize": ("std",), "unit_norm": (), "tfidf": ("idf",)}
#: the choices of the feature scaling (module docstring)
FEATURE_SCALINGS = tuple(SCALING_STATISTICS)


def _row_norms(X) -> np.ndarray:
    """Euclidean norm of every row of a dense or sparse matrix, shape (n,)."""
    if sp.issparse(X):
        return np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def _unit_rows(X):
    norms = _row_norms(X)
    inv = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)
    return sp.diags(inv) @ X if sp.issparse(X) else X * inv[:, None]


def _sublinear_tf(X):
    """1 + ln c for the positive counts c of X (a new matrix; zeros stay zero)."""
    if sp.issparse(X):
        out = sp.csr_matrix(X, dtype=np.float64, copy=True)
        out.eliminate_zeros()
        out.data = 1.0 + np.log(out.data)
        return out
    X = np.asarray(X, dtype=np.float64)
    return np.where(X > 0, 1.0 + np.log(np.where(X > 0, X, 1.0)), 0.0)


def _document_frequency(X) -> np.ndarray:
    """df_j: the number of rows of X in which column j is nonzero, shape (d,)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        X.eliminate_zeros()
        return np.bincount(X.indices, minlength=X.shape[1]).astype(np.float64)
    return np.count_nonzero(X, axis=0).astype(np.float64)


def _check_counts(X) -> None:
    """Refuse inputs that are not term counts: 1 + ln c is a weight (>= 1) only for c >= 1."""
    values = X.data if sp.issparse(X) else np.asarray(X).ravel()
    wrong = values[(values != 0) & ~(values >= 1)]
    if wrong.size:
        raise InputError(
            "scaling 'tfidf' weights term counts: every nonzero input must be >= 1; the inputs hold "
            f"{float(wrong[0])!r} (use 'unit_norm' or 'standardize' for other features)"
        )


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
    idf: np.ndarray | None = None  # shape: (d,), tfidf

    def __attrs_post_init__(self):
        if self.kind not in FEATURE_SCALINGS:
            raise InputError(f"scaling must be one of {FEATURE_SCALINGS}; got {self.kind!r}")
        missing = [name for name in SCALING_STATISTICS[self.kind] if getattr(self, name) is None]
        if missing:
            raise InputError(f"a {self.kind!r} scaling needs its training statistic {missing[0]!r}; it has none")

    @classmethod
    def fit(cls, kind: str, X_train) -> FeatureScaler:
        if kind == "tfidf":
            _check_counts(X_train)
            n = X_train.shape[0]
            return cls(kind, idf=1.0 + np.log((1.0 + n) / (1.0 + _document_frequency(X_train))))
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
        width = getattr(self, SCALING_STATISTICS[self.kind][0]).size  # std or idf: one per feature
        if X.shape[1] != width:
            raise InputError(f"the scaler was fitted on {width} features; got inputs with {X.shape[1]}")
        if self.kind == "tfidf":
            _check_counts(X)
            tf = _sublinear_tf(X)
            return _unit_rows((tf @ sp.diags(self.idf)).tocsr() if sp.issparse(tf) else tf * self.idf)
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
        if self.idf is not None:
            out[f"{prefix}idf"] = self.idf
        return out

    @classmethod
    def from_arrays(cls, arrays, prefix: str = "scaler_") -> FeatureScaler:
        get = lambda k: arrays[f"{prefix}{k}"] if f"{prefix}{k}" in arrays else None  # noqa: E731
        return cls(str(arrays[f"{prefix}kind"]), get("mean"), get("std"), get("idf"))


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
