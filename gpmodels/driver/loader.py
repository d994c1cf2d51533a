"""YAML at the edge: read a spec file into a plain dict, then into :class:`Spec`."""

from __future__ import annotations

from pathlib import Path

import attrs
import yaml

from gpmodels.driver.sections.spec import Spec
from gpmodels.driver.sections.study import StudySpec
from gpmodels.driver.strict_yaml import describe_yaml_error, load_strict
from gpmodels.errors import SpecError
from gpmodels.priors.registry import check_allow_import
from gpmodels.safe_write import write_new

__all__ = ["load_spec", "load_any_spec", "spec_from_dict", "dump_yaml", "read_yaml", "grant_imports"]


def grant_imports(spec, allow_import=()):
    """``spec`` (a Spec or StudySpec) whose ``model.prior: module:builder`` paths may import the modules
    ``allow_import`` (names or dotted prefixes; see :mod:`gpmodels.priors.registry`)."""
    allow = check_allow_import(allow_import)
    if not allow:
        return spec

    def grant(m):
        return attrs.evolve(m, allow_import=tuple(dict.fromkeys(m.allow_import + allow)))

    if isinstance(spec, StudySpec):
        return attrs.evolve(spec, models=tuple(attrs.evolve(e, model=grant(e.model)) for e in spec.models))
    return attrs.evolve(spec, model=grant(spec.model))


def spec_from_dict(data: dict, *, allow_import=()) -> Spec:
    """A validated Spec of a plain dict; ``allow_import``: modules a ``model.prior`` path may import."""
    return grant_imports(Spec.from_dict(data), allow_import)


#: the largest spec file read (bytes); specs are a few kB
MAX_SPEC_BYTES = 4 * 1024 * 1024
#: the most values a spec may hold with YAML aliases expanded (a list shared by aliases counts once per use);
#: counted while the document is composed (:mod:`gpmodels.driver.strict_yaml`)
MAX_SPEC_VALUES = 100_000


def describe_file(path: Path) -> str:
    """What ``path`` is, in words that quote none of its content (for error messages)."""
    try:
        size = path.stat().st_size
    except OSError:
        return "an unreadable file"
    return f"a file of {size} bytes"


def read_yaml(path, what: str = "spec file") -> dict:
    """The plain data of a YAML file, with SpecErrors for a missing, unreadable, binary, oversized,
    empty or malformed file.  Messages describe the file (size, line and column of a syntax error)
    and never quote its content."""
    path = Path(path)
    if not path.exists():
        raise SpecError(f"{what} not found: {path}")
    if not path.is_file():
        raise SpecError(f"{what} {path} is not a regular file (a folder or a device)")
    try:
        size = path.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise SpecError(f"{what} {path} is {describe_file(path)}; a spec is at most {MAX_SPEC_BYTES} bytes")
        with open(path, "rb") as fh:
            raw = fh.read(MAX_SPEC_BYTES + 1)
    except PermissionError:
        raise SpecError(f"{what} {path} cannot be read (permission denied)") from None
    except OSError as exc:
        raise SpecError(f"{what} {path} cannot be read ({exc.strerror or type(exc).__name__})") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(f"{what} {path} is larger than {MAX_SPEC_BYTES} bytes; a spec is a small text file")
    if b"\x00" in raw:
        raise SpecError(f"{what} {path} is binary data ({len(raw)} bytes), not a YAML text file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"{what} {path} is not UTF-8 text (undecodable byte at offset {exc.start} of "
            f"{len(raw)}): binary data, not a YAML text file"
        ) from None
    try:
        data = load_strict(text, MAX_SPEC_VALUES)
    except yaml.YAMLError as exc:
        raise SpecError(f"{what} {path} is {describe_yaml_error(exc)}") from None
    except RecursionError:
        raise SpecError(f"{what} {path} is not valid YAML: it nests too deeply") from None
    except ValueError:  # e.g. an integer with more digits than Python converts
        raise SpecError(
            f"{what} {path} is not valid YAML: it holds a value that cannot be converted "
            "(an integer with thousands of digits?)"
        ) from None
    if data is None:
        raise SpecError(f"{what} {path} is empty")
    return data


def load_spec(path, *, allow_import=()) -> tuple[Spec, Path]:
    """Parse and validate a YAML model spec; returns the spec and the folder it came from.

    Nothing the file names is imported: a ``model.prior: module:builder`` path is imported (when the
    spec is checked or built) only if its module is in ``allow_import``."""
    return spec_from_dict(read_yaml(path), allow_import=allow_import), Path(path).resolve().parent


def load_any_spec(path, *, allow_import=()):
    """A model spec or, when the file lists ``models``, a study spec; with the spec's folder."""
    data = read_yaml(path)
    if isinstance(data, dict) and "models" in data:
        return grant_imports(StudySpec.from_dict(data), allow_import), Path(path).resolve().parent
    return spec_from_dict(data, allow_import=allow_import), Path(path).resolve().parent


def dump_yaml(data: dict, path) -> None:
    path = Path(path)
    write_new(path.parent, path.name, yaml.safe_dump(data, sort_keys=False))
