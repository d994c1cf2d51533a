"""Reader for ARFF files (Weka's Attribute-Relation File Format).

Numeric attributes (``numeric``, ``real``, ``integer``) are the features; the class attribute is
the one named ``class`` (any case), else the last attribute, and must be nominal: its values are
the labels (strings).  Other nominal attributes, ``string``, ``date`` and ``relational``
attributes, missing class values and an absent nominal class attribute are DataErrors that name
the attribute by its number and line (never by its name, which is the file's content).

The data section is read here, by the format's rules: UTF-8 text (a byte-order mark stripped,
UTF-16 refused; :func:`gpmodels.numerals.decode_text`), ``%`` comment lines, one row per line with
one value per attribute, separated by commas; a value may be quoted (``'a b'``, ``"a b"``).  A
``numeric`` / ``real`` value is a finite decimal of the ASCII grammar (:mod:`gpmodels.numerals`),
an ``integer`` value an integer of it; a missing feature value (``?``) is refused (the models need every
feature); a class value is one of the values its ``@attribute`` line declares.  Sparse rows (``{...}``)
are refused.  Attribute names are unique.

``features`` (the training file's feature attributes, by name) matches a test or prediction file to the
training attributes BY NAME: its feature columns are reordered to the training order; a training
attribute it lacks or a feature attribute the training file did not have is refused (by number).

``require_class=False`` (prediction inputs) also accepts a file without a class attribute, or
with only missing class values; the labels are then None.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from gpmodels.data.svmlight import check_line_lengths
from gpmodels.errors import DataError, at
from gpmodels.numerals import decode_text, read_number

__all__ = ["load_arff", "arff_feature_names"]

NUMERIC_TYPES = ("numeric", "real", "integer")
_ATTRIBUTE = re.compile(r"""^\s*@attribute\s+('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\S+)\s+(.*)$""", re.IGNORECASE)
_CELL = re.compile(r"""[ \t]*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^,'"]*?)[ \t]*(,|$)""")
_ESCAPE = re.compile(r"\\(.)")


class _Attr(NamedTuple):
    name: str
    kind: str  # numeric, real, integer, nominal, string, date, relational, or another word
    line: int
    values: tuple[str, ...] = ()  # a nominal attribute's declared values


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return _ESCAPE.sub(r"\1", text[1:-1])
    return text


def _cells(text: str) -> list[str] | None:
    """The comma-separated values of ``text``, unquoted; None when the quoting is malformed."""
    out, pos = [], 0
    while True:
        m = _CELL.match(text, pos)
        if m is None:
            return None
        out.append(_unquote(m.group(1)))
        if not m.group(2):
            return out
        pos = m.end()


def _lines(path: Path) -> list[str]:
    check_line_lengths(path)
    return decode_text(path.read_bytes(), path, "an ARFF file").split("\n")


def _header(path: Path, lines: list[str]) -> tuple[list[_Attr], int | None]:
    """The attributes (name, type keyword, line number, nominal values) and the index of the ``@data`` line
    (None when there is none)."""
    attrs = []
    for k, line in enumerate(lines):
        if line.strip().lower().startswith("@data"):
            return attrs, k
        m = _ATTRIBUTE.match(line)
        if m:
            name, rest = _unquote(m.group(1)), m.group(2).strip()
            if rest.startswith("{"):
                inner = rest[1 : rest.rfind("}")] if "}" in rest else None
                values = _cells(inner) if inner is not None else None
                if values is None:
                    raise DataError(f"{at(path, k + 1)}: a nominal attribute's values are not a list {{a,b,...}}")
                attrs.append(_Attr(name, "nominal", k + 1, tuple(v.strip() for v in values)))
            else:
                attrs.append(_Attr(name, rest.split()[0].lower() if rest else "", k + 1))
    return attrs, None


def _attribute(header, i: int) -> str:
    """An attribute named by its place (its name is the file's content): ``attribute 3 (line 5)``."""
    return f"attribute {i + 1} (line {header[i][2]})"


def _class_attribute(path: Path, header, require_class: bool) -> int | None:
    """Index of the class attribute: the one named ``class``, else the last; it must be nominal (None
    when it is not and ``require_class`` is False)."""
    lower = [a.name.lower() for a in header]
    cls = lower.index("class") if "class" in lower else len(header) - 1
    if header[cls][1] == "nominal":
        return cls
    if require_class:
        raise DataError(
            f"{path}: no nominal class attribute: {_attribute(header, cls)} is not nominal; name "
            "the class attribute `class` or put it last, with its values in braces {a,b,...}"
        )
    return None


def _check_feature_types(path: Path, header, cls: int | None) -> None:
    """Every attribute but the class ``cls`` is numeric; DataError naming the first that is not, and its type."""
    for i, (_, kind, _, _) in enumerate(header):
        if i == cls or kind in NUMERIC_TYPES:
            continue
        what = {
            "nominal": "a nominal feature (encode it as numeric columns first)",
            "string": "a string attribute",
            "date": "a date attribute",
            "relational": "a relational attribute",
        }.get(kind, "of a type that is none of these")
        raise DataError(
            f"{path}: {_attribute(header, i)} is {what}; features must be numeric "
            f"({', '.join(NUMERIC_TYPES)}) and the class attribute nominal"
        )


def _row(path: Path, header: list[_Attr], cls: int | None, lineno: int, cells: list[str]):
    """(features, class value) of one data row, each value read by its attribute's rule."""
    if len(cells) != len(header):
        raise DataError(f"{at(path, lineno)}: {len(cells)} values; the header declares {len(header)} attributes")
    x, label = [], None
    for i, (cell, a) in enumerate(zip(cells, header)):
        cell = cell.strip(" \t")
        where = at(path, lineno)
        if i == cls:
            if cell != "?" and cell not in a.values:
                raise DataError(
                    f"{where}: the class value ({len(cell)} characters) is none of the {len(a.values)} values that "
                    f"{_attribute(header, i)} declares"
                )
            label = cell
        elif cell == "?":
            raise DataError(
                f"{where}: {_attribute(header, i)} is missing ('?'); every feature of every point needs a value"
            )
        else:
            x.append(read_number(cell, "int" if a.kind == "integer" else "float", where, _attribute(header, i)))
    return x, label


def _by_name(path: Path, header: list[_Attr], feature_at: list[int], features: Sequence[str]) -> list[int]:
    """The positions (among ``feature_at``) of the training attributes ``features``, matched by name."""
    where = {header[i].name: k for k, i in enumerate(feature_at)}
    missing = [k + 1 for k, name in enumerate(features) if name not in where]
    extra = [i + 1 for i in feature_at if header[i].name not in set(features)]
    if missing or extra:
        raise DataError(
            f"{path}: its attributes do not match the {len(features)} feature attributes the model was trained on "
            f"(matched by name): {len(missing)} of the training attributes are missing"
            f"{f' (training attributes {missing[:10]})' if missing else ''}, {len(extra)} attributes are not the "
            f"training file's{f' (attributes {extra[:10]} of this file)' if extra else ''}"
        )
    return [where[name] for name in features]


def arff_feature_names(path) -> tuple[str, ...]:
    """The names of the feature attributes of an ARFF file (every numeric attribute but the class),
    in order; empty when the header cannot be read (:func:`load_arff` says why)."""
    try:
        header, _ = _header(Path(path), _lines(Path(path)))
        cls = _class_attribute(Path(path), header, False) if header else None
    except DataError:
        return ()
    return tuple(a.name for i, a in enumerate(header) if i != cls)


def load_arff(path, *, require_class: bool = True, features: Sequence[str] | None = None):
    """Return (X as float64 (n, d), labels as a str array, or None when ``require_class`` is False
    and the file has no class values).  ``features``: the training attributes' names, matched by name
    (module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"ARFF file not found: {path}")
    lines = _lines(path)
    header, data_at = _header(path, lines)
    if not header:
        raise DataError(f"{path}: no `@attribute` lines; is it an ARFF file?")
    if data_at is None:
        raise DataError(f"{path}: no `@data` line; an ARFF file's rows follow `@data`")
    names = [a.name for a in header]
    if len(set(names)) != len(names):
        j = next(j for j, n in enumerate(names) if n in names[:j])
        raise DataError(f"{path}: {_attribute(header, j)} has the name of an earlier attribute; names are unique")
    cls = _class_attribute(path, header, require_class)
    _check_feature_types(path, header, cls)
    rows, y = [], []
    for k in range(data_at + 1, len(lines)):
        text = lines[k].strip(" \t\r")
        if not text or text.startswith("%"):
            continue
        if text.startswith("{"):
            raise DataError(f"{at(path, k + 1)}: a sparse row ({{index value, ...}}); only dense rows are read")
        cells = _cells(text)
        if cells is None:
            raise DataError(f"{at(path, k + 1)}: malformed quoting; a quoted value is closed before the next comma")
        x, label = _row(path, header, cls, k + 1, cells)
        rows.append(x)
        y.append(label)
    feature_at = [i for i in range(len(header)) if i != cls]
    X = np.array(rows, dtype=np.float64).reshape(len(rows), len(feature_at))
    if features is not None:
        X = X[:, _by_name(path, header, feature_at, features)]
    if cls is None:
        return X, None
    y = np.array(y, dtype=str)
    missing = y == "?"
    if missing.all() and not require_class:
        return X, None
    if missing.any():
        raise DataError(
            f"{path}: the class ({_attribute(header, cls)}) is missing ('?') in {int(missing.sum())} rows "
            f"(first: data row {int(np.flatnonzero(missing)[0]) + 1}); every training and test point needs "
            "a label"
        )
    return X, y
