"""Spec sections derived from attrs options classes, so that a spec and its class cannot disagree.

``options_section`` builds a :class:`~gpmodels.driver.schema.Node` subclass whose keys are fields
of one or more options classes (``NewtonOptions``, ``CVOptions``, ...): for each field

* the default is the field's default, or the value in a given default instance (the CV refits'
  ``NewtonOptions`` are ``CVOptions().newton``, not ``NewtonOptions()``);
* the key is checked by the field's own validator (the vocabulary of :mod:`gpmodels.validation`,
  which the spec schema speaks too), whose ``describe()`` fills the reference's "allowed" column; a
  field with another validator (or none) is read as the kind of its annotation and checked by the
  class alone;
* the doc is the field's ``metadata["doc"]``, else the spec's own line for it, else the
  ``name``: line of the class docstring.

Fields that are not spec-settable (nested options objects, callables, arrays) are skipped unless
mapped to a nested section.  ``section.options(cls, **fixed)`` builds the options object as
``cls(**section)`` (nested sections built first, ``fixed`` for what the runner supplies), so the
values are validated once more, by the class; ``Node.from_dict`` does that on loading, and an
``InputError`` of the class becomes a SpecError at the key path of the field it names.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from gpmodels.driver.schema import Node, option
from gpmodels.errors import InputError, SpecError
from gpmodels.validation import boolean, describe_validator, integer, number, string

__all__ = ["Part", "options_section", "OptionsSection"]


@attrs.frozen
class Part:
    """The fields of ``cls`` a section takes: all but ``skip``, or only ``only``; defaults from
    ``defaults`` (an instance of ``cls``) when given, else the fields' own."""

    cls: type
    defaults: Any = None
    only: tuple | None = None
    skip: tuple = ()

    def fields(self):
        return [
            f for f in attrs.fields(self.cls) if (self.only is None or f.name in self.only) and f.name not in self.skip
        ]

    def default(self, f):
        if self.defaults is not None:
            return getattr(self.defaults, f.name)
        d = f.default
        if isinstance(d, attrs.Factory):
            return d.factory(self.cls) if d.takes_self else d.factory()  # pragma: no cover - options take no self
        return d


def _field_doc(cls: type, f, docs: dict) -> str:
    if "doc" in f.metadata:
        return f.metadata["doc"]
    if f.name in docs:
        return docs[f.name]
    m = re.search(rf"``{re.escape(f.name)}``:\s*([^;.]+)", cls.__doc__ or "")
    if m:
        return " ".join(m.group(1).split())
    return f"`{cls.__name__}.{f.name}`"


def _kind(f, default):
    """The validator of a field's kind (integer, number, string, boolean) from its annotation, else its
    default; None when neither says."""
    ann = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
    ann = ann.replace(" ", "").replace("|None", "").replace("None|", "")
    kinds = {
        "int": integer(),
        "float": number(finite=not (isinstance(default, float) and math.isinf(default))),
        "str": string(),
        "bool": boolean(),
    }
    if ann in kinds:
        return kinds[ann]
    for t, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str")):
        if type(default) is t:
            return kinds[name]
    return None


def _derived_option(part: Part, f, docs: dict):
    """The spec option of field ``f`` (None when it is not spec-settable: a nested options object, a
    callable).  A field with a vocabulary validator is checked by it; another field is read as its
    kind and checked by the class when the section builds it (``OptionsSection.check``)."""
    default = part.default(f)
    if attrs.has(type(default)) or callable(default) and not isinstance(default, type):
        return None
    doc = _field_doc(part.cls, f, docs)
    if describe_validator(f.validator) is not None:
        return option(default, f.validator, doc=doc)
    kind = _kind(f, default)
    if kind is None:
        return None
    allowed = f"{kind.describe()}; checked by `{part.cls.__name__}`" if f.validator is not None else None
    return option(default, kind, doc=doc, allowed=allowed)


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


def options_section(
    name: str,
    doc: str,
    parts: Sequence[Part],
    *,
    nested: Sequence[tuple] = (),
    extra: Sequence[tuple] = (),
    docs: dict | None = None,
    check: Callable | None = None,
) -> type:
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
        these[key] = option(cls, node=cls, doc=text)
    body = {"__doc__": doc, "PARTS": tuple(parts), "NESTED": nested_map, "EXTRA_CHECK": check}
    cls = attrs.make_class(name, these, bases=(OptionsSection,), frozen=True)
    for k, v in body.items():
        setattr(cls, k, staticmethod(v) if k == "EXTRA_CHECK" and v is not None else v)
    cls.__module__ = sys._getframe(1).f_globals["__name__"]
    return cls
