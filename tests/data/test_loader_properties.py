"""Property tests (issue 15): whatever bytes or svmlight-like lines a data file holds, the loaders
give a correct load or a gpmodels error (a GPModelsError subclass) — never another exception type,
never a hang (few examples, a per-example deadline)."""

import io
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpmodels.data.arff import load_arff
from gpmodels.data.datasets import read_npz
from gpmodels.data.files import load_file, load_inputs
from gpmodels.data.svmlight import load_svmlight
from gpmodels.errors import GPModelsError

SETTINGS = settings(max_examples=60, deadline=3000, suppress_health_check=[HealthCheck.function_scoped_fixture])
SUFFIXES = (".svm", ".txt", ".arff", ".npz", ".csv")


def _check_load(X, y):
    """What a successful load must look like: a 2-D finite matrix, one finite label per row."""
    assert X.ndim == 2 if hasattr(X, "ndim") else True
    data = X.data if hasattr(X, "tocsr") else np.asarray(X, dtype=float)
    assert np.all(np.isfinite(data))
    if y is not None:
        y = np.asarray(y)
        assert y.shape == (X.shape[0],)
        if y.dtype.kind in "fc":
            assert np.all(np.isfinite(y))


def _try(load, *args, **kwargs):
    try:
        out = load(*args, **kwargs)
    except GPModelsError:
        return None
    return out


@SETTINGS
@given(st.binary(max_size=600), st.sampled_from(SUFFIXES))
def test_random_bytes_give_a_load_or_a_gpmodels_error(tmp_path_factory, data, suffix):
    path = tmp_path_factory.mktemp("bytes") / f"f{suffix}"
    path.write_bytes(data)
    out = _try(load_file, path)
    if out is not None:
        _check_load(out[0], out[1])
    out = _try(load_inputs, path)
    if out is not None:
        _check_load(*out)


_number = st.one_of(
    st.integers(-5, 5).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "1e400", "1e300", "0x10", "1_0", "+3", "", "abc", "9" * 30]),
)
_index = st.one_of(
    st.integers(-3, 40).map(str),
    st.sampled_from(["4000000000", "99999999999999999999", "1.5", "", "x", "0", "-0", "2**31", "9" * 400]),
)
_token = st.one_of(
    st.tuples(_index, _number).map(":".join),
    st.sampled_from(["qid:3", "qid:", ":", "1:", ":2", "a:b:c", "1:2:3", "#", "# comment"]),
)
_line = st.tuples(
    st.one_of(_number, st.lists(_number, max_size=3).map(",".join)),
    st.lists(_token, max_size=6),
    st.sampled_from(["", " ", "\t", "  # note", "\r"]),
).map(lambda t: " ".join([t[0], *t[1]]) + t[2])


@SETTINGS
@given(st.lists(_line, max_size=8), st.lists(_line, max_size=4), st.booleans(), st.booleans())
def test_random_svmlight_lines_give_a_load_or_a_gpmodels_error(
    tmp_path_factory, lines, test_lines, zero_based, multilabel
):
    folder = tmp_path_factory.mktemp("svm")
    tr, te = folder / "tr.svm", folder / "te.svm"
    tr.write_text("\n".join(lines) + "\n")
    te.write_text("\n".join(test_lines) + "\n")
    out = _try(load_svmlight, tr, zero_based=zero_based, multilabel=multilabel)
    if out is not None:
        X, labels = out
        assert X.shape[0] == len(labels) and np.all(np.isfinite(X.data))
        assert np.all(X.indices >= 0) and X.shape[1] <= 2**24 + 1
        if not multilabel:
            _check_load(X, labels)
    out = _try(load_file, tr, te)
    if out is not None:
        X, y, Xt, yt = out
        _check_load(X, y)
        _check_load(Xt, yt)
        assert X.shape[0] > 0 and Xt.shape[0] > 0 and Xt.shape[1] == X.shape[1]


_arrays = st.one_of(
    st.tuples(st.integers(0, 4), st.integers(0, 3)).map(lambda s: np.ones(s)),
    st.integers(0, 5).map(lambda n: np.arange(n, dtype=float)),
    st.sampled_from(
        [
            np.array(["a", "b"]),
            np.array([np.nan, 1.0]),
            np.ones((2, 2, 2)),
            np.array([1 + 2j]),
            np.array([True, False]),
            np.zeros((2, 0)),
            np.array([1, 2], dtype=np.int8),
        ]
    ),
)


@SETTINGS
@given(
    st.dictionaries(st.sampled_from(["X", "y", "data", "other"]), _arrays, max_size=3),
    st.booleans(),
    st.integers(0, 2000),
    st.integers(0, 255),
)
def test_random_and_damaged_npz_give_a_load_or_a_gpmodels_error(tmp_path_factory, arrays, compressed, cut, flip):
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    raw = bytearray(buf.getvalue())
    if cut < len(raw) and cut % 3 == 0:
        raw = raw[:cut]  # truncated
    elif cut < len(raw) and cut % 3 == 1:
        raw[cut] = flip  # one byte damaged
    path = tmp_path_factory.mktemp("npz") / "f.npz"
    path.write_bytes(bytes(raw))
    for load in (load_file, load_inputs, read_npz):
        out = _try(load, path)
        if out is not None and load is not read_npz:
            _check_load(out[0], out[1])


@pytest.mark.parametrize(
    "body",
    [
        "@relation r\n@attribute a numeric\n@attribute class {x,y}\n@data\n1,x\n2,\n",
        "@relation r\n@attribute a numeric\n@attribute class {x,y}\n@data\n1,z\n",
        "@relation r\n@attribute a numeric\n@attribute class {x,y}\n@data\nabc,x\n",
        "@relation r\n@attribute a numeric\n@attribute class {x,y\n@data\n1,x\n",
        "@relation r\n@attribute a date 'yyyy'\n@attribute class {x,y}\n@data\n2001,x\n",
        "@attribute\n@data\n",
        "@relation r\n@attribute 'a numeric\n@data\n1\n",
    ],
)
def test_malformed_arff_gives_a_load_or_a_gpmodels_error(tmp_path, body):
    path = tmp_path / "f.arff"
    path.write_text(body)
    out = _try(load_arff, path)
    if out is not None:
        _check_load(*out)


def test_zip_members_are_not_trusted(tmp_path):
    path = tmp_path / "f.npz"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("X.npy", b"\x93NUMPY\x01\x00")
    with pytest.raises(GPModelsError):
        load_file(path)
