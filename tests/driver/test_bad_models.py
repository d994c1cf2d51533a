"""A corpus of bad model folders, bad predict inputs and bad checkpoints, generated from one good
run: each goes through the CLI (`gpmodels predict`, `gpmodels run`) with its expected exit code
(2: bad input) and message fragment, and never prints a traceback or a line of the bad file."""

import io
import shutil
import zipfile

import numpy as np
import pytest
import yaml
from conftest import toy_data_section

from gpmodels.cli import main

SECRET = "root:$6$SECRETHASH:19000:0:99999:7:::"


def _files(folder):
    toy_data_section(folder, n=90, n_train=60, d=4, seed=0, label_offset=1)


def _spec(folder, **cv):
    return {
        "name": "toy",
        "data": {"path": str(folder / "train.npz"), "test_path": str(folder / "test.npz")},
        "model": {"kernel": {"type": "rbf", "w": "auto"}, "variance": 5.0, "sigma2": 4.0},
        "objective": {"type": "cv", "cv": {"folds": 3, "outer": {"max_iter": 1}, "newton": {"max_iter": 5}, **cv}},
    }


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """One finished cv run: its folder (model.npz, spec.resolved.yaml, checkpoint.npz) and data."""
    root = tmp_path_factory.mktemp("good")
    _files(root)
    (root / "spec.yaml").write_text(yaml.safe_dump(_spec(root)))
    assert main(["run", str(root / "spec.yaml"), "--out", str(root / "model"), "--quiet"]) == 0
    return root


def _npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _object_npz(path):
    """An .npz whose entry is an object array (stored with pickle)."""
    with zipfile.ZipFile(path, "w") as z:
        buf = io.BytesIO()
        np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        z.writestr("kind.npy", buf.getvalue())
        z.writestr("format_version.npy", _npz_member(np.array(1)))


def _npz_member(a) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def _edit_spec(folder, fn):
    d = yaml.safe_load((folder / "spec.resolved.yaml").read_text())
    fn(d)
    (folder / "spec.resolved.yaml").write_text(yaml.safe_dump(d))


#: name -> (how to break the copied model folder, expected message fragment)
MODEL_CASES = {
    "missing_model_npz": (lambda f: (f / "model.npz").unlink(), "holds the report of run 'toy'"),
    "no_folder": (lambda f: shutil.rmtree(f), "not found"),
    "empty_npz": (lambda f: (f / "model.npz").write_bytes(b""), "cannot be read as a model file (empty"),
    "truncated_npz": (
        lambda f: (f / "model.npz").write_bytes((f / "model.npz").read_bytes()[:300]),
        "truncated or not an .npz",
    ),
    "text_as_npz": (lambda f: (f / "model.npz").write_text(SECRET), "truncated or not an .npz"),
    "object_array": (lambda f: _object_npz(f / "model.npz"), "cannot be read as a model file"),
    "foreign_npz": (lambda f: (f / "model.npz").write_bytes(_npz_bytes(x=np.ones(3))), "not a gpmodels model file"),
    "future_version": (
        lambda f: (f / "model.npz").write_bytes(_npz_bytes(format_version=np.array(99), kind=np.array("map"))),
        "model format version 99",
    ),
    "unknown_kind": (
        lambda f: (f / "model.npz").write_bytes(_npz_bytes(format_version=np.array(1), kind=np.array("x" * 500))),
        "names a model kind (500 characters) that is none of",
    ),
    "missing_arrays": (
        lambda f: (f / "model.npz").write_bytes(_npz_bytes(format_version=np.array(1), kind=np.array("map"))),
        "lacks the array",
    ),
    "missing_spec": (lambda f: (f / "spec.resolved.yaml").unlink(), "holds no spec.resolved.yaml"),
    "spec_is_shadow": (lambda f: (f / "spec.resolved.yaml").write_text(SECRET + "\n"), "spec.resolved.yaml"),
    "spec_is_binary": (lambda f: (f / "spec.resolved.yaml").write_bytes(b"\x00\x01" * 50), "binary data"),
    "spec_names_a_module": (
        lambda f: _edit_spec(f, lambda d: d["model"].update(prior="this:s")),
        "needs --allow-import this",
    ),
    "spec_of_other_classes": (lambda f: _edit_spec(f, lambda d: d["model"].update(sharing="tied")), "parameters"),
}


@pytest.mark.parametrize("case", sorted(MODEL_CASES))
def test_bad_model_folders_exit_2_with_a_message(case, good, tmp_path, capsys):
    folder = tmp_path / "model"
    shutil.copytree(good / "model", folder)
    breaker, fragment = MODEL_CASES[case]
    breaker(folder)
    code = main(["predict", str(folder), str(good / "test.npz")])
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert captured.err.startswith("gpmodels: error: ") and fragment in captured.err, captured.err
    assert "Traceback" not in captured.err and "SECRETHASH" not in captured.err + captured.out
    assert "The Zen of Python" not in captured.out


INPUT_CASES = {
    "missing": (None, "input file not found"),
    "folder": ("dir", "not a regular file"),
    "empty": (b"", "is empty (0 bytes)"),
    "shadow": (SECRET.encode() + b"\n", "inputs.svm:1:1: the label ("),
    "truncated_npz": ("truncated", "is not a readable .npz archive"),
}


@pytest.mark.parametrize("case", sorted(INPUT_CASES))
def test_bad_predict_inputs_exit_2_without_quoting_them(case, good, tmp_path, capsys):
    content, fragment = INPUT_CASES[case]
    path = tmp_path / (
        "inputs.npz" if case in ("empty", "truncated_npz") else "inputs.svm" if case == "shadow" else "inputs"
    )
    if content == "dir":
        path.mkdir()
    elif content == "truncated":
        path.write_bytes((good / "test.npz").read_bytes()[:200])
    elif content is not None:
        path.write_bytes(content)
    code = main(["predict", str(good / "model"), str(path)])
    err = capsys.readouterr().err
    assert code == 2 and fragment in err, err
    assert "Traceback" not in err and "SECRETHASH" not in err


CHECKPOINT_CASES = {
    "foreign": ("foreign", "belongs to another run"),
    "zeros": (b"\x00" * 100, "corrupt"),
    "empty": (b"", "checkpoint"),
    "truncated": ("truncated", "checkpoint"),
    "text": (SECRET.encode(), "checkpoint"),
}


@pytest.mark.parametrize("case", sorted(CHECKPOINT_CASES))
def test_bad_checkpoints_exit_2_before_learning(case, good, tmp_path, capsys):
    content, fragment = CHECKPOINT_CASES[case]
    _files(tmp_path)
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "checkpoint.npz"
    if content == "foreign":  # the good run's checkpoint, for another spec
        shutil.copy(good / "model" / "checkpoint.npz", target)
    elif content == "truncated":
        target.write_bytes((good / "model" / "checkpoint.npz").read_bytes()[:500])
    else:
        target.write_bytes(content)
    spec = _spec(tmp_path, partition_seed=7)  # another run than the good one
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    code = main(["run", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and fragment in err and "resume: never" in err, err
    assert "Traceback" not in err and "SECRETHASH" not in err
    assert not (tmp_path / "out" / "metrics.json").exists()
    # --force drops the checkpoint and runs
    assert main(["run", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "out"), "--quiet", "--force"]) == 0
