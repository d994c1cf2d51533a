"""Reader for svmlight / libsvm text files: ``<label> <index>:<value> ... [# comment]``.

Index base.  A file's indices are 1-based (the libsvm convention, the default) or 0-based; the
base is never guessed per file, because a 0-based file that never uses feature 0 looks exactly like
a 1-based one and would be read with every feature shifted by one column.  :func:`load_svmlight`
takes ``zero_based`` (True / False) explicitly; a file read as 1-based that holds index 0 is
refused.  For a train / test pair, :func:`gpmodels.data.datasets.load_file` decides the base once
for both files (see there).

Sizes.  A feature index is a width the kernel code will allocate per-feature vectors of, so an
index above ``max_features`` (default :data:`MAX_FEATURES` = 2^24 = 16,777,216; one dense
float64 vector of that width is 128 MiB) is refused, naming the file and line, before anything is
allocated.  Labels must be finite numbers (``nan`` and ``inf`` are refused, naming the line); they
are returned as int64 when all are integral and exactly representable (|y| <= 2^53), else float.
``qid:`` fields are ignored.  Several comma-separated labels on a line are a multilabel and are
returned as a tuple per line.

Parser.  When scikit-learn is importable, a single-label file is read by its compiled
``load_svmlight_file`` (indices as written, float64) and the result then goes through the same
checks (finite labels and values, index bounds) and the same index-base rule as ours; any file it
refuses or that fails a check is re-read by the line parser here, so every error names its line as
before.  ``bench/svmlight_parser.py`` measures both on news20 and checks that they give identical
matrices and labels.  ``engine="python"`` forces the line parser.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from gpmodels.errors import DataError, InputError

__all__ = ["MAX_FEATURES", "SvmlightRaw", "parse_svmlight", "svmlight_matrix", "load_svmlight", "PARSER_ENGINES"]

#: default bound on a feature index (and so on the width of the data); raise it with ``max_features``
MAX_FEATURES = 2**24
_EXACT_INT = 2.0**53  # integral float labels beyond this are not exact integers


class SvmlightRaw(NamedTuple):
    """A parsed file before the index base is applied: ``cols`` are the indices as written."""

    path: Path
    labels: list
    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    n_rows: int
    multilabel: bool

    @property
    def uses_index_zero(self) -> bool:
        return bool(self.cols.size and self.cols.min() == 0)

    @property
    def max_index(self) -> int:
        return int(self.cols.max()) if self.cols.size else -1


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.3g} GiB"


def _check_max_features(max_features) -> int:
    if isinstance(max_features, bool) or not isinstance(max_features, (int, np.integer)) or max_features < 1:
        raise InputError(f"max_features must be a positive integer; got {max_features!r}")
    return int(max_features)


PARSER_ENGINES = ("auto", "sklearn", "python")


def _parse_sklearn(path: Path, max_features: int) -> SvmlightRaw | None:
    """The file read by scikit-learn's compiled parser and checked as ours checks it; None when
    scikit-learn is absent, refuses the file or a check fails (the line parser then names the line)."""
    try:
        from sklearn.datasets import load_svmlight_file
    except ImportError:
        return None
    try:
        X, y = load_svmlight_file(str(path), zero_based=True, dtype=np.float64, query_id=False)
    except (ValueError, TypeError, OverflowError, OSError, UnicodeError):
        return None
    X = X.tocoo()
    if X.shape[1] - 1 > max_features or not np.all(np.isfinite(y)) or not np.all(np.isfinite(X.data)):
        return None
    return SvmlightRaw(path, y.tolist(), X.row.astype(np.int64), X.col.astype(np.int64),
                       np.asarray(X.data, dtype=np.float64), int(X.shape[0]), False)


def parse_svmlight(path, *, multilabel: bool = False, max_features: int = MAX_FEATURES,
                   engine: str = "auto") -> SvmlightRaw:
    """Read a file into a :class:`SvmlightRaw`, checking every line (labels finite, features
    ``index:value`` with 0 <= index <= max_features and a finite value).  ``engine``: ``auto``
    (scikit-learn's parser when importable, for single-label files; module docstring), ``sklearn``
    (the same, for measuring) or ``python`` (the line parser)."""
    path = Path(path)
    max_features = _check_max_features(max_features)
    if engine not in PARSER_ENGINES:
        raise InputError(f"engine must be one of {', '.join(PARSER_ENGINES)}; got {engine!r}")
    if not path.is_file():
        raise DataError(f"svmlight file not found: {path}")
    if engine != "python" and not multilabel:
        raw = _parse_sklearn(path, max_features)
        if raw is not None:
            return raw
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
            shown = parts[0] if len(parts[0]) <= 40 else parts[0][:40] + "..."
            try:
                lab = tuple(float(t) for t in parts[0].split(",") if t) if multilabel else float(parts[0])
            except ValueError:
                raise DataError(f"{path}:{lineno}: label {shown!r} is not a number") from None
            if not np.all(np.isfinite(lab)):
                raise DataError(f"{path}:{lineno}: label {shown!r} is not finite; labels must be finite numbers")
            labels.append(lab)
            for tok in parts[1:]:
                if tok.startswith("qid:"):
                    continue
                shown = tok if len(tok) <= 40 else tok[:40] + "..."
                try:
                    idx_s, val_s = tok.split(":", 1)
                    idx, val = int(idx_s), float(val_s)
                except ValueError:
                    raise DataError(f"{path}:{lineno}: feature {shown!r} is not of the form index:value") from None
                if idx < 0:
                    raise DataError(f"{path}:{lineno}: feature index {idx} is negative; indices are 0- or 1-based")
                if idx > max_features:
                    width = float(min(idx, 10**300))  # (a 4000-digit index would overflow a float)
                    raise DataError(
                        f"{path}:{lineno}: feature index {idx_s if len(idx_s) <= 24 else idx_s[:24] + '...'} exceeds "
                        f"the limit of {max_features} features (one dense per-feature vector of that width would need "
                        f"{_gib(8.0 * width)}, dense inputs n x d {_gib(8.0 * width * (n_rows + 1))} so far); pass "
                        "max_features to raise it")
                if not np.isfinite(val):
                    raise DataError(f"{path}:{lineno}: feature {shown!r} has a non-finite value")
                rows.append(n_rows)
                cols.append(idx)
                vals.append(val)
            n_rows += 1
    return SvmlightRaw(path, labels, np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64),
                       np.asarray(vals, dtype=np.float64), n_rows, multilabel)


def _check_zero_based(zero_based) -> bool:
    if not isinstance(zero_based, (bool, np.bool_)):
        raise InputError(f"zero_based must be True (indices start at 0) or False (libsvm's 1-based indices); got "
                         f"{zero_based!r}. The base is never guessed per file: a 0-based file that never uses "
                         "feature 0 looks 1-based")
    return bool(zero_based)


def svmlight_matrix(raw: SvmlightRaw, zero_based: bool, n_features: int | None = None):
    """(X as CSR float64, labels) of a parsed file under an explicit index base; ``n_features``
    pads X to that width and refuses a file that uses a wider index."""
    zero_based = _check_zero_based(zero_based)
    cols = raw.cols if zero_based else raw.cols - 1
    if cols.size and cols.min() < 0:
        row = int(raw.rows[np.argmin(cols)]) + 1
        raise DataError(f"{raw.path}: feature index 0 in data row {row} of a file read as 1-based (libsvm's "
                        "convention); if the file's indices start at 0, read it with zero_based=True")
    width = int(cols.max()) + 1 if cols.size else 0
    if n_features is not None:
        if width > n_features:
            raise DataError(f"{raw.path}: feature index {raw.max_index} ({'0' if zero_based else '1'}-based) gives "
                            f"{width} features, more than the {n_features} expected")
        width = int(n_features)
    X = sp.csr_matrix((raw.vals, (raw.rows, cols)), shape=(raw.n_rows, width))
    X.sum_duplicates()
    X.sort_indices()
    if raw.multilabel:
        return X, list(raw.labels)
    y = np.asarray(raw.labels, dtype=np.float64)
    if y.size and np.all(y == np.round(y)) and np.abs(y).max() <= _EXACT_INT:
        y = y.astype(np.int64)  # integral labels are class codes: keep them integers ("3", not "3.0")
    return X, y


def load_svmlight(path, n_features: int | None = None, zero_based: bool = False, multilabel: bool = False, *,
                  max_features: int = MAX_FEATURES):
    """Return (X as CSR float64, labels): an int64 array when all labels are integral, else float64;
    a list of tuples if multilabel.  ``zero_based`` is the file's index base (module docstring)."""
    _check_zero_based(zero_based)
    return svmlight_matrix(parse_svmlight(path, multilabel=multilabel, max_features=max_features), zero_based,
                           n_features)
