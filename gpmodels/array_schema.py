"""A declared schema for the arrays of a stored file (``model.npz``, ``checkpoint.npz``), checked before any use.

A stored file is untrusted input: anyone may edit it.  Its arrays are checked against one declaration per
entry (:class:`Entry`) before a loader reads a single value:

* the dtype: its kind (``f`` float, ``i``/``u`` integer, ``b`` bool, ``U`` text) and, for floats, its exact
  width (a float64 model edited to float32 would predict differently);
* the shape: a tuple of dimensions, each a number or a name (``n``, ``d``, ``C``, ...) bound by the first
  entry that has it and equal in every other one; ``n+1`` is one more than ``n``;
* the values: every float finite, and a rule of :data:`RULES` per entry (positive, an index below a
  dimension, unique, a CSR row pointer, one of a set of words);
* the entries: those a kind of file requires are present, none the format does not declare.

A violation is a typed error (the ``error`` class given to :func:`check_arrays`) that names the entry and the
rule, never an IndexError or a segmentation fault of code that trusted the file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs
import numpy as np

from gpmodels.errors import DataError, described

__all__ = ["Entry", "RULES", "check_arrays", "check_csr"]


def _positive(a) -> str | None:
    return None if np.all(a > 0) else "every value > 0"


def _nonnegative(a) -> str | None:
    return None if np.all(a >= 0) else "every value >= 0"


def _unique(a) -> str | None:
    return None if np.unique(a).size == a.size else "no value twice"


def _row_pointer(a) -> str | None:
    if a.size == 0 or a[0] != 0 or np.any(a[1:] < a[:-1]):
        return "a CSR row pointer: starts at 0, never decreases"
    return None


#: value rules by name: each returns None when the array obeys it, else what it must be
RULES: dict[str, Callable] = {
    "positive": _positive,
    "nonnegative": _nonnegative,
    "unique": _unique,
    "row_pointer": _row_pointer,
}


@attrs.frozen
class Entry:
    """One array of a stored file: ``kinds`` (numpy dtype kinds allowed), ``shape`` (dimensions: numbers,
    names bound across entries, ``"*"`` any, ``"n+1"``; None: any number of dimensions), ``rules`` (names
    in :data:`RULES`, or ``"below:d"`` for indices in ``0..d-1``, or ``"in:a|b"`` for text that is one of
    the words)."""

    name: str
    kinds: str
    shape: tuple | None
    rules: tuple = ()


def _dim_value(dim, dims: dict):
    """(name to bind or None, the value the dimension must have or None when unbound)."""
    if isinstance(dim, int):
        return None, dim
    if dim == "*":
        return None, None
    if dim.endswith("+1"):
        base = dims.get(dim[:-2])
        return None, None if base is None else base + 1
    return dim, dims.get(dim)


def _check_dtype(entry: Entry, a: np.ndarray) -> str | None:
    if a.dtype.kind not in entry.kinds or a.dtype.hasobject or a.dtype.names is not None:
        kinds = {"f": "float64", "i": "integer", "u": "integer", "b": "bool", "U": "text"}
        allowed = " or ".join(dict.fromkeys(kinds[k] for k in entry.kinds))
        return f"must be {allowed}; it is {a.dtype.name}"
    if a.dtype.kind == "f" and a.dtype != np.float64:
        return f"must be float64 (the width it was fitted in); it is {a.dtype.name}"
    return None


def _check_shape(entry: Entry, a: np.ndarray, dims: dict) -> str | None:
    if entry.shape is None:
        return None
    if a.ndim != len(entry.shape):
        return f"must have {len(entry.shape)} dimensions {entry.shape}; it has shape {a.shape}"
    for size, dim in zip(a.shape, entry.shape):
        bind, want = _dim_value(dim, dims)
        if want is not None and size != want:
            return f"must have shape {entry.shape} with {_where(dims)}; it has shape {a.shape}"
        if bind is not None:
            dims[bind] = size
    return None


def _where(dims: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in dims.items()) or "the other entries"


def _check_values(entry: Entry, a: np.ndarray, dims: dict) -> str | None:
    if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
        return f"holds {int(np.sum(~np.isfinite(a)))} non-finite values (NaN or inf); every value must be finite"
    for rule in entry.rules:
        if rule.startswith("below:"):
            bound = dims.get(rule[6:])
            if bound is not None and a.size and (np.min(a) < 0 or np.max(a) >= bound):
                return f"holds indices outside 0..{bound - 1} ({rule[6:]} = {bound})"
        elif rule.startswith("in:"):
            words = rule[3:].split("|")
            if any(str(v) not in words for v in np.ravel(a)):
                return f"must be one of {words}; it is {described(str(a.tolist()))}"
        else:
            why = RULES[rule](a)
            if why is not None:
                return f"must hold {why}"
    return None


def check_arrays(
    arrays: Mapping,
    entries: Mapping[str, Entry],
    required,
    *,
    what: str,
    error: type = DataError,
    open_prefixes: tuple = (),
    dims: dict | None = None,
) -> dict:
    """Check ``arrays`` (name -> ndarray) against ``entries`` (name -> :class:`Entry`), in the order of
    ``entries``; ``required``: the names that must be present; names starting with one of
    ``open_prefixes`` are checked by the ``Entry`` declared under the prefix itself; ``dims``: dimensions
    known beforehand (e.g. a sparse matrix's declared shape).  Returns the bound dimensions; raises
    ``error`` naming ``what`` (the file), the entry and the rule it breaks."""
    missing = [n for n in required if n not in arrays]
    if missing:
        raise error(f"{what} lacks the array {missing[0]!r}, which this kind of file requires")
    declared = {n: entries.get(n) or next((entries[p] for p in open_prefixes if n.startswith(p)), None) for n in arrays}
    extra = [k for k, (n, e) in enumerate(declared.items()) if e is None]
    if extra:
        raise error(
            f"{what} holds an entry (number {extra[0] + 1} of the archive) that its format does not declare; "
            f"the entries are {sorted(entries)}"
        )
    dims = dict(dims or {})
    order = list(entries)
    for name in sorted(arrays, key=lambda n: order.index(n) if n in entries else len(order)):
        entry, a = declared[name], np.asarray(arrays[name])
        why = _check_dtype(entry, a) or _check_shape(entry, a, dims) or _check_values(entry, a, dims)
        if why is not None:
            raise error(f"{what}: array {name!r} {why}")
    return dims


def check_csr(indptr, indices, n_columns: int, what: str, error: type = DataError) -> None:
    """A CSR structure's rows: the last row pointer is the number of stored entries, and no column index
    appears twice in one row (scipy would add such entries)."""
    if int(indptr[-1]) != indices.size:
        raise error(
            f"{what}: the last row pointer ({int(indptr[-1])}) must equal the number of stored entries ({indices.size})"
        )
    # (bounded by the stored entries now: a row pointer never decreases and ends at their number)
    rows = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr.astype(np.int64)))
    keys = rows * max(int(n_columns), 1) + indices.astype(np.int64)
    if np.unique(keys).size != keys.size:
        raise error(f"{what}: a row holds the same column index twice; each (row, column) is stored once")
