"""`gpmodels predict` reads inputs as the model was trained: the svmlight index base of the training
files (saved with the model) and the training width (a narrower file is padded, a wider one refused)."""

import csv
import json

import numpy as np
from conftest import toy_classification, toy_data_section

from gpmodels.cli import main


def _svmlight(path, X, y, zero_based: bool, skip_first: bool = False):
    first = 1 if skip_first else 0
    with open(path, "w") as fh:
        for row, label in zip(X, y):
            items = [f"{j + (0 if zero_based else 1)}:{v:.10g}" for j, v in enumerate(row) if j >= first and v != 0]
            fh.write(f"{label} {' '.join(items)}\n")


def _run(tmp_path, zero_based):
    X, y = toy_classification(90, 3, d=4, seed=3)
    X[:, 0] += 5.0  # feature 0 matters, so a one-column shift changes the predictions
    _svmlight(tmp_path / "train.svm", X[:60], y[:60], zero_based)
    _svmlight(tmp_path / "test.svm", X[60:], y[60:], zero_based)
    spec = {
        "name": "svm",
        "data": {"path": str(tmp_path / "train.svm"), "test_path": str(tmp_path / "test.svm")},
        "model": {"kernel": {"type": "rbf", "w": "auto"}, "variance": 5.0, "sigma2": 1.0},
    }
    (tmp_path / "spec.yaml").write_text(json.dumps(spec))
    assert main(["run", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "model"), "--quiet"]) == 0
    return X, y


def _predicted(tmp_path, capsys, name):
    capsys.readouterr()
    out = tmp_path / f"{name}.csv"
    assert main(["predict", str(tmp_path / "model"), str(tmp_path / name), "--out", str(out)]) == 0
    with open(out) as fh:
        return [row["prediction"] for row in csv.DictReader(fh)]


def test_a_zero_based_model_reads_zero_based_inputs_that_never_use_feature_zero(tmp_path, capsys):
    X, y = _run(tmp_path, zero_based=True)
    Xz = X[60:].copy()
    Xz[:, 0] = 0.0  # the inputs never use feature 0: a per-file guess would read them as 1-based
    _svmlight(tmp_path / "noz.svm", Xz, y[60:], zero_based=True, skip_first=True)
    np.savez(tmp_path / "noz.npz", X=Xz)
    assert _predicted(tmp_path, capsys, "noz.svm") == _predicted(tmp_path, capsys, "noz.npz")


def test_a_narrower_input_file_is_padded_and_a_wider_one_refused(tmp_path, capsys):
    X, y = _run(tmp_path, zero_based=False)
    Xn = X[60:].copy()
    Xn[:, 3] = 0.0  # the last feature absent: the file is narrower than the training data
    _svmlight(tmp_path / "narrow.svm", Xn, y[60:], zero_based=False)
    np.savez(tmp_path / "narrow.npz", X=Xn)
    assert _predicted(tmp_path, capsys, "narrow.svm") == _predicted(tmp_path, capsys, "narrow.npz")
    (tmp_path / "wide.svm").write_text("0 1:0.5 9:1.0\n")
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "model"), str(tmp_path / "wide.svm")]) == 2
    assert "trained on 4 features" in capsys.readouterr().err


def test_a_positive_class_model_scores_predict_against_the_raw_labels(tmp_path, capsys):
    """A binary `data.positive_class` model (classes "rest" / "2") is scored at predict by mapping the
    file's raw labels, so predict reports the run's own test error (it once compared "rest" with "0")."""
    spec = {
        "name": "pos",
        "data": {**toy_data_section(tmp_path, n=120, n_train=80, d=4, seed=5), "positive_class": "2"},
        "model": {
            "kernel": {"type": "rbf", "w": "auto"},
            "variance": 5.0,
            "sigma2": 1.0,
            "likelihood": "logistic",
            "sharing": "tied",
        },
    }
    (tmp_path / "spec.yaml").write_text(json.dumps(spec))
    assert main(["run", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "model"), "--quiet"]) == 0
    run_error = json.loads((tmp_path / "model" / "metrics.json").read_text())["test_error"]
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "model"), str(tmp_path / "test.npz"), "--out", str(tmp_path / "p.csv")]) == 0
    err = capsys.readouterr().err
    reported = float(err.split("error ")[1].split(" %")[0])
    assert abs(reported - 100 * run_error) < 0.01, (err, run_error)
    with open(tmp_path / "p.csv") as fh:
        assert {row["prediction"] for row in csv.DictReader(fh)} <= {"rest", "2"}
