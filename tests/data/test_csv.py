"""CSV data files (a header line, the label column named by data.label_column) and a clear error for a
data file suffix that gpmodels does not read — at `validate` too (a .csv once passed validate and then
failed as malformed svmlight)."""

import csv
import json

import numpy as np
import pytest
from conftest import toy_classification

from gpmodels.cli import main
from gpmodels.data.csvfile import load_csv
from gpmodels.data.files import load_file, load_inputs
from gpmodels.errors import DataError


def _write_csv(path, X, y=None, label_column="species", names=("a", "b", "c")):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        head = [f"x{j}" for j in range(X.shape[1])]
        w.writerow(head[:1] + ([label_column] if y is not None else []) + head[1:])
        for i, row in enumerate(X):
            label = [names[int(y[i])]] if y is not None else []
            w.writerow([f"{row[0]:.17g}"] + label + [f"{v:.17g}" for v in row[1:]])
    return path


def _spec(tmp_path, train, test, **data):
    spec = {
        "name": "csv",
        "data": {"path": str(train), "test_path": str(test), "label_column": "species", **data},
        "model": {"kernel": {"type": "rbf", "w": "auto"}, "variance": 5.0, "sigma2": 1.0},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(json.dumps(spec))
    return path


def test_a_csv_run_validates_runs_and_predicts_with_or_without_the_label_column(tmp_path, capsys):
    X, y = toy_classification(90, 3, d=3, seed=4)
    _write_csv(tmp_path / "train.csv", X[:60], y[:60])
    _write_csv(tmp_path / "test.csv", X[60:], y[60:])
    _write_csv(tmp_path / "new.csv", X[60:])
    spec = _spec(tmp_path, tmp_path / "train.csv", tmp_path / "test.csv")
    assert main(["validate", str(spec)]) == 0
    assert main(["run", str(spec), "--out", str(tmp_path / "model"), "--quiet"]) == 0
    run_error = json.loads((tmp_path / "model" / "metrics.json").read_text())["test_error"]
    predictions = []
    for name in ("test.csv", "new.csv"):
        capsys.readouterr()
        assert main(["predict", str(tmp_path / "model"), str(tmp_path / name), "--out", str(tmp_path / "p.csv")]) == 0
        err = capsys.readouterr().err
        with open(tmp_path / "p.csv") as fh:
            predictions.append([row["prediction"] for row in csv.DictReader(fh)])
    assert predictions[0] == predictions[1] and set(predictions[0]) <= {"a", "b", "c"}
    X_in, y_in = load_inputs(tmp_path / "test.csv", label_column="species")
    np.testing.assert_array_equal(X_in, X[60:])
    assert y_in.tolist() == [("a", "b", "c")[int(v)] for v in y[60:]]
    assert "error" not in err  # the unlabelled file scores nothing
    capsys.readouterr()
    main(["predict", str(tmp_path / "model"), str(tmp_path / "test.csv"), "--out", str(tmp_path / "p.csv")])
    reported = float(capsys.readouterr().err.split("error ")[1].split(" %")[0])
    assert abs(reported - 100 * run_error) < 0.01


def test_numeric_csv_labels_are_numbers(tmp_path):
    (tmp_path / "n.csv").write_text("f1,label,f2\n1.5,10,2\n0.5,9,1\n2,10,0\n")
    X, y = load_csv(tmp_path / "n.csv")
    np.testing.assert_array_equal(X, [[1.5, 2], [0.5, 1], [2, 0]])
    assert y.dtype.kind == "i" and y.tolist() == [10, 9, 10]


@pytest.mark.parametrize(
    "text, message",
    [
        ("f1,f2\n1,2\n", "no label column 'label'"),
        ("1,2,3\n4,5,6\n", "starts with a header line"),
        ("f1,label\n1,a\nx,b\n", r":3: column 1 \(1 character\) is not a number"),
        ("f1,label\n1,a,3\n", ":2: 3 values; the header names 2 columns"),
        ("f1,label\ninf,a\n", "not finite"),
        ("", "is empty"),
    ],
)
def test_bad_csv_files_say_what_is_wrong(tmp_path, text, message):
    (tmp_path / "bad.csv").write_text(text)
    with pytest.raises(DataError, match=message):
        load_csv(tmp_path / "bad.csv")


def test_an_unknown_suffix_is_refused_listing_the_formats_at_validate_and_at_load(tmp_path, capsys):
    X, y = toy_classification(40, 2, d=2, seed=1)
    np.savez(tmp_path / "train.npz", X=X, y=y)
    (tmp_path / "test.dat").write_text("1 1:0.5\n")
    spec = _spec(tmp_path, tmp_path / "train.npz", tmp_path / "test.dat")
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "data.test_path" in err and "'.dat'" in err
    for fmt in (".npz", ".svm", ".libsvm", ".txt", ".arff", ".csv"):
        assert fmt in err
    with pytest.raises(DataError, match="suffix '.dat'"):
        load_file(tmp_path / "train.npz", tmp_path / "test.dat")
    with pytest.raises(DataError, match="suffix '.dat'"):
        load_inputs(tmp_path / "test.dat")
