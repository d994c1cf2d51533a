"""Spec sections derived from attrs options classes, so that a spec and its class cannot disagree.

``options_section`` builds a :class:`~gpmodels.spec.schema.Node` subclass whose keys are fields
of one or more options classes (``NewtonOptions``, ``CVOptions``, ...): for each field

* the default is the field's default, or the value in a given default instance (the CV refits'
  ``NewtonOptions`` are ``CVOptions().newton``, not ``NewtonOptions()``);
* kind, bounds and allowed values come from the field's validator when it is one of the
  vocabulary of :mod:`gpmodels.validation` (``Integer``, ``Number``, ``OneOf``, ``InstanceOf``,
  ``Optional``, and ``attrs.validators.and_`` of them), whose ``describe()`` fills the reference's
  "allowed" column; a field with another validator (or none) takes its kind from its annotation
  or default and is checked by the class alone;
* the doc is the field's ``metadata["doc"]``, else the spec's own line for it, else the
  ``name``: line of the class docstring.

Fields that are not spec-settable (nested options objects, callables, arrays) are skipped unless
mapped to a nested section.  ``section.options(cls, **fixed)`` builds the options object as
``cls(**section)`` (nested sections built first, ``fixed`` for what the runner supplies), so the
values are validated once, by the class; ``Node.from_dict`` does that on loading, and an
``InputError`` of the class becomes a SpecError at the key path of the field it names.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from gpmodels.errors import InputError, SpecError
from gpmodels.spec.schema import Node, option
from gpmodels.validation import InstanceOf, Integer, Number, OneOf, Optional, describe_validator

__all__ = ["Part", "options_section", "OptionsSection"]

_SIMPLE = {"int": "int", "float": "float", "str": "str", "bool": "bool"}


@attrs.frozen
class Part:
    """The fields of ``cls`` a section takes: all but ``skip``, or only ``only``; defaults from
    ``defaults`` (an instance of ``cls``) when given, else the fields' own."""

    cls: type
    defaults: Any = None
    only: tuple | None = None
    skip: tuple = ()

    def fields(self):
        return [f for f in attrs.fields(self.cls)
                if (self.only is None or f.name in self.only) and f.name not in self.skip]

    def default(self, f):
        if self.defaults is not None:
            return getattr(self.defaults, f.name)
        d = f.default
        if isinstance(d, attrs.Factory):
            return d.factory(self.cls) if d.takes_self else d.factory()  # pragma: no cover - options take no self
        return d


def _from_validator(v, meta: dict) -> bool:
    """Fill ``meta`` (kind, bounds, choices, nullable) from a vocabulary validator; False when ``v``
    is not one (a plain function), so the kind must come from elsewhere."""
    if isinstance(v, Optional):
        meta["nullable"] = True
        return _from_validator(v.inner, meta)
    if isinstance(v, Integer):
        meta["kind"] = "int"
        meta.update({k: x for k, x in (("minimum", v.low), ("maximum", v.high)) if x is not None})
        return True
    if isinstance(v, Number):
        lo, hi = ("exclusive_minimum" if v.open_low else "minimum"), ("exclusive_maximum" if v.open_high else "maximum")
        meta["kind"] = "float"
        meta.update({k: x for k, x in ((lo, v.low), (hi, v.high)) if x is not None})
        meta["finite"] = meta["finite"] and v.finite
        return True
    if isinstance(v, OneOf):
        meta.update(kind="str" if all(isinstance(a, str) for a in v.allowed) else "any", choices=v.allowed)
        return True
    if isinstance(v, InstanceOf):
        if bool in v.types and all(t is bool or t.__name__ == "bool_" for t in v.types):
            meta["kind"] = "bool"
            return True
        return False
    inner = getattr(v, "_validators", None)  # attrs.validators.and_
    if inner:
        return any([_from_validator(x, meta) for x in inner])
    return False


def _kind_of(f, default) -> str | None:
    """Kind of a field without a vocabulary validator: from its annotation, else its default."""
    ann = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
    ann = ann.replace(" ", "")
    for suffix in ("|None", "None|"):
        ann = ann.replace(suffix, "")
    if ann in _SIMPLE:
        return _SIMPLE[ann]
    for t, kind in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str")):
        if type(default) is t:
            return kind
    return None


def _field_doc(cls: type, f, docs: dict) -> str:
    if "doc" in f.metadata:
        return f.metadata["doc"]
    if f.name in docs:
        return docs[f.name]
    m = re.search(rf"``{re.escape(f.name)}``:\s*([^;.]+)", cls.__doc__ or "")
    if m:
        return " ".join(m.group(1).split())
    return f"`{cls.__name__}.{f.name}`"


def _derived_option(part: Part, f, docs: dict):
    """The spec option of field ``f`` (None when it is not spec-settable)."""
    default = part.default(f)
    if attrs.has(type(default)) or callable(default) and not isinstance(default, type):
        return None
    meta = dict(kind=None, minimum=None, exclusive_minimum=None, maximum=None, exclusive_maximum=None,
                finite=True, choices=None, nullable=default is None)
    described = _from_validator(f.validator, meta) if f.validator is not None else False
    own = _kind_of(f, default)
    if meta["kind"] is None or (meta["kind"] == "float" and own == "int"):  # a count bounded by a Number
        meta["kind"] = own
    if meta["kind"] is None:
        return None
    if meta["kind"] == "float" and isinstance(default, float) and not math.isfinite(default):
        meta["finite"] = False
    words = describe_validator(f.validator) if described else None
    if words:
        allowed = words
    elif f.validator is not None:
        allowed = f"{meta['kind']}; checked by `{part.cls.__name__}`"
    else:
        allowed = meta["kind"]
    return option(default, kind=meta["kind"], doc=_field_doc(part.cls, f, docs), choices=meta["choices"],
                  minimum=meta["minimum"], exclusive_minimum=meta["exclusive_minimum"], maximum=meta["maximum"],
                  exclusive_maximum=meta["exclusive_maximum"], finite=meta["finite"], nullable=meta["nullable"],
                  allowed=allowed, allowed_has_bounds=bool(words))


_OWNER_FIELD = re.compile(r"^(\w+)\.(\w+):? (.*)$", re.S)


class OptionsSection(Node):
    """Base of derived sections (see the module docstring)."""

    PARTS: tuple = ()
    NESTED: dict = {}
    EXTRA_CHECK: Callable | None = None

    def options(self, cls: type | None = None, **fixed):
        """``cls(**fields of this section that belong to cls, nested sections built, **fixed)``;
        ``cls`` defaults to the section's first options class."""
        part = next(p for p in self.PARTS if cls is None or p.cls is cls)
        kwargs = {}
        for f in part.fields():
            if f.name in self.NESTED:
                kwargs[f.name] = getattr(self, f.name).options()
            elif f.name in attrs.fields_dict(type(self)):
                kwargs[f.name] = getattr(self, f.name)
        kwargs.update(fixed)
        return part.cls(**kwargs)

    def check(self, path):
        if self.EXTRA_CHECK is not None:
            type(self).EXTRA_CHECK(self, path)
        for part in self.PARTS:
            try:
                self.options(part.cls)
            except InputError as exc:
                text = str(exc)
                m = _OWNER_FIELD.match(text)
                if m and m.group(1) == part.cls.__name__ and m.group(2) in attrs.fields_dict(type(self)):
                    raise SpecError(m.group(3), f"{path}.{m.group(2)}" if path else m.group(2)) from None
                raise SpecError(text, path) from None


def options_section(name: str, doc: str, parts: Sequence[Part], *, nested: Sequence[tuple] = (),
                    extra: Sequence[tuple] = (), docs: dict | None = None, check: Callable | None = None) -> type:
    """A frozen :class:`OptionsSection` subclass named ``name`` (module docstring).

    ``nested``: (key, section class, doc) of nested options fields (e.g. ``CVOptions.newton``);
    ``extra``: (key, option(...)) of spec-only keys, listed first (what the runner uses besides the
    options object); ``docs``: key -> doc line for fields without ``metadata["doc"]``; ``check``:
    cross-key rules (self, path).  The class's ``__module__`` is the caller's, so that it pickles by
    reference like a class written out there.
    """
    docs = docs or {}
    these: dict = {}
    for key, opt in extra:
        these[key] = opt
    nested_map = {key: cls for key, cls, _ in nested}
    for part in parts:
        for f in part.fields():
            if f.name in nested_map or f.name in these:
                continue
            opt = _derived_option(part, f, docs)
            if opt is not None:
                these[f.name] = opt
    for key, cls, text in nested:
        these[key] = option(cls, kind="node", node=cls, doc=text)
    body = {"__doc__": doc, "PARTS": tuple(parts), "NESTED": nested_map, "EXTRA_CHECK": check}
    cls = attrs.make_class(name, these, bases=(OptionsSection,), frozen=True)
    for k, v in body.items():
        setattr(cls, k, staticmethod(v) if k == "EXTRA_CHECK" and v is not None else v)
    cls.__module__ = sys._getframe(1).f_globals["__name__"]
    return cls
