"""Named data sets are found from the spec's own folder and its parents, not only the working directory."""

import json
import os

import attrs
import pytest
from conftest import ROOT

from gpmodels.cli import main
from gpmodels.data.datasets import data_root_candidates, find_data_root
from gpmodels.driver.loader import load_spec
from gpmodels.driver.run import run_spec
from gpmodels.errors import DataError

SHARED = ROOT.parent / "shared" / "data"
needs_satimage = pytest.mark.skipif(not (SHARED / "satimage").is_dir(), reason="../shared/data not present")


@needs_satimage
def test_a_project_spec_runs_from_any_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("GPMODELS_DATA", raising=False)
    monkeypatch.chdir(tmp_path)  # no data/ or ../shared/data here
    spec, base_dir = load_spec(ROOT / "specs" / "satimage-map.yaml")
    small = attrs.evolve(spec, data=attrs.evolve(spec.data, max_train=120, max_test=60))
    metrics = run_spec(small, base_dir, tmp_path / "out", quiet=True)
    assert metrics["n_train"] == 120 and 0.0 <= metrics["test_error"] < 0.5


@needs_satimage
def test_a_spec_in_a_nested_folder_finds_the_data_beside_an_ancestor(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("GPMODELS_DATA", raising=False)
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    os.symlink(SHARED / "satimage", project / "data" / "satimage")
    nested = project / "experiments" / "deep"
    nested.mkdir(parents=True)
    spec = {
        "name": "nested",
        "data": {"dataset": "satimage", "max_train": 90, "max_test": 30},
        "model": {"kernel": {"type": "rbf", "w": "auto"}, "variance": 10.0, "sigma2": 16.0},
    }
    (nested / "s.yaml").write_text(json.dumps(spec))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["validate", str(nested / "s.yaml")]) == 0
    assert main(["run", str(nested / "s.yaml"), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    assert find_data_root(spec_dir=nested) == (project / "data").resolve()


def test_the_error_lists_every_place_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("GPMODELS_DATA", str(tmp_path / "env"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    spec_dir = tmp_path / "a" / "b"
    spec_dir.mkdir(parents=True)
    with pytest.raises(DataError) as err:
        find_data_root(spec_dir=spec_dir)
    message = str(err.value)
    for place in (
        tmp_path / "env",
        work / "data",
        tmp_path / "shared" / "data",
        spec_dir / "data",
        tmp_path / "a" / "data",
        tmp_path / "a" / "shared" / "data",
    ):
        assert str(place) in message
    assert "data.root" in message and "GPMODELS_DATA" in message
    assert data_root_candidates(tmp_path / "given", spec_dir) == [tmp_path / "given"]
