"""Every shipped spec in specs/ validates, and a scaled-down copy of it runs end to end.

The scaled copy keeps the spec's model and objective and shrinks what costs time: the data
(``max_train`` / ``max_test``) and the iteration limits (newton.*, laplace / vb learn_max_iter,
mkl.max_iter, cv.*, em.max_iter, the baselines' limits), all through the spec dict.  Specs on
``../shared/data`` skip when it is absent.
A completeness test asks for an example of every objective, prior and sharing mode of the schema.
"""

import copy
import json
import math
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, SHARED_DATA

from gpmodels.cli import main
from gpmodels.driver.loader import spec_from_dict
from gpmodels.driver.run import run_spec
from gpmodels.driver.sections.model import MODEL_SHARING, PRIORS
from gpmodels.driver.sections.objective import OBJECTIVES
from gpmodels.driver.study import StudySpec, run_study

SPECS_DIR = ROOT / "specs"
SPECS = sorted(SPECS_DIR.glob("*.yaml"))

#: training points of the scaled runs where 60 would lose classes
N_TRAIN = {
    "imclef07a": 1500,
    "clinc150": 450,
}  # imclef07a: its rarest class has 10 of 10000 points; clinc150: 150 classes


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _skip_without_data(d: dict) -> None:
    name = d["data"].get("dataset")
    if name is not None and not SHARED_DATA.is_dir():
        pytest.skip(f"spec uses data set {name!r} from ../shared/data, which is absent ({SHARED_DATA})")


def _scaled_objective(o: dict) -> dict:
    o = dict(o or {})
    t = o.get("type", "map")
    if t in ("map", "em", "cv", "one_vs_rest"):
        newton = dict(o.get("newton") or {})
        o["newton"] = {
            **newton,
            "max_iter": min(newton.get("max_iter", 30), 5),
            "cg_max_iter": min(newton.get("cg_max_iter", 50), 15),
        }
    if t == "laplace":
        o["laplace"] = {**(o.get("laplace") or {}), "learn_max_iter": 3}
    if t in ("vb", "mlm"):
        o["vb"] = {**(o.get("vb") or {}), "learn_max_iter": 3}
    if t in ("vb", "mlm", "mkl", "joint_map"):
        o["mkl"] = {**(o.get("mkl") or {}), "max_iter": 3}
    if t == "em":
        o["em"] = {**(o.get("em") or {}), "max_iter": 2}
    if t == "cv":
        cv = dict(o.get("cv") or {})
        cv.update(
            outer={**(cv.get("outer") or {}), "max_iter": 1, "max_evaluations": 2},
            newton={**(cv.get("newton") or {}), "max_iter": 5, "cg_max_iter": 10},
            k3=10,
            folds=min(cv.get("folds", 5), 3),
            checkpoint=False,
        )
        o["cv"] = cv
    if t == "crammer_singer":
        o["crammer_singer"] = {**(o.get("crammer_singer") or {}), "max_updates": 3000, "epsilon": 0.1}
    if t == "hm3":
        o["hm3"] = {**(o.get("hm3") or {}), "max_passes": 2, "max_seconds": 2.0, "chunk_size": 30}
    return o


def scaled_down(d: dict) -> dict:
    """A copy of spec dict ``d`` (model or study) that runs in a few seconds."""
    d = copy.deepcopy(d)
    data = d["data"]
    if data.get("dataset") is not None:
        data["root"] = str(SHARED_DATA)
    data["max_train"] = min(data.get("max_train") or 10**9, N_TRAIN.get(data.get("dataset"), 60))
    data["max_test"] = min(data.get("max_test") or 10**9, 40)
    if "models" in d:
        d["models"] = [{**m, "objective": _scaled_objective(m.get("objective"))} for m in d["models"]]
    else:
        d["objective"] = _scaled_objective(d.get("objective"))
    d.pop("output", None)
    return d


def _check_metrics(folder: Path) -> dict:
    m = json.loads((folder / "metrics.json").read_text())
    scores = {k: v for k, v in m.items() if k.startswith("test_") and isinstance(v, (int, float))}
    headline = [k for k in ("test_error", "test_rmse", "test_zero_one") if k in scores]
    assert headline, f"no headline score in {sorted(m)}"
    bad = {k: v for k, v in scores.items() if not math.isfinite(v)}
    assert not bad, f"non-finite scores {bad}"
    return m


def test_there_are_example_specs():
    assert len(SPECS) >= 10


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_spec_validates_with_the_cli(path, monkeypatch, capsys):
    _skip_without_data(_load(path))
    monkeypatch.setenv("GPMODELS_DATA", str(SHARED_DATA))
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    assert "valid" in capsys.readouterr().out


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_scaled_down_spec_runs(path, tmp_path):
    d = _load(path)
    _skip_without_data(d)
    small = scaled_down(d)
    if "models" in small:
        rows = run_study(StudySpec.from_dict(small), SPECS_DIR, tmp_path, quiet=True)
        assert [r["model"] for r in rows] == [m["name"] for m in d["models"]]
        for r in rows:
            m = _check_metrics(tmp_path / r["model"])
            assert m["n_train"] <= small["data"]["max_train"]
        assert len({r["n_test"] for r in rows}) == 1  # one split for every model
        assert (tmp_path / "study.md").is_file()
    else:
        m = run_spec(spec_from_dict(small), SPECS_DIR, tmp_path, quiet=True)
        assert set(_check_metrics(tmp_path)) == set(m)  # metrics.json holds what run_spec returned
        assert m["n_train"] <= small["data"]["max_train"]
        spec_from_dict(_load(tmp_path / "spec.resolved.yaml"))


def _entries():
    """(model section, objective section) of every model spec and every study entry."""
    for path in SPECS:
        d = _load(path)
        for e in d["models"] if "models" in d else [d]:
            yield e["model"], e.get("objective") or {}


@pytest.mark.parametrize(
    "what, values, get",
    [
        ("objective", OBJECTIVES, lambda m, o: o.get("type", "map")),
        ("prior", PRIORS, lambda m, o: m.get("prior", "independent")),
        ("sharing", MODEL_SHARING, lambda m, o: m.get("sharing", "separate")),
    ],
)
def test_every_objective_prior_and_sharing_has_an_example(what, values, get):
    seen = {get(m, o) for m, o in _entries()}
    missing = [v for v in values if v not in seen]
    assert not missing, f"no spec in specs/ uses {what} {missing}: add a runnable example"


def test_the_derived_regression_files_follow_their_recipe(tmp_path):
    """specs/data/satimage_pixel_*.npz are what specs/data/make_satimage_pixel.py makes from satimage."""
    import importlib.util

    import numpy as np

    if not (SHARED_DATA / "satimage").is_dir():
        pytest.skip(f"satimage is absent from ../shared/data ({SHARED_DATA})")
    script = SPECS_DIR / "data" / "make_satimage_pixel.py"
    mod = importlib.util.module_from_spec(importlib.util.spec_from_file_location("make_satimage_pixel", script))
    mod.__spec__.loader.exec_module(mod)
    mod.main(SHARED_DATA, tmp_path)
    for part in ("train", "test"):
        shipped, made = SPECS_DIR / "data" / f"satimage_pixel_{part}.npz", tmp_path / f"satimage_pixel_{part}.npz"
        with np.load(shipped) as a, np.load(made) as b:
            assert a["X"].shape == (1000, 32) and np.array_equal(a["X"], b["X"]) and np.array_equal(a["y"], b["y"])
