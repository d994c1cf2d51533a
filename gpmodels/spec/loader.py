"""YAML at the edge: read a spec file into a plain dict, then into :class:`Spec`."""

from __future__ import annotations

from pathlib import Path

import yaml

from gpmodels.errors import SpecError
from gpmodels.spec.sections import Spec

__all__ = ["load_spec", "load_any_spec", "spec_from_dict", "dump_yaml", "read_yaml"]


def spec_from_dict(data: dict) -> Spec:
    return Spec.from_dict(data)


def read_yaml(path) -> dict:
    """The plain dict of a YAML file, with SpecErrors for a missing, empty or malformed file."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"spec file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise SpecError(f"{path} is not valid YAML: {exc}") from None
    if data is None:
        raise SpecError(f"{path} is empty")
    return data


def load_spec(path) -> tuple[Spec, Path]:
    """Parse and validate a YAML model spec; returns the spec and the folder it came from."""
    return spec_from_dict(read_yaml(path)), Path(path).resolve().parent


def load_any_spec(path):
    """A model spec or, when the file lists ``models``, a study spec; with the spec's folder."""
    from gpmodels.spec.study import StudySpec

    data = read_yaml(path)
    if isinstance(data, dict) and "models" in data:
        return StudySpec.from_dict(data), Path(path).resolve().parent
    return spec_from_dict(data), Path(path).resolve().parent


def dump_yaml(data: dict, path) -> None:
    Path(path).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
