"""CSV data files: a header line, numeric feature columns and one label column.

The label column is named in the spec (``data.label_column``, default ``label``); every other
column is a feature, in the file's order.  Labels that all read as integers (or all as numbers) are
numbers, so classes sort by value as for the other formats; otherwise they are text.  For
prediction the label column is optional (:func:`load_csv` with ``require_label=False``).

Errors (DataError) name the file, the line and the column: no header, a missing label column (the
columns found are listed), a row of another width, a feature that is not a finite number.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from gpmodels.errors import DataError

__all__ = ["load_csv", "DEFAULT_LABEL_COLUMN"]

DEFAULT_LABEL_COLUMN = "label"


def _labels(values: list[str]) -> np.ndarray:
    """Integer labels when every label is an integer, else numbers when every one is, else text."""
    for kind in (int, float):
        try:
            return np.array([kind(v) for v in values])
        except ValueError:
            continue
    return np.array(values, dtype=str)


def _read_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = [row for row in csv.reader(fh) if row and any(cell.strip() for cell in row)]
    except UnicodeDecodeError:
        raise DataError(f"{path} is not UTF-8 text; a .csv data file is text with a header line") from None
    except csv.Error as exc:
        raise DataError(f"{path} cannot be read as CSV ({exc})") from None
    if not rows:
        raise DataError(f"{path} is empty; a .csv data file needs a header line and one row per point")
    header = [h.strip() for h in rows[0]]
    if all(_is_number(h) for h in header):
        raise DataError(f"{path}: the first line holds only numbers; a .csv data file starts with a header line "
                        "naming its columns")
    return header, rows[1:]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def load_csv(path, label_column: str = DEFAULT_LABEL_COLUMN, *, require_label: bool = True):
    """(X, y) from a CSV file with a header: ``X`` (n, d) float64 from every column but
    ``label_column``, ``y`` the raw labels (None when the column is absent and not required)."""
    path = Path(path)
    header, rows = _read_rows(path)
    if len(set(header)) != len(header):
        dup = sorted({h for h in header if header.count(h) > 1})
        raise DataError(f"{path}: the header names columns {dup[:5]} more than once")
    if label_column in header:
        label_at = header.index(label_column)
    elif require_label:
        raise DataError(f"{path} has no label column {label_column!r} (data.label_column); its columns are "
                        f"{header[:20]}")
    else:
        label_at = None
    features = [j for j in range(len(header)) if j != label_at]
    X = np.empty((len(rows), len(features)))
    for i, row in enumerate(rows):
        if len(row) != len(header):
            raise DataError(f"{path}:{i + 2}: {len(row)} values; the header names {len(header)} columns")
        for k, j in enumerate(features):
            try:
                X[i, k] = float(row[j])
            except ValueError:
                raise DataError(f"{path}:{i + 2}: column {header[j][:40]!r} holds {row[j][:40]!r}, not a number "
                                f"(every column but the label column {label_column!r} is a feature)") from None
    if not np.all(np.isfinite(X)):
        i, k = np.argwhere(~np.isfinite(X))[0]
        raise DataError(f"{path}:{i + 2}: column {header[features[k]][:40]!r} is not finite ({X[i, k]})")
    y = None if label_at is None else _labels([row[label_at].strip() for row in rows])
    return X, y
