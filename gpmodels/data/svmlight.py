"""Reader for svmlight / libsvm text files: ``<label> <index>:<value> ... [# comment]``.

Index base.  A file's indices are 1-based (the libsvm convention, the default) or 0-based; the
base is never guessed per file, because a 0-based file that never uses feature 0 looks exactly like
a 1-based one and would be read with every feature shifted by one column.  :func:`load_svmlight`
takes ``zero_based`` (True / False) explicitly; a file read as 1-based that holds index 0 is
refused.  For a train / test pair, :func:`gpmodels.data.files.load_file` decides the base once
for both files (see there).

Sizes.  A feature index is a width the kernel code will allocate per-feature vectors of, so an
index above ``max_features`` (default :data:`MAX_FEATURES` = 2^24 = 16,777,216; one dense
float64 vector of that width is 128 MiB) is refused, naming the file and line, before anything is
allocated.  A line is read whole, so a line longer than ``max_line_bytes`` (default
:data:`MAX_LINE_BYTES` = 16 MiB; a file without line breaks) is refused by a chunked scan before any
parser reads it.  Labels must be finite numbers (``nan`` and ``inf`` are refused, naming the line); they
are returned as int64 when all are integral and exactly representable (|y| <= 2^53), else float.
``qid:`` fields are ignored.  Several comma-separated labels on a line are a multilabel and are
returned as a tuple per line.

Parser.  When scikit-learn is importable, a single-label file is read by its compiled
``load_svmlight_file`` (indices as written, float64) and the result then goes through the same
checks (finite labels and values, index bounds) and the same index-base rule as ours; any file it
refuses or that fails a check is re-read by the line parser here, so every error names its line and
column (scikit-learn's own messages quote the file and name no line).  ``bench/svmlight_parser.py``
measures both on news20 and checks that they give identical matrices and labels.  ``engine="python"``
forces the line parser.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from gpmodels.errors import DataError, InputError, at, described

__all__ = [
    "MAX_FEATURES",
    "MAX_LINE_BYTES",
    "check_line_lengths",
    "SvmlightRaw",
    "parse_svmlight",
    "svmlight_matrix",
    "load_svmlight",
    "PARSER_ENGINES",
]

#: default bound on a feature index (and so on the width of the data); raise it with ``max_features``
MAX_FEATURES = 2**24
#: default bound on the length of one line (bytes): a line is read whole, so a file without line breaks is
#: refused rather than read into memory; raise it with ``max_line_bytes``
MAX_LINE_BYTES = 2**24
_CHUNK = 2**20
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
    return SvmlightRaw(
        path,
        y.tolist(),
        X.row.astype(np.int64),
        X.col.astype(np.int64),
        np.asarray(X.data, dtype=np.float64),
        int(X.shape[0]),
        False,
    )


def check_line_lengths(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> None:
    """Refuse a text file with a line longer than ``max_line_bytes`` (a file without newlines would
    otherwise be read whole into memory by a line reader), scanning it in 1 MiB chunks."""
    run, line = 0, 1
    size = min(_CHUNK, max(int(max_line_bytes), 1))  # a gap inside one chunk is then within the limit
    with path.open("rb") as fh:
        while chunk := fh.read(size):
            first = chunk.find(b"\n")
            if (run + len(chunk) if first < 0 else run + first) > max_line_bytes:
                raise DataError(
                    f"{at(path, line)}: a line longer than {max_line_bytes} bytes (text without line breaks?); "
                    "an svmlight file has one point per line (pass max_line_bytes to raise the limit)"
                )
            if first >= 0:
                line += chunk.count(b"\n")
                run = len(chunk) - chunk.rfind(b"\n") - 1
            else:
                run += len(chunk)


def _parse_label(text: str, path: Path, lineno: int, multilabel: bool):
    """The label(s) of a line: finite numbers (never quoting the token that is not one)."""
    try:
        lab = tuple(float(t) for t in text.split(",") if t) if multilabel else float(text)
    except ValueError:
        raise DataError(
            f"{at(path, lineno, 1)}: the label ({described(text)}) is not a number; a line starts with a "
            "numeric label (several, comma-separated, in a multilabel file)"
        ) from None
    if not np.all(np.isfinite(lab)):
        raise DataError(f"{at(path, lineno, 1)}: label {lab} is not finite; labels must be finite numbers")
    return lab


def _parse_feature(tok: str, where: str, max_features: int, n_rows: int) -> tuple[int, float]:
    """(index, value) of one ``index:value`` token; ``where`` is its ``path:line:column``."""
    try:
        idx_s, val_s = tok.split(":", 1)
        idx, val = int(idx_s), float(val_s)
    except ValueError:
        raise DataError(
            f"{where}: a feature ({described(tok)}) is not of the form index:value (an integer index, "
            "a colon, a number)"
        ) from None
    if idx < 0:
        raise DataError(f"{where}: feature index {idx} is negative; indices are 0- or 1-based")
    if idx > max_features:
        width = float(min(idx, 10**300))  # (a 4000-digit index would overflow a float)
        raise DataError(
            f"{where}: feature index {idx_s if len(idx_s) <= 24 else idx_s[:24] + '...'} exceeds the limit of "
            f"{max_features} features (one dense per-feature vector of that width would need {_gib(8.0 * width)}, "
            f"dense inputs n x d {_gib(8.0 * width * (n_rows + 1))} so far); pass max_features to raise it"
        )
    if not np.isfinite(val):
        raise DataError(f"{where}: feature {idx} has the non-finite value {val}; values must be finite numbers")
    return idx, val


_TOKEN = re.compile(r"\S+")


def parse_svmlight(
    path,
    *,
    multilabel: bool = False,
    max_features: int = MAX_FEATURES,
    engine: str = "auto",
    max_line_bytes: int = MAX_LINE_BYTES,
) -> SvmlightRaw:
    """Read a file into a :class:`SvmlightRaw`, checking every line (labels finite, features
    ``index:value`` with 0 <= index <= max_features and a finite value, at most ``max_line_bytes``
    bytes).  ``engine``: ``auto`` (scikit-learn's parser when importable, for single-label files;
    module docstring), ``sklearn`` (the same, for measuring) or ``python`` (the line parser).
    Errors name the file, line and column and never quote the file (:func:`gpmodels.errors.at`)."""
    path = Path(path)
    max_features = _check_max_features(max_features)
    if engine not in PARSER_ENGINES:
        raise InputError(f"engine must be one of {', '.join(PARSER_ENGINES)}; got {engine!r}")
    if not path.is_file():
        raise DataError(f"svmlight file not found: {path}")
    check_line_lengths(path, max_line_bytes)
    if engine != "python" and not multilabel:
        raw = _parse_sklearn(path, max_features)
        if raw is not None:
            return raw
    labels, rows, cols, vals = [], [], [], []
    n_rows = 0
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.split("#", 1)[0]
            tokens = list(_TOKEN.finditer(line))
            if not tokens:
                continue
            first = tokens[0].group()
            if multilabel and ":" in first and tokens[0].start() > 0:
                labels.append(())  # a line with no labels starts with white space
            else:
                labels.append(_parse_label(first, path, lineno, multilabel))
                tokens = tokens[1:]
            for m in tokens:
                tok = m.group()
                if tok.startswith("qid:"):
                    continue
                idx, val = _parse_feature(tok, at(path, lineno, m.start() + 1), max_features, n_rows)
                rows.append(n_rows)
                cols.append(idx)
                vals.append(val)
            n_rows += 1
    return SvmlightRaw(
        path,
        labels,
        np.asarray(rows, dtype=np.int64),
        np.asarray(cols, dtype=np.int64),
        np.asarray(vals, dtype=np.float64),
        n_rows,
        multilabel,
    )


def _check_zero_based(zero_based) -> bool:
    if not isinstance(zero_based, (bool, np.bool_)):
        raise InputError(
            f"zero_based must be True (indices start at 0) or False (libsvm's 1-based indices); got "
            f"{zero_based!r}. The base is never guessed per file: a 0-based file that never uses "
            "feature 0 looks 1-based"
        )
    return bool(zero_based)


def svmlight_matrix(raw: SvmlightRaw, zero_based: bool, n_features: int | None = None):
    """(X as CSR float64, labels) of a parsed file under an explicit index base; ``n_features``
    pads X to that width and refuses a file that uses a wider index."""
    zero_based = _check_zero_based(zero_based)
    cols = raw.cols if zero_based else raw.cols - 1
    if cols.size and cols.min() < 0:
        row = int(raw.rows[np.argmin(cols)]) + 1
        raise DataError(
            f"{raw.path}: feature index 0 in data row {row} of a file read as 1-based (libsvm's "
            "convention); if the file's indices start at 0, read it with zero_based=True"
        )
    width = int(cols.max()) + 1 if cols.size else 0
    if n_features is not None:
        if width > n_features:
            raise DataError(
                f"{raw.path}: feature index {raw.max_index} ({'0' if zero_based else '1'}-based) gives "
                f"{width} features, more than the {n_features} expected"
            )
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


def load_svmlight(
    path,
    n_features: int | None = None,
    zero_based: bool = False,
    multilabel: bool = False,
    *,
    max_features: int = MAX_FEATURES,
):
    """Return (X as CSR float64, labels): an int64 array when all labels are integral, else float64;
    a list of tuples if multilabel.  ``zero_based`` is the file's index base (module docstring)."""
    _check_zero_based(zero_based)
    return svmlight_matrix(
        parse_svmlight(path, multilabel=multilabel, max_features=max_features), zero_based, n_features
    )
