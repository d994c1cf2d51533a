"""docs/cli.md's synopsis names every command of the parser and, for each, exactly the parser's flags."""

import argparse
import re

from conftest import ROOT

from gpmodels.cli_parser import build_parser


def _synopsis() -> dict[str, set[str]]:
    """Command -> flags of the ```text block under docs/cli.md's "## Synopsis" ("" for the bare program)."""
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    block = re.search(r"## Synopsis\n.*?```text\n(.*?)```", doc, flags=re.S).group(1)
    out: dict[str, set[str]] = {}
    command = None
    for line in block.splitlines():
        m = re.match(r"gpmodels (\S+)", line)
        if m:
            command = "" if m.group(1).startswith("--") else m.group(1)
            out.setdefault(command, set())
        out[command] |= set(re.findall(r"(?<![\w-])--[a-z][\w-]*", line))
    return out


def _parser_flags() -> dict[str, set[str]]:
    parser = build_parser()

    def flags(p):
        return {s for a in p._actions for s in a.option_strings if s.startswith("--") and s != "--help"}

    out = {"": flags(parser)}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            out.update({name: flags(sub) for name, sub in action.choices.items()})
    return out


def test_the_synopsis_matches_the_parser():
    doc, parser = _synopsis(), _parser_flags()
    assert set(doc) == set(parser), f"commands: doc {sorted(doc)}, parser {sorted(parser)}"
    for command, flags in parser.items():
        assert doc[command] == flags, f"gpmodels {command}: doc {sorted(doc[command])}, parser {sorted(flags)}"


def test_the_synopsis_shows_device_and_allow_import():
    doc = _synopsis()
    assert {"--device", "--allow-import"} <= doc["run"] and "--allow-import" in doc["predict"]
