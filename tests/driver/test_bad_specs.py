"""A corpus of bad specs (tests/bad_specs/*.yaml): each is refused through the CLI with exit code 2
and its own message, naming the key path.

Every file starts with comments: ``# stage: validate`` (refused by ``gpmodels validate``, without
loading data) or ``# stage: run`` (the data must be read first: refused by ``gpmodels run`` before
any fitting), and one or more ``# expect: <text>`` lines that must all appear in the error output.
Relative paths in the corpus point into ``bad_specs/data/``; its labelled toy data (classes c1, c2,
c31, c32, 40 training and 20 test points) are written by the fixture.
"""

import shutil
from pathlib import Path

import pytest
from conftest import toy_data_section

from gpmodels.cli import main

CORPUS = Path(__file__).resolve().parent / "bad_specs"
FILES = sorted(CORPUS.glob("*.yaml"))


def _header(path: Path) -> tuple[str, list[str]]:
    stage, expects = None, []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        key, _, value = line[1:].strip().partition(": ")
        if key == "stage":
            stage = value
        elif key == "expect":
            expects.append(value)
    return stage, expects


@pytest.fixture
def corpus(tmp_path):
    shutil.copytree(CORPUS, tmp_path / "bad_specs")
    labels = ["c1", "c2", "c31", "c32"]
    toy_data_section(tmp_path / "bad_specs" / "data", n=60, n_train=40, C=4, d=4, seed=0, spread=3.0, labels=labels)
    return tmp_path / "bad_specs"


def test_every_corpus_file_says_what_it_expects():
    assert len(FILES) >= 30
    for path in FILES:
        stage, expects = _header(path)
        assert stage in ("validate", "run") and expects, f"{path.name}: needs '# stage:' and '# expect:' lines"


@pytest.mark.parametrize("name", [p.stem for p in FILES])
def test_bad_spec_is_refused_with_its_message(name, corpus, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # relative paths resolve next to the spec, not in the working directory
    path = corpus / f"{name}.yaml"
    stage, expects = _header(path)
    args = [stage, str(path)] + (["--out", str(tmp_path / "out"), "--quiet"] if stage == "run" else [])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpmodels: error: ")
    for text in expects:
        assert text in err, f"expected {text!r} in {err!r}"
    if stage == "run":  # refused before any fitting: no report was written
        assert not (tmp_path / "out" / "metrics.json").exists()


def test_the_good_base_of_the_corpus_runs(corpus, tmp_path, monkeypatch):
    """The corpus's data and tree files are fine: the errors above come from the one bad key."""
    monkeypatch.chdir(tmp_path)
    good = corpus / "good.yaml"
    good.write_text(
        "name: good\ndata: {path: data/train.npz, test_path: data/test.npz, hierarchy: data/tree.tsv}\n"
        "model: {prior: anova, kernel: {type: rbf, w: 0.2}, sharing: level, variance: 3.0, sigma2: 1.0}\n"
    )
    assert main(["validate", str(good)]) == 0
    assert main(["run", str(good), "--out", str(tmp_path / "out"), "--quiet"]) == 0
