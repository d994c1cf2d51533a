"""The one YAML loader of gpmodels: safe, YAML 1.2 core scalars by the number grammar, no duplicate keys,
alias expansion bounded while the document is composed.

Scalars (plain, untagged) are resolved by the YAML 1.2 core schema with the numbers of
:mod:`gpmodels.numerals`, not by PyYAML's YAML 1.1 resolver:

* integers ``[-+]?[0-9]+`` (Python ints, exact); decimals ``1.5``, ``.5``, ``1e3``, ``-2.5E-3`` (floats);
  ``.inf``, ``-.inf``, ``.nan`` (and their ``Inf`` / ``INF`` / ``NaN`` / ``NAN`` spellings);
* ``true`` / ``false`` (also ``True``, ``TRUE``, ...) booleans; ``null``, ``~`` and an empty value None;
* everything else is a string: ``1_0``, ``1:20`` (YAML 1.1's base 60), ``0x1f`` and ``0o17`` (hex and
  octal: the grammar has decimal integers only), ``yes`` / ``no`` / ``on`` / ``off``, dates, digits of other
  scripts.  A key whose value must be a number refuses such a string with its own message.

Explicit tags go through the same grammar: ``!!int 1_0`` and ``!!float 0x1`` are refused, ``!!bool`` takes
only ``true`` / ``false``.

Duplicate keys are refused in every style: block, flow (``{a: 1, a: 2}``) and through merge keys.  The rule
for merges (``<<: *base``): a mapping's keys, after merging, come from exactly one place; a key that the
mapping sets and a merge also gives, or that two merges give, is refused (YAML's "the explicit key wins"
would make a spec depend on an override nobody sees), naming both lines.

Aliases: the number of values of the document with every alias expanded is counted while it is composed
(each node once: its size is the sum of its children's, known when they are complete), and a document
over ``max_values`` (an alias bomb) or whose alias refers to a node that contains it (a recursive document)
is refused before anything is constructed: time and memory stay linear in the text's length.
"""

from __future__ import annotations

import re

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from gpmodels.errors import shown
from gpmodels.numerals import DECIMAL, INTEGER, parse_float, parse_int, why_not

__all__ = [
    "StrictLoader",
    "DuplicateKeyError",
    "ExpansionError",
    "ScalarError",
    "load_strict",
    "describe_yaml_error",
    "MAX_VALUES",
]

#: the most values a document may hold with its aliases expanded
MAX_VALUES = 100_000

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_TRUE = ("true", "True", "TRUE")
_FALSE = ("false", "False", "FALSE")


class DuplicateKeyError(yaml.YAMLError):
    """A mapping of a YAML file that names one key twice (directly, in flow style or through merges)."""

    def __init__(self, key, first_line: int, line: int, column: int, merged: bool = False):
        super().__init__(f"duplicate key {key!r}")
        self.key, self.first_line, self.line, self.column, self.merged = key, first_line, line, column, merged


class ExpansionError(yaml.YAMLError):
    """A document whose aliases expand to more than its bound of values, or refer to a node containing them."""

    def __init__(self, limit: int, recursive: bool, line: int):
        super().__init__("alias expansion")
        self.limit, self.recursive, self.line = limit, recursive, line


class ScalarError(yaml.constructor.ConstructorError):
    """A tagged scalar outside the grammar (``!!int 1_0``, ``!!bool yes``, an integer of too many digits);
    ``problem`` says what, in words that quote nothing of the file."""

    def __init__(self, problem: str, node):
        super().__init__(None, None, problem, node.start_mark)


class TextError(yaml.YAMLError):
    """Text the loader refuses before parsing: a YAML 1.1 line break (NEL, LINE / PARAGRAPH SEPARATOR) that
    YAML 1.2 reads as a character, so that the two versions would read different documents."""

    def __init__(self, problem: str, line: int):
        super().__init__(problem)
        self.problem, self.line = problem, line


_BREAKS_11 = ("\x85", "\u2028", "\u2029")


class _Core(yaml.resolver.Resolver):
    """YAML 1.2 core schema resolution with the grammar's numbers (module docstring)."""


_Core.yaml_implicit_resolvers = {}
_DIGITS = list("-+0123456789.")
for _tag, _regexp, _first in (
    (_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")),
    (_INT, re.compile(f"^{INTEGER.pattern}$", re.ASCII), _DIGITS),
    (_FLOAT, re.compile(f"^{DECIMAL.pattern}$", re.ASCII), _DIGITS),
    (_FLOAT, re.compile(r"^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+.")),
    (_NULL, re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]),
    (_MERGE, re.compile(r"^(?:<<)$"), ["<"]),
):
    _Core.add_implicit_resolver(_tag, _regexp, _first)


class StrictLoader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, Composer, SafeConstructor, _Core):
    """The safe loader of the module docstring; ``max_values`` bounds the expanded document."""

    max_values = MAX_VALUES

    def __init__(self, stream):
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        _Core.__init__(self)
        self._sizes: dict[int, int] = {}

    # ------------------------------------------------------------ alias expansion, counted while composing
    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(event.anchor)
            if target is not None and id(target) not in self._sizes:  # an alias inside its own anchor
                raise ExpansionError(self.max_values, True, event.start_mark.line + 1)
        node = super().compose_node(parent, index)
        if id(node) in self._sizes:  # an alias of a complete node
            return node
        if isinstance(node, ScalarNode):
            size = 1
        else:
            children = node.value if isinstance(node, SequenceNode) else [n for kv in node.value for n in kv]
            size = 1 + sum(self._sizes[id(c)] for c in children)
        if size > self.max_values:
            raise ExpansionError(self.max_values, False, node.start_mark.line + 1)
        self._sizes[id(node)] = size
        return node

    # ------------------------------------------------------------ scalars by the grammar
    def construct_yaml_int(self, node):
        text = self.construct_scalar(node)
        value = parse_int(text)
        if value is None:
            raise ScalarError(f"an integer that cannot be converted: {why_not(text, 'int')}", node)
        return value

    def construct_yaml_float(self, node):
        text = self.construct_scalar(node)
        value = parse_float(text, "spec")
        if value is None:
            raise ScalarError(f"a number that cannot be converted: {why_not(text)}", node)
        return value

    def construct_yaml_bool(self, node):
        if self.construct_scalar(node) not in _TRUE + _FALSE:
            raise ScalarError("a !!bool that is not true or false", node)
        return self.construct_scalar(node) in _TRUE

    # ------------------------------------------------------------ one place per key
    def _keys(self, node: MappingNode) -> list[tuple[object, bool]]:
        """(key node, set explicitly) of every key of ``node`` with its merges expanded, in order."""
        out = []
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE:
                out.append((key_node, True))
                continue
            for sub in value_node.value if isinstance(value_node, SequenceNode) else [value_node]:
                if isinstance(sub, MappingNode):  # (anything else: flatten_mapping refuses it)
                    out.extend((k, False) for k, _ in self._keys(sub))
        return out

    def construct_mapping(self, node, deep=False):
        if isinstance(node, MappingNode):
            seen: dict = {}
            for key_node, explicit in self._keys(node):
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: the base class refuses it
                    continue
                if first is not None:
                    raise DuplicateKeyError(
                        key,
                        first[0].start_mark.line + 1,
                        key_node.start_mark.line + 1,
                        key_node.start_mark.column + 1,
                        not (explicit and first[1]),
                    )
                seen[key] = (key_node, explicit)
        return super().construct_mapping(node, deep=deep)


for _tag, _method in (
    (_INT, StrictLoader.construct_yaml_int),
    (_FLOAT, StrictLoader.construct_yaml_float),
    (_BOOL, StrictLoader.construct_yaml_bool),
):
    StrictLoader.add_constructor(_tag, _method)
StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", SafeConstructor.construct_yaml_str)


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


def describe_yaml_error(exc: yaml.YAMLError) -> str:
    """Where the YAML is malformed and what is wrong, in a plain sentence, without quoting the file:
    'not valid YAML at line 3, column 5: a key without ':' ...'."""
    if isinstance(exc, DuplicateKeyError):
        how = " (through a merge key '<<': a key comes from one place only)" if exc.merged else ""
        return (
            f"not valid as a spec at line {exc.line}, column {exc.column}: the key {shown(exc.key, 60)} is given "
            f"twice (first at line {exc.first_line}){how}; a later one would silently replace the first: keep one"
        )
    if isinstance(exc, ExpansionError):
        what = (
            f"expands to more than {exc.limit} values: it is recursive at line {exc.line} (an alias '*name' "
            "inside the part its anchor '&name' names)"
            if exc.recursive
            else f"expands to more than {exc.limit} values at line {exc.line} (YAML aliases '*name' repeating "
            "large parts: an alias bomb?)"
        )
        return f"refused: it {what}; a document is refused beyond that, before it is built"
    problem = str(getattr(exc, "problem", "") or "")
    mark = getattr(exc, "problem_mark", None)
    what = None
    for fragment, sentence, at_context in _YAML_PROBLEMS:
        if fragment in problem:
            what = sentence
            if at_context and getattr(exc, "context_mark", None) is not None:
                mark = exc.context_mark
            break
    if isinstance(exc, TextError):
        return f"not valid YAML at line {exc.line}: {exc.problem}"
    if isinstance(exc, ScalarError):
        what = exc.problem
    elif isinstance(exc, yaml.constructor.ConstructorError):
        what = "a tag or value that safe YAML does not construct (tags such as !!python/... are refused)"
    elif what is None:
        # the parser's problem names token kinds; quoted parts may be file content, so they are dropped
        what = re.sub(r"'[^']*'|\"[^\"]*\"", "...", problem or "malformed")[:120]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"not valid YAML{where}: {what}"


def load_strict(text: str, max_values: int = MAX_VALUES):
    """The plain data of one YAML document by :class:`StrictLoader` (``max_values``: the bound on its
    expanded size).  Raises ``yaml.YAMLError`` (:class:`DuplicateKeyError`, :class:`ExpansionError`, the
    parser's errors) for the caller to describe."""
    for c in _BREAKS_11:
        if c in text:
            at = text.index(c)
            raise TextError(
                f"the character U+{ord(c):04X} (a line break in YAML 1.1, text in YAML 1.2); write a plain line break",
                text.count("\n", 0, at) + 1,
            )
    loader = StrictLoader(text)
    loader.max_values = int(max_values)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
