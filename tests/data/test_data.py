"""Loaders, splits, scaling: determinism, formats, errors."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import TESTS, needs_shared_data
from hypothesis import given
from hypothesis import strategies as st

from gpmodels.data.datasets import encode_labels, find_data_root, load_dataset
from gpmodels.data.files import load_file
from gpmodels.data.scaling import FeatureScaler, auto_rbf_w, scale_features
from gpmodels.data.splits import kfold_partition, subsample, train_test_split
from gpmodels.data.svmlight import load_svmlight
from gpmodels.errors import DataError, InputError

HERE = TESTS


def test_svmlight_reader():
    X, y = load_svmlight(HERE / "data" / "tiny.svm")
    assert sp.isspmatrix_csr(X) and X.shape == (6, 3)
    np.testing.assert_array_equal(y, [1, 2, 3, 1, 2, 3])
    np.testing.assert_allclose(X.toarray()[0], [0.5, 0, 1.0])
    np.testing.assert_allclose(X.toarray()[3], [0.25, 0, 0])


def test_svmlight_errors_name_the_line(tmp_path):
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:2\nx 2:1\n")
    with pytest.raises(DataError, match=r"bad.svm:2:1: the label \(1 character\) is not a number"):
        load_svmlight(bad)
    bad.write_text("1 1:2\n2 2-1\n")
    with pytest.raises(DataError, match=r":2:3: a feature \(3 characters\) is not of the form index:value"):
        load_svmlight(bad)
    bad.write_text("1 1:nan\n")
    with pytest.raises(DataError, match="non-finite"):
        load_svmlight(bad)
    with pytest.raises(DataError, match="not found"):
        load_svmlight(tmp_path / "missing.svm")


def test_svmlight_multilabel(tmp_path):
    f = tmp_path / "ml.svm"
    f.write_text("1,3 1:1\n 2:1\n2 1:1\n")
    X, labels = load_svmlight(f, multilabel=True)
    assert labels == [(1.0, 3.0), (), (2.0,)]


def test_npz_files_and_label_encoding(tmp_path):
    r = np.random.default_rng(0)
    np.savez(tmp_path / "tr.npz", X=r.normal(size=(10, 2)), y=np.array([5, 7] * 5))
    np.savez(tmp_path / "te.npz", X=r.normal(size=(4, 2)), y=np.array([7, 7, 5, 9]))
    X, y, Xt, yt = load_file(tmp_path / "tr.npz", tmp_path / "te.npz")
    with pytest.raises(
        DataError,
        match=r"1 test labels \(e.g. 9\) are none of the 2 training classes \(the first "
        r"is test point 4\)",
    ):
        encode_labels(y, yt)
    a, b, names = encode_labels(y, yt[:3])
    assert names == ("5", "7") and a.tolist() == [0, 1] * 5 and b.tolist() == [1, 1, 0]
    np.savez(tmp_path / "bad.npz", A=np.zeros(3))
    with pytest.raises(DataError, match="must hold arrays 'X' and 'y'"):
        load_file(tmp_path / "bad.npz")


@given(st.integers(10, 200), st.floats(0.1, 0.5), st.integers(0, 1000), st.integers(2, 5))
def test_splits_are_deterministic_disjoint_and_stratified(n, frac, seed, C):
    y = np.arange(n) % C
    tr, te = train_test_split(n, frac, seed, y=y)
    tr2, te2 = train_test_split(n, frac, seed, y=y)
    assert np.array_equal(tr, tr2) and np.array_equal(te, te2)
    assert np.intersect1d(tr, te).size == 0 and tr.size + te.size == n
    assert te.size == round(frac * n)
    for c in range(C):
        n_c = np.sum(y == c)
        assert abs(np.sum(y[te] == c) - frac * n_c) < 1.0 + 1e-9 and np.sum(y[tr] == c) >= 1
    folds = kfold_partition(n, min(5, n), seed, y=y)
    assert np.array_equal(np.sort(np.concatenate(folds)), np.arange(n))
    assert max(f.size for f in folds) - min(f.size for f in folds) <= 1
    s = subsample(n, n // 2, seed, y=y)
    assert s.size == n // 2 and np.unique(s).size == s.size


@given(st.integers(2, 40), st.integers(2, 6), st.integers(0, 1000), st.integers(1, 30), st.booleans())
def test_kfold_partition_gives_every_class_its_share_of_every_fold(C, q, seed, size, balanced):
    """Stratified folds: class c has ⌊n_c/q⌋ or ⌈n_c/q⌉ points in each fold, whatever C, q and the
    class sizes (equal sizes with q dividing C once made every fold hold out whole classes)."""
    sizes = np.full(C, size) if balanced else 1 + np.random.default_rng(seed).integers(0, 3 * size, C)
    y = np.random.default_rng(seed + 1).permutation(np.repeat(np.arange(C), sizes))
    if y.size < q:
        return
    folds = kfold_partition(y.size, q, seed, y=y)
    assert np.array_equal(np.sort(np.concatenate(folds)), np.arange(y.size))
    assert max(f.size for f in folds) - min(f.size for f in folds) <= 1
    counts = np.array([np.bincount(y[f], minlength=C) for f in folds])  # (q, C)
    assert np.all(counts >= sizes // q) and np.all(counts <= -(-sizes // q))


def test_kfold_partition_holds_out_every_class_of_news20_small_sized_data():
    y = np.repeat(np.arange(20), 100)  # 20 classes of 100, q = 5 divides C
    for seed in range(3):
        counts = np.array([np.bincount(y[f], minlength=20) for f in kfold_partition(y.size, 5, seed, y=y)])
        assert np.all(counts == 20)
    a, b = kfold_partition(y.size, 5, 0, y=y), kfold_partition(y.size, 5, 1, y=y)
    assert not all(np.array_equal(f, g) for f, g in zip(a, b))  # the seed matters


def test_split_arguments_are_checked():
    with pytest.raises(InputError, match="seed must be an integer"):
        train_test_split(10, 0.3, None)
    with pytest.raises(InputError, match="test_fraction"):
        train_test_split(10, 1.5, 0)
    with pytest.raises(InputError, match="number of folds"):
        kfold_partition(10, 1, 0)


def test_scaling(rng):
    X = rng.normal(loc=3.0, scale=2.0, size=(50, 4))
    Xs, Xt = scale_features("standardize", X, X[:5])
    np.testing.assert_allclose(Xs.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(Xs.std(axis=0), 1, atol=1e-12)
    np.testing.assert_allclose(Xt, Xs[:5])
    U, _ = scale_features("unit_norm", sp.csr_matrix(X))
    np.testing.assert_allclose(np.sqrt(U.multiply(U).sum(axis=1)).A1, 1.0)
    assert auto_rbf_w(X) == pytest.approx(1.0 / X.var(axis=0).sum())
    with pytest.raises(InputError, match="scaling must be one of"):
        scale_features("minmax", X)


def test_tfidf_scaling_weights_sublinear_counts_by_smoothed_idf(rng):
    counts = sp.random(30, 12, density=0.3, random_state=3, format="csr")
    counts.data = np.ceil(counts.data * 5)
    new = sp.csr_matrix(np.ceil(rng.uniform(0, 3, size=(4, 12))) * (rng.uniform(size=(4, 12)) < 0.4))
    A, B = scale_features("tfidf", counts, new)
    dense = counts.toarray()
    df = (dense > 0).sum(axis=0)
    idf = 1.0 + np.log(31.0 / (1.0 + df))
    for X, got in ((dense, A), (new.toarray(), B)):
        tf = np.where(X > 0, 1.0 + np.log(np.maximum(X, 1.0)), 0.0) * idf
        norms = np.linalg.norm(tf, axis=1, keepdims=True)
        np.testing.assert_allclose(got.toarray(), np.divide(tf, norms, out=np.zeros_like(tf), where=norms > 0))
    Ad, Bd = scale_features("tfidf", dense, new.toarray())  # dense inputs give the same numbers
    np.testing.assert_allclose(Ad, A.toarray(), atol=1e-15)
    np.testing.assert_allclose(Bd, B.toarray(), atol=1e-15)
    scaler = FeatureScaler.fit("tfidf", counts)
    again = FeatureScaler.from_arrays(scaler.to_arrays())
    np.testing.assert_array_equal(again.transform(new).toarray(), B.toarray())


def test_tfidf_scaling_refuses_what_is_not_a_count_and_other_widths():
    for wrong in (-1.0, 0.25, np.nan):  # a signed value, a frequency below 1 (1 + ln c < 1), no number
        with pytest.raises(InputError, match=f"tfidf.*must be >= 1.*{wrong}"):
            scale_features("tfidf", sp.csr_matrix(np.array([[1.0, wrong, 0.0]])))
    scaler = FeatureScaler.fit("tfidf", np.array([[1.0, 2.0, 0.0]]))
    with pytest.raises(InputError, match="fitted on 3 features; got inputs with 2"):
        scaler.transform(np.ones((1, 2)))
    with pytest.raises(InputError, match="needs its training statistic 'idf'"):
        FeatureScaler("tfidf")


@needs_shared_data("satimage", "news20")
def test_named_datasets_load_with_the_documented_counts():
    d = load_dataset("satimage")
    assert d.X_train.shape == (4435, 36) and d.X_test.shape == (2000, 36)
    assert d.classes == ("1", "2", "3", "4", "5", "7")
    assert np.bincount(d.y_train).tolist() == [1072, 479, 961, 415, 470, 1038]
    n = load_dataset("news20", subset="small")
    assert n.X_train.shape[0] == 2000 and n.sparse and n.n_classes == 20
    with pytest.raises(DataError, match="did you mean 'satimage'"):
        load_dataset("satimag")
    with pytest.raises(DataError, match="only defined for news20"):
        load_dataset("usps", subset="small")


def test_missing_data_root_lists_where_it_looked(tmp_path):
    with pytest.raises(DataError, match="looked in"):
        find_data_root(tmp_path / "nowhere")
