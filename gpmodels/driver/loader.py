"""YAML at the edge: read a spec file into a plain dict, then into :class:`Spec`."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import yaml

from gpmodels.driver.sections.spec import Spec
from gpmodels.driver.sections.study import StudySpec
from gpmodels.errors import SpecError, shown
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
#: the most values a spec may hold with YAML aliases expanded (a list shared by aliases counts once per use)
MAX_SPEC_VALUES = 100_000


def describe_file(path: Path) -> str:
    """What ``path`` is, in words that quote none of its content (for error messages)."""
    try:
        size = path.stat().st_size
    except OSError:
        return "an unreadable file"
    return f"a file of {size} bytes"


#: YAML parser problems in plain words: (fragment of the parser's problem, sentence, use the context mark:
#: the place where the construct that failed began, not where the parser gave up)
_YAML_PROBLEMS = (
    ("could not find expected ':'", "a key without ':' (each line of a mapping is `key: value`)", True),
    (
        "mapping values are not allowed",
        "a ':' where no mapping may start (a value holding ': ' needs quotes, "
        "and nested keys go on their own indented lines)",
        False,
    ),
    ("cannot start any token", "a character that cannot start a value here (a tab? YAML indents with spaces)", False),
    ("found undefined alias", "an alias `*name` with no anchor `&name` before it", False),
    ("found unexpected end of stream", "a quote or bracket that is never closed", True),
    ("expected ',' or ']'", "a list in [ ] that is not closed or not separated by commas", True),
    ("expected ',' or '}'", "a mapping in { } that is not closed or not separated by commas", True),
    ("expected <block end>", "a line indented differently from the lines of its level", False),
    ("found duplicate anchor", "an anchor `&name` defined twice", False),
)


class DuplicateKeyError(yaml.YAMLError):
    """A mapping of a YAML file that names one key twice (the last would silently win)."""

    def __init__(self, key, first_line: int, line: int, column: int):
        super().__init__(f"duplicate key {key!r}")
        self.key, self.first_line, self.line, self.column = key, first_line, line, column


class SpecYAMLLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping with a key named twice, giving both line numbers."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node.start_mark.line + 1)
                except TypeError:  # an unhashable key: the base class refuses it
                    continue
                if first != key_node.start_mark.line + 1:
                    raise DuplicateKeyError(key, first, key_node.start_mark.line + 1, key_node.start_mark.column + 1)
        return super().construct_mapping(node, deep=deep)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """Where the YAML is malformed and what is wrong, in a plain sentence, without quoting the file:
    'not valid YAML at line 3, column 5: a key without ':' ...'."""
    if isinstance(exc, DuplicateKeyError):
        return (
            f"not valid as a spec at line {exc.line}, column {exc.column}: the key {shown(exc.key, 60)} is given "
            f"twice (first at line {exc.first_line}); a later one would silently replace the first: keep one"
        )
    problem = str(getattr(exc, "problem", "") or "")
    mark = getattr(exc, "problem_mark", None)
    what = None
    for fragment, sentence, at_context in _YAML_PROBLEMS:
        if fragment in problem:
            what = sentence
            if at_context and getattr(exc, "context_mark", None) is not None:
                mark = exc.context_mark
            break
    if isinstance(exc, yaml.constructor.ConstructorError):
        what = "a tag or value that safe YAML does not construct (tags such as !!python/... are refused)"
    elif what is None:
        # the parser's problem names token kinds; quoted parts may be file content, so they are dropped
        what = re.sub(r"'[^']*'|\"[^\"]*\"", "...", problem or "malformed")[:120]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"not valid YAML{where}: {what}"


def _count_values(data, budget: int) -> bool:
    """Whether ``data`` holds at most ``budget`` values when every alias is expanded (also False for a
    recursive document); stops after ``budget`` steps, so a YAML alias bomb costs nothing here."""
    stack, seen = [data], 0
    while stack:
        v = stack.pop()
        seen += 1
        if seen > budget:
            return False
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return True


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
        data = yaml.load(text, Loader=SpecYAMLLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        raise SpecError(f"{what} {path} is {_yaml_problem(exc)}") from None
    except RecursionError:
        raise SpecError(f"{what} {path} is not valid YAML: it nests too deeply") from None
    except ValueError:  # e.g. an integer with more digits than Python converts
        raise SpecError(
            f"{what} {path} is not valid YAML: it holds a value that cannot be converted "
            "(an integer with thousands of digits?)"
        ) from None
    if data is None:
        raise SpecError(f"{what} {path} is empty")
    if not _count_values(data, MAX_SPEC_VALUES):
        raise SpecError(
            f"{what} {path} expands to more than {MAX_SPEC_VALUES} values (YAML aliases '*name' "
            "repeating large or recursive parts?); a spec is refused beyond that"
        )
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
