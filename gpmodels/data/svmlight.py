"""Reader for svmlight / libsvm text files: ``<label> <index>:<value> ... [# comment]``.

Indices are 1-based by default (libsvm convention); ``zero_based='auto'`` takes them as 0-based
only if some index is 0.  ``qid:`` fields are ignored.  Labels may be integers or floats; several
comma-separated labels on a line are a multilabel and are returned as a list per line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from gpmodels.errors import DataError

__all__ = ["load_svmlight"]


def load_svmlight(path, n_features: int | None = None, zero_based: bool | str = "auto", multilabel: bool = False):
    """Return (X as CSR float64, labels).  Labels: an int array when all are integral, else float;
    a list of tuples if multilabel."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"svmlight file not found: {path}")
    labels, rows, cols, vals = [], [], [], []
    n_rows = 0
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if multilabel and ":" in parts[0] and not raw[:1].strip():
                parts = [""] + parts  # a line with no labels starts with white space
            try:
                if multilabel:
                    lab = tuple(float(t) for t in parts[0].split(",") if t)
                else:
                    lab = float(parts[0])
            except ValueError:
                raise DataError(f"{path}:{lineno}: label {parts[0]!r} is not a number") from None
            labels.append(lab)
            for tok in parts[1:]:
                if tok.startswith("qid:"):
                    continue
                try:
                    idx_s, val_s = tok.split(":", 1)
                    idx, val = int(idx_s), float(val_s)
                except ValueError:
                    raise DataError(f"{path}:{lineno}: feature {tok!r} is not of the form index:value") from None
                if not np.isfinite(val):
                    raise DataError(f"{path}:{lineno}: feature {tok!r} has a non-finite value")
                rows.append(n_rows)
                cols.append(idx)
                vals.append(val)
            n_rows += 1
    cols_arr = np.asarray(cols, dtype=np.int64)
    if zero_based == "auto":
        zero_based = bool(cols_arr.size and cols_arr.min() == 0)
    if not zero_based:
        cols_arr = cols_arr - 1
    if cols_arr.size and cols_arr.min() < 0:
        raise DataError(f"{path}: feature index 0 found in a 1-based file (pass zero_based=True)")
    width = int(cols_arr.max()) + 1 if cols_arr.size else 0
    if n_features is not None:
        if width > n_features:
            raise DataError(f"{path}: feature index {width - 1} exceeds n_features={n_features}")
        width = n_features
    X = sp.csr_matrix((np.asarray(vals, dtype=np.float64), (np.asarray(rows, dtype=np.int64), cols_arr)),
                      shape=(n_rows, width))
    X.sum_duplicates()
    X.sort_indices()
    if multilabel:
        return X, labels
    y = np.asarray(labels, dtype=np.float64)
    if y.size and np.all(y == np.round(y)):
        y = y.astype(np.int64)  # integral labels are class codes: keep them integers ("3", not "3.0")
    return X, y
