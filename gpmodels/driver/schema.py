"""A small declarative schema for specs: attrs classes built from plain dicts.

YAML stays at the edge (``loader.py``); this module turns plain dicts into frozen spec objects and
back.  A spec class derives from :class:`Node` and declares its keys with :func:`option`: a default,
the validator that says what is allowed (the vocabulary of :mod:`gpmodels.validation`, the same
objects that check the fields of the options classes: ``integer(2)``, ``positive_number()``,
``one_of(...)``, ``sequence_of(...)``, ``any_of(...)``, ...) or a sub-section (``node``), and a
one-line doc.  ``Node.from_dict`` rejects unknown keys (suggesting the nearest valid one) and values
the validator refuses, always naming the dotted key path; ``Node.check`` hooks cross-key rules.
``reference_markdown`` renders the reference of docs/specs.md from the same declarations (the
validators' ``describe()``), so the documentation cannot drift from the schema.

Where a validator asks for a number, a string that reads as one by the number grammar
(:mod:`gpmodels.numerals`: ASCII digits, ``inf`` / ``nan`` and YAML's ``.inf`` / ``.nan``; never ``1_0``,
``0x1f`` or another script's digits) is taken as that number, exactly as the number written without
quotes; an integral float is taken as an integer where an integer is asked for; lists become tuples
(frozen specs).
"""

from __future__ import annotations

import difflib
import math
import re
from typing import Any

import attrs

from gpmodels.errors import InputError, SpecError, shown
from gpmodels.numerals import parse_number
from gpmodels.validation import AnyOf, Integer, Number, OneOf, Optional, SequenceOf, describe_validator, optional

__all__ = ["Node", "option", "REQUIRED", "reference_markdown"]

REQUIRED = attrs.NOTHING


def option(
    default: Any = REQUIRED,
    check=None,
    *,
    doc: str,
    node: type | None = None,
    many: bool = False,
    allowed: str | None = None,
    min_len: int = 1,
    max_len: int = 1000,
):
    """Declare one spec key (see the module docstring).

    ``check``: the validator of the value (None: any value, checked by ``Node.check``); a default of
    None makes it optional (null allowed).  ``node``: the key is a sub-section of that class (``many``:
    a list of them, ``min_len`` to ``max_len`` sections).  ``allowed``: the reference's "allowed" column
    where the validator cannot say it (an open set checked by ``Node.check``)."""
    if node is None and check is not None and default is None and not isinstance(check, Optional):
        check = optional(check)
    meta = dict(
        check=check,
        node=node,
        many=many,
        lengths=(min_len, max_len),
        doc=doc,
        allowed=allowed,
        nullable=default is None or isinstance(check, Optional),
    )
    if default is REQUIRED:
        return attrs.field(kw_only=True, metadata={"spec": meta})
    if node is not None and not many and default is not None:
        return attrs.field(
            kw_only=True, factory=default if callable(default) else (lambda: default), metadata={"spec": meta}
        )
    return attrs.field(kw_only=True, default=default, metadata={"spec": meta})


#: what a spec key looks like; other keys are described, not quoted, in messages
_KEY_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")


def _kind_of(v) -> str:
    """The type and size of ``v``, quoting none of it (for a whole document that is not a mapping)."""
    if isinstance(v, (str, bytes, list, tuple, dict)):
        return f"{_type_name(v)} ({len(v)} {'characters' if isinstance(v, (str, bytes)) else 'items'})"
    return _type_name(v)


def _type_name(v) -> str:
    return type(v).__name__ if v is not None else "null"


def _vocabulary(check):
    """The vocabulary validator that decides how a value is read: ``check`` itself, or the first
    vocabulary member of an ``attrs.validators.and_``."""
    for v in getattr(check, "_validators", None) or (check,):
        if isinstance(v, (Integer, Number, OneOf, Optional, SequenceOf, AnyOf)):
            return v
    return check


def _read(value, check):
    """``value`` as the validator ``check`` reads it (module docstring); unchanged where it does not apply."""
    v = _vocabulary(check)
    if isinstance(v, Optional):
        return None if value is None else _read(value, v.inner)
    if isinstance(v, (Integer, Number)) and isinstance(value, str):
        number = parse_number(value.strip(" \t"), "spec")
        if number is None:
            return value
        value = number
    if isinstance(v, Integer) and isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(v, Number) and isinstance(value, int) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:
            return value
    if isinstance(v, SequenceOf) and isinstance(value, (list, tuple)):
        return tuple(_read(x, v.inner) for x in value)
    if isinstance(v, AnyOf):
        for choice in v.choices:
            read = _read(value, choice)
            if _allows(choice, read):
                return read
    return value


@attrs.frozen
class _Key:
    name: str


def _allows(check, value) -> bool:
    try:
        check(None, _Key("value"), value)
    except InputError:
        return False
    return True


def _choices(check) -> tuple:
    """The allowed values of a OneOf (inside Optional / AnyOf too), for the did-you-mean hint."""
    v = _vocabulary(check)
    if isinstance(v, OneOf):
        return v.allowed
    if isinstance(v, Optional):
        return _choices(v.inner)
    if isinstance(v, AnyOf):
        return tuple(c for choice in v.choices for c in _choices(choice))
    return ()


def _refusal(check, value) -> str:
    """'must be <what the validator allows>; got <value>' (with the nearest allowed string)."""
    got = f"the string {shown(value)}" if isinstance(value, str) else f"{_type_name(value)} {shown(value)}"
    if isinstance(value, str) and _choices(check):
        got = shown(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        got = shown(value)
    near = (
        difflib.get_close_matches(value[:100], [str(c) for c in _choices(check)], n=1) if isinstance(value, str) else []
    )
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return f"must be {describe_validator(check)}; got {got}{hint}"


def _convert(value, meta, path: str):
    node = meta["node"]
    if node is not None:
        if value is None:
            if meta["nullable"]:
                return None
            raise SpecError("must not be null", path)
        if meta["many"]:
            low, high = meta["lengths"]
            if not isinstance(value, (list, tuple)):
                raise SpecError(f"must be a list of sections; got {_type_name(value)} {shown(value)}", path)
            if not low <= len(value) <= high:
                least = "at least one section" if low == 1 else f"at least {low} sections"
                raise SpecError(f"must be a list of {least} and at most {high}; got {len(value)}", path)
            return tuple(node.from_dict(v, f"{path}[{i}]") for i, v in enumerate(value))
        return node.from_dict(value, path)
    check = meta["check"]
    if check is None:
        return value
    out = _read(value, check)
    if not _allows(check, out):
        raise SpecError(_refusal(check, value), path)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class Node:
    """Base of spec classes: build from a plain dict with checks; back to a plain dict."""

    @classmethod
    def spec_fields(cls):
        return [f for f in attrs.fields(cls) if "spec" in f.metadata]

    @classmethod
    def from_dict(cls, data, path: str = ""):
        if not isinstance(data, dict):
            raise SpecError(f"must be a mapping of keys to values; got {_kind_of(data)}", path)
        fields = {f.name: f for f in cls.spec_fields()}
        for key in data:
            if not isinstance(key, str) or key not in fields:
                allowed = f"(allowed: {', '.join(fields)})"
                if not (isinstance(key, str) and _KEY_NAME.match(key)):
                    # not shaped like a key: maybe a line of a file that is no spec; described, never quoted
                    what = f"{len(key)} characters" if isinstance(key, str) else _type_name(key)
                    raise SpecError(f"unknown key that is not a key name ({what}) {allowed}", path)
                near = difflib.get_close_matches(key, list(fields), n=1, cutoff=0.6)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                raise SpecError(f"unknown key {key!r}{hint} {allowed}", _join(path, key))
        kwargs = {}
        for name, f in fields.items():
            sub = _join(path, name)
            if name in data:
                kwargs[name] = _convert(data[name], f.metadata["spec"], sub)
            elif f.default is REQUIRED:
                raise SpecError(f"missing required key {name!r} ({f.metadata['spec']['doc']})", sub)
        obj = cls(**kwargs)
        obj.check(path)
        return obj

    def check(self, path: str) -> None:
        """Cross-key rules; subclasses raise SpecError naming the key path."""

    def to_dict(self) -> dict:
        out = {}
        for f in self.spec_fields():
            v = getattr(self, f.name)
            if isinstance(v, Node):
                v = v.to_dict()
            elif isinstance(v, tuple):
                v = [x.to_dict() if isinstance(x, Node) else x for x in v]
            out[f.name] = v
        return out


def _fmt_default(f) -> str:
    if f.default is REQUIRED:
        return "required"
    d = f.default
    if isinstance(d, attrs.Factory):
        return "(section)"
    if d is None:
        return "null"
    if isinstance(d, bool):
        return "true" if d else "false"
    if isinstance(d, tuple):
        return "[" + ", ".join(str(x) for x in d) + "]"
    return repr(d) if isinstance(d, str) else str(d)


def _fmt_allowed(meta) -> str:
    null = "null or " if meta["nullable"] else ""
    if meta["allowed"] is not None:
        return null + meta["allowed"]
    if meta["node"] is not None:
        return null + ("a list of sections" if meta["many"] else "a section")
    if meta["check"] is None:
        return null + "any value (checked with the section)"
    return describe_validator(meta["check"])


def reference_markdown(
    root: type, title: str = "Spec reference", skip: set | None = None, intro: str | None = None
) -> str:
    """Markdown tables of every section reachable from ``root``, in declaration order.

    Sections whose class is in ``skip`` are not repeated (the set is updated with those rendered).
    """
    if intro is None:
        intro = (
            "Generated from the schema in `gpmodels/driver/` (`gpmodels spec-reference`); a test checks that\n"
            "this file matches it."
        )
    lines = [f"# {title}", "", intro, ""]
    seen = skip if skip is not None else set()
    queue = [("", root)]
    while queue:
        path, cls = queue.pop(0)
        if cls in seen:
            continue
        seen.add(cls)
        lines += [
            f"## `{path or '(top level)'}`",
            "",
            " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split()),
            "",
            "| key | allowed | default | meaning |",
            "| --- | --- | --- | --- |",
        ]
        for f in cls.spec_fields():
            meta = f.metadata["spec"]
            lines.append(f"| `{f.name}` | {_fmt_allowed(meta)} | {_fmt_default(f)} | {meta['doc']} |")
            if meta["node"] is not None:
                queue.append((_join(path, f.name), meta["node"]))
        lines.append("")
    return "\n".join(lines)
