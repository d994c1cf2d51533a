"""Spec validation, the driver and its exit codes, on small data generated here."""

import json

import numpy as np
import pytest
import yaml
from conftest import ROOT, assert_spec_error, toy_data_section, write_spec

from gpmodels.cli import main
from gpmodels.driver import spec_reference
from gpmodels.driver.loader import spec_from_dict


def _files(tmp_path):
    toy_data_section(tmp_path, n=90, n_train=60, d=4, seed=0, label_offset=1)
    return tmp_path / "train.npz", tmp_path / "test.npz"


def _spec(tmp_path, **model):
    tr, te = _files(tmp_path)
    m = {"kernel": {"type": "rbf", "w": "auto"}, "sharing": "separate", "variance": 5.0, "sigma2": 4.0}
    m.update(model)
    return {
        "name": "toy",
        "data": {"path": str(tr), "test_path": str(te)},
        "model": m,
        "objective": {"newton": {"max_iter": 20, "cg_max_iter": 30}},
        "output": {"dir": str(tmp_path / "out")},
    }


def test_run_writes_the_report_contract(tmp_path, capsys):
    p = write_spec(tmp_path, _spec(tmp_path))
    assert main(["run", str(p)]) == 0
    out = tmp_path / "out"
    m = json.loads((out / "metrics.json").read_text())
    for key in (
        "test_error",
        "test_log_loss",
        "fit_seconds",
        "n_train",
        "n_test",
        "n_classes",
        "newton_iterations",
        "mvm_count",
    ):
        assert key in m
    assert m["n_train"] == 60 and m["n_test"] == 30 and m["n_classes"] == 3
    assert all(not isinstance(v, (dict, list)) for v in m.values())
    assert m["test_error"] < 0.2 and m["converged"]
    resolved = yaml.safe_load((out / "spec.resolved.yaml").read_text())
    assert isinstance(resolved["model"]["kernel"]["w"], float)  # 'auto' resolved
    spec_from_dict(resolved)  # the resolved spec is itself a valid spec
    assert "test error" in capsys.readouterr().out


def test_run_out_flag_quiet_and_exact_method(tmp_path, capsys):
    d = _spec(tmp_path)
    d["objective"]["solver"] = "exact"
    p = write_spec(tmp_path, d)
    assert main(["run", str(p), "--out", str(tmp_path / "elsewhere"), "--quiet"]) == 0
    assert (tmp_path / "elsewhere" / "metrics.json").is_file()
    assert capsys.readouterr().out == ""


def test_svmlight_split_and_sparse_linear(tmp_path):
    d = {
        "name": "svm",
        "data": {"path": str(ROOT / "tests" / "data" / "tiny.svm"), "test": "split", "test_fraction": 0.5},
        "model": {"kernel": {"type": "linear"}, "sharing": "tied", "sigma2": 1.0},
        "output": {"dir": str(tmp_path / "o")},
    }
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"]) == 0


@pytest.mark.parametrize(
    "mutate, key, message",
    [
        (lambda d: d.update(modle={}), "modle", "did you mean 'model'"),
        (lambda d: d["model"].update(sharng="tied"), "model.sharng", "did you mean 'sharing'"),
        (lambda d: d["model"].update(sharing="tide"), "model.sharing", "did you mean 'tied'"),
        (lambda d: d["model"]["kernel"].update(type="rbff"), "model.kernel.type", "one of"),
        (lambda d: d["model"].update(variance="big"), "model.variance", "must be"),
        (lambda d: d["model"].update(variance=-1.0), "model.variance", "must be a positive number or a non-empty list"),
        (lambda d: d["model"]["kernel"].update(degree=2), "model.kernel.degree", "not used by kernel type 'rbf'"),
        (lambda d: d["objective"]["newton"].update(max_iter=2.5), "objective.newton.max_iter", "integer"),
        (lambda d: d["objective"].update(k1=20), "objective.k1", "unknown key 'k1'"),
        (lambda d: d["data"].update(dataset="satimage"), "data.dataset", "exactly one"),
        (lambda d: d.pop("model"), "model", "missing required key"),
        (lambda d: d["model"]["kernel"].pop("w"), "model.kernel.w", "needs `w`"),
    ],
)
def test_bad_specs_name_the_key(tmp_path, mutate, key, message):
    d = _spec(tmp_path)
    mutate(d)
    assert_spec_error(d, key, message)


def test_missing_file_is_named_and_exit_code_is_2(tmp_path, capsys):
    d = _spec(tmp_path)
    d["data"]["path"] = str(tmp_path / "nope.npz")
    p = write_spec(tmp_path, d)
    assert main(["validate", str(p)]) == 2
    err = capsys.readouterr().err
    assert "data.path" in err and "nope.npz" in err
    assert main(["run", str(tmp_path / "no-such-spec.yaml")]) == 2
    (tmp_path / "broken.yaml").write_text("name: [unclosed")
    assert main(["validate", str(tmp_path / "broken.yaml")]) == 2


def test_nan_in_the_data_is_a_bad_input(tmp_path, capsys):
    tr, te = _files(tmp_path)
    with np.load(tr) as z:
        X, y = z["X"].copy(), z["y"]
    X[3, 1] = np.nan
    np.savez(tr, X=X, y=y)
    p = write_spec(tmp_path, {**_spec(tmp_path), "data": {"path": str(tr), "test_path": str(te)}})
    np.savez(tr, X=X, y=y)  # _spec rewrote it; poison again
    assert main(["run", str(p), "--quiet"]) == 2
    assert "X_train must be finite" in capsys.readouterr().err


def test_validate_accepts_every_shipped_spec():
    from gpmodels.driver.study import StudySpec

    for spec in sorted((ROOT / "specs").glob("*.yaml")):
        d = yaml.safe_load(spec.read_text())
        StudySpec.from_dict(d) if "models" in d else spec_from_dict(d)  # schema only; test_example_specs runs them


def test_docs_spec_reference_matches_the_schema():
    doc = (ROOT / "docs" / "specs.md").read_text()
    assert doc == spec_reference(), "docs/specs.md is stale: regenerate with `gpmodels spec-reference > docs/specs.md`"


# ---------------------------------------------------------------------------- exit codes
def test_a_run_that_fails_exits_1(tmp_path, capsys):
    """A genuine failure: CV whose first Ψ evaluation cannot succeed (one Newton step per refit,
    an unreachable failure threshold) raises ConvergenceError; the driver reports it and exits 1."""
    d = _spec(tmp_path)
    d["objective"] = {
        "type": "cv",
        "cv": {"newton": {"max_iter": 1}, "fail_tol": 1e-12, "folds": 3, "checkpoint": False},
    }
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("gpmodels: run failed: ") and "first evaluation at the starting hyperparameters failed" in err
    assert not (tmp_path / "out" / "metrics.json").exists()


def test_a_study_whose_model_fails_exits_1(tmp_path, capsys):
    tr, te = _files(tmp_path)
    model = {"kernel": {"type": "rbf", "w": "auto"}, "sharing": "tied", "variance": 5.0}
    study = {
        "name": "st",
        "data": {"path": str(tr), "test_path": str(te)},
        "models": [
            {"name": "ok", "model": model},
            {
                "name": "fails",
                "model": model,
                "objective": {
                    "type": "cv",
                    "cv": {"newton": {"max_iter": 1}, "fail_tol": 1e-12, "folds": 3, "checkpoint": False},
                },
            },
        ],
    }
    p = write_spec(tmp_path, study, "study.yaml")
    assert main(["validate", str(p)]) == 0
    assert main(["study", str(p), "--out", str(tmp_path / "st"), "--quiet"]) == 1
    assert "run failed" in capsys.readouterr().err
    assert (tmp_path / "st" / "ok" / "metrics.json").is_file()  # the models before the failure kept their reports


@pytest.mark.parametrize(
    "exc, code, shown",
    [
        # unexpected: named by type and place, its message (which may quote a file) and traceback not shown, exit 1
        (RuntimeError("boom in the runner"), 1, "internal error RuntimeError at test_spec_cli.py"),
        (KeyboardInterrupt(), 130, "gpmodels: interrupted"),  # Ctrl-C: 130, no traceback
        (MemoryError(), 1, "MemoryError"),
    ],
)
def test_unexpected_failures_exit_1(tmp_path, monkeypatch, capsys, exc, code, shown):
    from gpmodels.driver import run as run_module

    def failing(*args, **kwargs):
        raise exc

    monkeypatch.setitem(run_module.RUNNERS, "map", failing)
    assert main(["run", str(write_spec(tmp_path, _spec(tmp_path))), "--quiet"]) == code
    err = capsys.readouterr().err
    assert shown in err and "Traceback" not in err and "boom" not in err
    if isinstance(exc, RuntimeError):  # the traceback on request
        monkeypatch.setenv("GPMODELS_DEBUG", "1")
        assert main(["run", str(write_spec(tmp_path, _spec(tmp_path))), "--quiet", "--force"]) == code
        assert "Traceback" in capsys.readouterr().err


def test_bad_command_lines_exit_2(capsys):
    for argv in ([], ["frobnicate"], ["run"], ["run", "a.yaml", "--no-such-flag"]):
        with pytest.raises(SystemExit) as ex:
            main(argv)
        assert ex.value.code == 2
    capsys.readouterr()


def test_validate_run_and_study_exit_0_and_out_decides_the_folder(tmp_path, capsys):
    d = _spec(tmp_path)
    p = write_spec(tmp_path, d)
    assert main(["validate", str(p)]) == 0
    assert capsys.readouterr().out.strip() == f"{p}: valid"
    assert main(["run", str(p), "--out", str(tmp_path / "a"), "--quiet"]) == 0
    assert (tmp_path / "a" / "metrics.json").is_file() and not (tmp_path / "out").exists()
    resolved = yaml.safe_load((tmp_path / "a" / "spec.resolved.yaml").read_text())
    assert resolved["output"]["dir"] == str(tmp_path / "a")  # the report records where it went
    study = {
        "name": "st",
        "data": d["data"],
        "models": [{"name": "m", "model": d["model"]}],
        "output": {"dir": str(tmp_path / "default")},
    }
    ps = write_spec(tmp_path, study, "study.yaml")
    assert main(["study", str(ps), "--out", str(tmp_path / "b"), "--quiet"]) == 0
    assert (tmp_path / "b" / "study.md").is_file() and (tmp_path / "b" / "m" / "metrics.json").is_file()
    assert not (tmp_path / "default").exists()
    assert main(["spec-reference"]) == 0 and capsys.readouterr().out.startswith("# Spec reference")
