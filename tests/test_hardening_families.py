"""Issue 27: one generated corpus per family of hostile input.  Each family has hypothesis-generated
cases, not only named ones:

* ``echo``: no message quotes a token of a file (data files of every format, hierarchy files, CSV
  headers and cells, predict's inputs) -- a random secret placed anywhere never comes out;
* ``labels``: labels are values (kind saved with the model, compared by value at predict, CSV columns
  by header name, unknown labels counted apart, empty / non-finite / ambiguous labels refused);
* ``bounds``: sizes declared by a file are bounded before allocating (svmlight lines, .npy headers);
* ``folder``: nothing is written outside the report folder, whatever links it holds; predict's
  --out never overwrites what it reads;
* ``locks`` and ``signals``: atomic locks with a race-free takeover; SIGTERM / SIGHUP like Ctrl-C;
* ``numerics``: non-finite results fail and never reach metrics.json; non-finite models are refused;
* ``yaml``: duplicate keys refused with both lines; syntax errors placed in plain words.
"""

import contextlib
import csv
import json
import math
import os
import signal
import string
import subprocess
import sys
import time
from pathlib import Path

import attrs
import numpy as np
import pytest
import yaml
from conftest import ROOT, toy_classification, toy_data_section
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpmodels.cli import main
from gpmodels.data.csvfile import load_csv
from gpmodels.data.datasets import read_npy
from gpmodels.data.files import load_file, load_inputs
from gpmodels.data.labels import InputFormat, labels_from_cells, match_labels
from gpmodels.data.svmlight import check_line_lengths, load_svmlight
from gpmodels.driver.loader import read_yaml
from gpmodels.driver.output import LOCK_FILE, claim_output
from gpmodels.errors import DataError, GPModelsError, OutputError, SpecError
from gpmodels.hierarchy import ClassTree

SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
_secret = st.text(alphabet=string.ascii_letters + string.digits, min_size=4, max_size=30).map(lambda s: f"QZX{s}")


def _messages(load, *args, **kwargs) -> str:
    try:
        load(*args, **kwargs)
    except GPModelsError as exc:
        return str(exc)
    return ""


# ---------------------------------------------------------------- echo
_SVM_TEMPLATES = [
    "{s} 1:2\n",
    "1 {s}\n",
    "1 1:{s}\n",
    "1 {s}:2\n",
    "1 1:1\n2 1:2 {s}\n",
    "1,{s} 1:1\n",
    "1 1:1\n{s}\n",
    "1 qid:{s} 1:1\n",
]
_CSV_TEMPLATES = [
    "{s},label\n1,a\n2,b\n",
    "f,label\n{s},a\n",
    "f,label\n1,a\n2,{s}\n3\n",
    "f,{s}\n1,2\n",
    "f,f,label\n1,2,a\n",
    'f,label\n1,a\n"{s}\n',
    "{s}\n1\n",
]
_ARFF_TEMPLATES = [
    "@relation r\n@attribute {s} string\n@attribute class {{x,y}}\n@data\nq,x\n",
    "@relation r\n@attribute a numeric\n@attribute class {{x,y}}\n@data\n{s},x\n",
    "@relation r\n@attribute a numeric\n@attribute {s} numeric\n@data\n1,2\n",
    "@relation r\n@attribute a {s}\n@attribute class {{x,y}}\n@data\n1,x\n",
]


@SETTINGS
@given(_secret, st.sampled_from(_SVM_TEMPLATES + _CSV_TEMPLATES + _ARFF_TEMPLATES))
def test_echo_no_message_quotes_a_token_of_a_data_file(tmp_path_factory, secret, template):
    folder = tmp_path_factory.mktemp("echo")
    suffix = ".svm" if template in _SVM_TEMPLATES else ".csv" if template in _CSV_TEMPLATES else ".arff"
    path = folder / f"f{suffix}"
    path.write_text(template.format(s=secret))
    good = folder / "good.svm"
    good.write_text("1 1:1\n2 1:2\n")
    for text in (
        _messages(load_file, path),
        _messages(load_file, good, path),
        _messages(load_inputs, path),
        _messages(load_inputs, path, feature_names=("f", "g")),
    ):
        assert secret not in text


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_secret, st.sampled_from(["{s}\n", "root\t{s}\n{s}\n", "a\tb\tc{s}\n", "{s}:x:0:0::/root:/bin/sh\n"]))
def test_echo_a_hierarchy_file_is_never_quoted_through_the_cli(tmp_path_factory, secret, template):
    folder = tmp_path_factory.mktemp("hier")
    X, y = toy_classification(30, 2, d=2, seed=1)
    np.savez(folder / "train.npz", X=X, y=y)
    (folder / "shadow").write_text(template.format(s=secret))
    spec = {
        "name": "h",
        "data": {
            "path": str(folder / "train.npz"),
            "test_path": str(folder / "train.npz"),
            "hierarchy": str(folder / "shadow"),
        },
        "model": {"prior": "anova", "kernel": {"type": "rbf", "w": 1.0}, "sharing": "level"},
    }
    (folder / "s.yaml").write_text(yaml.safe_dump(spec))
    proc = subprocess.run(
        [sys.executable, "-m", "gpmodels", "run", str(folder / "s.yaml"), "--out", str(folder / "out"), "--quiet"],
        capture_output=True,
        text=True,
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 2
    assert secret not in proc.stderr + proc.stdout
    log = folder / "out" / "run.log"
    assert not log.exists() or secret not in log.read_text()


def test_echo_hierarchy_lines_are_described_not_quoted(tmp_path):
    (tmp_path / "t.tsv").write_text("root:x:0:0:AKIAIOSFODNN7EXAMPLE\n")
    with pytest.raises(GPModelsError) as info:
        ClassTree.from_tsv(tmp_path / "t.tsv")
    assert "AKIA" not in str(info.value) and "t.tsv:1: expected 'parent<TAB>child'" in str(info.value)


_MODELS: dict = {}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_secret, st.sampled_from(["{s} 1:1", "1 1:{s}", "1 {s}", "1 1:1 2:{s}"]))
def test_echo_predict_never_quotes_its_input(tmp_path_factory, capsys, secret, line):
    if "model" not in _MODELS:
        _MODELS["model"] = _trained_model(tmp_path_factory.mktemp("pred"))
    model = _MODELS["model"]
    token = secret[:9]  # short tokens too (a former filter kept those under 12 characters)
    bad = model.parent / "new.svm"
    bad.write_text("1 1:1 2:1\n" + line.format(s=token) + "\n")
    capsys.readouterr()
    assert main(["predict", str(model), str(bad)]) == 2
    err = capsys.readouterr().err
    assert token not in err and "new.svm:2:" in err


# ---------------------------------------------------------------- labels
_label_cells = st.lists(
    st.sampled_from(["1", "2", "1.0", "01", "", "nan", "inf", "a", "b", " 3", "-0", "2e0"]), min_size=1, max_size=8
)


@SETTINGS
@given(_label_cells)
def test_labels_empty_non_finite_and_ambiguous_are_refused(cells):
    cells = [c.strip() for c in cells]
    numbers = {}
    try:
        y = labels_from_cells(cells, "f.csv", list(range(2, 2 + len(cells))))
    except DataError as exc:
        text = str(exc)
        assert "f.csv:" in text
        assert "empty" in text or "non-finite" in text or "spelled differently" in text
        return
    assert "" not in cells and not any(c in ("nan", "inf") for c in cells)
    if y.dtype.kind in "if":  # numbers: one spelling per value
        for c, v in zip(cells, y.tolist()):
            assert numbers.setdefault(v, c) == c


@SETTINGS
@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=10),
    st.sampled_from(["int", "float", "str"]),
    st.sampled_from(["int", "float", "str", "floatstr"]),
)
def test_labels_compare_by_value_whatever_their_type(values, trained, given_as):
    classes_raw = np.array([0, 1, 2])
    kind = "text" if trained == "str" else "number"
    classes = [str(c) if trained != "float" else str(float(c)) for c in classes_raw]
    y = np.array(values)
    y = {"int": y, "float": y.astype(float), "str": y.astype(str), "floatstr": np.array([f"{v}.0" for v in values])}[
        given_as
    ]
    idx = match_labels(y, classes, kind)
    expected = np.where(np.array(values) <= 2, np.array(values), -1)
    if kind == "text" and given_as == "floatstr":  # text classes compare as text: '1.0' is not '1'
        assert np.all(idx == -1)
    else:
        np.testing.assert_array_equal(idx, expected)


def _write_csv(path, X, y, columns):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for row, label in zip(X, y):
            cells = {f"x{j}": f"{v:.17g}" for j, v in enumerate(row)}
            cells["label"] = str(label)
            w.writerow([cells[c] for c in columns])


def test_labels_csv_columns_are_matched_by_header_name_at_predict(tmp_path, capsys):
    X, y = toy_classification(90, 3, d=3, seed=4)
    y = np.array(["a", "b", "c"])[y]
    _write_csv(tmp_path / "train.csv", X[:60], y[:60], ["x0", "x1", "label", "x2"])
    _write_csv(tmp_path / "test.csv", X[60:], y[60:], ["x0", "x1", "label", "x2"])
    _write_csv(tmp_path / "reordered.csv", X[60:], y[60:], ["x2", "label", "x1", "x0"])
    spec = {
        "name": "csv",
        "data": {"path": str(tmp_path / "train.csv"), "test_path": str(tmp_path / "test.csv")},
        "model": {"kernel": {"type": "rbf", "w": 0.5}, "variance": 5.0},
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(spec))
    assert main(["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "m"), "--quiet"]) == 0
    outs = []
    for name in ("test.csv", "reordered.csv"):
        assert main(["predict", str(tmp_path / "m"), str(tmp_path / name), "--out", str(tmp_path / "p.csv")]) == 0
        outs.append((tmp_path / "p.csv").read_text())
    assert outs[0] == outs[1]
    renamed = tmp_path / "renamed.csv"
    renamed.write_text((tmp_path / "test.csv").read_text().replace("x1", "x9", 1))
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "m"), str(renamed)]) == 2
    err = capsys.readouterr().err
    assert "1 of the model's columns are missing" in err and "x9" not in err


def _trained_model(folder: Path, labels=None) -> Path:
    X, y = toy_classification(60, 3, d=2, seed=2, spread=4.0)
    labels = np.array([1.0, 2.0, 3.0]) if labels is None else labels
    np.savez(folder / "train.npz", X=X[:40], y=labels[y[:40]])
    np.savez(folder / "test.npz", X=X[40:], y=labels[y[40:]])
    spec = {
        "name": "m",
        "data": {"path": str(folder / "train.npz"), "test_path": str(folder / "test.npz")},
        "model": {"kernel": {"type": "rbf", "w": 0.5}, "variance": 5.0},
    }
    (folder / "s.yaml").write_text(yaml.safe_dump(spec))
    assert main(["run", str(folder / "s.yaml"), "--out", str(folder / "model"), "--quiet"]) == 0
    with open(folder / "test.svm", "w") as fh:
        for row, label in zip(X[40:], y[40:]):
            fh.write(f"{int(label) + 1} 1:{float(row[0])!r} 2:{float(row[1])!r}\n")  # integer labels 1, 2, 3
    return folder / "model"


def _predict_err(model: Path, data: Path, *extra) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "gpmodels", "predict", str(model), str(data), *extra],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    return proc.stderr


def test_labels_float_trained_model_scores_integer_labels_by_value(tmp_path, capsys):
    model = _trained_model(tmp_path)
    run_error = json.loads((model / "metrics.json").read_text())["test_error"]
    capsys.readouterr()
    assert main(["predict", str(model), str(tmp_path / "test.svm"), "--out", str(tmp_path / "p.csv")]) == 0
    err = capsys.readouterr().err
    reported = float(err.split("error ")[1].split(" %")[0])
    assert abs(reported - 100 * run_error) < 0.01 and "none of the model's classes" not in err


def test_labels_unknown_at_predict_are_counted_apart(tmp_path, capsys):
    model = _trained_model(tmp_path)
    lines = (tmp_path / "test.svm").read_text().splitlines()
    lines[0] = "9" + lines[0][1:]
    (tmp_path / "odd.svm").write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["predict", str(model), str(tmp_path / "odd.svm"), "--out", str(tmp_path / "p.csv")]) == 0
    err = capsys.readouterr().err
    assert "19 points, error" in err and "1 further points have labels that are none of the model's classes" in err


def test_labels_kind_is_saved_with_the_model(tmp_path):
    model = _trained_model(tmp_path)
    with np.load(model / "model.npz") as z:
        assert str(z["label_kind"]) == "number"
    assert InputFormat.from_arrays({"label_kind": np.array("number")}).label_kind == "number"
    assert InputFormat.from_arrays({}, ("1.0", "2.0")).label_kind == "number"  # a model saved before the kind
    assert InputFormat.from_arrays({}, ("a", "2.0")).label_kind == "text"


# ---------------------------------------------------------------- bounds
@SETTINGS
@given(st.integers(1, 400), st.integers(1, 64))
def test_bounds_a_line_longer_than_the_limit_is_refused_before_parsing(tmp_path_factory, length, limit):
    path = tmp_path_factory.mktemp("line") / "f.svm"
    path.write_bytes(b"1\n" + b"2" * length + b"\n1\n")
    if length <= limit:
        check_line_lengths(path, limit)
    else:
        with pytest.raises(DataError, match=r"f.svm:2: a line longer than"):
            check_line_lengths(path, limit)


def test_bounds_a_file_without_newlines_is_never_read_whole(tmp_path):
    path = tmp_path / "f.svm"
    with open(path, "wb") as fh:
        fh.truncate(2**24 + 10)  # a sparse file of NUL bytes, no line break
    with pytest.raises(DataError, match="a line longer than 16777216 bytes"):
        load_svmlight(path)


@SETTINGS
@given(st.tuples(st.integers(0, 10**9), st.integers(0, 10**9)), st.sampled_from(["<f8", "<f4", "|O", "<U3"]))
def test_bounds_an_npy_header_is_checked_before_allocating(tmp_path_factory, shape, dtype):
    path = tmp_path_factory.mktemp("npy") / "g.npy"
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": dtype, "fortran_order": False, "shape": shape})
        fh.write(b"\0" * 64)
    fits = np.dtype(dtype).kind in "f" and shape[0] * shape[1] * np.dtype(dtype).itemsize <= 64
    if fits:
        assert read_npy(path).shape == shape
    else:
        with pytest.raises(DataError, match="g.npy"):
            read_npy(path)


# ---------------------------------------------------------------- folder
@pytest.mark.parametrize(
    "name",
    [
        "metrics.json",
        "run.json",
        "run.log",
        "model.npz",
        "diagnostics.json",
        "spec.resolved.yaml",
        "error_reject.png",
        "model.npz.tmp.npz",
        "report.md",
    ],
)
@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_folder_links_planted_in_the_report_folder_are_never_written_through(tmp_path, name, link):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    folder = tmp_path / "model"
    folder.mkdir()
    (os.symlink if link == "symlink" else os.link)(outside, folder / name)
    X, y = toy_classification(30, 2, d=2, seed=3)
    np.savez(tmp_path / "train.npz", X=X, y=y)
    spec = {
        "name": "m",
        "data": {"path": str(tmp_path / "train.npz"), "test_path": str(tmp_path / "train.npz")},
        "model": {"kernel": {"type": "rbf", "w": 0.5}},
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(spec))
    assert main(["run", str(tmp_path / "s.yaml"), "--out", str(folder), "--quiet", "--force"]) == 0
    assert outside.read_text() == "keep me"
    assert not (folder / name).is_symlink()


def test_folder_a_study_subfolder_link_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    X, y = toy_classification(30, 2, d=2, seed=3)
    np.savez(tmp_path / "train.npz", X=X, y=y)
    study = {
        "name": "st",
        "data": {"path": str(tmp_path / "train.npz"), "test_path": str(tmp_path / "train.npz")},
        "models": [{"name": "a", "model": {"kernel": {"type": "rbf", "w": 0.5}}}],
    }
    (tmp_path / "st.yaml").write_text(yaml.safe_dump(study))
    (tmp_path / "out").mkdir()
    os.symlink(elsewhere, tmp_path / "out" / "a")
    assert main(["study", str(tmp_path / "st.yaml"), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    assert list(elsewhere.iterdir()) == [] and (tmp_path / "out" / "a" / "metrics.json").is_file()


@pytest.mark.parametrize("target", ["data", "model.npz", "spec.resolved.yaml", "metrics.json", "link-to-data"])
def test_folder_predict_out_never_overwrites_what_it_reads(tmp_path, capsys, target):
    model = _trained_model(tmp_path)
    data = tmp_path / "test.svm"
    before = {p: p.read_bytes() for p in [data, *model.iterdir()] if p.is_file()}
    out = {"data": data, "link-to-data": tmp_path / "link.csv"}.get(target, model / target)
    if target == "link-to-data":
        os.symlink(data, out)
    capsys.readouterr()
    assert main(["predict", str(model), str(data), "--out", str(out)]) == 2
    assert "a prediction never writes over what it reads" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in before} == before
    assert main(["predict", str(model), str(data), "--out", str(model / "predictions.csv")]) == 0


def test_folder_study_force_over_a_run_folder_leaves_no_stale_model(tmp_path, capsys):
    model = _trained_model(tmp_path)
    study = {
        "name": "st",
        "data": {"path": str(tmp_path / "train.npz"), "test_path": str(tmp_path / "test.npz")},
        "models": [
            {"name": "cs", "model": {"kernel": {"type": "rbf", "w": 0.5}}, "objective": {"type": "crammer_singer"}}
        ],
    }
    (tmp_path / "st.yaml").write_text(yaml.safe_dump(study))
    assert main(["study", str(tmp_path / "st.yaml"), "--out", str(model), "--quiet", "--force"]) == 0
    assert not (model / "model.npz").exists()
    capsys.readouterr()
    assert main(["predict", str(model), str(tmp_path / "test.svm")]) == 2


# ---------------------------------------------------------------- locks
def test_locks_an_empty_lock_gets_a_clear_message_and_a_way_out(tmp_path):
    (tmp_path / LOCK_FILE).write_text("")
    with pytest.raises(OutputError, match=r"empty or unreadable.*remove it \(rm "):
        claim_output(tmp_path, {"name": "a", "spec_sha256": "0" * 64})
    (tmp_path / LOCK_FILE).unlink()
    claim_output(tmp_path, {"name": "a", "spec_sha256": "0" * 64}).release()


def test_locks_a_stale_lock_is_taken_over_and_a_live_one_refused(tmp_path):
    import socket

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname()}))
    held = claim_output(tmp_path, {"name": "a", "spec_sha256": "0" * 64})
    assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid()
    with pytest.raises(OutputError, match="in use by another gpmodels run"):
        _claim_in_child(tmp_path)
    held.release()
    assert not (tmp_path / LOCK_FILE).exists()


def _claim_in_child(folder):
    code = (
        "import sys; from gpmodels.driver.output import claim_output\n"
        "try:\n    claim_output(sys.argv[1], {'name': 'b', 'spec_sha256': '1' * 64})\n"
        "except Exception as e:\n    print(e); sys.exit(3)\nimport time; time.sleep(float(sys.argv[2]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(folder), "0"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if proc.returncode == 3:
        raise OutputError(proc.stdout)
    return proc


def test_locks_racing_takeovers_of_a_stale_lock_give_one_owner(tmp_path):
    """Many processes race for a folder whose lock is stale: at any time at most one holds it."""
    import socket

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    code = (
        "import sys, time; from gpmodels.driver.output import claim_output\n"
        "try:\n    c = claim_output(sys.argv[1], {'name': 'b', 'spec_sha256': '1' * 64})\n"
        "except Exception as e:\n    sys.exit(3)\n"
        "open(sys.argv[2], 'a').write(f'{time.time()} 1\\n'); time.sleep(0.3)\n"
        "open(sys.argv[2], 'a').write(f'{time.time()} -1\\n'); c.release()\n"
    )
    for trial in range(3):
        folder = tmp_path / f"f{trial}"
        folder.mkdir()
        (folder / LOCK_FILE).write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname()}))
        log = tmp_path / f"log{trial}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code, str(folder), str(log)], env={**os.environ, "PYTHONPATH": str(ROOT)}
            )
            for _ in range(6)
        ]
        codes = [p.wait(timeout=120) for p in procs]
        assert 0 in codes
        events = sorted((float(t), int(d)) for t, d in (line.split() for line in log.read_text().splitlines()))
        holders = np.cumsum([d for _, d in events])
        assert holders.max() == 1


# ---------------------------------------------------------------- signals
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signals_term_and_hup_end_a_run_like_ctrl_c(tmp_path, sig):
    spec = {
        "name": "cv",
        "data": toy_data_section(tmp_path, n=400, n_train=300, d=4, seed=5),
        "model": {"kernel": {"type": "rbf", "w": 0.5}, "variance": 3.0},
        "objective": {"type": "cv", "cv": {"folds": 5, "outer": {"max_iter": 500, "ftol": 1e-15, "gtol": 1e-15}}},
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(spec))
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpmodels", "run", str(tmp_path / "s.yaml"), "--out", str(out), "--quiet"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while not (out / "checkpoint.npz").exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.1)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the run finished before the signal")
    assert proc.returncode == 128 + sig and "interrupted" in err and "Traceback" not in err, err
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"
    assert not (out / LOCK_FILE).exists() and (out / "checkpoint.npz").exists()
    assert "interrupted (SIG" in (out / "run.log").read_text()


# ---------------------------------------------------------------- numerics
def test_numerics_an_overflowing_kernel_fails_and_writes_no_metrics(tmp_path, capsys):
    X, y = toy_classification(40, 2, d=2, seed=6)
    np.savez(tmp_path / "train.npz", X=X * 1e160, y=y)
    spec = {
        "name": "o",
        "data": {"path": str(tmp_path / "train.npz"), "test_path": str(tmp_path / "train.npz"), "scaling": "none"},
        "model": {"kernel": {"type": "linear"}, "variance": 1.0},
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(spec))
    code = main(["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert not (tmp_path / "out" / "metrics.json").exists()

    def refuse(constant):
        raise AssertionError(f"a JSON file of the folder holds {constant}")

    for p in (tmp_path / "out").glob("*.json"):
        json.loads(p.read_text(), parse_constant=refuse)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_numerics_predict_refuses_a_model_with_non_finite_coefficients(tmp_path, capsys, bad):
    model = _trained_model(tmp_path)
    with np.load(model / "model.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["alpha"] = arrays["alpha"].copy()
    arrays["alpha"][0, 0] = bad
    np.savez(model / "model.npz", **arrays)
    capsys.readouterr()
    assert main(["predict", str(model), str(tmp_path / "test.svm")]) == 2
    assert "array 'alpha' holds 1 non-finite values" in capsys.readouterr().err


# ---------------------------------------------------------------- yaml
_keys = st.sampled_from(["name", "seed", "data", "model", "objective", "output"])


@SETTINGS
@given(st.lists(_keys, min_size=2, max_size=6), st.booleans())
def test_yaml_duplicate_keys_are_refused_with_both_lines(tmp_path_factory, keys, nested):
    path = tmp_path_factory.mktemp("dup") / "s.yaml"
    lines = [f"{k}: 1" for k in keys] if not nested else ["model:"] + [f"  {k}: 1" for k in keys]
    path.write_text("\n".join(lines) + "\n")
    dup = next((i for i, k in enumerate(keys) if k in keys[:i]), None)
    if dup is None:
        read_yaml(path)
        return
    first = keys.index(keys[dup])
    with pytest.raises(SpecError) as info:
        read_yaml(path)
    shift = 1 if nested else 0
    assert f"line {dup + 1 + shift}" in str(info.value) and f"first at line {first + 1 + shift}" in str(info.value)
    assert f"the key '{keys[dup]}' is given twice" in str(info.value)


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("name: a\nmodel\n  kernel: 1\n", 2, "a key without ':'"),
        ("name: a\n\tmodel: 1\n", 2, "a tab?"),
        ("a: [1, 2\nb: 3\n", 1, "not closed"),
        ("name: 'abc\nb: 2\n", 1, "never closed"),
        ("a:\n  b: 1\n c: 2\n", 3, "indented differently"),
    ],
)
def test_yaml_syntax_errors_name_the_line_in_plain_words(tmp_path, text, line, words):
    (tmp_path / "s.yaml").write_text(text)
    with pytest.raises(SpecError, match=rf"at line {line}, column \d+: .*{words}"):
        read_yaml(tmp_path / "s.yaml")


def test_yaml_a_second_model_section_no_longer_wins_at_validate(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text(
        "name: a\ndata: {dataset: satimage}\nmodel: {kernel: {type: rbf}}\nmodel: {kernel: {type: linear}}\n"
    )
    assert main(["validate", str(tmp_path / "s.yaml")]) == 2
    assert "the key 'model' is given twice (first at line 3)" in capsys.readouterr().err


def test_csv_messages_name_columns_by_number(tmp_path):
    (tmp_path / "c.csv").write_text("secretcolumn,label\n1,a\n")
    with pytest.raises(DataError) as info:
        load_csv(tmp_path / "c.csv", "klass")
    assert "secretcolumn" not in str(info.value) and "'klass'" in str(info.value)


# ---------------------------------------------------------------- determinism
def _cv_spec(tmp_path, dtype, checkpoint):
    return {
        "name": "det",
        "seed": 1,
        "data": toy_data_section(tmp_path, n=150, n_train=120, d=3, seed=3, spread=2.0),
        "model": {
            "kernel": {"type": "rbf", "w": "auto"},
            "sharing": "semi",
            "variance": 2.0,
            "sigma2": 1.0,
            "representation": {"kind": "auto", "dtype": dtype},
        },
        "objective": {
            "type": "cv",
            "newton": {"max_iter": 30, "cg_max_iter": 40},
            "cv": {
                "folds": 3,
                "checkpoint": checkpoint,
                "newton": {"max_iter": 20, "cg_max_iter": 30},
                "outer": {"max_iter": 5, "score_patience": 0},
            },
        },
    }


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_determinism_checkpoint_on_and_off_learn_bit_identically(tmp_path, dtype):
    """The checkpoint's identity probe multiplies on a restricted copy: the operator learning reads is
    never changed by it, so the learned hyperparameters, Ψ and α are the same bits either way."""
    results = []
    for checkpoint in (False, True):
        out = tmp_path / f"out{checkpoint}"
        (tmp_path / "s.yaml").write_text(yaml.safe_dump(_cv_spec(tmp_path, dtype, checkpoint)))
        assert main(["run", str(tmp_path / "s.yaml"), "--out", str(out), "--quiet"]) == 0
        assert (out / "checkpoint.npz").exists() == checkpoint
        with np.load(out / "model.npz") as z:
            results.append((z["theta"].copy(), z["alpha"].copy()))
        results[-1] += (json.loads((out / "metrics.json").read_text())["psi_learned"],)
    (t0, a0, p0), (t1, a1, p1) = results
    assert p0 == p1 and np.array_equal(t0, t1) and np.array_equal(a0, a1)


@SETTINGS
@given(
    st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5)),
    st.sampled_from(
        [
            ("model", "variance"),
            ("model", "sigma2"),
            ("objective", "cv", "folds"),
            ("model", "kernel", "w"),
            ("model", "representation", "memory_gb"),
        ]
    ),
)
def test_yaml_numbers_written_as_strings_are_validated_as_those_numbers(value, key):
    from gpmodels.driver.loader import spec_from_dict

    def spec(v):
        d = {
            "name": "a",
            "data": {"dataset": "satimage"},
            "model": {"kernel": {"type": "rbf", "w": 1.0}},
            "objective": {"type": "cv"},
        }
        node = d
        for k in key[:-1]:
            node = node.setdefault(k, {})
        node[key[-1]] = v
        return d

    outcomes = []
    for v in (value, repr(value) if isinstance(value, float) else str(value)):
        try:
            s = spec_from_dict(spec(v))
            got = s.to_dict()
            for k in key:
                got = got[k]
            outcomes.append(("ok", got))
        except SpecError as exc:
            outcomes.append(("error", str(exc).split(";")[0]))
    if outcomes[0][0] == "ok":
        assert outcomes[1] == outcomes[0]
    else:
        assert outcomes[1][0] == "error"


def test_labels_hm3_uses_the_specs_hierarchy(tmp_path):
    leaves = ["c1", "c2", "c31", "c32"]
    (tmp_path / "tree.tsv").write_text("root\tc1\nroot\tc2\nroot\tc3\nc3\tc31\nc3\tc32\n")
    spec = {
        "name": "h",
        "data": {
            **toy_data_section(tmp_path, n=60, n_train=40, C=4, d=4, seed=0, spread=3.0, labels=leaves),
            "hierarchy": str(tmp_path / "tree.tsv"),
        },
        "model": {"kernel": {"type": "rbf", "w": 0.2}},
        "objective": {"type": "hm3"},
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(spec))
    assert main(["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    with np.load(tmp_path / "out" / "model.npz") as z:
        assert sorted(z["tree_edges"][:, 1].tolist()) == ["c1", "c2", "c3", "c31", "c32"]


def test_signals_workers_die_with_a_killed_parent(tmp_path):
    """SIGKILL of a run leaves no worker process behind (each worker watches its parent)."""
    code = (
        "import sys, time\nfrom gpmodels.engine.processes import ProcessEngine\n"
        "def _worker_pid(shared, job):\n    import os\n    return os.getpid()\n"
        "e = ProcessEngine(2, blas_threads=1)\n"
        "pids = e.map_shared(_worker_pid, {}, [0, 1, 2, 3])\n"
        "open(sys.argv[1], 'w').write(' '.join(map(str, set(pids))))\ntime.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path / "pids")], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    deadline = time.time() + 60
    while not (tmp_path / "pids").exists() or not (tmp_path / "pids").read_text():
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.1)
    workers = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert workers and proc.pid not in workers
    proc.kill()
    proc.wait()
    deadline = time.time() + 10
    alive = workers
    while alive and time.time() < deadline:
        alive = [p for p in alive if _alive(p)]
        time.sleep(0.1)
    assert not alive


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie awaiting its reaper is gone for our purpose
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


def test_engines_a_checkpoint_written_on_dask_resumes_without_dask(tmp_path, capsys):
    """The checkpoint records what it computes, not where: a run on a Dask engine stopped after its first
    outer iteration resumes on the local engine."""
    pytest.importorskip("distributed")
    spec = {
        "name": "toy",
        "data": toy_data_section(tmp_path, n=30, n_train=20, d=4, seed=0, label_offset=1),
        "model": {"kernel": {"type": "rbf", "w": 0.3}, "variance": 5.0, "sharing": "tied"},
        "objective": {"type": "cv", "cv": {"folds": 2, "outer": {"max_iter": 1}, "newton": {"max_iter": 4}}},
        "engine": {"type": "dask", "processes": False, "n_workers": 2, "block_rows": 10},
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "spec.yaml"), "--out", str(out), "--quiet"]) == 0
    assert (out / "checkpoint.npz").exists()
    capsys.readouterr()
    assert main(["run", str(tmp_path / "spec.yaml"), "--out", str(out), "--set", "engine.type=local"]) == 0, (
        capsys.readouterr().err
    )
    assert "resumed from the checkpoint" in capsys.readouterr().out


@SETTINGS
@given(_secret)
def test_echo_text_features_of_an_npz_are_described(tmp_path_factory, secret):
    path = tmp_path_factory.mktemp("npz") / "x.npz"
    np.savez(path, X=np.array([["1", secret], ["2", "3"]]), y=np.array([1, 2]))
    from gpmodels.validation import check_features

    X = np.load(path)["X"]
    text = _messages(check_features, "X", X)
    assert text and secret not in text and "holds text that is not a number" in text


def test_echo_text_features_through_run_and_predict(tmp_path, capsys):
    np.savez(tmp_path / "x.npz", X=np.array([["1", "AKIAIOSFODNN7EXAMPLE"], ["2", "3"]]), y=np.array([1, 2]))
    (tmp_path / "s.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "t",
                "data": {"path": str(tmp_path / "x.npz"), "test_path": str(tmp_path / "x.npz")},
                "model": {"kernel": {"type": "rbf", "w": 1.0}},
            }
        )
    )
    assert main(["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    model = _trained_model(tmp_path)
    np.savez(tmp_path / "new.npz", X=np.array([["1", "AKIAIOSFODNN7EXAMPLE"]]))
    assert main(["predict", str(model), str(tmp_path / "new.npz")]) == 2
    assert "AKIA" not in capsys.readouterr().err


def test_labels_positive_class_matches_numeric_labels_by_value(tmp_path, capsys):
    model = _trained_model(tmp_path)  # float labels 1.0, 2.0, 3.0
    spec = yaml.safe_load((tmp_path / "s.yaml").read_text())
    spec["data"]["positive_class"] = "3"
    spec["model"]["likelihood"] = "logistic"
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(spec))
    assert main(["run", str(tmp_path / "b.yaml"), "--out", str(tmp_path / "bin"), "--quiet"]) == 0
    run_error = json.loads((tmp_path / "bin" / "metrics.json").read_text())["test_error"]
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "bin"), str(tmp_path / "test.svm"), "--out", str(tmp_path / "p.csv")]) == 0
    reported = float(capsys.readouterr().err.split("error ")[1].split(" %")[0])
    assert abs(reported - 100 * run_error) < 0.01 and model.exists()


def test_bounds_a_checkpoint_that_declares_a_huge_array_is_refused_before_loading(tmp_path):
    import io
    import zipfile

    from gpmodels.errors import CheckpointError
    from gpmodels.optimize.checkpoint import RunIdentity, read_checkpoint

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)})
    with zipfile.ZipFile(tmp_path / "checkpoint.npz", "w") as zf:
        zf.writestr("x.npy", buf.getvalue() + b"\0" * 64)
    identity = RunIdentity(exact={}, theta0=np.zeros(1), probe=np.zeros(1))
    with pytest.raises(CheckpointError, match=r"declares shape \(1000000, 1000000\)"):
        read_checkpoint(tmp_path / "checkpoint.npz", identity)


# ---------------------------------------------------------------- limits (numerics: every loop bounded and settable)
def _student_t_problem(n=80, seed=0):
    from gpmodels.kernels.rbf import RBF
    from gpmodels.likelihoods import StudentT
    from gpmodels.priors import IndependentGP

    r = np.random.default_rng(seed)
    X = r.uniform(-3, 3, size=(n, 1))
    y = np.sinc(X[:, 0]) + 0.05 * r.standard_t(4, size=n)
    return IndependentGP(RBF(1.0), "tied", 1.0, 0.0).operator(X, 1), StudentT(df=4, scale=0.1), y[:, None]


def test_limits_vb_student_t_80_points_5_outer_iterations_takes_seconds():
    """The issue's case (Student-t df 4, 80 points, 5 outer iterations: 40 s on a busy 2-core machine)."""
    from gpmodels.inference.marginal.vb import learn_vb
    from gpmodels.optimize.driver import outer_options

    op, lik, Y = _student_t_problem()
    t0 = time.perf_counter()
    result, _, _ = learn_vb(op, lik, Y, outer=outer_options(5, 1e-8))
    seconds = time.perf_counter() - t0
    assert len(result.values) <= 6 and np.all(np.isfinite(result.values))
    assert seconds < 10.0, f"{seconds:.1f} s"


def test_limits_small_dense_factors_run_on_one_blas_thread(monkeypatch):
    """The cause of the slow VB: OpenBLAS's threaded triangular solves of an 80 x 80 factor (24 ms a call
    with two threads on a busy machine, 0.03 ms with one); a small factor runs on one thread, a large one
    keeps the BLAS threads, as the plan's dense_blas decides."""
    import scipy.linalg as sla

    import gpmodels.linalg.dense_posterior as dp
    from gpmodels.inference.execution_plan import DEFAULT_RULES, dense_blas
    from gpmodels.linalg.blas_threads import blas_threads, limit_blas_threads

    seen = []
    real = sla.solve_triangular
    monkeypatch.setattr(dp.sla, "solve_triangular", lambda *a, **k: (seen.append(blas_threads()), real(*a, **k))[1])
    with limit_blas_threads(2):
        if blas_threads() < 2:
            pytest.skip("the BLAS runs one thread here")
        for n, expected in ((80, 1), (DEFAULT_RULES.dense_one_thread_max + 1, 2)):
            seen.clear()
            K = np.eye(n) + 0.1
            post = dp.DensePosterior(K, np.ones(n), dense_blas(n))
            post.R, post.sigma_diag()
            assert seen and set(seen) == {expected}, (n, seen)


@pytest.mark.parametrize(
    "section, key, value, field",
    [
        ("vb", "max_outer", 3, lambda o: o.vb.options().max_outer),
        ("vb", "newton.max_iter", 7, lambda o: o.vb.options().newton.max_iter),
        ("vb", "learn_max_iter", 4, lambda o: o.vb.learn_max_iter),
        ("laplace", "newton.max_iter", 7, lambda o: o.laplace.options(seed=0).newton.max_iter),
        ("laplace", "learn_max_iter", 4, lambda o: o.laplace.learn_max_iter),
        ("laplace", "cg_max_iter", 9, lambda o: o.laplace.options(seed=0).cg_max_iter),
        ("em", "max_iter", 5, lambda o: o.em.options().max_iter),
        ("mkl", "max_iter", 5, lambda o: o.mkl.options().max_iter),
        ("mkl", "time_limit", 2.5, lambda o: o.mkl.options().time_limit),
        ("mkl", "inner_max", 6, lambda o: o.mkl.options().inner_max),
        ("cv", "outer.max_iter", 5, lambda o: o.cv.outer.options().max_iter),
        ("cv", "newton.max_iter", 5, lambda o: o.cv.newton.options().max_iter),
    ],
)
def test_limits_every_loop_of_the_objectives_is_a_spec_key(section, key, value, field):
    """Each iterative loop (VB's double loop and its inner Newton, Laplace's mode and learning, EM, MKL, CV)
    has a limit in the spec, carried into the options object the loop reads; 0 is refused by name."""
    from gpmodels.driver.sections.spec import Spec

    types = {"vb": "vb", "laplace": "laplace", "em": "em", "mkl": "mkl", "cv": "cv"}
    base = {
        "name": "t",
        "data": {"path": "x.npz", "test": "split"},
        "model": {"kernel": {"type": "rbf", "w": 1.0}},
        "objective": {"type": types[section]},
    }
    if section in ("vb", "laplace"):
        base["data"]["task"] = "regression"
        base["model"].update(likelihood="student_t", df=4, scale=0.1, sharing="tied")
    if section == "mkl":
        base["model"] = {"kernels": [{"type": "rbf", "w": 1.0}, {"type": "rbf", "w": 0.1}], "likelihood": "logistic"}
    if section == "em":
        base["data"].update(test="given", test_path="t.npz", pseudo_targets={"file": "p.txt"})
    node = base["objective"].setdefault(section, {})
    *outer, last = key.split(".")
    for part in outer:
        node = node.setdefault(part, {})
    node[last] = value
    try:
        spec = Spec.from_dict(base)
    except SpecError as exc:  # the section's shape, not the limit, is what the base spec gets wrong
        pytest.fail(str(exc))
    assert field(spec.objective) == value
    node[last] = 0
    with pytest.raises(SpecError, match=rf"objective\.{section}\.{key}"):
        Spec.from_dict(base)


def test_limits_the_double_loop_and_its_inner_newton_stop_at_their_limits():
    from gpmodels.inference.map.newton_cg import NewtonOptions
    from gpmodels.inference.marginal.vb import VBOptions, vb_criterion

    op, lik, Y = _student_t_problem(40)
    res = vb_criterion(op, lik, Y, VBOptions(max_outer=2, newton=NewtonOptions(max_iter=1)))
    assert res.outer_iterations == 2 and len(res.trace) == 3 and not res.converged


# ---------------------------------------------------------------- estimators
def _est_data():
    X, y = toy_classification(60, 3, d=3, seed=2)
    return X, y, toy_classification(30, 3, d=3, seed=3)[0]


@pytest.mark.parametrize(
    "changes",
    [
        {"predictive": "plugin"},
        {"predictive": "laplace"},
        {"objective": "map", "cv": 3, "random_state": 9},
        {"prior": "swap"},
        {"solver": "exact", "likelihood": None, "n_jobs": 1},
    ],
    ids=["to-plugin", "to-laplace", "objective", "prior", "solver"],
)
@pytest.mark.parametrize("predictive", ["plugin", "laplace"])
def test_estimators_set_params_after_fit_leaves_the_fitted_model_and_its_pickle(changes, predictive):
    """Predictions come from fitted attributes only: set_params after fit changes nothing until the next
    fit, before or after a pickle round trip (a Laplace-fitted model switched to plug-in raised)."""
    import pickle

    from gpmodels.estimators import GPClassifier
    from gpmodels.estimators.gp import DEFAULT_PRIOR, LaplacePredictive

    X, y, Xt = _est_data()
    predictive = LaplacePredictive(n_samples=50) if predictive == "laplace" else predictive
    est = GPClassifier(objective="map", predictive=predictive, random_state=0).fit(X, y)
    before = est.predict_proba(Xt)
    if changes.get("prior") == "swap":
        changes = {"prior": attrs.evolve(DEFAULT_PRIOR.with_kernel_for(X), variance=100.0)}
    if changes.get("predictive") == "laplace":
        changes = {"predictive": LaplacePredictive(n_samples=7)}
    est.set_params(**changes)
    np.testing.assert_array_equal(est.predict_proba(Xt), before)
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.predict_proba(Xt), before)
    np.testing.assert_array_equal(back.predict(Xt), est.predict(Xt))


@pytest.mark.parametrize("objective", ["cv", "laplace"])
def test_estimators_a_checkpoint_with_random_state_none_refits(tmp_path, objective):
    """random_state=None draws a seed per fit; with a checkpoint the refit takes the seed recorded there
    and resumes that fit (its folds), instead of refusing the checkpoint as another run's."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from gpmodels.estimators import GPClassifier

    X, y, Xt = _est_data()
    est = GPClassifier(objective=objective, cv=3, checkpoint=tmp_path / "ck.npz", random_state=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        first = est.fit(X, y).predict_proba(Xt)
        folds = est.folds_
        for _ in range(2):
            np.testing.assert_allclose(est.fit(X, y).predict_proba(Xt), first, rtol=1e-9, atol=1e-12)
            assert (folds is None) == (est.folds_ is None)
            assert folds is None or all(np.array_equal(a, b) for a, b in zip(folds, est.folds_))


_SK_BAD = [("RBF", "length_scale", {"length_scale": v}) for v in (0.0, -1.0, np.nan, np.inf, 1e-300)] + [
    ("Matern", "length_scale", {"length_scale": 0.0, "nu": 1.5}),
    ("RBF", "length_scale", {"length_scale": [1.0, -2.0, 1.0]}),
    ("RationalQuadratic", "alpha", {"alpha": -1.0}),
    ("RationalQuadratic", "length_scale", {"length_scale": 0.0}),
    ("ConstantKernel", "constant_value", {"constant_value": 0.0}),
    ("WhiteKernel", "noise_level", {"noise_level": -1.0}),
    ("DotProduct", "sigma_0", {"sigma_0": -1.0}),
    ("RBF", "length_scale_bounds", {"length_scale": 1.0, "length_scale_bounds": (2.0, 1.0)}),
    ("RBF", "length_scale_bounds", {"length_scale": 100.0, "length_scale_bounds": (1e-2, 1.0)}),
    ("ExpSineSquared", "periodicity", {"periodicity": -1.0}),
]


@pytest.mark.parametrize("cls, name, kwargs", _SK_BAD)
@pytest.mark.parametrize("wrap", ["alone", "sum", "product"])
def test_estimators_kernel_messages_name_the_parameter_the_user_wrote(cls, name, kwargs, wrap):
    """A scikit-learn kernel's bad hyperparameter is refused by its own name (length_scale, alpha,
    length_scale_bounds ...), never by the native parameter it maps to (RBF.w, kernel0.log_w)."""
    from sklearn.gaussian_process import kernels as sk

    from gpmodels.errors import InputError
    from gpmodels.estimators import GPClassifier
    from gpmodels.priors import IndependentGP

    k = getattr(sk, cls)(**kwargs)
    k = {"alone": k, "sum": sk.RBF(1.0) + k, "product": sk.ConstantKernel(2.0) * k}[wrap]
    X, y, _ = _est_data()
    with pytest.raises(InputError) as info:
        GPClassifier(IndependentGP(k, "tied", 1.0, 1.0), objective="map").fit(X, y)
    text = str(info.value)
    assert name in text and cls in text and ".w " not in text and "log_" not in text, text


@pytest.mark.parametrize("est", ["CrammerSingerSVC", "HM3Classifier"])
@pytest.mark.parametrize(
    "kernel, param, value",
    [
        ("rbf", "w", -1.0),
        ("rbf", "w", np.nan),
        ("ard", "w", 0.0),
        ("polynomial", "degree", 0),
        ("polynomial", "offset", -1.0),
    ],
)
def test_estimators_max_margin_kernel_parameters_are_named_as_the_estimators(est, kernel, param, value):
    """CrammerSingerSVC(w=-1) is 'the w parameter of CrammerSingerSVC', not the kernel class's RBF.w."""
    import gpmodels.estimators as E
    from gpmodels.errors import InputError

    X, y, _ = _est_data()
    args = ([("r", "a"), ("r", "b"), ("r", "c")],) if est == "HM3Classifier" else ()
    target = np.eye(3)[y] if est == "HM3Classifier" else y
    expected = rf"The '{param}' parameter of {est} \(for kernel='{kernel}'\) must be"
    with pytest.raises(InputError, match=expected) as info:
        getattr(E, est)(*args, kernel=kernel, **{param: value}).fit(X, target)
    assert "RBF." not in str(info.value) and "Polynomial." not in str(info.value)


def test_estimators_a_learning_start_outside_bounds_is_named_in_natural_units_too():
    from gpmodels.errors import InputError
    from gpmodels.optimize.objective import log_box

    with pytest.raises(InputError, match=r"kernel\.log_w = 3 .*outside the bounds.*; w = 20\.0855 not in"):
        log_box(np.array([3.0]), names=("kernel.log_w",), lower=-1.0, upper=1.0)


# ---------------------------------------------------------------- engines: a killed worker of an external scheduler
def _slow_job(shared, job):
    """A task that takes a while, so that its worker can be killed while it runs (imported by the worker)."""
    time.sleep(2.0)
    return shared * job


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("workers", [1, 2])
def test_engines_a_worker_of_an_external_scheduler_killed_mid_run_recomputes_or_fails_in_bounded_time(workers):
    """`engine.scheduler` (`--scheduler`): the workers are another program's.  Killing one while its task
    runs ends in the recomputed results (another worker is left) or an EngineError (none is), within
    seconds: never a hang."""
    pytest.importorskip("distributed")
    import threading

    from gpmodels.engine.base import EngineConfig
    from gpmodels.engine.factory import open_engine
    from gpmodels.errors import EngineError

    dask = Path(sys.executable).with_name("dask")
    if not dask.exists():
        pytest.skip("the dask command is not installed beside this Python")
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True, "env": env}
    procs = [
        subprocess.Popen(
            [str(dask), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], **quiet
        )
    ]
    procs += [
        subprocess.Popen([str(dask), "worker", addr, "--nthreads", "1", "--no-nanny"], **quiet) for _ in range(workers)
    ]
    outcome = {}
    try:
        with open_engine(EngineConfig(type="dask", scheduler=addr, distribute="tasks")) as eng:
            eng.client.wait_for_workers(workers, timeout=60)
            victim = next(iter(eng.client.run(os.getpid).values()))

            def run():
                try:
                    outcome["results"] = list(eng.imap_shared(_slow_job, 3, [1, 2, 3, 4]))
                except EngineError as exc:
                    outcome["error"] = str(exc)

            t0 = time.monotonic()
            runner = threading.Thread(target=run, daemon=True)
            runner.start()
            time.sleep(1.0)  # the first tasks are running
            os.kill(victim, signal.SIGKILL)
            runner.join(timeout=60)
            seconds = time.monotonic() - t0
            assert not runner.is_alive(), "the run hangs after its worker was killed"
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    if workers == 1:
        assert "error" in outcome and "lost" in outcome["error"], outcome
    else:
        assert outcome.get("results") == [3, 6, 9, 12], outcome
    assert seconds < 45, seconds


# ---------------------------------------------------------------- generated cases of the families above
_WRITTEN = st.sampled_from(
    [
        "metrics.json",
        "run.json",
        "run.log",
        "model.npz",
        "diagnostics.json",
        "report.md",
        "spec.resolved.yaml",
        "error_reject.png",
        "checkpoint.npz",
        "trace_psi.png",
        "study.csv",
        "model.npz.tmp.npz",
    ]
)
_LINKS = st.sampled_from(["symlink", "hardlink", "dangling", "dirlink"])


@SETTINGS
@given(st.lists(st.tuples(_WRITTEN, _LINKS), min_size=1, max_size=5, unique_by=lambda t: t[0]))
def test_folder_generated_links_are_removed_when_the_folder_is_claimed(tmp_path_factory, planted):
    root = tmp_path_factory.mktemp("links")
    outside, elsewhere, folder = root / "outside.txt", root / "elsewhere", root / "run"
    outside.write_text("keep me")
    elsewhere.mkdir()
    folder.mkdir()
    for name, kind in planted:
        target = folder / name
        if kind == "hardlink":
            os.link(outside, target)
        else:
            os.symlink({"symlink": outside, "dangling": root / "nothing", "dirlink": elsewhere}[kind], target)
    claimed = claim_output(folder, {"name": "a", "spec_sha256": "0" * 64}, force=True)
    try:
        for name, _ in planted:  # gone, or a new file of the run's own (run.json)
            p = folder / name
            assert not p.is_symlink() and (not p.exists() or p.stat().st_nlink == 1)
        from gpmodels.driver.output import write_new

        for name, _ in planted:
            write_new(folder, name, "new")
    finally:
        claimed.release()
    assert outside.read_text() == "keep me" and list(elsewhere.iterdir()) == []


@SETTINGS
@given(
    st.one_of(
        st.binary(max_size=64),
        _secret.map(str.encode),
        st.fixed_dictionaries(
            {
                "pid": st.one_of(st.integers(-5, 2**40), st.text(max_size=5)),
                "host": st.one_of(_secret, st.just("localhost")),
            }
        ).map(lambda d: json.dumps(d).encode()),
    )
)
def test_locks_generated_lock_contents_are_refused_by_path_or_taken_over_never_quoted(tmp_path_factory, content):
    folder = tmp_path_factory.mktemp("lock")
    (folder / LOCK_FILE).write_bytes(content)
    try:
        claimed = claim_output(folder, {"name": "a", "spec_sha256": "0" * 64})
    except OutputError as exc:
        text = str(exc)
        assert str(folder / LOCK_FILE) in text or str(folder) in text
        import re

        for token in re.findall(r"QZX\w+", content.decode("utf-8", "replace")):
            assert token not in text
        return
    try:
        assert json.loads((folder / LOCK_FILE).read_text())["pid"] == os.getpid()
    finally:
        claimed.release()
    assert not (folder / LOCK_FILE).exists()


@SETTINGS
@given(
    st.dictionaries(
        st.sampled_from(["test_error", "test_log_loss", "train_error", "brier", "seconds"]),
        st.floats(allow_nan=True, allow_infinity=True),
        min_size=1,
    )
)
def test_numerics_generated_metrics_with_a_non_finite_number_are_refused(metrics):
    from gpmodels.driver.run import check_finite_metrics
    from gpmodels.errors import NumericalError

    bad = [k for k, v in metrics.items() if not np.isfinite(v)]
    if bad:
        with pytest.raises(NumericalError, match="non-finite results"):
            check_finite_metrics(metrics)
    else:
        check_finite_metrics(metrics)
        json.dumps(metrics, allow_nan=False)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([np.nan, np.inf, -np.inf]), st.data())
def test_numerics_generated_non_finite_entries_of_a_model_file_are_refused(tmp_path_factory, capsys, bad, data):
    if "numerics" not in _MODELS:
        _MODELS["numerics"] = _trained_model(tmp_path_factory.mktemp("num"))
    model = _MODELS["numerics"]
    with np.load(model / "model.npz") as z:
        arrays = {k: z[k] for k in z.files}
    floats = sorted(k for k, a in arrays.items() if a.dtype.kind == "f" and a.size)
    name = data.draw(st.sampled_from(floats))
    broken = dict(arrays)
    broken[name] = arrays[name].copy()
    broken[name].flat[data.draw(st.integers(0, arrays[name].size - 1))] = bad
    copy = tmp_path_factory.mktemp("broken")
    for p in model.iterdir():
        if p.is_file() and p.name != "model.npz":
            (copy / p.name).write_bytes(p.read_bytes())
    np.savez(copy / "model.npz", **broken)
    capsys.readouterr()
    assert main(["predict", str(copy), str(model.parent / "test.svm")]) == 2
    assert f"array {name!r} holds 1 non-finite values" in capsys.readouterr().err


_SK_PARAMS = st.sampled_from(
    [
        ("RBF", "length_scale", {}),
        ("Matern", "length_scale", {"nu": 2.5}),
        ("RationalQuadratic", "alpha", {}),
        ("RationalQuadratic", "length_scale", {}),
        ("ConstantKernel", "constant_value", {}),
        ("WhiteKernel", "noise_level", {}),
        ("ExpSineSquared", "periodicity", {}),
        ("DotProduct", "sigma_0", {}),
    ]
)


@SETTINGS
@given(
    _SK_PARAMS,
    st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 1e-300, 1e200])),
    st.sampled_from(["alone", "sum", "product"]),
)
def test_estimators_generated_kernel_hyperparameters_are_refused_by_their_own_names(which, value, wrap):
    from sklearn.gaussian_process import kernels as sk

    from gpmodels.errors import InputError
    from gpmodels.kernels.sklearn_adapter import from_sklearn

    cls, name, extra = which
    k = getattr(sk, cls)(**{name: value, f"{name}_bounds": "fixed"}, **extra)
    k = {"alone": k, "sum": sk.RBF(1.0) + k, "product": sk.ConstantKernel(2.0) * k}[wrap]
    from gpmodels.kernels.sklearn_adapter import MAPPED_VALUES

    with np.errstate(all="ignore"):
        native = MAPPED_VALUES[name][1](np.float64(value)) if name in MAPPED_VALUES else value
    if np.isfinite(value) and value > 0 and np.isfinite(native) and native > 0:
        from_sklearn(k)
        return
    with pytest.raises(InputError) as info:
        from_sklearn(k)
    text = str(info.value)
    assert name in text and cls in text and ".w " not in text and "log_" not in text, text


_FITTED: dict = {}


@settings(max_examples=25, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["objective", "cv", "solver", "predictive", "random_state", "n_jobs", "device", "checkpoint"]),
        st.sampled_from(["map", "cv", "laplace", 3, 4, "exact", "newton-cg", "plugin", None, 1, 7, "cpu", "auto"]),
        min_size=1,
        max_size=4,
    )
)
def test_estimators_generated_set_params_after_fit_change_no_prediction(changes):
    """Whatever parameters are changed (valid or not) after fit, predictions and their pickle stay the fitted ones."""
    import pickle

    from gpmodels.estimators import GPClassifier
    from gpmodels.estimators.gp import LaplacePredictive

    if not _FITTED:
        X, y, Xt = _est_data()
        est = GPClassifier(objective="map", predictive=LaplacePredictive(n_samples=40), random_state=0).fit(X, y)
        _FITTED.update(est=est, Xt=Xt, P=est.predict_proba(Xt))
    est = pickle.loads(pickle.dumps(_FITTED["est"]))
    est.set_params(**changes)
    np.testing.assert_array_equal(est.predict_proba(_FITTED["Xt"]), _FITTED["P"])
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict_proba(_FITTED["Xt"]), _FITTED["P"])


@SETTINGS
@given(
    st.sampled_from(
        [
            ("vb", "max_outer"),
            ("vb", "newton.max_iter"),
            ("laplace", "newton.max_iter"),
            ("em", "max_iter"),
            ("mkl", "max_iter"),
            ("cv", "outer.max_iter"),
        ]
    ),
    st.one_of(st.integers(-3, 0), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4)),
)
def test_limits_generated_bad_limits_are_refused_by_their_key(where, value):
    from gpmodels.driver.sections.spec import Spec

    section, key = where
    base = {
        "name": "t",
        "data": {"path": "x.npz", "test": "split"},
        "model": {"kernel": {"type": "rbf", "w": 1.0}},
        "objective": {"type": section},
    }
    node = base["objective"].setdefault(section, {})
    *outer, last = key.split(".")
    for part in outer:
        node = node.setdefault(part, {})
    node[last] = value
    valid = _reads_as_iteration_limit(value)
    try:
        Spec.from_dict(base)
    except SpecError as exc:  # refused by its own key exactly when it is not a limit (else by a later check)
        assert (f"objective.{section}.{key}" in str(exc)) is not valid, str(exc)
    else:
        assert valid


def _reads_as_iteration_limit(value) -> bool:
    """Whether a spec reads ``value`` as an iteration limit: an integer >= 1, also written as a float
    with an integer value or a string that reads as one (gpmodels/driver/schema.py), never a bool."""
    if isinstance(value, bool):
        return False
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return False
    return math.isfinite(value) and float(value).is_integer() and value >= 1


def test_corpus_covers_every_family_of_the_issue_with_generated_cases():
    """Every family named in issue 27 has tests here, and hypothesis-generated cases among them (counted
    by tests/corpus_sizes.py, whose figures docs/security.md gives)."""
    from corpus_sizes import FAMILIES, corpus_sizes

    sizes = corpus_sizes()
    assert set(sizes) == set(FAMILIES)
    for family, s in sizes.items():
        assert s["tests"] and s["generated"] > 0, family
