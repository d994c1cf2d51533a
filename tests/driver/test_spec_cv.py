"""The `cv` objective through the driver: report, resume from the checkpoint, refusal of a
foreign or corrupt checkpoint, spec checks; and the shipped satimage spec.  One-vs-rest:
test_spec_one_vs_rest.py."""

import json
import shutil

import numpy as np
import pytest
import yaml
from conftest import ROOT, assert_spec_error, needs_shared_data, toy_data_section, write_spec

from gpmodels.cli import main
from gpmodels.driver.build import build_learn_options, cv_partition
from gpmodels.driver.loader import load_spec, spec_from_dict
from gpmodels.driver.run import RUNNERS
from gpmodels.inference.cv.learn import LearnOptions
from gpmodels.inference.cv.options import CVOptions


def _spec(tmp_path, max_iter=4, **cv):
    settings = {
        "folds": 3,
        "newton": {"max_iter": 20, "cg_max_iter": 30, "grad_tol": 1e-6},
        "outer": {"max_iter": max_iter, "score_patience": 0},
    }  # the report at exactly max_iter
    settings.update(cv)
    return {
        "name": "toy-cv",
        "seed": 1,
        "data": toy_data_section(tmp_path, n=90, n_train=60, d=3, seed=3, spread=2.5),
        "model": {"kernel": {"type": "rbf", "w": "auto"}, "sharing": "semi", "variance": 2.0, "sigma2": 1.0},
        "objective": {"type": "cv", "newton": {"max_iter": 30, "cg_max_iter": 40}, "cv": settings},
        "output": {"dir": str(tmp_path / "out")},
    }


def test_cv_run_writes_the_report_and_resumes(tmp_path, capsys):
    p = write_spec(tmp_path, _spec(tmp_path))
    assert main(["run", str(p)]) == 0
    out = tmp_path / "out"
    m = json.loads((out / "metrics.json").read_text())
    for key in (
        "test_error",
        "psi_start",
        "psi_learned",
        "outer_iterations",
        "evaluations",
        "failed_evaluations",
        "learning_seconds",
        "psi_evaluation_seconds",
        "final_fit_seconds",
        "hyper.kernel0.w",
        "hyper.variance0",
        "hyper.variance2",
    ):
        assert key in m, key
    assert m["psi_learned"] < m["psi_start"] and m["outer_iterations"] == 4 and m["resumed_from_iteration"] is None
    assert m["folds_per_fit"] == 1  # `auto` on the host: each fold alone
    assert all(not isinstance(v, (dict, list)) for v in m.values())
    assert m["test_error"] < 0.25
    diag = json.loads((out / "diagnostics.json").read_text())
    assert [r["iteration"] for r in diag["learning"]] == [0, 1, 2, 3, 4]
    assert (out / "checkpoint.npz").is_file()
    text = capsys.readouterr().out
    assert "iteration 4: Ψ =" in text and "final fit" in text
    # the same spec again: resumes from the finished checkpoint, no new evaluation
    assert main(["run", str(p)]) == 0
    again = json.loads((out / "metrics.json").read_text())
    assert again["resumed_from_iteration"] == 4 and again["psi_learned"] == m["psi_learned"]
    assert again["test_error"] == m["test_error"] and again["psi_evaluation_seconds"] is None
    assert again["folds_per_fit"] is None  # no evaluation ran
    assert "resumed from the checkpoint of outer iteration 4" in capsys.readouterr().out


def test_a_changed_spec_refuses_the_old_checkpoint(tmp_path, capsys):
    d = _spec(tmp_path, max_iter=1)
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"]) == 0
    d["model"]["variance"] = 3.0
    # the folder holds another spec's report: refused before any work
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"]) == 2
    assert "holds the report of another run" in capsys.readouterr().err
    # a checkpoint brought into a fresh folder is checked against its own identity
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(tmp_path / "out" / "checkpoint.npz", tmp_path / "elsewhere" / "checkpoint.npz")
    elsewhere = ["--out", str(tmp_path / "elsewhere")]
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"] + elsewhere) == 2
    err = capsys.readouterr().err
    assert "belongs to another run" in err and "caller" in err
    d["objective"]["cv"]["resume"] = "never"  # starting afresh is explicit
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"] + elsewhere) == 0
    (tmp_path / "elsewhere" / "checkpoint.npz").write_bytes(b"\x00" * 100)
    d["objective"]["cv"]["resume"] = "auto"  # the same run (checkpoint settings are not part of its identity)
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"] + elsewhere) == 2
    assert "corrupt" in capsys.readouterr().err
    # --force replaces the other run's report and drops its checkpoint
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet", "--force"]) == 0
    assert (
        "resumed_from_iteration" not in json.loads((tmp_path / "out" / "metrics.json").read_text())
        or json.loads((tmp_path / "out" / "metrics.json").read_text())["resumed_from_iteration"] is None
    )


def test_exact_inner_solves_through_the_driver(tmp_path):
    d = _spec(tmp_path, max_iter=2, checkpoint=False)
    d["objective"]["solver"] = "exact"
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"]) == 0
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["psi_learned"] < m["psi_start"] and m["final_converged"]


def test_cv_spec_settings_reach_the_options():
    spec = spec_from_dict(
        {
            "name": "x",
            "data": {"dataset": "satimage"},
            "model": {"kernel": {"type": "rbf", "w": 1.0}},
            "objective": {
                "type": "cv",
                "solver": "exact",
                "newton": {"max_iter": 31, "cg_max_iter": 51},
                "cv": {
                    "newton": {"max_iter": 7, "cg_max_iter": 9},
                    "k3": 11,
                    "fail_tol": 0.01,
                    "outer": {"max_iter": 3},
                    "lower": -3.0,
                    "upper": 4.0,
                    "partition_seed": 5,
                },
            },
        }
    )
    o = build_learn_options(spec.objective)
    assert (o.cv.newton.max_iter, o.cv.newton.cg_max_iter, o.cv.k3, o.cv.fail_tol) == (7, 9, 11, 0.01)
    assert (o.final.max_iter, o.final.cg_max_iter, o.final_solver, o.cv.solver) == (31, 51, "exact", "exact")
    assert (o.outer.max_iter, o.lower, o.upper) == (3, -3.0, 4.0)
    assert o.cv.newton.grad_tol == CVOptions().newton.grad_tol and o.outer.ftol == LearnOptions().outer.ftol
    y = np.arange(20) % 2
    a, b = cv_partition(spec, y), cv_partition(spec, y)
    assert len(a) == 5 and all(np.array_equal(i, j) for i, j in zip(a, b))
    assert "cv" in RUNNERS


def test_every_objective_type_has_a_runner():
    import attrs

    from gpmodels.driver.sections.objective import ObjectiveSpec

    choices = attrs.fields(ObjectiveSpec).type.metadata["spec"]["check"].allowed
    assert set(choices) == set(RUNNERS), "objective.type choices and registered runners differ"


@pytest.mark.parametrize(
    "mutate, key, message",
    [
        (lambda d: d["objective"].update(type="cvv"), "objective.type", "did you mean 'cv'"),
        (lambda d: d["objective"]["cv"].update(folds=1), "objective.cv.folds", ">= 2"),
        (lambda d: d["objective"]["cv"].update(lower=5.0, upper=1.0), "objective.cv.lower", "below"),
        (lambda d: d["objective"]["cv"].update(k3=0), "objective.cv.k3", "must be a positive integer"),
        (
            lambda d: d["objective"]["cv"]["outer"].update(max_iter=0),
            "objective.cv.outer.max_iter",
            "must be a positive integer",
        ),
        (lambda d: d["objective"]["cv"].update(k1=5), "objective.cv.k1", "unknown key 'k1'"),
        (
            lambda d: d["objective"]["cv"].update(ftol=1e-3),
            "objective.cv.ftol",
            "unknown key 'ftol'; did you mean 'folds'",
        ),
        (lambda d: d["objective"].update(grad_tol=1e-3), "objective.grad_tol", "unknown key 'grad_tol'"),
        (lambda d: d["objective"]["cv"].update(resume="always"), "objective.cv.resume", "one of"),
        (
            lambda d: (d["objective"]["cv"].update(learn_sigma2=True), d["model"].update(sigma2=0.0)),
            "objective.cv.learn_sigma2",
            "sigma2",
        ),
    ],
)
def test_bad_cv_settings_name_the_key(tmp_path, mutate, key, message):
    d = _spec(tmp_path)
    mutate(d)
    assert_spec_error(d, key, message)


def test_the_satimage_spec_is_seeger_section_6_2():
    spec, _ = load_spec(ROOT / "specs" / "satimage-cv.yaml")
    m, o = spec.model, spec.objective
    assert (m.kernel.type, m.kernel.w, m.variance, m.sigma2, m.sharing) == ("rbf", "auto", 10.0, 16.0, "separate")
    assert (
        o.type,
        o.newton.max_iter,
        o.newton.cg_max_iter,
        o.cv.newton.max_iter,
        o.cv.newton.cg_max_iter,
        o.cv.k3,
        o.cv.folds,
    ) == ("cv", 30, 50, 13, 25, 40, 5)


@pytest.mark.slow
@needs_shared_data("satimage")
def test_satimage_spec_learns_on_a_subsample(tmp_path):
    """The shipped spec end to end on 800 training points (the full study is bench/satimage_cv.py)."""
    d = yaml.safe_load((ROOT / "specs" / "satimage-cv.yaml").read_text())
    d["data"]["max_train"] = 800
    d["objective"]["cv"]["outer"] = {"max_iter": 4}
    d["output"]["dir"] = str(tmp_path / "out")
    p = tmp_path / "satimage.yaml"
    p.write_text(yaml.safe_dump(d))
    assert main(["run", str(p), "--quiet"]) == 0
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["psi_learned"] < 0.9 * m["psi_start"] and m["test_error"] < 0.16


@pytest.mark.parametrize(
    "change, expected",
    [({}, None), ({"upper": 0.9}, "upper bound"), ({"final_newton_max_iter": 1}, "did not converge")],
)
def test_metrics_say_whether_the_learned_model_can_be_trusted(tmp_path, capsys, change, expected):
    spec = _spec(tmp_path, max_iter=3)
    if "upper" in change:
        spec["objective"]["cv"]["upper"] = change["upper"]
    if "final_newton_max_iter" in change:
        spec["objective"]["newton"] = {"max_iter": 1, "cg_max_iter": 2}
    assert main(["run", str(write_spec(tmp_path, spec))]) == 0
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    out = capsys.readouterr().out + capsys.readouterr().err
    if expected is None:
        assert m["learning_ok"] is True and m["learning_problems"] == ""
    else:
        assert m["learning_ok"] is False and expected in m["learning_problems"]
        assert "may be broken" in out or "may be broken" in (tmp_path / "out" / "run.log").read_text()
