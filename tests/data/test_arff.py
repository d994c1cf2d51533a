"""ARFF input: numeric features and a nominal class attribute, through the loader, a spec run and
`gpmodels predict`; clear DataErrors for what the format allows but the models cannot take."""

import csv
import json

import numpy as np
import pytest
import yaml
from conftest import toy_classification

from gpmodels.cli import main
from gpmodels.data.arff import load_arff
from gpmodels.data.files import load_file, load_inputs
from gpmodels.errors import DataError

NAMES = ("setosa", "versicolor", "virginica")


def _write_arff(path, X, y, *, class_first=False, class_values=NAMES, extra_header=""):
    head = ["% written by the test", "@RELATION toy", ""]
    cls = "@ATTRIBUTE class {" + ",".join(class_values) + "}"
    if class_first:
        head.append(cls)
    head += [f"@ATTRIBUTE x{j} {'REAL' if j % 2 else 'numeric'}" for j in range(X.shape[1])]
    if extra_header:
        head.append(extra_header)
    if not class_first:
        head.append(cls)
    rows = []
    for xi, yi in zip(X, y):
        vals = [repr(float(v)) for v in xi]
        rows.append(",".join([yi] + vals if class_first else vals + [yi]))
    path.write_text("\n".join(head + ["", "@DATA"] + rows) + "\n")
    return path


def _toy(n=60):
    X, y = toy_classification(n, 3, d=3, seed=2, spread=3.0)
    return X, np.array(NAMES)[y]


@pytest.mark.parametrize("class_first", [False, True])
def test_arff_reads_numeric_features_and_the_nominal_class(tmp_path, class_first):
    X, y = _toy(12)
    p = _write_arff(tmp_path / "t.arff", X, y, class_first=class_first)
    Xr, yr = load_arff(p)
    np.testing.assert_array_equal(Xr, X)
    assert Xr.dtype == np.float64 and list(yr) == list(y)
    Xf, yf, Xt, yt = load_file(p)
    np.testing.assert_array_equal(Xf, X)
    assert list(yf) == list(y) and Xt is None and yt is None


def test_an_arff_spec_runs_and_predicts(tmp_path):
    X, y = _toy(90)
    tr = _write_arff(tmp_path / "train.arff", X[:60], y[:60])
    te = _write_arff(tmp_path / "test.arff", X[60:], y[60:])
    spec = {
        "name": "arff",
        "data": {"path": str(tr), "test_path": str(te)},
        "model": {"kernel": {"type": "rbf", "w": "auto"}, "sharing": "tied", "sigma2": 1.0},
        "output": {"dir": str(tmp_path / "out")},
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(spec))
    assert main(["run", str(tmp_path / "s.yaml"), "--quiet"]) == 0
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["n_train"] == 60 and m["n_classes"] == 3 and m["n_features"] == 3 and m["test_error"] < 0.2
    # prediction inputs: the class attribute may be unknown throughout
    unk = _write_arff(tmp_path / "new.arff", X[60:], ["?"] * 30)
    Xn, yn = load_inputs(unk)
    assert yn is None and Xn.shape == (30, 3)
    assert main(["predict", str(tmp_path / "out"), str(te), "--out", str(tmp_path / "p.csv")]) == 0
    with open(tmp_path / "p.csv") as fh:
        rows = list(csv.DictReader(fh))
    err = np.mean([r["prediction"] != t for r, t in zip(rows, y[60:])])
    assert err == pytest.approx(m["test_error"])


@pytest.mark.parametrize(
    "extra, message",
    [
        ("@ATTRIBUTE note string", r"attribute 4 \(line 7\) is a string attribute"),
        ('@ATTRIBUTE "when" date "yyyy-MM-dd"', r"attribute 4 \(line 7\) is a date attribute"),
        ("@ATTRIBUTE colour {red,green}", r"attribute 4 \(line 7\) is a nominal feature"),
    ],
)
def test_unsupported_attributes_are_named(tmp_path, extra, message):
    X, y = _toy(6)
    p = _write_arff(tmp_path / "t.arff", X, y, extra_header=extra)
    with pytest.raises(DataError, match=message):
        load_arff(p)


def test_a_missing_class_attribute_or_missing_labels(tmp_path):
    X, _ = _toy(6)
    p = tmp_path / "noclass.arff"
    p.write_text(
        "@RELATION r\n@ATTRIBUTE a numeric\n@ATTRIBUTE b numeric\n@DATA\n" + "".join(f"{a},{b}\n" for a, b in X[:, :2])
    )
    with pytest.raises(DataError, match=r"no nominal class attribute: attribute 2 \(line 3\) is not nominal"):
        load_arff(p)
    Xn, yn = load_inputs(p)  # prediction inputs need no class
    assert yn is None and Xn.shape == (6, 2)
    X, y = _toy(6)
    y[2] = "?"
    p = _write_arff(tmp_path / "holes.arff", X, y)
    with pytest.raises(DataError, match=r"missing \('\?'\) in 1 rows \(first: data row 3\)"):
        load_arff(p)
    with pytest.raises(DataError, match="ARFF file not found"):
        load_arff(tmp_path / "nothere.arff")
