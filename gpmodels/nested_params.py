"""scikit-learn's parameter protocol (``get_params`` / ``set_params`` / ``clone``) over frozen attrs objects.

Priors and kernels are frozen ``attrs`` objects, yet a grid search addresses their values by nested names
(``prior__variance``, ``prior__kernel__length_scale``, ``kernel__length_scale``).  :class:`NestedParams`
gives them the protocol without making them mutable:

* ``get_params(deep=True)``: the constructor's arguments (the attrs fields by their ``__init__`` names) and,
  with ``deep``, those of every value that has ``get_params`` itself, as ``field__name``;
* ``set_params(**params)``: a NEW object, built by ``attrs.evolve`` (nested names rebuild the inner object
  the same way and store the new one); the object it is called on does not change;
* ``__sklearn_clone__``: the object itself (it cannot change, so a clone may share it).

scikit-learn's own ``BaseEstimator.set_params`` calls a nested parameter's ``set_params`` for its in-place
effect; the estimators therefore route nested names themselves (``set_params`` of
:mod:`gpmodels.estimators._common`), storing the object :func:`set_params` returns.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import ClassVar

import attrs

from gpmodels.errors import InputError

__all__ = ["NestedParams", "get_params", "set_params", "param_names", "split_nested"]


def param_names(obj) -> tuple[str, ...]:
    """The constructor's argument names of the attrs object ``obj`` (fields by their ``__init__`` name)."""
    return tuple(a.alias for a in attrs.fields(type(obj)) if a.init) if attrs.has(type(obj)) else ()


def _value(obj, field: attrs.Attribute):
    """A field's value as its constructor argument: a property of the argument's name where the class has
    one (a value derived from the stored one, ``length_scale`` of ``w``), else the stored value."""
    if field.alias != field.name and isinstance(getattr(type(obj), field.alias, None), property):
        return getattr(obj, field.alias)
    return getattr(obj, field.name)


def get_params(obj, deep: bool = True) -> dict:
    """scikit-learn's ``get_params`` of the attrs object ``obj`` (module docstring); none for an object of a
    class that is not an attrs class (a user kernel declares no constructor arguments here)."""
    out = {}
    if not attrs.has(type(obj)):
        return out
    for field in attrs.fields(type(obj)):
        if not field.init:
            continue
        value = _value(obj, field)
        out[field.alias] = value
        if deep and hasattr(value, "get_params") and not isinstance(value, type):
            out.update((f"{field.alias}__{k}", v) for k, v in value.get_params(deep=True).items())
    return out


def split_nested(owner: str, params: dict, valid: tuple[str, ...]) -> tuple[dict, dict[str, dict]]:
    """(direct, nested): ``params`` split into values of ``valid`` names and, per name, the values addressed
    inside it (``name__rest``); an unknown name raises InputError naming the valid ones."""
    direct, nested = {}, {}
    for key, value in params.items():
        head, sep, rest = key.partition("__")
        if head not in valid:
            raise InputError(
                f"Invalid parameter {head!r} for {owner}; its parameters: {', '.join(map(repr, valid))} "
                f"(nested ones as name__parameter, e.g. kernel__length_scale)"
            )
        if sep:
            nested.setdefault(head, {})[rest] = value
        else:
            direct[head] = value
    return direct, nested


def set_nested(value, params: dict):
    """``value`` with the nested ``params`` set: a frozen object's new copy, or a deep copy of a mutable
    scikit-learn object set in place (so that the object the caller holds stays as it is)."""
    if isinstance(value, NestedParams):
        return value.set_params(**params)
    if hasattr(value, "set_params"):
        return copy.deepcopy(value).set_params(**params)
    raise InputError(f"{type(value).__name__} {value!r} has no parameters to set ({', '.join(params)})")


def set_params(obj, params: dict):
    """scikit-learn's ``set_params`` of the frozen attrs object ``obj``, as a new object (module docstring).
    A nested name under a field that is None builds the field's default object first
    (``NestedParams.nested_defaults``); a name in ``NestedParams.replaces`` drops the fields it stands for
    (``length_scale`` replaces ``w``)."""
    if not params:
        return obj
    owner = type(obj).__name__
    direct, nested = split_nested(owner, params, param_names(obj))
    defaults = getattr(obj, "nested_defaults", {})
    for head, inner in nested.items():
        value = direct[head] if head in direct else getattr(obj, head)
        if value is None:
            if head not in defaults:
                raise InputError(f"{owner}.{head} is None: it has no parameters to set ({', '.join(inner)})")
            value = defaults[head]()
        direct[head] = set_nested(value, inner)
    for name, fields in getattr(obj, "replaces", {}).items():
        if name in direct:
            for field in fields:
                direct.setdefault(field, None)
    return attrs.evolve(obj, **direct)


class NestedParams:
    """Mixin of a frozen attrs class: scikit-learn's parameter protocol (module docstring)."""

    #: field -> factory of the object a nested name builds when the field is None
    nested_defaults: ClassVar[dict[str, Callable[[], object]]] = {}
    #: argument -> the fields it stands for, dropped when it is set (one value given two ways)
    replaces: ClassVar[dict[str, tuple[str, ...]]] = {}

    def get_params(self, deep: bool = True) -> dict:
        """The constructor's arguments by name, with ``deep`` those of nested objects (``kernel__w``)."""
        return get_params(self, deep)

    def set_params(self, **params):
        """A new object with ``params`` set (nested names ``kernel__length_scale`` included); this one is
        unchanged (it is frozen)."""
        return set_params(self, params)

    def __sklearn_clone__(self):
        return self
