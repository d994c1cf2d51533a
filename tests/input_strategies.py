"""Hypothesis strategies that generate the families of hostile input text (issue 42), shared by the readers'
tests: numerals in every script, separators and Unicode white space, signs, widths and exponents, integers
beyond float64 and int64, encodings and byte-order marks, attribute orders, duplicate and unordered indices.

Each strategy draws a token together with what the ASCII grammar (``gpmodels.numerals``) says of it, so a
property test can check that a reader either reads exactly that value or refuses with an InputError.
"""

from __future__ import annotations

import sys
import unicodedata

from hypothesis import strategies as st

#: every decimal digit (Unicode category Nd) outside ASCII, of every script
FOREIGN_DIGITS = tuple(
    c for c in map(chr, range(sys.maxunicode + 1)) if unicodedata.category(c) == "Nd" and not c.isascii()
)
#: separators Python's int / float accept or skip, and other white space a file may hold
SEPARATORS = ("_", "\u00a0", "\u2009", "\u202f", "\u2007", "\u3000", "\u2028", "\u0085", "\u200b", "\ufeff")

foreign_digits = st.sampled_from(FOREIGN_DIGITS)
separators = st.one_of(
    st.sampled_from(SEPARATORS), st.characters(categories=["Zs", "Zl", "Zp", "Cf"]).filter(lambda c: not c.isascii())
)


@st.composite
def ascii_integers(draw, min_value=-(10**30), max_value=10**30):
    """(token, value): an integer as a file writes it (optional sign, leading zeros)."""
    value = draw(st.integers(min_value, max_value))
    sign = "-" if value < 0 else draw(st.sampled_from(["", "", "+"]))
    zeros = "0" * draw(st.integers(0, 2))
    return f"{sign}{zeros}{abs(value)}", value


@st.composite
def ascii_decimals(draw):
    """(token, value): a finite decimal in one of the spellings the grammar allows (``1.5``, ``.5``, ``2.``,
    ``1e3``, ``-2.5E-3``)."""
    x = draw(st.floats(allow_nan=False, allow_infinity=False, width=64))
    style = draw(st.sampled_from(["repr", "e", "E", "fixed"]))
    if style == "repr":
        token = repr(x)
    elif style == "fixed":
        token = f"{x:.6f}"
    else:
        token = f"{x:.12{style}}"
    if token.startswith("0.") and draw(st.booleans()):
        token = token[1:]  # .5
    return token, float(token)


def ascii_numbers():
    """(token, value) of an integer (an int) or a decimal (a float)."""
    return st.one_of(ascii_integers(), ascii_decimals())


@st.composite
def tainted_numbers(draw, base=None):
    """A token that Python's int / float may read but the ASCII grammar refuses: an ASCII numeral with a
    digit of another script (of the same value or not), a separator, Unicode white space around or inside
    it, or a fullwidth / superscript look-alike."""
    token, _ = draw(base if base is not None else ascii_numbers())
    how = draw(st.sampled_from(["digit", "same_value_digit", "separator", "around", "all_foreign"]))
    k = draw(st.integers(0, len(token)))
    if how == "digit":
        return token[:k] + draw(foreign_digits) + token[k:]
    if how == "same_value_digit":
        digits = [i for i, c in enumerate(token) if c.isdigit()]
        i = draw(st.sampled_from(digits))
        same = [c for c in FOREIGN_DIGITS if unicodedata.digit(c) == int(token[i])]
        return token[:i] + draw(st.sampled_from(same)) + token[i + 1 :]
    if how == "separator":
        return token[:k] + draw(separators) + token[k:]
    if how == "around":
        return draw(separators) + token + draw(separators)
    script = draw(st.sampled_from(sorted({unicodedata.name(c).rsplit(" ", 2)[0] for c in FOREIGN_DIGITS})))
    table = {unicodedata.digit(c): c for c in FOREIGN_DIGITS if unicodedata.name(c).startswith(script)}
    return "".join(table.get(int(c), c) if c.isdigit() else c for c in token)


def any_tokens():
    """(token, expected): an ASCII number with its value, or a tainted token with None (to be refused or
    read as text, never as a number)."""
    return st.one_of(ascii_numbers(), tainted_numbers().map(lambda t: (t, None)))


#: labels around the float64 and int64 / uint64 limits, where a float64 pass merges neighbours
huge_integers = st.one_of(
    st.integers(2**53 - 3, 2**53 + 3),
    st.integers(2**63 - 3, 2**63 + 3),
    st.integers(2**64 - 3, 2**64 - 1),
    st.integers(-(2**63) - 2, -(2**63) + 2),
    st.integers(10**20, 10**40),
)

#: how a text file is written: (Python codec, whether the grammar's readers accept it)
ENCODINGS = (("utf-8", True), ("utf-8-sig", True), ("utf-16", False), ("utf-32", False))
encodings = st.sampled_from(ENCODINGS)


@st.composite
def feature_rows(draw, max_index=8):
    """(indices, values, fault) of one svmlight row: ascending indices, or with a fault injected:
    ``duplicate`` (an index twice) or ``unordered`` (two indices swapped); fault None when clean."""
    indices = sorted(draw(st.sets(st.integers(1, max_index), min_size=0, max_size=5)))
    values = [draw(ascii_numbers())[0] for _ in indices]
    fault = draw(st.sampled_from([None, None, "duplicate", "unordered"])) if indices else None
    if fault == "duplicate":
        k = draw(st.integers(0, len(indices) - 1))
        indices.insert(k, indices[k])
        values.insert(k, draw(ascii_numbers())[0])
    elif fault == "unordered" and len(indices) >= 2:
        k = draw(st.integers(0, len(indices) - 2))
        indices[k], indices[k + 1] = indices[k + 1], indices[k]
    else:
        fault = None
    return indices, values, fault


def orders(n: int):
    """A permutation of range(n): the order a test file lists the training attributes in."""
    return st.permutations(list(range(n)))
