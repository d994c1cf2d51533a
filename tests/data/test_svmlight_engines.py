"""scikit-learn's svmlight parser (the default when importable) gives what our line parser gives: the
same matrices and labels, the same index-base rule, the same errors naming the line."""

from pathlib import Path

import pytest

from gpmodels.data import svmlight as S
from gpmodels.errors import DataError, InputError

pytest.importorskip("sklearn")
BAD = sorted((Path(__file__).parent / "bad").glob("svm_*.svm"))
GOOD = [
    "1 1:0 3:2.5 # comment\n# a comment line\n\n2 qid:3 2:1\n-1.5 2:1e300\n3\n",
    "1 3:1 2:1 3:2\n2 1:1_0\n",
    "+1 01:.5 2:5.\n-1 4:1e-320\n",
    "0 0:1 5:2\n1 1:3\n",
    "",
]


def _read(path, engine, zero_based=None, max_features=S.MAX_FEATURES):
    try:
        raw = S.parse_svmlight(path, engine=engine, max_features=max_features)
        X, y = S.svmlight_matrix(raw, raw.uses_index_zero if zero_based is None else zero_based)
        return (
            "ok",
            X.shape,
            X.indptr.tolist(),
            X.indices.tolist(),
            X.data.tolist(),
            y.dtype.str,
            y.tolist(),
            raw.uses_index_zero,
            raw.max_index,
        )
    except (DataError, InputError) as exc:
        return ("error", type(exc).__name__, str(exc))


@pytest.mark.parametrize("text", GOOD)
def test_both_engines_read_the_same(tmp_path, text):
    p = tmp_path / "f.svm"
    p.write_text(text)
    assert _read(p, "sklearn") == _read(p, "python")
    assert _read(p, "sklearn", zero_based=False) == _read(p, "python", zero_based=False)


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_both_engines_refuse_the_same_files_with_the_same_message(path):
    assert _read(path, "sklearn", zero_based=False) == _read(path, "python", zero_based=False)
    assert _read(path, "auto", zero_based=False) == _read(path, "python", zero_based=False)


def test_the_width_bound_and_non_finite_labels_apply_to_the_sklearn_engine(tmp_path):
    p = tmp_path / "w.svm"
    p.write_text("1 1:1\n2 70:1\n")
    with pytest.raises(DataError, match=r"w.svm:2:3: feature index 70 exceeds the limit of 50"):
        S.parse_svmlight(p, engine="sklearn", max_features=50)
    p.write_text("1 1:1\nnan 2:1\n")
    with pytest.raises(DataError, match=r"w.svm:2:1: label nan is not finite"):
        S.parse_svmlight(p, engine="sklearn")
    with pytest.raises(InputError, match="engine must be one of"):
        S.parse_svmlight(p, engine="fast")
