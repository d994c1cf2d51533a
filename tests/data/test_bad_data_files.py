"""A corpus of bad data files (tests/data/bad/): each is refused with its own error type and a message
naming the file and what is wrong — by the loaders and through ``gpmodels run`` (exit code 2, no
traceback).

Stages: ``train`` (the training file of a pair), ``test`` (the test file of a pair), ``labels`` (read
fine, refused when the labels are encoded for classification), ``predict`` (prediction inputs).
"""

from pathlib import Path

import numpy as np
import pytest
import yaml

from gpmodels.cli import main
from gpmodels.data.datasets import encode_labels
from gpmodels.data.files import load_file, load_inputs
from gpmodels.errors import DataError

BAD = Path(__file__).resolve().parent / "bad"

CASES = [
    # file, stage, error type, message fragment
    ("svm_nan_label.svm", "train", DataError, "svm_nan_label.svm:2:1: label nan is not finite"),
    ("svm_inf_label.svm", "test", DataError, "svm_inf_label.svm:3:1: label -inf is not finite"),
    ("svm_huge_index.svm", "train", DataError, "svm_huge_index.svm:2:3: feature index 4000000000 exceeds the limit"),
    ("svm_negative_index.svm", "train", DataError, "svm_negative_index.svm:2:3: feature index -4 is negative"),
    (
        "svm_bad_token.svm",
        "train",
        DataError,
        "svm_bad_token.svm:2:3: a feature (3 characters) is not of the form index:value",
    ),
    ("svm_bad_label.svm", "train", DataError, "svm_bad_label.svm:1:1: the label (3 characters) is not a number"),
    ("svm_nan_value.svm", "train", DataError, "svm_nan_value.svm:2:3: feature 1's value nan is not finite"),
    ("svm_no_rows.svm", "train", DataError, "the training file"),
    ("svm_no_rows.svm", "test", DataError, "svm_no_rows.svm has no rows"),
    (
        "svm_one_class.svm",
        "labels",
        DataError,
        "the training data have one class ('3'); classification needs at least two",
    ),
    ("svm_index_zero.svm", "predict", DataError, "feature index 0 in data row 1 of a file read as 1-based"),
    ("npz_empty.npz", "train", DataError, "npz_empty.npz is empty (0 bytes)"),
    ("npz_text.npz", "train", DataError, "npz_text.npz is not a readable .npz archive"),
    ("npz_truncated.npz", "test", DataError, "npz_truncated.npz"),
    ("npz_truncated.npz", "predict", DataError, "truncated or corrupt"),
    ("npz_object_labels.npz", "train", DataError, "array 'y' has dtype object"),
    ("npz_object_labels.npz", "predict", DataError, "never unpickled"),
    ("npz_lying_shape.npz", "predict", DataError, "array 'X' declares shape (1000000000, 1000)"),
    ("npz_no_labels.npz", "train", DataError, "must hold arrays 'X' and 'y'"),
    ("npz_zero_rows.npz", "train", DataError, "npz_zero_rows.npz has no rows"),
    ("npz_nan_label.npz", "train", DataError, "labels must be finite; y[1] is nan"),
    ("npz_3d.npz", "train", DataError, "X must be 2-D (n, d); got shape (2, 2, 2)"),
    ("npz_rows_labels.npz", "test", DataError, "X has 3 rows but y has 2 labels"),
    ("arff_string_attribute.arff", "train", DataError, "attribute 2 (line 3) is a string attribute"),
    ("arff_no_header.arff", "train", DataError, "no `@attribute` lines"),
    ("arff_missing_class.arff", "train", DataError, "the class (attribute 2 (line 3)) is missing ('?') in 1 rows"),
    ("arff_one_class.arff", "labels", DataError, "the training data have one class ('x')"),
    ("arff_secret_attribute.arff", "train", DataError, "attribute 1 (line 2) is a string attribute"),
    ("svm_secret_label.svm", "train", DataError, "svm_secret_label.svm:2:1: the label (20 characters) is not a number"),
    ("svm_index_zero.svm", "test", DataError, "uses feature index 0 (0-based indices) but the training file"),
    ("csv_empty_label.csv", "train", DataError, "csv_empty_label.csv:3: the label is empty"),
    ("csv_nan_label.csv", "train", DataError, "csv_nan_label.csv:3: the label reads as the non-finite number nan"),
    (
        "csv_ambiguous_label.csv",
        "train",
        DataError,
        "csv_ambiguous_label.csv:3: the label is the number 1 spelled differently than at line 2",
    ),
    ("csv_duplicate_header.csv", "train", DataError, "columns 1 and 2 of the header have the same name"),
    ("csv_secret_cell.csv", "predict", DataError, "csv_secret_cell.csv:3: column 1 (20 characters) is not a number"),
]


def test_every_bad_file_is_in_the_table():
    assert {p.name for p in BAD.iterdir()} == {c[0] for c in CASES}


#: a token planted in the corpus that no message may quote (issue 27: messages never echo a file)
PLANTED = "AKIAIOSFODNN7EXAMPLE"


def _good(tmp_path, suffix):
    if suffix == ".npz":
        np.savez(tmp_path / "good.npz", X=np.ones((4, 2)), y=np.array([1, 2, 1, 2]))
        return tmp_path / "good.npz"
    if suffix == ".csv":
        (tmp_path / "good.csv").write_text("f1,label\n1,a\n2,b\n")
        return tmp_path / "good.csv"
    if suffix == ".arff":
        (tmp_path / "good.arff").write_text(
            "@relation r\n@attribute a numeric\n@attribute class {x,y}\n@data\n1,x\n2,y\n"
        )
        return tmp_path / "good.arff"
    (tmp_path / "good.svm").write_text("1 1:1\n2 1:2\n")
    return tmp_path / "good.svm"


@pytest.mark.parametrize("name, stage, error, message", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_bad_data_files_are_refused_with_a_named_message(tmp_path, name, stage, error, message):
    path = BAD / name
    good = _good(tmp_path, path.suffix)
    with pytest.raises(error) as info:
        if stage == "train":
            load_file(path, good)
        elif stage == "test":
            load_file(good, path)
        elif stage == "labels":
            _, y, _, yt = load_file(path, path)
            encode_labels(y, yt)
        else:
            load_inputs(path)
    assert message in str(info.value) and PLANTED not in str(info.value)


TRAIN_CASES = [c for c in CASES if c[1] in ("train", "labels")]


@pytest.mark.parametrize("name, stage, error, message", TRAIN_CASES, ids=[c[0] for c in TRAIN_CASES])
def test_bad_training_files_through_the_cli_exit_2_with_the_message(tmp_path, capsys, name, stage, error, message):
    path = BAD / name
    spec = {
        "name": "bad",
        "data": {"path": str(path), "test_path": str(_good(tmp_path, path.suffix))},
        "model": {"kernel": {"type": "rbf", "w": 1.0}},
        "output": {"dir": str(tmp_path / "out")},
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(spec))
    assert main(["run", str(tmp_path / "s.yaml"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and PLANTED not in err
