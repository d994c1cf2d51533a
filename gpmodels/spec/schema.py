"""A small declarative schema for specs: attrs classes built from plain dicts.

YAML stays at the edge (``loader.py``); this module turns plain dicts into frozen spec objects and
back.  A spec class derives from :class:`Node` and declares its keys with :func:`option`, which
records the kind of value, the allowed choices, bounds and a one-line doc.  ``Node.from_dict``
rejects unknown keys (suggesting the nearest valid one), wrong types and values outside the
allowed set, always naming the dotted key path; ``Node.check`` hooks cross-key rules.
``reference_markdown`` renders the reference of docs/specs.md from the same declarations, so the
documentation cannot drift from the schema.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from typing import Any

import attrs

from gpmodels.errors import SpecError, shown

__all__ = ["Node", "option", "REQUIRED", "reference_markdown"]

REQUIRED = attrs.NOTHING

KINDS = ("str", "int", "float", "bool", "node", "list[float]", "list[int]", "list[str]", "list[node]",
         "float|auto", "float|list[float]", "float|auto|list[float]", "dict", "any")


def option(default: Any = REQUIRED, *, kind: str, doc: str, choices: Sequence | None = None,
           node: type | None = None, minimum: float | None = None, exclusive_minimum: float | None = None,
           maximum: float | None = None, exclusive_maximum: float | None = None, finite: bool = True,
           nullable: bool = False, allowed: str | None = None, allowed_has_bounds: bool = False):
    """Declare one spec key (see the module docstring).  ``allowed``: the reference's "allowed"
    column when the values are checked by ``Node.check`` rather than by ``choices`` (an open set),
    or the words of an options class's validator (then ``allowed_has_bounds``: they already say the
    bounds); ``finite=False``: a float may be +-inf (``.inf`` in YAML)."""
    if kind not in KINDS:
        raise ValueError(f"unknown option kind {kind!r}")
    meta = dict(kind=kind, doc=doc, choices=tuple(choices) if choices is not None else None, node=node,
                minimum=minimum, exclusive_minimum=exclusive_minimum, maximum=maximum,
                exclusive_maximum=exclusive_maximum, finite=finite, nullable=nullable or default is None,
                allowed=allowed, allowed_has_bounds=allowed_has_bounds)
    if default is REQUIRED:
        return attrs.field(kw_only=True, metadata={"spec": meta})
    if node is not None and kind == "node" and default is not None:
        return attrs.field(kw_only=True, factory=default if callable(default) else (lambda: default),
                           metadata={"spec": meta})
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


def _number(value, path: str, integer: bool, finite: bool = True):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, str):  # a number written as text ("5", "1e-3": YAML 1.1 reads 1e-3 as text) is
            try:                       # checked as that number, bounds and finiteness included
                value = int(value) if integer and value.strip().lstrip("+-").isdigit() else float(value)
            except ValueError:
                raise SpecError(f"must be {'an integer' if integer else 'a number'}; got the string {shown(value)}",
                                path) from None
        else:
            raise SpecError(
                f"must be {'an integer' if integer else 'a number'}; got {_type_name(value)} {shown(value)}", path
            )
    if integer:
        if isinstance(value, float) and not value.is_integer():  # (also inf and nan)
            raise SpecError(f"must be an integer; got {shown(value)}", path)
        return int(value)
    value = float(value)
    if math.isnan(value) or (finite and not math.isfinite(value)):
        raise SpecError(f"must be a finite number; got {shown(value)}", path)
    return value


def _bounds(value, meta, path):
    lo, xlo, hi, xhi = meta["minimum"], meta["exclusive_minimum"], meta["maximum"], meta["exclusive_maximum"]
    values = value if isinstance(value, (list, tuple)) else [value]
    for v in values:
        if not isinstance(v, (int, float)):
            continue
        if lo is not None and v < lo:
            raise SpecError(f"must be >= {lo}; got {shown(v)}", path)
        if xlo is not None and v <= xlo:
            raise SpecError(f"must be > {xlo}; got {shown(v)}", path)
        if hi is not None and v > hi:
            raise SpecError(f"must be <= {hi}; got {shown(v)}", path)
        if xhi is not None and v >= xhi:
            raise SpecError(f"must be < {xhi}; got {shown(v)}", path)


def _convert(value, meta, path: str):
    kind = meta["kind"]
    if value is None:
        if meta["nullable"]:
            return None
        raise SpecError("must not be null", path)
    if kind == "any":
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise SpecError(f"must be a string; got {_type_name(value)} {shown(value)}", path)
        out = value
    elif kind == "bool":
        if not isinstance(value, bool):
            raise SpecError(f"must be true or false; got {_type_name(value)} {shown(value)}", path)
        out = value
    elif kind in ("int", "float"):
        out = _number(value, path, kind == "int", meta["finite"])
    elif kind.startswith("list["):
        if not isinstance(value, (list, tuple)):
            raise SpecError(f"must be a list; got {_type_name(value)} {shown(value)}", path)
        inner = kind[5:-1]
        if inner == "node":
            out = tuple(meta["node"].from_dict(v, f"{path}[{i}]") for i, v in enumerate(value))
        elif inner == "str":
            for i, v in enumerate(value):
                if not isinstance(v, str):
                    raise SpecError(f"must be a list of strings; item {i} is {_type_name(v)} {shown(v)}", path)
            out = tuple(value)
        else:
            out = tuple(_number(v, f"{path}[{i}]", inner == "int") for i, v in enumerate(value))
    elif kind.startswith("float|"):
        allowed = kind.split("|")
        if isinstance(value, str):
            if "auto" in allowed and value == "auto":
                return "auto"
            try:
                float(value)
            except ValueError:
                raise SpecError(
                    f"must be {' or '.join(a if a != 'auto' else repr('auto') for a in allowed)}; got {shown(value)}",
                    path,
                ) from None
            out = _number(value, path, False)  # a number written as text: its bounds are checked below
        if isinstance(value, (list, tuple)):
            if "list[float]" not in allowed:
                raise SpecError(f"must be a number{' or ' + repr('auto') if 'auto' in allowed else ''}; got a list",
                                path)
            out = tuple(_number(v, f"{path}[{i}]", False) for i, v in enumerate(value))
        else:
            out = _number(value, path, False)
    elif kind == "node":
        return meta["node"].from_dict(value, path)
    elif kind == "dict":
        if not isinstance(value, dict):
            raise SpecError(f"must be a mapping; got {_type_name(value)} {shown(value)}", path)
        out = dict(value)
    else:  # pragma: no cover - guarded by option()
        raise SpecError(f"unsupported kind {kind}", path)
    if meta["choices"] is not None and out not in meta["choices"]:
        near = difflib.get_close_matches(str(out)[:100], [str(c) for c in meta["choices"]], n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise SpecError(f"must be one of {', '.join(repr(c) for c in meta['choices'])}; got {shown(out)}{hint}", path)
    _bounds(out, meta, path)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class Node:
    """Base of spec classes: build from a plain dict with checks; back to a plain dict.

    A subclass may list keys it no longer takes in a class attribute ``REMOVED_KEYS`` (key ->
    what to write instead); such a key is an error that says so, not an unknown key.  Keys that
    moved go in ``MOVED_KEYS`` (key -> the new path relative to this section, a tuple of
    alternatives, or a function of the section's dict giving either): "objective.k1: moved: write
    it as objective.newton.max_iter"."""

    @classmethod
    def spec_fields(cls):
        return [f for f in attrs.fields(cls) if "spec" in f.metadata]

    @classmethod
    def from_dict(cls, data, path: str = ""):
        if not isinstance(data, dict):
            raise SpecError(f"must be a mapping of keys to values; got {_kind_of(data)}", path)
        fields = {f.name: f for f in cls.spec_fields()}
        removed = getattr(cls, "REMOVED_KEYS", {})
        moved = getattr(cls, "MOVED_KEYS", {})
        for key in data:
            if key in removed:
                raise SpecError(f"was removed: {removed[key]}", _join(path, str(key)))
            if key in moved and key not in fields:
                new = moved[key](data) if callable(moved[key]) else moved[key]
                new = (new,) if isinstance(new, str) else new
                raise SpecError(f"moved: write it as {' or '.join(_join(path, n) for n in new)}", _join(path, str(key)))
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
    parts = []
    if meta["allowed"] is not None:
        parts.append(meta["allowed"])
    elif meta["choices"] is not None:
        parts.append(", ".join(f"`{c}`" for c in meta["choices"]))
    else:
        parts.append(meta["kind"].replace("|", " or ").replace("node", "section"))
    for key, sym in (("minimum", ">="), ("exclusive_minimum", ">"), ("maximum", "<="), ("exclusive_maximum", "<")):
        if meta[key] is not None and not meta["allowed_has_bounds"]:
            parts.append(f"{sym} {meta[key]}")
    if meta["nullable"]:
        parts.append("or null")
    return "; ".join(parts)


def reference_markdown(
    root: type, title: str = "Spec reference", skip: set | None = None, intro: str | None = None
) -> str:
    """Markdown tables of every section reachable from ``root``, in declaration order.

    Sections whose class is in ``skip`` are not repeated (the set is updated with those rendered).
    """
    if intro is None:
        intro = (
            "Generated from the schema in `gpmodels/spec/` (`gpmodels spec-reference`); a test checks that\n"
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
        moved = getattr(cls, "MOVED_KEYS", {})
        if moved:
            lines += ["Keys of the old layout, refused with the place they moved to:", "", "| old key | write it as |",
                      "| --- | --- |"]
            for key, new in moved.items():
                new = new({}) if callable(new) else new
                new = (new,) if isinstance(new, str) else new
                lines.append(f"| `{_join(path, key)}` | {' or '.join(f'`{_join(path, n)}`' for n in new)} |")
            lines.append("")
    return "\n".join(lines)
