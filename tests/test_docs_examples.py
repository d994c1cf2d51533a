"""What the README and docs/ show works as written.

- every `from gpmodels… import …` / `import gpmodels…` line imports;
- every ```python block runs, each in a fresh namespace and a scratch working folder (a block preceded by
  `<!-- no-run: REASON -->` is skipped; only a GPU or a Dask cluster is a reason, and such blocks are few);
- every `gpmodels …` command of the README's ```bash blocks runs through the command's `main` and exits 0.

The named data sets are cut to a few hundred points by wrapping the loader (the text is never edited): the
blocks stay fast, and a block that needs a data set skips when the shared data are absent.
"""

import re
import shlex
from pathlib import Path

import attrs
import numpy as np
import pytest
from conftest import ROOT, SHARED_DATA

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
IMPORT = re.compile(r"^(from gpmodels[\w.]* import [\w, ]+|import gpmodels[\w.]*(?: as \w+)?)\s*$")
FENCE = re.compile(r"(?:<!--\s*no-run:\s*(?P<why>[^>]*?)\s*-->\s*\n)?```(?P<lang>\w+)\n(?P<body>.*?)```", re.S)
NO_RUN_REASONS = re.compile(r"CUDA|GPU|Dask", re.I)
MAX_NO_RUN = 3
SMALL_TRAIN, SMALL_TEST = 300, 200


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


def _blocks(path: Path, lang: str) -> list[tuple[str, str | None, str]]:
    """(id, no-run reason or None, text) of every ``lang`` block of ``path``, the id naming file and line."""
    text = path.read_text(encoding="utf-8")
    return [
        (f"{path.name}:{text.count(chr(10), 0, m.start('body'))}", m.group("why"), m.group("body"))
        for m in FENCE.finditer(text)
        if m.group("lang") == lang
    ]


PYTHON_BLOCKS = [b for path in DOCS for b in _blocks(path, "python")]


def test_no_run_markers_are_few_and_only_for_a_gpu_or_dask():
    marked = [(where, why) for where, why, _ in PYTHON_BLOCKS if why is not None]
    assert len(marked) <= MAX_NO_RUN, marked
    assert all(NO_RUN_REASONS.search(why) for _, why in marked), marked


def _small(d):
    """The data set cut to SMALL_TRAIN / SMALL_TEST points, stratified and seeded."""
    from gpmodels.data.splits import subsample

    tr = subsample(d.y_train.size, SMALL_TRAIN, 0, y=d.y_train)
    te = subsample(d.y_test.size, SMALL_TEST, 0, y=d.y_test)
    return attrs.evolve(d, X_train=d.X_train[tr], y_train=d.y_train[tr], X_test=d.X_test[te], y_test=d.y_test[te])


@pytest.fixture
def small_data(monkeypatch, tmp_path):
    """A scratch working folder beside a view of the shared data (so ``../shared/data`` resolves), the data
    root set, and the named data sets cut small wherever they are loaded."""
    import gpmodels.data
    import gpmodels.data.datasets as datasets
    import gpmodels.driver.build_data as build_data

    load = datasets.load_dataset

    def load_small(*args, **kwargs):
        return _small(load(*args, **kwargs))

    for module in (gpmodels.data, datasets, build_data):
        monkeypatch.setattr(module, "load_dataset", load_small)
    work = tmp_path / "work"
    work.mkdir()
    (work / "specs").symlink_to(ROOT / "specs")
    if SHARED_DATA.is_dir():
        (tmp_path / "shared").mkdir()
        (tmp_path / "shared" / "data").symlink_to(SHARED_DATA)
        monkeypatch.setenv("GPMODELS_DATA", str(SHARED_DATA))
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(ROOT / "tests"))
    return work


def _needs_data(text: str) -> bool:
    return bool(re.search(r"load_dataset\(|specs/|\.\./shared/data", text))


@pytest.mark.parametrize("where,why,text", PYTHON_BLOCKS, ids=[b[0] for b in PYTHON_BLOCKS])
def test_every_python_block_of_the_docs_runs(where, why, text, small_data):
    if why is not None:
        pytest.skip(f"marked no-run: {why}")
    if _needs_data(text) and not SHARED_DATA.is_dir():
        pytest.skip(f"needs the shared data ({SHARED_DATA})")
    exec(compile(text, where, "exec"), {"__name__": "__docs__"})


def _cli_commands(text: str) -> list[list[str]]:
    """The ``gpmodels …`` commands of a bash block (also one step of an ``a && b`` chain, also
    ``.venv/bin/gpmodels``), as argument lists without the program name; comments dropped."""
    out = []
    for line in text.splitlines():
        for step in line.split("&&"):
            words = shlex.split(step, comments=True)
            if words and Path(words[0]).name == "gpmodels":
                out.append(words[1:])
    return out


CLI_COMMANDS = [(where, cmd) for where, _, text in _blocks(ROOT / "README.md", "bash") for cmd in _cli_commands(text)]


def test_the_readme_shows_commands():
    assert len(CLI_COMMANDS) >= 3


def test_every_cli_command_of_the_readme_runs(small_data, capsys):
    """In order, in one scratch folder (a later command may read what an earlier one wrote)."""
    from gpmodels.cli import main

    if any(_needs_data(" ".join(cmd)) for _, cmd in CLI_COMMANDS) and not SHARED_DATA.is_dir():
        pytest.skip(f"needs the shared data ({SHARED_DATA})")
    for where, cmd in CLI_COMMANDS:
        code = main(cmd)
        assert code == 0, f"{where}: gpmodels {' '.join(cmd)} exited {code}:\n{capsys.readouterr().err[-3000:]}"


def test_small_data_keeps_every_class(small_data):
    if not (SHARED_DATA / "satimage").is_dir():
        pytest.skip("satimage not in the shared data")
    import gpmodels.data

    d = gpmodels.data.load_dataset("satimage")
    assert d.y_train.size == SMALL_TRAIN and np.unique(d.y_train).size == d.n_classes
    assert d.y_test.size == SMALL_TEST


def test_the_gpu_page_names_the_kernels_that_run_on_a_device():
    """docs/gpu.md's one statement of the device kernels is the code's list."""
    from gpmodels.kernels.device import DEVICE_KERNELS

    line = next(x for x in (ROOT / "docs" / "gpu.md").read_text(encoding="utf-8").splitlines() if "on a device:**" in x)
    assert set(re.findall(r"`(\w+)`", line)) == set(DEVICE_KERNELS)
