"""Issue 15, data family: index base, widths, labels, sizes, subsamples, single class, .npz files."""

import time
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

from gpmodels.data.datasets import encode_labels, read_npz
from gpmodels.data.files import load_file, load_inputs
from gpmodels.data.splits import stratified_counts, subsample
from gpmodels.data.svmlight import load_svmlight
from gpmodels.errors import DataError, GPModelsError, InputError


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


# ---------------------------------------------------------------- index base and widths
def test_a_zero_based_test_file_without_feature_0_keeps_the_training_base(tmp_path):
    """The per-file guess read such a test file as 1-based: every feature shifted one column."""
    tr = _write(tmp_path / "tr.svm", ["1 0:1 2:5", "2 1:2 3:1"])
    te = _write(tmp_path / "te.svm", ["1 1:7 3:4", "2 2:3"])
    X, y, Xt, yt = load_file(tr, te)
    np.testing.assert_array_equal(X.toarray(), [[1, 0, 5, 0], [0, 2, 0, 1]])
    np.testing.assert_array_equal(Xt.toarray(), [[0, 7, 0, 4], [0, 0, 3, 0]])
    # the base is one decision for the pair, never taken from the test file alone: feature 0 in the test
    # file beside a training file without it is refused (re-basing the training file would shift it)
    a, b = _write(tmp_path / "a.svm", ["1 1:1", "2 2:1"]), _write(tmp_path / "b.svm", ["1 0:1 2:1"])
    with pytest.raises(
        DataError,
        match="b.svm uses feature index 0 .*a.svm is an svmlight file that never uses index 0: set data.zero_based",
    ):
        load_file(a, b)
    X, _, Xt, _ = load_file(a, b, zero_based=True)
    assert X.shape[1] == Xt.shape[1] == 3 and Xt.toarray()[0, 0] == 1
    # explicit bases are applied to both files
    X, _, Xt, _ = load_file(tr, te, zero_based=True)
    assert Xt.toarray()[0, 1] == 7
    with pytest.raises(DataError, match="feature index 0 .* read as 1-based"):
        load_file(tr, te, zero_based=False)


def test_the_index_base_is_never_guessed_per_file(tmp_path):
    f = _write(tmp_path / "z.svm", ["1 0:1 1:2"])
    with pytest.raises(InputError, match="zero_based must be True .* or False"):
        load_svmlight(f, zero_based="auto")
    with pytest.raises(DataError, match="zero_based=True"):
        load_svmlight(f)  # libsvm's 1-based default never silently switches
    assert load_svmlight(f, zero_based=True)[0].shape == (1, 2)
    with pytest.raises(DataError, match="zero_based=True"):
        load_inputs(f)
    assert load_inputs(f, zero_based=True, n_features=5)[0].shape == (1, 5)


def test_a_wider_test_file_is_refused_and_a_narrower_one_padded(tmp_path):
    tr = _write(tmp_path / "tr.svm", ["1 1:1 2:1", "2 2:1"])
    wide = _write(tmp_path / "wide.svm", ["1 1:1 5:1"])
    with pytest.raises(DataError, match=r"test file .*wide.svm has 5 features .* training file .* has 2"):
        load_file(tr, wide)
    narrow = _write(tmp_path / "narrow.svm", ["1 1:1"])
    X, _, Xt, _ = load_file(tr, narrow)
    assert Xt.shape == (1, 2)
    np.savez(tmp_path / "a.npz", X=np.ones((3, 2)), y=[0, 1, 1])
    np.savez(tmp_path / "b.npz", X=np.ones((2, 3)), y=[0, 1])
    with pytest.raises(DataError, match="has 3 features but the training file .* has 2"):
        load_file(tmp_path / "a.npz", tmp_path / "b.npz")
    with pytest.raises(DataError, match="trained on 1 features"):
        load_inputs(wide, n_features=1)


# ---------------------------------------------------------------- labels and sizes
@pytest.mark.parametrize("label", ["nan", "inf", "-inf", "NaN", "1,nan"])
def test_non_finite_svmlight_labels_are_refused_naming_the_line(tmp_path, label):
    f = _write(tmp_path / "l.svm", ["1 1:1", f"{label} 1:2"])
    with pytest.raises(
        DataError, match=r"l.svm:2:1: (label .* is not finite|the label \(\d+ characters\) is not a number)"
    ):
        load_svmlight(f)


def test_huge_integral_labels_do_not_wrap_around(tmp_path):
    X, y = load_svmlight(_write(tmp_path / "h.svm", ["1e300 1:1", "2 1:2"]))
    assert y.dtype == np.float64 and y[0] == 1e300


def test_non_finite_npz_labels_are_refused(tmp_path):
    np.savez(tmp_path / "a.npz", X=np.ones((3, 2)), y=[0.0, np.nan, 1.0])
    with pytest.raises(DataError, match=r"labels must be finite; y\[1\] is nan"):
        load_file(tmp_path / "a.npz")


def test_a_huge_feature_index_is_refused_before_allocating(tmp_path):
    f = _write(tmp_path / "big.svm", ["1 1:1", "2 4000000000:1"])
    t0 = time.perf_counter()
    with pytest.raises(DataError, match=r"big.svm:2:3: feature index 4000000000 exceeds the limit of 16777216 .*GiB"):
        load_file(f, f)
    assert time.perf_counter() - t0 < 5.0
    with pytest.raises(DataError, match=r"feature index 999999999999999999999999\.\.\. exceeds the limit"):
        load_svmlight(_write(tmp_path / "huge.svm", ["1 " + "9" * 1000 + ":1"]))
    with pytest.raises(DataError, match="feature index -2 is negative"):
        load_svmlight(_write(tmp_path / "neg.svm", ["1 -2:1"]))
    assert load_svmlight(_write(tmp_path / "ok.svm", ["1 30:1"]), max_features=30)[0].shape == (1, 30)


# ---------------------------------------------------------------- stratified subsamples
def test_subsamples_are_really_stratified():
    y = np.repeat([0, 1, 2], 50)
    assert np.bincount(y[subsample(150, 6, 0, y=y)]).tolist() == [2, 2, 2]
    y = np.repeat(np.arange(10), 100)
    for seed in range(3):
        assert np.bincount(y[subsample(1000, 100, seed, y=y)]).tolist() == [10] * 10
    y = np.r_[np.zeros(90, int), np.ones(7, int), np.full(3, 2)]
    counts = np.bincount(y[subsample(100, 10, 1, y=y)], minlength=3)
    assert counts.sum() == 10 and counts.min() >= 1 and abs(counts[0] - 9) <= 1
    y = np.repeat(np.arange(10), 100)
    with pytest.raises(InputError, match="max_train 3 is smaller than the 10 classes"):
        subsample(1000, 3, 0, y=y, what="max_train")
    assert subsample(1000, 3, 0, y=y).size == 3  # a test subsample may be smaller than the classes
    with pytest.raises(InputError, match="the subsample size 2 is smaller than the 3 classes"):
        stratified_counts([5, 5, 5], 2)


@pytest.mark.parametrize("counts, size", [([5, 5, 5, 5], 4), ([100, 1, 1, 1], 5), ([1, 2, 3, 50, 7], 9), ([3, 3], 5)])
def test_stratified_counts_are_largest_remainder_with_one_point_per_class(counts, size):
    take = stratified_counts(counts, size)
    quota = size * np.asarray(counts) / np.sum(counts)
    assert take.sum() == size and take.min() >= 1 and np.all(take <= counts)
    assert np.all(np.abs(take - quota) < 1.0 + np.sum(quota < 1))  # bumped small classes cost their donors


# ---------------------------------------------------------------- one class, no rows
def test_single_class_training_data_are_refused(tmp_path):
    with pytest.raises(DataError, match=r"the training data have one class \('x'\); classification needs at least two"):
        encode_labels(np.array(["x", "x"]), np.array(["x"]))
    tr = _write(tmp_path / "one.svm", ["3 1:1", "3 1:2"])
    X, y, Xt, yt = load_file(tr, tr)
    with pytest.raises(DataError, match=r"one class \('3'\)"):
        encode_labels(y, yt)


def test_a_training_file_with_zero_rows_is_named(tmp_path):
    empty = _write(tmp_path / "e.svm", ["# only a comment"])
    other = _write(tmp_path / "o.svm", ["1 1:1", "2 1:2"])
    with pytest.raises(DataError, match=r"the training file .*e.svm has no rows"):
        load_file(empty, other)
    with pytest.raises(DataError, match=r"the test file .*e.svm has no rows"):
        load_file(other, empty)
    np.savez(tmp_path / "z.npz", X=np.ones((0, 3)), y=np.ones(0))
    with pytest.raises(DataError, match="has no rows"):
        load_file(tmp_path / "z.npz")


# ---------------------------------------------------------------- .npz files
def _bad_npz(tmp_path, kind):
    p = tmp_path / f"{kind}.npz"
    if kind == "empty":
        p.write_bytes(b"")
    elif kind == "truncated":
        np.savez(p, X=np.ones((20, 3)), y=np.arange(20))
        p.write_bytes(p.read_bytes()[:300])
    elif kind == "not_zip":
        p.write_bytes(b"X,y\n1,2\n")
    elif kind == "npy":
        np.save(p.with_suffix(".npy"), np.ones(3))
        p.write_bytes(p.with_suffix(".npy").read_bytes())
    elif kind == "object":
        np.savez(p, X=np.ones((2, 2)), y=np.array([1, "a"], dtype=object))
    elif kind == "lying_shape":
        with zipfile.ZipFile(p, "w") as zf:
            header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000), }"
            header += b" " * (117 - len(header)) + b"\n"
            zf.writestr("X.npy", b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + b"\0" * 64)
    elif kind == "bad_header":
        with zipfile.ZipFile(p, "w") as zf:
            zf.writestr("X.npy", b"\x93NUMPY\x01\x00\x10\x00{'descr': oops}\n")
    elif kind == "not_npy_member":
        with zipfile.ZipFile(p, "w") as zf:
            zf.writestr("notes.txt", b"hello")
    return p


@pytest.mark.parametrize(
    "kind, message",
    [
        ("empty", "is empty"),
        ("truncated", "not a readable .npz archive|truncated or corrupt"),
        ("not_zip", "not a readable .npz archive"),
        ("npy", "not a readable .npz archive"),
        ("object", "dtype object"),
        ("lying_shape", r"declares shape \(1000000000, 1000\)"),
        ("bad_header", "no valid .npy header"),
        ("not_npy_member", "is not a .npy array"),
    ],
)
def test_bad_npz_files_are_data_errors_naming_the_file(tmp_path, kind, message):
    p = _bad_npz(tmp_path, kind)
    for load in (load_file, load_inputs, read_npz):
        with pytest.raises(DataError, match=message) as info:
            load(p)
        assert p.name in str(info.value)
    other = tmp_path / "ok.npz"
    np.savez(other, X=np.ones((2, 2)), y=[0, 1])
    with pytest.raises(DataError, match=message):
        load_file(other, p)


def test_npz_shapes_are_checked(tmp_path):
    np.savez(tmp_path / "a.npz", X=np.ones((3, 2, 2)), y=[0, 1, 1])
    with pytest.raises(DataError, match=r"X must be 2-D"):
        load_file(tmp_path / "a.npz")
    np.savez(tmp_path / "b.npz", X=np.ones((3, 2)), y=[0, 1])
    with pytest.raises(DataError, match="X has 3 rows but y has 2 labels"):
        load_file(tmp_path / "b.npz")
    sp.save_npz(tmp_path / "s.npz", sp.csr_matrix(np.eye(2)))
    with pytest.raises(DataError, match="sparse matrix without labels"):
        load_file(tmp_path / "s.npz")


def test_every_loader_error_is_a_gpmodels_error(tmp_path):
    assert issubclass(DataError, GPModelsError)
