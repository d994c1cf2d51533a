"""Reader for ARFF files (Weka's Attribute-Relation File Format) by ``scipy.io.arff``.

Numeric attributes (``numeric``, ``real``, ``integer``) are the features; the class attribute is
the one named ``class`` (any case), else the last attribute, and must be nominal: its values are
the labels (strings).  Other nominal attributes, ``string``, ``date`` and ``relational``
attributes, missing class values and an absent nominal class attribute are DataErrors that name
the attribute by its number and line (never by its name, which is the file's content).  Missing
feature values (``?``) are NaN and are refused later by the feature check.

``require_class=False`` (prediction inputs) also accepts a file without a class attribute, or
with only missing class values; the labels are then None.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from gpmodels.data.svmlight import check_line_lengths
from gpmodels.errors import DataError

__all__ = ["load_arff"]

NUMERIC_TYPES = ("numeric", "real", "integer")
_ATTRIBUTE = re.compile(r"""^\s*@attribute\s+('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\S+)\s+(.*)$""", re.IGNORECASE)


def _header(path: Path) -> list[tuple[str, str, int]]:
    """(name, type keyword, line number) of every attribute, read from the header before scipy parses
    the file: scipy refuses string attributes without naming them."""
    check_line_lengths(path)
    attrs = []
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.strip().lower().startswith("@data"):
                break
            m = _ATTRIBUTE.match(line)
            if m:
                name, rest = m.group(1).strip("'\""), m.group(2).strip()
                kind = "nominal" if rest.startswith("{") else rest.split()[0].lower() if rest else ""
                attrs.append((name, kind, lineno))
    return attrs


def _attribute(header, i: int) -> str:
    """An attribute named by its place (its name is the file's content): ``attribute 3 (line 5)``."""
    return f"attribute {i + 1} (line {header[i][2]})"


def _class_attribute(path: Path, header, require_class: bool) -> int | None:
    """Index of the class attribute: the one named ``class``, else the last; it must be nominal (None
    when it is not and ``require_class`` is False)."""
    lower = [n.lower() for n, _, _ in header]
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
    for i, (_, kind, _) in enumerate(header):
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


def load_arff(path, *, require_class: bool = True):
    """Return (X as float64 (n, d), labels as a str array, or None when ``require_class`` is False
    and the file has no class values)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"ARFF file not found: {path}")
    header = _header(path)
    if not header:
        raise DataError(f"{path}: no `@attribute` lines; is it an ARFF file?")
    names = [n for n, _, _ in header]
    cls = _class_attribute(path, header, require_class)
    _check_feature_types(path, header, cls)
    from scipy.io import arff

    try:
        records, _ = arff.loadarff(str(path))
    except (ValueError, NotImplementedError, arff.ArffError) as exc:  # scipy's message quotes the file
        raise DataError(
            f"{path} cannot be read as ARFF ({type(exc).__name__}: a value that does not fit its "
            "attribute's type, or a malformed line)"
        ) from None
    features = [n for i, n in enumerate(names) if i != cls]
    X = (
        np.column_stack([np.asarray(records[n], dtype=np.float64) for n in features])
        if features
        else np.empty((len(records), 0))
    )
    if cls is None:
        return X, None
    raw = records[names[cls]]
    y = np.array([v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in raw], dtype=str)
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
