"""No function or method in gpmodels/ is longer than 80 lines (docstring included) unless ALLOWED says why.

A long function usually hides several steps of an algorithm; splitting it gives each step a name, a
docstring with its equation and a test of its own (issue 11).
"""

import ast
from pathlib import Path

import gpmodels

MAX_LINES = 80
PACKAGE = Path(gpmodels.__file__).resolve().parent

#: "relative/path.py:Qualified.name" -> the reason it may stay longer than MAX_LINES
ALLOWED: dict[str, str] = {}


def _functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, length in lines) of every function and method, nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node.end_lineno - node.lineno + 1
            yield from _functions(node, prefix + node.name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".")
        else:
            yield from _functions(node, prefix)


def long_functions(root: Path = PACKAGE, limit: int = MAX_LINES) -> dict[str, int]:
    """ "path:qualified.name" -> lines (end_lineno - lineno + 1) of every function of ``root`` over ``limit``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for name, length in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            if length > limit:
                out[f"{rel}:{name}"] = length
    return out


def test_no_function_longer_than_the_limit_without_a_reason():
    offenders = {k: n for k, n in long_functions().items() if k not in ALLOWED}
    assert not offenders, (
        f"functions longer than {MAX_LINES} lines (split them, or list them in ALLOWED with a reason): {offenders}"
    )


def test_every_allowed_entry_has_a_reason():
    assert all(isinstance(r, str) and r.strip() for r in ALLOWED.values())


def test_the_scanner_sees_nested_functions_and_methods():
    src = "class A:\n    def f(self):\n        def g():\n            pass\n"
    assert dict(_functions(ast.parse(src))) == {"A.f": 3, "A.f.g": 2}
