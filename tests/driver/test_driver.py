"""Saved models (round trip), `gpmodels predict`, study specs and their reports."""

import csv
import json

import numpy as np
import pytest
import scipy.sparse as sp
import yaml
from conftest import ROOT, assert_spec_error, figures, toy_classification

from gpmodels.cli import main
from gpmodels.driver.saved import load_model
from gpmodels.driver.study import StudySpec
from gpmodels.errors import DataError


def _data(tmp_path, sparse=False):
    X, y = toy_classification(90, 3, d=4, seed=0)
    X = np.abs(X)
    if sparse:
        from gpmodels.data.svmlight import load_svmlight  # noqa: F401  (format check below)

        def dump(path, Xs, ys):
            with open(path, "w") as fh:
                for row, lab in zip(sp.csr_matrix(Xs), ys):
                    fh.write(f"{lab} " + " ".join(f"{j + 1}:{v}" for j, v in zip(row.indices, row.data)) + "\n")

        dump(tmp_path / "train.svm", X[:60], y[:60] + 1)
        dump(tmp_path / "test.svm", X[60:], y[60:] + 1)
        return tmp_path / "train.svm", tmp_path / "test.svm"
    np.savez(tmp_path / "train.npz", X=X[:60], y=y[:60] + 1)
    np.savez(tmp_path / "test.npz", X=X[60:], y=y[60:] + 1)
    return tmp_path / "train.npz", tmp_path / "test.npz"


@pytest.mark.parametrize(
    "kernel, scaling, sparse, rep",
    [
        ({"type": "rbf", "w": "auto"}, "standardize", False, "auto"),
        ({"type": "linear"}, "unit_norm", True, "auto"),
        ({"type": "ard", "w": [0.3, 0.2, 0.5, 0.1]}, "none", False, "lowrank"),
    ],
)
def test_save_load_round_trip_gives_identical_predictions(tmp_path, kernel, scaling, sparse, rep):
    tr, te = _data(tmp_path, sparse)
    spec = {
        "name": "m",
        "data": {"path": str(tr), "test_path": str(te), "scaling": scaling},
        "model": {
            "kernel": kernel,
            "sharing": "semi",
            "variance": [1.0, 2.0, 3.0],
            "sigma2": 2.0,
            "representation": {"kind": rep, "rank": 20},
        },
        "output": {"dir": str(tmp_path / "out")},
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(spec))
    assert main(["run", str(tmp_path / "s.yaml"), "--quiet"]) == 0
    out = tmp_path / "out"
    assert {"model.npz", "spec.resolved.yaml", *figures("error_reject.png", "trace_Phi.png")} <= {
        p.name for p in out.iterdir()
    }
    model = load_model(out)
    from gpmodels.data.files import load_inputs

    Xt, yt = load_inputs(te)
    P = model.predict_proba(Xt)
    err = np.mean(np.array(model.classes)[np.argmax(P, 1)] != np.array([str(int(v)) for v in yt]))
    assert err == pytest.approx(json.loads((out / "metrics.json").read_text())["test_error"])
    again = load_model(out).predict_proba(Xt)
    assert np.array_equal(P, again)  # bit-identical: same code on the same stored numbers

    assert main(["predict", str(out), str(te), "--out", str(tmp_path / "p.csv")]) == 0
    rows = list(csv.reader(open(tmp_path / "p.csv")))
    assert rows[0][:2] == ["row", "prediction"] and len(rows) == 31
    np.testing.assert_allclose([float(v) for v in rows[1][2:]], P[0], rtol=1e-5)


def test_loading_refuses_what_is_not_a_model(tmp_path):
    with pytest.raises(DataError, match="not a saved model folder"):
        load_model(tmp_path)
    (tmp_path / "model.npz").write_bytes(b"garbage")
    with pytest.raises(DataError, match="cannot be read"):
        load_model(tmp_path)
    np.savez(tmp_path / "model.npz", format_version=np.array(99), kind=np.array("map"))
    with pytest.raises(DataError, match="format version 99"):
        load_model(tmp_path)
    assert main(["predict", str(tmp_path), str(tmp_path / "x.npz")]) == 2


def test_study_runs_every_model_on_the_same_split(tmp_path, capsys):
    tr, te = _data(tmp_path)
    study = {
        "name": "st",
        "data": {"path": str(tr), "test": "split", "test_fraction": 0.3},
        "models": [
            {"name": "tied", "model": {"kernel": {"type": "rbf", "w": 0.3}, "sharing": "tied", "variance": 3}},
            {
                "name": "exact",
                "model": {"kernel": {"type": "rbf", "w": 0.3}, "sharing": "tied", "variance": 3},
                "objective": {"solver": "exact"},
            },
            {"name": "lin", "model": {"kernel": {"type": "linear"}, "sigma2": 1.0}},
        ],
        "output": {"dir": str(tmp_path / "study")},
    }
    p = tmp_path / "study.yaml"
    p.write_text(yaml.safe_dump(study))
    assert main(["validate", str(p)]) == 0
    assert main(["study", str(p)]) == 0
    out = tmp_path / "study"
    rows = json.loads((out / "study.json").read_text())["rows"]
    assert [r["model"] for r in rows] == ["tied", "exact", "lin"]
    assert len({r["n_test"] for r in rows}) == 1
    assert rows[0]["test_error"] == pytest.approx(rows[1]["test_error"])  # same model, two solvers, same split
    assert (out / "study.md").read_text().startswith("| model | test_error | test_log_loss | test_brier | test_ece")
    assert all(0 <= r["test_brier"] <= 2 and 0 <= r["test_ece"] <= 1 for r in rows)
    assert all((out / r["model"] / "report.md").is_file() for r in rows)
    assert all((out / f).is_file() and f in (out / "report.md").read_text() for f in figures("error_reject.png"))
    assert list(csv.reader(open(out / "study.csv")))[0][0] == "model"
    assert "| tied |" in capsys.readouterr().out


@pytest.mark.parametrize(
    "mutate, key, message",
    [
        (lambda d: d["models"].append(dict(d["models"][0])), "models", "unique"),
        (lambda d: d["models"][0]["model"].update(sharng="x"), "models[0].model.sharng", "did you mean 'sharing'"),
        (lambda d: d.update(models=[]), "models", "at least one"),
        (
            lambda d: d["models"][0]["objective"].update(solver="exact", newton={"max_iter": 0}),
            "models[0].objective.newton.max_iter",
            "must be a positive integer",
        ),
        (lambda d: d["models"][0]["objective"].update(k1=30), "models[0].objective.k1", "unknown key 'k1'"),
    ],
)
def test_bad_study_specs_name_the_key(mutate, key, message):
    d = {
        "name": "s",
        "data": {"dataset": "satimage"},
        "models": [{"name": "a", "model": {"kernel": {"type": "linear"}}, "objective": {}}],
    }
    mutate(d)
    assert_spec_error(d, key, message, read=StudySpec.from_dict)


def test_learned_hyperparameters_round_trip_for_regression(tmp_path, capsys):
    """A VB run learns (w, v, noise scale); the saved model predicts with the learned values."""

    root = ROOT
    spec = yaml.safe_load((root / "specs" / "sinc-robust-vb.yaml").read_text())
    spec["data"]["path"] = str(root / "specs" / "data" / "sinc_train.npz")
    spec["data"]["test_path"] = str(root / "specs" / "data" / "sinc_test.npz")
    spec["data"]["max_train"] = 60
    spec["objective"]["vb"]["learn_max_iter"] = 5
    spec["output"] = {"dir": str(tmp_path / "vb")}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(spec))
    assert main(["run", str(tmp_path / "s.yaml"), "--quiet"]) == 0
    metrics = json.loads((tmp_path / "vb" / "metrics.json").read_text())
    model = load_model(tmp_path / "vb")
    with np.load(root / "specs" / "data" / "sinc_test.npz") as z:
        Xt, yt = z["X"], z["y"]
    pred = model.predict_proba(Xt)[:, 0]
    assert np.sqrt(np.mean((pred - yt) ** 2)) == pytest.approx(metrics["test_rmse"], rel=1e-9)
    assert (
        main(
            [
                "predict",
                str(tmp_path / "vb"),
                str(root / "specs" / "data" / "sinc_test.npz"),
                "--out",
                str(tmp_path / "p.csv"),
            ]
        )
        == 0
    )
    assert "RMSE" in capsys.readouterr().err
    rows = list(csv.reader(open(tmp_path / "p.csv")))
    assert rows[0] == ["row", "prediction"] and float(rows[1][1]) == pytest.approx(pred[0], rel=1e-6)
