"""Size limits of gpmodels/: no module over MAX_FILE_LINES lines, and at most MAX_LONG_FUNCTIONS functions over
LONG_FUNCTION_LINES lines (docstring included, nested functions and methods counted on their own).

A file past the limit holds more than one concept, and a long function hides several steps; the counts
may only go down (tests/test_function_length.py is the hard limit for any single function).
"""

from pathlib import Path

from test_function_length import long_functions

import gpmodels

PACKAGE = Path(gpmodels.__file__).resolve().parent
MAX_FILE_LINES = 600
LONG_FUNCTION_LINES = 60
MAX_LONG_FUNCTIONS = 3


def _line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def long_files(root: Path = PACKAGE, limit: int = MAX_FILE_LINES) -> dict[str, int]:
    """relative path -> lines, for every module of ``root`` over ``limit`` lines."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        n = _line_count(path)
        if n > limit:
            out[path.relative_to(root).as_posix()] = n
    return out


def test_no_module_is_over_the_file_limit():
    assert not long_files(), f"modules over {MAX_FILE_LINES} lines (split them by concept): {long_files()}"


def test_at_most_a_few_functions_are_over_the_length_limit():
    found = long_functions(limit=LONG_FUNCTION_LINES)
    assert len(found) <= MAX_LONG_FUNCTIONS, (
        f"{len(found)} functions over {LONG_FUNCTION_LINES} lines, at most {MAX_LONG_FUNCTIONS} allowed "
        f"(extract named steps): {found}"
    )


def test_the_counters_see_long_files_and_long_functions(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(LONG_FUNCTION_LINES))
    (tmp_path / "long.py").write_text(f"def f():\n{body}\n\n\nclass A:\n    def g(self):\n        pass\n")
    (tmp_path / "short.py").write_text("y = 1\n")
    assert long_functions(tmp_path, LONG_FUNCTION_LINES) == {"long.py:f": LONG_FUNCTION_LINES + 1}
    assert long_files(tmp_path, limit=LONG_FUNCTION_LINES) == {"long.py": LONG_FUNCTION_LINES + 6}
    assert long_files(tmp_path) == {}
