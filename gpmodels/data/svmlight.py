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
parser reads it.

Grammar (:mod:`gpmodels.numerals`, ASCII numerals only).  A label is an integer token (``3``,
``-1``, ``+1``: read exactly, as a Python int at any size) or a decimal (``1.5``, ``2e3``); ``nan`` and
``inf`` are refused.  Labels are returned as int64 when every label is an integer token within int64,
uint64 when within uint64, as their decimal text beyond (exact; the label kind is then text), and as
float64 when any label is a decimal, provided no integer and decimal token name one number (``1`` and
``1.0``: refused as ambiguous) and every integer is exact in float64 (|y| <= 2^53).  A feature is
``index:value``: the index an integer token, the value a finite decimal.  Within a line the indices are
strictly ascending (libsvm's rule): a repeated index is refused, never summed or overwritten.
``qid:`` fields are ignored.  Several comma-separated labels on a line are a multilabel and are
returned as a tuple per line.

Parser.  When scikit-learn is importable, a single-label file is read by its compiled
``load_svmlight_file`` (indices as written, float64) and the result then goes through the same
checks (finite labels and values, index bounds) and the same index-base rule as ours; any file it
refuses, that fails a check or that holds a byte outside ASCII or a ``_`` (the only text on which
its ``int`` / ``float`` and the ASCII grammar could differ) is re-read by the line parser here, so
every error names its line and column (scikit-learn's own messages quote the file and name no
line).  Its labels are read apart, by the grammar, from each line's first token.
``bench/svmlight_parser.py`` measures both on news20 and checks that they give identical matrices and
labels.  ``engine="python"`` forces the line parser.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from gpmodels.data.labels import label_array
from gpmodels.errors import DataError, InputError, at, described
from gpmodels.numerals import allowed, decode_text, parse_int, parse_number, read_number, why_not

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


_LABEL = re.compile(rb"^[ \t\r\f\v]*([^\s#]+)", re.MULTILINE)


def _parse_sklearn(path: Path, max_features: int) -> SvmlightRaw | None:
    """The file read by scikit-learn's compiled parser and checked as ours checks it; None when
    scikit-learn is absent, the file is not plain ASCII without ``_`` (module docstring), scikit-learn
    refuses it or a check fails (the line parser then names the line).  The labels are read by the
    grammar from the lines' first tokens, so integer labels stay exact."""
    try:
        from sklearn.datasets import load_svmlight_file
    except ImportError:
        return None
    data = path.read_bytes()
    if not data.isascii() or b"_" in data:
        return None
    try:
        X, _ = load_svmlight_file(str(path), zero_based=True, dtype=np.float64, query_id=False)
    except (ValueError, TypeError, OverflowError, OSError, UnicodeError):
        return None
    labels = [parse_number(m.group(1).decode("ascii")) for m in _LABEL.finditer(data)]
    X = X.tocoo()
    if (
        len(labels) != X.shape[0]
        or any(v is None or (isinstance(v, float) and not np.isfinite(v)) for v in labels)
        or X.shape[1] - 1 > max_features
        or not np.all(np.isfinite(X.data))
    ):
        return None
    return SvmlightRaw(
        path,
        labels,
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
    """The label(s) of a line: finite numbers of the grammar, an int for an integer token (never quoting
    the token that is not one)."""
    where = at(path, lineno, 1)
    if multilabel:
        return tuple(read_number(t, "number", where, "the label") for t in text.split(",") if t)
    return read_number(text, "number", where, "the label")


def _parse_feature(tok: str, where: str, max_features: int, n_rows: int) -> tuple[int, float]:
    """(index, value) of one ``index:value`` token; ``where`` is its ``path:line:column``."""
    idx_s, colon, val_s = tok.partition(":")
    if not colon:
        raise DataError(
            f"{where}: a feature ({described(tok)}) is not of the form index:value (an integer index, "
            "a colon, a number)"
        )
    idx = parse_int(idx_s)
    if idx is None:
        raise DataError(
            f"{where}: the index of a feature index:value is not an integer: {why_not(idx_s, 'int')}; "
            f"allowed: {allowed('int')}"
        )
    if idx < 0:
        raise DataError(f"{where}: feature index {idx} is negative; indices are 0- or 1-based")
    if idx > max_features:
        width = float(min(idx, 10**300))  # (a 4000-digit index would overflow a float)
        raise DataError(
            f"{where}: feature index {idx_s if len(idx_s) <= 24 else idx_s[:24] + '...'} exceeds the limit of "
            f"{max_features} features (one dense per-feature vector of that width would need {_gib(8.0 * width)}, "
            f"dense inputs n x d {_gib(8.0 * width * (n_rows + 1))} so far); pass max_features to raise it"
        )
    val = read_number(val_s, "float", where, f"feature {idx}'s value")
    return idx, val


_TOKEN = re.compile(r"[^ \t\r\f\v]+")


def _unordered(where: str, idx: int, last: int):
    """Refuse a feature index that does not follow the line's previous one."""
    if idx == last:
        raise DataError(
            f"{where}: feature index {idx} is given twice on one line; each feature appears once (its values "
            "are never summed or overwritten)"
        )
    raise DataError(
        f"{where}: feature index {idx} follows index {last}; the indices of a line are strictly ascending "
        "(libsvm's rule)"
    )


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
    text = decode_text(path.read_bytes(), path, "an svmlight file")
    for lineno, raw in enumerate(text.split("\n"), start=1):
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
        last = -1
        for m in tokens:
            tok = m.group()
            if tok.startswith("qid:"):
                continue
            where = at(path, lineno, m.start() + 1)
            idx, val = _parse_feature(tok, where, max_features, n_rows)
            if idx <= last:
                _unordered(where, idx, last)
            last = idx
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
    X.sort_indices()
    if raw.multilabel:
        return X, list(raw.labels)
    return X, label_array(raw.labels, lambda k: f"{raw.path}: data row {k + 1}")


def load_svmlight(
    path,
    n_features: int | None = None,
    zero_based: bool = False,
    multilabel: bool = False,
    *,
    max_features: int = MAX_FEATURES,
):
    """Return (X as CSR float64, labels): int64 / uint64 / float64 or text as the module docstring says;
    a list of tuples if multilabel.  ``zero_based`` is the file's index base (module docstring)."""
    _check_zero_based(zero_based)
    return svmlight_matrix(
        parse_svmlight(path, multilabel=multilabel, max_features=max_features), zero_based, n_features
    )
