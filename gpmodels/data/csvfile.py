"""CSV data files: a header line, numeric feature columns and one label column.

The label column is named in the spec (``data.label_column``, default ``label``); every other
column is a feature, in the file's order.  Labels that all read as integers (or all as numbers) are
numbers, so classes sort by value as for the other formats; otherwise they are text; empty,
non-finite and ambiguous labels are refused (:mod:`gpmodels.data.labels`).  For prediction the label
column is optional (:func:`load_csv` with ``require_label=False``) and a model's feature columns are
matched by header name (``features``), never by position.

Text is UTF-8 (a byte-order mark is stripped, so the first header name is read as written; UTF-16
and UTF-32 are refused, :func:`gpmodels.numerals.decode_text`), read by the csv module's strict
dialect: a quote inside an unquoted cell or text after a closing quote is refused.  Cells are stripped of
ASCII spaces and tabs only.  Features are finite numbers of the ASCII grammar
(:mod:`gpmodels.numerals`: no ``_``, no digits of other scripts, no ``nan`` / ``inf``); every header
name is non-empty and unique.

Errors (DataError) name the file, the line and the column by number: no header, a missing label
column, a row of another width, a feature that is not a finite number.  They quote no header name
or cell (file content), only the ``label_column`` of the spec.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gpmodels.data.labels import labels_from_cells
from gpmodels.data.svmlight import check_line_lengths
from gpmodels.errors import DataError, at
from gpmodels.numerals import decode_text, parse_float, read_number

__all__ = ["load_csv", "csv_header", "DEFAULT_LABEL_COLUMN"]

DEFAULT_LABEL_COLUMN = "label"


_SPACE = " \t"


def _text(path: Path) -> str:
    """The file's text (each line bounded first; a UTF-8 byte-order mark stripped)."""
    check_line_lengths(path)
    return decode_text(path.read_bytes(), path, "a .csv data file")


def _read_rows(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The header and the (line number, cells) of every non-blank row."""
    text = _text(path)
    try:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        rows = []
        for row in reader:
            if row and any(cell.strip(_SPACE) for cell in row):
                rows.append((reader.line_num, row))
    except csv.Error:  # its message quotes the file
        raise DataError(
            f"{path} cannot be read as CSV (malformed quoting near line {reader.line_num}, or a field larger than "
            f"{csv.field_size_limit()} characters); a quote opens a cell and closes it before the next comma"
        ) from None
    if not rows:
        raise DataError(f"{path} is empty; a .csv data file needs a header line and one row per point")
    line, header = rows[0]
    header = [h.strip(_SPACE) for h in header]
    if all(parse_float(h) is not None for h in header):
        raise DataError(
            f"{at(path, line)}: the first line holds only numbers; a .csv data file starts with a header "
            "line naming its columns"
        )
    if "" in header:
        raise DataError(f"{at(path, line)}: column {header.index('') + 1} of the header has no name; name every column")
    return header, rows[1:]


def _columns(path: Path, header: list[str], label_at, features: Sequence[str] | None) -> list[int]:
    """The header positions of the feature columns: every column but the label's, in the file's order,
    or the columns named ``features`` (the model's) in that order, matched by name."""
    if features is None:
        return [j for j in range(len(header)) if j != label_at]
    where = {h: j for j, h in enumerate(header)}
    missing = [k + 1 for k, name in enumerate(features) if name not in where]
    extra = [j + 1 for j, h in enumerate(header) if j != label_at and h not in set(features)]
    if missing or extra:
        raise DataError(
            f"{path}: its columns do not match the {len(features)} feature columns the model was trained on "
            f"(matched by header name): {len(missing)} of the model's columns are missing"
            f"{f' (training columns {missing[:10]})' if missing else ''}, {len(extra)} columns are not the model's"
            f"{f' (columns {extra[:10]} of this file)' if extra else ''}; give the training file's header"
        )
    return [where[name] for name in features]


def csv_header(path, label_column: str = DEFAULT_LABEL_COLUMN) -> tuple[str, ...]:
    """The names of the feature columns of a CSV file (every column but ``label_column``), read from
    its first non-blank line (the rest of the file is checked by :func:`load_csv`)."""
    path = Path(path)
    try:
        header = next(
            (
                row
                for row in csv.reader(io.StringIO(_text(path), newline=""))
                if row and any(c.strip(_SPACE) for c in row)
            ),
            [],
        )
    except (DataError, csv.Error):
        header = []  # load_csv says what is wrong
    return tuple(h.strip(_SPACE) for h in header if h.strip(_SPACE) != label_column)


def load_csv(
    path, label_column: str = DEFAULT_LABEL_COLUMN, *, require_label: bool = True, features: Sequence[str] | None = None
):
    """(X, y) from a CSV file with a header: ``X`` (n, d) float64 from every column but
    ``label_column`` (or from the columns named ``features``, in that order: a model's inputs are
    matched by name), ``y`` the labels (:func:`~gpmodels.data.labels.labels_from_cells`; None when
    the column is absent and not required).  Messages name columns by their number (header names
    and cells are the file's content) and quote only ``label_column``."""
    path = Path(path)
    header, rows = _read_rows(path)
    if len(set(header)) != len(header):
        seen: dict[str, int] = {}
        for j, h in enumerate(header):
            if h in seen:
                raise DataError(
                    f"{path}: columns {seen[h] + 1} and {j + 1} of the header have the same name; "
                    "every column needs its own name"
                )
            seen[h] = j
    if label_column in header:
        label_at = header.index(label_column)
    elif require_label:
        raise DataError(
            f"{path} has no label column {label_column!r} (data.label_column); none of its "
            f"{len(header)} columns has that name"
        )
    else:
        label_at = None
    columns = _columns(path, header, label_at, features)
    X = np.empty((len(rows), len(columns)))
    for i, (line, row) in enumerate(rows):
        if len(row) != len(header):
            raise DataError(f"{at(path, line)}: {len(row)} values; the header names {len(header)} columns")
        for k, j in enumerate(columns):
            X[i, k] = read_number(
                row[j].strip(_SPACE),
                "float",
                at(path, line),
                f"column {j + 1}",
            )
    if label_at is None:
        return X, None
    return X, labels_from_cells([row[label_at].strip(_SPACE) for _, row in rows], path, [line for line, _ in rows])
