"""Labels are values: their kind is decided once, at training, and saved with the model.

A training set's labels are **numbers** (svmlight and .npz numeric labels, CSV columns whose every
cell reads as a finite number) or **text** (ARFF nominal values, .npz string arrays, other CSV
columns).  The kind and the class names travel with a saved model (:class:`InputFormat`), and
``gpmodels predict`` compares the labels of an input file with the classes like with like
(:func:`match_labels`): numbers by value (``4``, ``4.0`` and ``4e0`` are one class whatever the file
format), text by text (a number of a numeric file by its shortest spelling, ``4.0`` as ``4``).

Numbers are read by the ASCII grammar (:mod:`gpmodels.numerals`): a cell in another script's
digits, with ``_`` or Unicode white space is text, never a number.  Integers are exact at every size:
an integer label column is int64 within int64, uint64 within uint64 and its decimal text beyond (label
kind text); a column with decimals is float64, and an integer beside it must be exact in float64
(:func:`label_array`).  Labels are compared as Python numbers (:func:`match_labels`, exact for ints of any
size and floats alike), never through float64.

Refused when read (:func:`labels_from_cells`): an empty label, a label that reads as a non-finite
number (``nan``, ``inf``), and an ambiguous column in which two different spellings name one number
(``1`` and ``1.0``: one class or two?).  Messages name the file and line and never quote the file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from gpmodels.errors import DataError, at
from gpmodels.numerals import parse_number

__all__ = [
    "LABEL_KINDS",
    "InputFormat",
    "label_kind",
    "labels_from_cells",
    "label_array",
    "label_values",
    "label_text",
    "match_labels",
]

#: the kinds of labels a model may be trained on
LABEL_KINDS = ("number", "text")


_EXACT = 2**53  # integers beyond this are not all exact in float64
_NON_FINITE = ("nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity")


def _number(text: str) -> int | float | None:
    """The number a label cell spells by the grammar (an int for an integer), NaN / inf for Python's
    non-finite spellings (refused by the caller), else None (text)."""
    value = parse_number(text)
    if value is None and text.lower() in _NON_FINITE:
        return float(text)
    return value


def label_array(values: Sequence[int | float], where: Callable[[int], str]) -> np.ndarray:
    """The labels ``values`` (Python numbers, finite) as one array that keeps every value exact: int64,
    uint64 or decimal text for integers (module docstring), float64 when any is a float.  ``where(k)``
    names the place of label ``k`` for the DataError on an integer and a float naming one number or an
    integer inexact in float64 beside floats."""
    if all(isinstance(v, int) for v in values):
        if not values or all(-(2**63) <= v < 2**63 for v in values):
            return np.asarray(values, dtype=np.int64)
        if all(0 <= v < 2**64 for v in values):
            return np.asarray(values, dtype=np.uint64)
        return np.array([str(v) for v in values], dtype=str)
    kind_of: dict = {}
    for k, v in enumerate(values):
        if isinstance(v, int) and abs(v) > _EXACT:
            raise DataError(
                f"{where(k)}: the integer label {v} is beyond 2^53 beside decimal labels, so it cannot be kept "
                "exact; write every label as an integer or every one as a decimal within 2^53"
            )
        j = kind_of.setdefault(v, k)
        if type(values[j]) is not type(v):
            raise DataError(
                f"{where(k)}: the label {label_text(v)} is written as "
                f"{'an integer' if isinstance(v, int) else 'a decimal'} here and the other way at {where(j)}; one "
                "class needs one spelling (an ambiguous label column)"
            )
    return np.asarray(values, dtype=np.float64)


def labels_from_cells(cells: Sequence[str], path, lines: Sequence[int]) -> np.ndarray:
    """The labels of a text column (``cells`` stripped, ``lines`` their line numbers in ``path``):
    numbers when every cell is one by the grammar (:func:`label_array`), else text.
    Refuses empty cells, cells that read as non-finite numbers and two spellings of one number."""
    values = []
    for cell, line in zip(cells, lines):
        if not cell:
            raise DataError(f"{at(path, line)}: the label is empty; every point needs a label")
        v = _number(cell)
        if isinstance(v, float) and not math.isfinite(v):
            raise DataError(
                f"{at(path, line)}: the label reads as the non-finite number {v}; labels must be "
                "finite numbers or text that is not a number"
            )
        values.append(v)
    if not cells or any(v is None for v in values):
        return np.array(list(cells), dtype=str)
    first_spelling: dict = {}
    for k, (cell, v) in enumerate(zip(cells, values)):
        j = first_spelling.setdefault(v, k)
        if cells[j] != cell:
            raise DataError(
                f"{at(path, lines[k])}: the label is the number {label_text(v)} spelled differently "
                f"than at line {lines[j]}; one class needs one spelling (an ambiguous label column)"
            )
    return label_array(values, lambda k: at(path, lines[k]))


def label_kind(y) -> str:
    """``number`` for numeric label arrays, ``text`` for string arrays."""
    return "number" if np.asarray(y).dtype.kind in "iufb" else "text"


def label_text(value) -> str:
    """A label as text: an integral float without its ``.0`` (``4.0`` -> ``4``), ints exactly, other
    values as ``str`` (numpy scalars unwrapped)."""
    value = value.item() if hasattr(value, "item") else value
    if isinstance(value, float) and value.is_integer() and abs(value) <= _EXACT:
        return str(int(value))
    return str(value)


def label_values(y, kind: str = "number") -> list:
    """The labels ``y`` as Python values that compare exactly: numbers (an int for an integer, a float
    for a decimal; None for text that is not a number) for ``kind`` number, text for ``kind`` text."""
    y = np.asarray(y).ravel()
    if kind == "text":
        return [label_text(v) for v in y]
    if y.dtype.kind in "iub":
        return [int(v) for v in y.tolist()]
    if y.dtype.kind == "f":
        return [float(v) for v in y.tolist()]
    return [v if isinstance(v, (int, float)) else _number(str(v).strip(" \t")) for v in y.tolist()]


def match_labels(y, classes: Sequence[str], kind: str, positive_class: str | None = None) -> np.ndarray:
    """The class index of every label of an input file, -1 for a label that is none of the model's
    classes.  Numbers compare by value, exactly (Python ints and floats: ``4`` is ``4.0``, ``2**53 + 1`` is
    not ``2**53``), text by text (module docstring).  A binary ``data.positive_class`` model (classes
    ``("rest", <label>)``) maps its positive label to 1 and every other label to 0 (``rest``): no label is
    unknown to it."""
    if kind not in LABEL_KINDS:
        raise DataError(f"label kind {kind[:20]!r} is none of {LABEL_KINDS}")
    values = label_values(y, kind)
    if positive_class is not None:
        target = label_values(np.array([positive_class], dtype=str), kind)[0]
        return np.array([v is not None and v == target for v in values], dtype=np.intp)
    names = label_values(np.array(list(classes), dtype=str), kind)
    index = {v: c for c, v in enumerate(names) if v is not None}
    return np.array([index.get(v, -1) if v is not None else -1 for v in values], dtype=np.intp)


@attrs.frozen
class InputFormat:
    """How a model reads its prediction inputs, decided at training and saved with it.

    ``zero_based``: the svmlight index base of the training files (None: not svmlight);
    ``label_kind``: ``number`` or ``text`` (module docstring); ``feature_names``: the feature columns
    of a CSV or ARFF training file, which a CSV / ARFF input must have, matched by name (None: other formats)."""

    zero_based: bool | None = None
    label_kind: str = "text"
    feature_names: tuple[str, ...] | None = None

    def to_arrays(self) -> dict:
        arrays = {"label_kind": np.array(self.label_kind)}
        if self.zero_based is not None:
            arrays["svmlight_zero_based"] = np.array(bool(self.zero_based))
        if self.feature_names is not None:
            arrays["feature_names"] = np.array(self.feature_names, dtype=str)
        return arrays

    @classmethod
    def from_arrays(cls, arrays: dict, classes: Sequence[str] = ()) -> InputFormat:
        """The format a model file records; one saved without a label kind compares numbers by value
        when every class name is a number."""
        zero_based = bool(arrays["svmlight_zero_based"]) if "svmlight_zero_based" in arrays else None
        if "label_kind" in arrays:
            kind = str(arrays["label_kind"])
            if kind not in LABEL_KINDS:
                raise DataError(f"the model file's label kind is none of {LABEL_KINDS}")
        else:
            kind = "number" if classes and all(_number(c) is not None for c in classes) else "text"
        names = tuple(str(n) for n in arrays["feature_names"]) if "feature_names" in arrays else None
        return cls(zero_based, kind, names)
