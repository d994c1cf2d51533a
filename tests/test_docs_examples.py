"""The examples of the README and docs/ work as written: every `from gpmodels… import …` / `import gpmodels…`
line imports, and the README's worked example runs."""

import re

import pytest
from conftest import ROOT, SHARED_DATA, needs_shared_data

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
IMPORT = re.compile(r"^(from gpmodels[\w.]* import [\w, ]+|import gpmodels[\w.]*(?: as \w+)?)\s*$")


def _import_lines() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        for line in path.read_text(encoding="utf-8").splitlines():
            m = IMPORT.match(line.strip())
            if m:
                found.append((path.name, m.group(1)))
    return sorted(set(found))


def test_the_docs_have_import_lines():
    assert len(_import_lines()) >= 5


@pytest.mark.parametrize("doc,line", _import_lines())
def test_every_import_line_of_the_docs_imports(doc, line):
    exec(line, {})


def _python_blocks(path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


@needs_shared_data("satimage")
def test_the_readme_worked_example_runs(monkeypatch, capsys):
    """The README's first Python example (satimage composed in Python) runs as written and reaches the
    spec run's test error (about 10.5 %)."""
    monkeypatch.setenv("GPMODELS_DATA", str(SHARED_DATA))
    example = _python_blocks(ROOT / "README.md")[0]
    assert "load_dataset" in example and "fit_map" in example
    scope = {}
    exec(compile(example, "README.md (worked example)", "exec"), scope)
    assert scope["P"].shape == (2000, 6)
    assert float((scope["P"].argmax(1) != scope["d"].y_test).mean()) < 0.12
