"""Labels are values: their kind is decided once, at training, and saved with the model.

A training set's labels are **numbers** (svmlight and .npz numeric labels, CSV columns whose every
cell reads as a finite number) or **text** (ARFF nominal values, .npz string arrays, other CSV
columns).  The kind and the class names travel with a saved model (:class:`InputFormat`), and
``gpmodels predict`` compares the labels of an input file with the classes like with like
(:func:`match_labels`): numbers by value (``4``, ``4.0`` and ``4e0`` are one class whatever the file
format), text by text (a number of a numeric file by its shortest spelling, ``4.0`` as ``4``).

Refused when read (:func:`labels_from_cells`): an empty label, a label that reads as a non-finite
number (``nan``, ``inf``), and an ambiguous column in which two different spellings name one number
(``1`` and ``1.0``: one class or two?).  Messages name the file and line and never quote the file.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from gpmodels.errors import DataError, at

__all__ = ["LABEL_KINDS", "InputFormat", "label_kind", "labels_from_cells", "label_text", "match_labels"]

#: the kinds of labels a model may be trained on
LABEL_KINDS = ("number", "text")


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def labels_from_cells(cells: Sequence[str], path, lines: Sequence[int]) -> np.ndarray:
    """The labels of a text column (``cells`` stripped, ``lines`` their line numbers in ``path``):
    int64 when every cell is an integer, float64 when every one is a finite number, else text.
    Refuses empty cells, cells that read as non-finite numbers and two spellings of one number."""
    values = []
    for cell, line in zip(cells, lines):
        if not cell:
            raise DataError(f"{at(path, line)}: the label is empty; every point needs a label")
        v = _number(cell)
        if v is not None and not np.isfinite(v):
            raise DataError(
                f"{at(path, line)}: the label reads as the non-finite number {v}; labels must be "
                "finite numbers or text that is not a number"
            )
        values.append(v)
    if not cells or any(v is None for v in values):
        return np.array(list(cells), dtype=str)
    first_spelling: dict[float, int] = {}
    for k, (cell, v) in enumerate(zip(cells, values)):
        j = first_spelling.setdefault(v, k)
        if cells[j] != cell:
            raise DataError(
                f"{at(path, lines[k])}: the label is the number {label_text(v)} spelled differently "
                f"than at line {lines[j]}; one class needs one spelling (an ambiguous label column)"
            )
    try:
        ints = [int(c) for c in cells]
    except ValueError:
        return np.asarray(values, dtype=np.float64)
    if all(abs(i) <= 2**53 for i in ints):
        return np.asarray(ints, dtype=np.int64)
    return np.array(list(cells), dtype=str)  # integers beyond int64: their text is the exact value


def label_kind(y) -> str:
    """``number`` for numeric label arrays, ``text`` for string arrays."""
    return "number" if np.asarray(y).dtype.kind in "iufb" else "text"


def label_text(value) -> str:
    """A label as text: an integral number without its ``.0`` (``4.0`` -> ``4``), other values as
    ``str`` (numpy scalars unwrapped)."""
    value = value.item() if hasattr(value, "item") else value
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return str(int(value))
    return str(value)


def _values(y, path, kind: str):
    """The labels of an input file as floats (``kind`` number; NaN where a label is not a number)
    or as text."""
    y = np.asarray(y).ravel()
    if kind == "text":
        return np.array([label_text(v) for v in y], dtype=object)
    if y.dtype.kind in "iufb":
        return y.astype(np.float64)
    out = np.array([_number(str(v)) for v in y], dtype=object)
    return np.array([np.nan if v is None else v for v in out], dtype=np.float64)


def match_labels(y, classes: Sequence[str], kind: str, positive_class: str | None = None, path=None) -> np.ndarray:
    """The class index of every label of an input file, -1 for a label that is none of the model's
    classes.  Numbers compare by value, text by text (module docstring).  A binary
    ``data.positive_class`` model (classes ``("rest", <label>)``) maps its positive label to 1 and
    every other label to 0 (``rest``): no label is unknown to it."""
    if kind not in LABEL_KINDS:
        raise DataError(f"label kind {kind[:20]!r} is none of {LABEL_KINDS}")
    values = _values(y, path, kind)
    if positive_class is not None:
        target = _values([positive_class], path, kind)[0]
        return (values == target).astype(np.intp)
    names = _values(list(classes), path, kind) if kind == "number" else np.array(list(classes), dtype=object)
    index = {v: c for c, v in enumerate(names.tolist())}
    return np.array([index.get(v, -1) for v in values.tolist()], dtype=np.intp)


@attrs.frozen
class InputFormat:
    """How a model reads its prediction inputs, decided at training and saved with it.

    ``zero_based``: the svmlight index base of the training files (None: not svmlight);
    ``label_kind``: ``number`` or ``text`` (module docstring); ``feature_names``: the feature columns
    of a CSV training file, which a CSV input must have, matched by name (None: not CSV)."""

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
