"""Input checks shared by the public entry points.

Each check raises :class:`gpmodels.errors.InputError` with a message that names the argument,
what was found and what is allowed.  Checks are done once at the public boundary, never inside
hot loops.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.errors import InputError, InputTypeError
from gpmodels.numerals import allowed, parse_float, why_not

__all__ = [
    "check_features",
    "check_shape",
    "check_finite",
    "check_positive",
    "check_targets",
    "check_indices",
    "labels_to_targets",
    # attrs validators of options classes
    "integer",
    "number",
    "positive_number",
    "nonnegative_number",
    "probability",
    "positive_int",
    "nonnegative_int",
    "one_of",
    "instance_of",
    "boolean",
    "string",
    "mapping",
    "optional",
    "array_of",
    "describe_validator",
    "Integer",
    "Number",
    "OneOf",
    "positive_or_list",
    "gigabytes",
    "MAX_MEMORY_GB",
    "InstanceOf",
    "Optional",
    "Validator",
    "MAX_SIZE",
    "ArrayOf",
    "sequence_of",
    "any_of",
    "SequenceOf",
    "AnyOf",
    # attrs converters that normalise numbers and leave everything else for the validator to refuse
    "to_float",
    "to_int",
    "to_path",
    "to_float_array",
]


def check_finite(name: str, a: np.ndarray) -> None:
    """Raise if ``a`` holds NaN or infinity, naming the first offending position."""
    a = np.asarray(a)
    if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        value = a[tuple(bad)]
        raise InputError(
            f"{name} must be finite (no NaN or inf); found {value} at index {tuple(int(b) for b in bad)} "
            f"({int(np.count_nonzero(~np.isfinite(a)))} non-finite entries in all)"
        )


def _text_numbers(name: str, X):
    """A text array (or a list holding text) read by the number grammar (:mod:`gpmodels.numerals`: ASCII
    digits only, never numpy's ``float`` of ``1_0`` or another script's digits); anything else unchanged."""
    if not isinstance(X, (np.ndarray, list, tuple)):
        return X
    try:
        a = np.asarray(X)
    except (TypeError, ValueError):
        return X
    if a.dtype.kind not in "US":
        return X
    cells = [str(c).strip(" \t") for c in a.ravel().tolist()]
    values = [parse_float(c) for c in cells]
    bad = next((k for k, v in enumerate(values) if v is None), None)
    if bad is not None:
        where = tuple(int(i) for i in np.unravel_index(bad, a.shape))
        raise InputError(
            f"{name} must be numeric; it holds text that is not a number at index {where}: {why_not(cells[bad])}; "
            f"allowed: {allowed('float')}"
        )
    return np.asarray(values, dtype=np.float64).reshape(a.shape)


def check_features(name: str, X, *, allow_sparse: bool = True):
    """Validate a design matrix: 2-D, real, finite, at least one row and one column; dense float64
    (C-contiguous) or CSR float64.  Returns the converted matrix."""
    if sp.issparse(X):
        if not allow_sparse:
            raise InputError(f"{name} must be a dense array here; got a scipy.sparse matrix")
        if X.dtype.kind == "c":
            raise InputError(f"Complex data not supported: {name} must be real")
        X = sp.csr_matrix(X, dtype=np.float64)
        check_finite(name, X.data)
        _check_size(name, X.shape)
        X.sort_indices()
        return X
    if getattr(getattr(X, "dtype", None), "kind", None) == "c":
        raise InputError(f"Complex data not supported: {name} must be real")
    X = _text_numbers(name, X)
    try:
        X = np.asarray(X, dtype=np.float64)
    except TypeError as exc:
        if "complex" in str(exc):
            raise InputError(f"Complex data not supported: {name} must be real") from None
        raise InputTypeError(f"{name} must be numeric; could not convert it to float: {exc}") from None
    except ValueError:  # numpy's message quotes the value (maybe a file's content): described instead
        raise InputError(
            f"{name} must be numeric; could not convert it to float: it holds text that is not a number"
        ) from None
    if X.ndim != 2:
        hint = (
            " Reshape your data: X.reshape(-1, 1) for one feature, X.reshape(1, -1) for one sample."
            if X.ndim == 1
            else ""
        )
        raise InputError(f"{name} must be 2-D (n, d); got shape {X.shape}.{hint}")
    _check_size(name, X.shape)
    check_finite(name, X)
    return np.ascontiguousarray(X)


def _check_size(name: str, shape) -> None:
    if shape[0] == 0:
        raise InputError(f"{name} has 0 sample(s) (shape={tuple(shape)}) while a minimum of 1 is required.")
    if shape[1] == 0:
        raise InputError(f"{name} has 0 feature(s) (shape={tuple(shape)}) while a minimum of 1 is required.")


def check_shape(name: str, a: np.ndarray, expected: Sequence[int | None]) -> None:
    """Raise unless ``a.shape`` matches ``expected`` (``None`` matches any length)."""
    shape = np.shape(a)
    ok = len(shape) == len(expected) and all(e is None or e == s for e, s in zip(expected, shape))
    if not ok:
        want = "(" + ", ".join("*" if e is None else str(e) for e in expected) + ")"
        raise InputError(f"Dimension mismatch: {name} must have shape {want}; got {tuple(shape)}")


def check_positive(name: str, value) -> float:
    """Raise unless ``value`` is a finite number > 0; return it as float."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a positive number; got {value!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise InputError(f"{name} must be a positive number; got {value!r}")
    return v


def check_targets(Y: np.ndarray, n: int, n_classes: int, *, atol: float = 1e-8) -> np.ndarray:
    """Validate targets: shape (n, C), rows are distributions (entries >= 0, each row sums to 1)."""
    Y = np.asarray(Y, dtype=np.float64)
    check_shape("Y", Y, (n, n_classes))
    check_finite("Y", Y)
    if np.any(Y < 0):
        i, c = np.argwhere(Y < 0)[0]
        raise InputError(f"Y rows must be distributions (entries >= 0); Y[{i}, {c}] = {Y[i, c]}")
    sums = Y.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > atol)
    if bad.size:
        i = bad[0]
        raise InputError(
            f"Y rows must be distributions summing to 1; row {i} sums to {sums[i]:.6g} ({bad.size} such rows)"
        )
    return np.ascontiguousarray(Y)


def check_indices(name: str, J, n: int) -> np.ndarray:
    """Validate an index set into range(n): 1-D integers, in range, no duplicates."""
    J = np.asarray(J)
    if J.dtype == bool:
        if J.shape != (n,):
            raise InputError(f"{name} as a boolean mask must have shape ({n},); got {J.shape}")
        return np.flatnonzero(J)
    if J.ndim != 1 or (J.size and J.dtype.kind not in "iu"):
        raise InputError(f"{name} must be a 1-D array of integer indices; got dtype {J.dtype}, shape {J.shape}")
    J = J.astype(np.intp)
    if J.size and (J.min() < 0 or J.max() >= n):
        raise InputError(f"{name} must index range(0, {n}); got values from {J.min()} to {J.max()}")
    if np.unique(J).size != J.size:
        raise InputError(f"{name} must not repeat an index")
    return J


def labels_to_targets(y, n_classes: int) -> np.ndarray:
    """One-hot targets (n, C) from integer labels in ``range(n_classes)``."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise InputError(f"labels must be 1-D; got shape {y.shape}")
    if y.size and y.dtype.kind not in "iu":
        if y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
            y = y.astype(np.int64)
        else:
            raise InputError(f"labels must be integers in 0..{n_classes - 1}; got dtype {y.dtype}")
    bad = (y < 0) | (y >= n_classes)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"label {y[i]} at position {i} is outside the classes 0..{n_classes - 1} ({int(bad.sum())} such labels)"
        )
    Y = np.zeros((y.size, n_classes))
    Y[np.arange(y.size), y] = 1.0
    return Y


# ---------------------------------------------------------------- attrs validators of option classes
# One vocabulary for every options class.  Each validator is a frozen object: calling it checks a
# field (attrs' validator protocol), ``describe()`` says what is allowed in words, and its bounds
# are readable attributes, so the spec schema and docs/specs.md take them from the options class.
# Every error has one shape: "<Class>.<field> must be <what is allowed>; got <value>".


def _fail(instance, attribute, what: str, value) -> None:
    owner = type(instance).__name__ if instance is not None else "value"
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    name = getattr(attribute, "alias", None) or attribute.name  # a private field by its __init__ name
    raise InputError(f"{owner}.{name} must be {what}; got {shown}")


def _bound(x) -> str:
    """A bound in words: integral values in full (1048576, not 1.04858e+06), others in %g."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def _is_integer(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


class Validator(abc.ABC):
    """The base of the vocabulary: a subclass says in words what it allows (``describe``) and tests one
    value (``allows``); calling the validator checks an attrs field and raises the one error shape."""

    @abc.abstractmethod
    def describe(self) -> str:
        """What is allowed, in words ("a positive integer")."""

    @abc.abstractmethod
    def allows(self, value) -> bool:
        """Whether ``value`` is allowed."""

    def __call__(self, instance, attribute, value):
        if not self.allows(value):
            _fail(instance, attribute, self.describe(), value)


@attrs.frozen
class Integer(Validator):
    """An integer (never a bool) in [low, high]; ``None`` leaves that side open."""

    low: int | None = None
    high: int | None = None

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            return f"an integer in [{self.low}, {self.high}]"
        if self.low is not None:
            return {0: "an integer >= 0", 1: "a positive integer"}.get(self.low, f"an integer >= {self.low}")
        if self.high is not None:
            return f"an integer <= {self.high}"
        return "an integer"

    def allows(self, value) -> bool:
        return (
            _is_integer(value) and (self.low is None or value >= self.low) and (self.high is None or value <= self.high)
        )


@attrs.frozen
class Number(Validator):
    """A real number (never a bool) within bounds: ``low`` / ``high`` with ``open_low`` / ``open_high``
    for strict inequalities; ``finite=False`` also admits +-inf inside the bounds."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    finite: bool = True

    def describe(self) -> str:
        if self.low == 0 and self.open_low and self.high is None:
            text = "a positive number"
        elif self.high == 0 and self.open_high and self.low is None:
            text = "a negative number"
        elif self.low is not None and self.high is None:
            text = f"a number {'>' if self.open_low else '>='} {_bound(self.low)}"
        elif self.high is not None and self.low is None:
            text = f"a number {'<' if self.open_high else '<='} {_bound(self.high)}"
        else:
            lo = "" if self.low is None else f"{_bound(self.low)} {'<' if self.open_low else '<='} "
            hi = "" if self.high is None else f" {'<' if self.open_high else '<='} {_bound(self.high)}"
            text = f"a number x with {lo}x{hi}" if (lo or hi) else "a number"
        return text + ("" if self.finite else " (inf allowed)")

    def holds(self, values) -> np.ndarray:
        """Elementwise: which of the real ``values`` (scalar or array) lie within the bounds (NaN never)."""
        values = np.asarray(values, dtype=np.float64)
        ok = np.isfinite(values) if self.finite else ~np.isnan(values)
        if self.low is not None:
            ok &= values > self.low if self.open_low else values >= self.low
        if self.high is not None:
            ok &= values < self.high if self.open_high else values <= self.high
        return ok

    def allows(self, value) -> bool:
        try:
            return _is_real(value) and bool(self.holds(value))
        except OverflowError:  # a Python int beyond the float range
            return False


@attrs.frozen
class OneOf(Validator):
    """One of a fixed set of values (strings, usually)."""

    allowed: tuple

    def describe(self) -> str:
        return "one of " + ", ".join(map(repr, self.allowed))

    def allows(self, value) -> bool:
        try:
            return value in self.allowed
        except TypeError:  # an unhashable value
            return False


@attrs.frozen
class InstanceOf(Validator):
    """An instance of one of ``types`` (``bool`` is refused where only numbers are asked for)."""

    types: tuple
    what: str = ""

    def describe(self) -> str:
        return self.what or "an instance of " + " or ".join(t.__name__ for t in self.types)

    def allows(self, value) -> bool:
        return isinstance(value, self.types) and not (isinstance(value, bool) and bool not in self.types)


@attrs.frozen
class Optional(Validator):
    """``None`` or what ``inner`` allows."""

    inner: object

    def describe(self) -> str:
        return f"null or {self.inner.describe()}"

    def allows(self, value) -> bool:
        return value is None or self.inner.allows(value)


@attrs.frozen
class ArrayOf(Validator):
    """A real numpy array (no bool dtype) of ``ndim`` dimensions (any when None), at least one entry,
    every entry allowed by the :class:`Number` ``inner``."""

    inner: Number
    ndim: int | None = 1

    def describe(self) -> str:
        shape = "an array" if self.ndim is None else f"a {self.ndim}-D array"
        return f"{shape} of at least one entry, each entry {self.inner.describe()}"

    def allows(self, value) -> bool:
        return (
            isinstance(value, np.ndarray)
            and value.dtype.kind in "iuf"
            and value.size > 0
            and (self.ndim is None or value.ndim == self.ndim)
            and bool(np.all(self.inner.holds(value)))
        )


@attrs.frozen
class SequenceOf(Validator):
    """A list, tuple or numpy array (not a string) of ``min_len`` to ``max_len`` entries (None: no upper
    bound), every entry allowed by the validator ``inner`` (which may be a SequenceOf itself, for lists of
    lists); ``unique``: no entry twice; ``ascending``: no entry below the one before it (bounds low <= high)."""

    inner: object
    min_len: int = 1
    max_len: int | None = None
    unique: bool = False
    ascending: bool = False

    def describe(self) -> str:
        if self.max_len is not None and self.max_len == self.min_len:
            size = f"a list of {self.min_len} entries"
        elif self.max_len is not None:
            size = (
                f"a non-empty list of at most {self.max_len} entries"
                if self.min_len == 1
                else f"a list of {self.min_len} to {self.max_len} entries"
            )
        else:
            size = {0: "a list", 1: "a non-empty list"}.get(self.min_len, f"a list of at least {self.min_len} entries")
        order = ", no entry twice" if self.unique else ", in ascending order (low <= high)" if self.ascending else ""
        return f"{size}{order}, each entry {self.inner.describe()}"

    def allows(self, value) -> bool:
        listed = isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim >= 1)
        if not listed or len(value) < self.min_len or (self.max_len is not None and len(value) > self.max_len):
            return False
        if (self.unique and len({repr(v) for v in value}) != len(value)) or not all(map(self.inner.allows, value)):
            return False
        return not self.ascending or all(a <= b for a, b in zip(value[:-1], value[1:]))


@attrs.frozen
class AnyOf(Validator):
    """What at least one of the validators ``choices`` allows (e.g. a number or a list of numbers)."""

    choices: tuple

    def describe(self) -> str:
        return " or ".join(c.describe() for c in self.choices)

    def allows(self, value) -> bool:
        return any(choice.allows(value) for choice in self.choices)


#: the largest count a setting may ask for where it sizes an allocation (probes, ranks, eigenpairs):
#: refused before allocating, so a typo cannot ask for petabytes
MAX_SIZE = 100_000


def integer(low: int | None = None, high: int | None = None) -> Integer:
    """attrs validator: an integer (no bools) in [low, high]."""
    return Integer(low, high)


def number(
    low: float | None = None,
    high: float | None = None,
    *,
    open_low: bool = False,
    open_high: bool = False,
    finite: bool = True,
) -> Number:
    """attrs validator: a real number (no bools) within the bounds."""
    return Number(low, high, open_low, open_high, finite)


def positive_number(*, finite: bool = True) -> Number:
    """attrs validator: a real number > 0 (``finite=False`` also admits +inf, e.g. a time limit)."""
    return Number(0, None, open_low=True, finite=finite)


def nonnegative_number(*, finite: bool = True) -> Number:
    """attrs validator: a real number >= 0."""
    return Number(0, None, finite=finite)


def probability(*, open_low: bool = False, open_high: bool = False) -> Number:
    """attrs validator: a number in [0, 1] (ends excluded on request)."""
    return Number(0, 1, open_low=open_low, open_high=open_high)


def positive_int() -> Integer:
    """attrs validator: an integer >= 1."""
    return Integer(1)


def nonnegative_int() -> Integer:
    """attrs validator: an integer >= 0."""
    return Integer(0)


def one_of(allowed: Sequence) -> OneOf:
    """attrs validator: the value is one of ``allowed``."""
    return OneOf(tuple(allowed))


def instance_of(*types: type, what: str = "") -> InstanceOf:
    """attrs validator: an instance of one of ``types``; ``what`` words the expectation."""
    return InstanceOf(tuple(types), what)


def boolean() -> InstanceOf:
    """attrs validator: True or False (numpy bools included; not 0 / 1)."""
    return InstanceOf((bool, np.bool_), "true or false")


def string() -> InstanceOf:
    """attrs validator: a str."""
    return InstanceOf((str,), "a string")


def mapping() -> InstanceOf:
    """attrs validator: a dict (of keys to values)."""
    return InstanceOf((dict,), "a mapping")


def optional(inner) -> Optional:
    """attrs validator: None or what ``inner`` allows."""
    return Optional(inner)


def array_of(inner: Number, *, ndim: int | None = 1) -> ArrayOf:
    """attrs validator: a real array (``ndim`` dimensions, not empty) whose every entry ``inner`` allows."""
    return ArrayOf(inner, ndim)


def sequence_of(inner, *, min_len=1, max_len=None, unique=False, ascending=False) -> SequenceOf:
    """attrs validator: a list / tuple / array of ``min_len`` to ``max_len`` entries, each allowed by ``inner``
    (``unique``: none twice; ``ascending``: none below the one before, as bounds [low, high])."""
    return SequenceOf(inner, min_len, max_len, unique, ascending)


def any_of(*choices) -> AnyOf:
    """attrs validator: what one of ``choices`` allows."""
    return AnyOf(tuple(choices))


def positive_or_list() -> AnyOf:
    """attrs validator: a positive number, or a non-empty list of them (one value for all, or one per group)."""
    return AnyOf((positive_number(), sequence_of(positive_number(), max_len=MAX_SIZE)))


#: the largest memory size in GB a setting may name (1 TiB)
MAX_MEMORY_GB = 1_048_576.0


def gigabytes() -> Number:
    """attrs validator: a memory size in GB, > 0 and at most ``MAX_MEMORY_GB``."""
    return Number(0, MAX_MEMORY_GB, open_low=True)


def to_float(value):
    """attrs converter: a real number (Python or numpy, or a 0-d real array; never a bool) becomes a Python
    float; anything else is passed on unchanged for the field's validator to refuse with its message."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value[()]
    return float(value) if _is_real(value) else value


def to_float_array(value):
    """attrs converter: a real number or a sequence / array of them (no bools) becomes a float64 array of at
    least one dimension; anything else is passed on unchanged for the field's validator to refuse."""
    try:
        a = np.asarray(value)
    except (TypeError, ValueError):
        return value
    if a.dtype.kind not in "iuf":
        return value
    return np.atleast_1d(a.astype(np.float64))


def to_int(value):
    """attrs converter: a numpy integer becomes a Python int; anything else (floats and bools
    included) is passed on unchanged for the field's validator to judge."""
    return int(value) if _is_integer(value) else value


def to_path(value):
    """attrs converter: a str or os.PathLike becomes a :class:`pathlib.Path`; anything else is passed on
    unchanged for the field's validator to refuse."""
    return Path(value) if isinstance(value, (str, os.PathLike)) else value


def describe_validator(validator) -> str | None:
    """What an attrs field's validator allows, in words (None when it cannot say)."""
    if validator is None:
        return None
    if hasattr(validator, "describe"):
        return validator.describe()
    inner = getattr(validator, "_validators", None)  # attrs.validators.and_
    if inner:
        parts = [describe_validator(v) for v in inner]
        parts = [p for p in parts if p]
        return " and ".join(parts) if parts else None
    return None
