"""Command-line overrides of spec keys: ``--set key.path=value``.

An override replaces (or adds) one key of the spec's plain data *before* validation, so a bad key
or value is the same :class:`~gpmodels.errors.SpecError` as in the file, and the override is part of
the spec (recorded in ``spec.resolved.yaml`` and in the run identity).  The value is parsed as YAML by
the spec's own loader (:mod:`gpmodels.driver.strict_yaml`: YAML 1.2 core scalars by the number grammar,
no duplicate keys, aliases bounded to :data:`MAX_OVERRIDE_VALUES` values): ``3`` is an integer, ``1e-3``,
``.5`` and ``0.5`` numbers, ``true`` a boolean, ``[1, 2]`` a list, ``null`` nothing, anything else
(``1_0``, ``0x1f``, ``yes``) a string.  A list element is named by its index: ``models.0.objective.type``
or ``models[0].objective.type``.
"""

from __future__ import annotations

import re

import yaml

from gpmodels.driver.strict_yaml import describe_yaml_error, load_strict
from gpmodels.errors import SpecError

__all__ = ["parse_override", "apply_overrides", "MAX_OVERRIDE_VALUES"]

_INDEX = re.compile(r"\[(\d+)\]", re.ASCII)
#: the most values one ``--set`` value may hold with its YAML aliases expanded
MAX_OVERRIDE_VALUES = 10_000


def parse_override(text: str) -> tuple[tuple[str, ...], object]:
    """``"a.b[0].c=value"`` -> (("a", "b", "0", "c"), parsed value); SpecError for a malformed one."""
    if "=" not in text:
        raise SpecError(f"--set {text!r}: expected key.path=value (e.g. --set objective.cv.folds=3)", "--set")
    key, raw = text.split("=", 1)
    parts = tuple(_INDEX.sub(r".\1", key.strip()).split("."))
    if not key.strip() or any(not p for p in parts):
        raise SpecError(f"--set {text!r}: the key path {key!r} has an empty part; write key.path=value", "--set")
    if raw.startswith("\ufeff"):  # YAML drops a byte-order mark at a document's start: "\ufeff0" would read as 0
        raise SpecError(
            f"{key.strip()}=...: the value starts with U+FEFF (an invisible byte-order mark); type it without", "--set"
        )
    try:
        value = load_strict(raw, MAX_OVERRIDE_VALUES) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise SpecError(
            f"{key.strip()}=...: the value is {describe_yaml_error(exc)} (quote a string with ':' or '#')", "--set"
        ) from None
    except (RecursionError, ValueError):
        raise SpecError(f"{key.strip()}=...: the value is not valid YAML (it nests too deeply)", "--set") from None
    return parts, value


def _copy(value):
    """A deep copy that also un-shares what YAML aliases share (``*name``), so an override of one
    entry does not change the others."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def apply_overrides(data, overrides) -> dict:
    """A copy of the spec's plain ``data`` with every ``key.path=value`` of ``overrides`` applied in
    order (a later one wins; entries shared by YAML aliases are copied apart first).  Missing mappings
    on the way are created, so an unknown key reaches the spec's own validation (which names it and
    suggests the nearest known key)."""
    if not isinstance(data, dict) or not overrides:
        return data  # the loader says what is wrong with the file
    data = _copy(data)
    for text in overrides:
        parts, value = parse_override(text)
        node = data
        for depth, part in enumerate(parts[:-1]):
            node = _child(node, part, parts[: depth + 1])
        last = parts[-1]
        if isinstance(node, list):
            node[_index(node, last, parts)] = value
        else:
            node[last] = value
    return data


def _index(node: list, part: str, parts) -> int:
    where = ".".join(parts)
    if not part.isdigit() or int(part) >= len(node):
        raise SpecError(
            f"(--set) {part!r} is not an index of a list of {len(node)} entries (0 to {len(node) - 1})", where
        )
    return int(part)


def _child(node, part: str, parts):
    """The mapping or list under ``node[part]`` (an empty mapping created when it is missing)."""
    if isinstance(node, list):
        node = node[_index(node, part, parts)]
        if not isinstance(node, (dict, list)):
            raise SpecError("(--set) this entry is a value, not a section", ".".join(parts))
        return node
    if node.get(part) is None:
        node[part] = {}
    child = node[part]
    if not isinstance(child, (dict, list)):
        raise SpecError(
            f"(--set) this key holds a value ({type(child).__name__}), not a section with keys", ".".join(parts)
        )
    return child
