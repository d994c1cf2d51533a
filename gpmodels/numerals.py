"""One strict grammar for the numbers of every text gpmodels reads.

Python's ``int`` and ``float`` accept far more than any file format writes: digit separators (``1_0``
is 10), the digits of every Unicode script (Arabic-Indic ``١٠``, fullwidth ``１０``, Devanagari; any
``Nd`` code point), surrounding Unicode white space (NBSP, thin spaces) and spellings such as
``infinity``.  A reader that calls them on file text reads such a file as a different number without
a word.  Every reader (svmlight, CSV, ARFF, hierarchy files, spec strings, YAML scalars, ``--set``
values) parses numbers here instead, by regular expressions over ASCII:

* **integer** ``[+-]?[0-9]+`` (leading zeros allowed; at most :data:`MAX_DIGITS` digits), read as a
  Python ``int``: exact at any size, never through float64;
* **decimal** ``[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+)?``, read as a ``float`` (an integer
  is a decimal too, where a format wants a float);
* **non-finite** spellings only where a format declares them (:data:`NON_FINITE`): none in data files
  (svmlight, CSV, ARFF: labels and features are finite numbers, and ARFF's missing value ``?`` is its own
  token), ``inf``/``nan`` (Python's spellings) and ``.inf``/``.nan`` (YAML's) in spec values.

Anything else is refused: :func:`why_not` says in words what is wrong with a token without quoting it
(a character is named by its code point and Unicode name, e.g. ``U+0663 ARABIC-INDIC DIGIT THREE``, a
digit of another script), and :func:`read_number` raises a :class:`~gpmodels.errors.DataError` that
names the file, line and column or field (``gpmodels.errors.at``) and what is allowed.

Text is decoded by :func:`decode_text`: UTF-8, a UTF-8 byte-order mark stripped; text that starts with a
UTF-16 or UTF-32 byte-order mark is refused with the encoding named (re-save it as UTF-8).
"""

from __future__ import annotations

import math
import re
import unicodedata

from gpmodels.errors import DataError, at, described

__all__ = [
    "INTEGER",
    "DECIMAL",
    "MAX_DIGITS",
    "NON_FINITE",
    "parse_int",
    "parse_float",
    "parse_number",
    "why_not",
    "read_number",
    "decode_text",
    "allowed",
]

#: an integer: optional sign, ASCII digits
INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
#: a decimal number: optional sign, digits with an optional fraction (or a fraction alone), optional exponent
DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
#: the most digits an integer token may have (Python's own limit for str -> int is 4300)
MAX_DIGITS = 1000

_INF = float("inf")
#: non-finite spellings a format allows: ``none`` (data files) or ``spec`` (Python's and YAML 1.2's spellings)
NON_FINITE = {
    "none": {},
    "spec": {
        "inf": _INF,
        "+inf": _INF,
        "-inf": -_INF,
        "nan": float("nan"),
        ".inf": _INF,
        ".Inf": _INF,
        ".INF": _INF,
        "+.inf": _INF,
        "+.Inf": _INF,
        "+.INF": _INF,
        "-.inf": -_INF,
        "-.Inf": -_INF,
        "-.INF": -_INF,
        ".nan": float("nan"),
        ".NaN": float("nan"),
        ".NAN": float("nan"),
    },
}

_ALLOWED = {
    "int": "an integer of ASCII digits 0-9 with an optional sign (e.g. 7, -3, +12)",
    "float": "a number of ASCII digits 0-9 with an optional sign, '.' and exponent (e.g. 3, -0.5, 2e-3, .5)",
}


def allowed(kind: str) -> str:
    """What the grammar allows for ``kind`` (``int`` or ``float``), in words for messages."""
    return _ALLOWED[kind]


def parse_int(token: str) -> int | None:
    """The integer ``token`` spells (:data:`INTEGER`, at most :data:`MAX_DIGITS` digits), else None."""
    if len(token) <= MAX_DIGITS + 1 and INTEGER.fullmatch(token):
        return int(token)
    return None


def parse_float(token: str, non_finite: str = "none") -> float | None:
    """The float ``token`` spells (:data:`DECIMAL`, or a non-finite spelling the format allows), else None.
    A decimal whose value overflows (``1e999``) reads as infinite: callers that need finite numbers check."""
    if DECIMAL.fullmatch(token):
        return float(token)
    return NON_FINITE[non_finite].get(token)


def parse_number(token: str, non_finite: str = "none") -> int | float | None:
    """An ``int`` for an integer token (exact), a ``float`` for any other decimal, else None."""
    i = parse_int(token)
    return i if i is not None else parse_float(token, non_finite)


def _char(c: str) -> str:
    name = unicodedata.name(c, "unnamed")
    return f"U+{ord(c):04X} {name}"


def why_not(token: str, kind: str = "float") -> str:
    """Why ``token`` is not a number of ``kind`` (``int`` / ``float``), in words that quote no more of it
    than one character named by its code point."""
    if not token:
        return "it is empty"
    for k, c in enumerate(token, start=1):
        if ord(c) > 127:
            if unicodedata.category(c) == "Nd":
                what = "a digit of another script; digits are ASCII 0-9"
            elif c.isspace():
                what = "Unicode white space"
            else:
                what = "a character outside ASCII"
            return f"character {k} is {_char(c)} ({what})"
    if "_" in token:
        return f"character {token.index('_') + 1} is a digit separator '_' (not part of a number in this format)"
    if any(c.isspace() for c in token):
        return "it holds white space"
    digits = sum(c.isdigit() for c in token)
    if kind == "int" and digits > MAX_DIGITS:
        return f"it has {digits} digits, more than the {MAX_DIGITS} allowed"
    if kind == "int" and DECIMAL.fullmatch(token):
        return "it is a decimal number, not an integer"
    return "its characters do not spell a number"


_PY_NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.ASCII | re.IGNORECASE)


def read_number(token: str, kind: str, where: str, what: str) -> int | float:
    """``token`` read as ``kind``: ``int`` (exact), ``float`` or ``number`` (an int for an integer token, a
    float for any other decimal); only finite values.  DataError naming ``where`` (``PATH:LINE:COLUMN``),
    ``what`` (``the label``, ``feature 3's value``) and what is allowed otherwise."""
    value = parse_int(token) if kind == "int" else parse_number(token) if kind == "number" else parse_float(token)
    grammar = "int" if kind == "int" else "float"
    if value is None and grammar == "float" and _PY_NON_FINITE.fullmatch(token):
        value = float(token)
    if value is None:
        raise DataError(
            f"{where}: {what} ({described(token)}) is not a number: {why_not(token, grammar)}; "
            f"allowed: {allowed(grammar)}"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise DataError(f"{where}: {what.removeprefix('the ')} {value} is not finite; non-finite numbers are refused")
    return value


_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def decode_text(raw: bytes, path, what: str = "a text file") -> str:
    """``raw`` decoded as UTF-8 with a UTF-8 byte-order mark stripped; DataError for a UTF-16 or UTF-32
    byte-order mark (named) and for bytes that are not UTF-8 (their offset)."""
    for bom, name in _BOMS:
        if raw.startswith(bom):
            raise DataError(f"{path} is {name} text (byte-order mark); {what} is read as UTF-8: re-save it as UTF-8")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{at(path)} is not UTF-8 text (undecodable byte at offset {exc.start}); {what} is read as UTF-8"
        ) from None
