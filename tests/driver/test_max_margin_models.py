"""Crammer–Singer and H-M^3 runs save their model (model.npz arrays + spec.resolved.yaml, no pickle) and
`gpmodels predict` predicts with it: scores and labels for Crammer–Singer, 0/1 per tree node for H-M^3;
a round trip gives the run's own predictions."""

import csv
import json

import numpy as np
import yaml
from conftest import SHARED_DATA, needs_shared_data, toy_classification, write_spec

from gpmodels.baselines.crammer_singer.solver import fit_crammer_singer
from gpmodels.cli import main
from gpmodels.driver.build import build_kernel
from gpmodels.driver.build_data import build_data, build_multilabel_data
from gpmodels.driver.loader import spec_from_dict
from gpmodels.driver.saved import load_model
from gpmodels.scoring.multilabel import multilabel_report


def test_a_crammer_singer_model_round_trips(tmp_path, capsys):
    X, y = toy_classification(90, 3, d=4, seed=0)
    X = X * 3.0 + 1.0
    np.savez(tmp_path / "tr.npz", X=X[:60], y=y[:60])
    np.savez(tmp_path / "te.npz", X=X[60:], y=y[60:])
    d = {
        "name": "cs",
        "data": {"path": str(tmp_path / "tr.npz"), "test_path": str(tmp_path / "te.npz"), "scaling": "standardize"},
        "model": {"kernel": {"type": "rbf", "w": "auto"}},
        "objective": {"type": "crammer_singer", "crammer_singer": {"beta": 0.5, "epsilon": 1e-4, "engine": "numpy"}},
        "output": {"dir": str(tmp_path / "out")},
    }
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"]) == 0
    assert (tmp_path / "out" / "model.npz").is_file()
    run_error = json.loads((tmp_path / "out" / "metrics.json").read_text())["test_error"]
    # the run's scores, recomputed in process from the same spec
    spec = spec_from_dict(d)
    data = build_data(spec, tmp_path)
    resolved = yaml.safe_load((tmp_path / "out" / "spec.resolved.yaml").read_text())
    kernel = build_kernel(spec_from_dict(resolved).model.kernel, data.X_train, tmp_path)
    fitted = fit_crammer_singer(
        kernel, data.X_train, data.y_train, spec.objective.crammer_singer.options(), n_classes=data.n_classes
    )
    loaded = load_model(tmp_path / "out")
    np.testing.assert_array_equal(loaded.decision_function(X[60:]), fitted.decision_function(data.X_test))
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "out"), str(tmp_path / "te.npz"), "--out", str(tmp_path / "p.csv")]) == 0
    reported = float(capsys.readouterr().err.split("error ")[1].split(" %")[0])
    assert abs(reported - 100 * run_error) < 0.01
    with open(tmp_path / "p.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["row", "prediction", "score_0", "score_1", "score_2"]
    assert [r["prediction"] for r in rows] == [str(c) for c in np.argmax(fitted.decision_function(data.X_test), 1)]


@needs_shared_data("enron_corr")
def test_an_hm3_model_round_trips_and_predicts_multilabels(tmp_path):
    d = {
        "name": "e",
        "data": {"dataset": "enron_corr", "root": str(SHARED_DATA), "max_train": 80, "max_test": 40},
        "model": {"kernel": {"type": "linear"}},
        "objective": {"type": "hm3", "hm3": {"max_passes": 3, "chunk_size": 40}},
        "output": {"dir": str(tmp_path / "out")},
    }
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"]) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    data = build_multilabel_data(spec_from_dict(d), tmp_path)
    loaded = load_model(tmp_path / "out")
    assert loaded.model.tree.nodes == data.tree.nodes
    U = loaded.predict_multilabels(data.X_test)
    report = multilabel_report(data.Y_test, U, data.tree)
    assert report["f1"] == metrics["test_f1"] and report["zero_one"] == metrics["test_zero_one"]
    np.savez(tmp_path / "in.npz", X=data.X_test.toarray())
    assert main(["predict", str(tmp_path / "out"), str(tmp_path / "in.npz"), "--out", str(tmp_path / "p.csv")]) == 0
    with open(tmp_path / "p.csv") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["row", *data.tree.nodes]
    np.testing.assert_array_equal(np.array([r[1:] for r in rows[1:]], dtype=int), U.astype(int))


@needs_shared_data("news20")
def test_an_hm3_model_on_single_label_paths_predicts_classes_and_scores_them(tmp_path, capsys):
    d = {
        "name": "n",
        "data": {
            "dataset": "news20",
            "subset": "small",
            "root": str(SHARED_DATA),
            "scaling": "unit_norm",
            "max_train": 100,
            "max_test": 40,
        },
        "model": {"kernel": {"type": "linear"}},
        "objective": {"type": "hm3", "hm3": {"max_passes": 2, "chunk_size": 50}},
        "output": {"dir": str(tmp_path / "out")},
    }
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"]) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["n_classes"] == 20 and "test_f1" in metrics and 0.0 <= metrics["test_error"] <= 1.0
    run_error = metrics["test_error"]
    spec = spec_from_dict({**d, "data": {**d["data"], "scaling": "none"}})
    raw = build_data(spec, tmp_path)  # the same subsample, unscaled: predict scales as the run did
    np.savez(tmp_path / "in.npz", X=raw.X_test.toarray(), y=np.array(raw.classes)[raw.y_test])
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "out"), str(tmp_path / "in.npz"), "--out", str(tmp_path / "p.csv")]) == 0
    reported = float(capsys.readouterr().err.split("error ")[1].split(" %")[0])
    assert abs(reported - 100 * run_error) < 0.01
    with open(tmp_path / "p.csv") as fh:
        rows = list(csv.reader(fh))
    assert rows[0][:2] == ["row", "prediction"] and {r[1] for r in rows[1:]} <= set(raw.classes)
