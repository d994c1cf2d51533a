"""Issue 42, model folders as untrusted input: every array of ``model.npz`` is checked against one declared
schema (:data:`gpmodels.persistence.MODEL_SCHEMA`) before any use, and estimator folders keep labels of
their own type under any folder name the file system allows."""

import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT, TESTS
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpmodels.errors import DataError, InputError
from gpmodels.estimators import GPClassifier, load_classifier
from gpmodels.persistence import MODEL_FILE, MODEL_KINDS, MODEL_SCHEMA, READ_VERSIONS, check_model_arrays

FAMILIES = ("dtype", "shape", "values", "entries")


@pytest.mark.parametrize("family", FAMILIES)
def test_a_saved_model_mutated_entry_by_entry_is_refused_or_predicts_exactly(family):
    """Hypothesis mutates a dense and a sparse saved model (tests/model_mutations.py) in a child process, so
    a crash by signal (an out-of-range sparse index used to be a segmentation fault) fails the test."""
    examples = 2 * settings().max_examples
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, str(TESTS / "model_mutations.py"), family, str(examples)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stdout[-2000:]} {done.stderr[-2000:]}"
    assert f"ok: {examples} {family} mutations" in done.stdout


def _arrays(**extra):
    base = {
        "format_version": np.array(1),
        "kind": np.array("map"),
        "classes": np.array(["a", "b"]),
        "X_dense": np.zeros((3, 2)),
        "alpha": np.zeros((3, 2)),
        "scaler_kind": np.array("none"),
    }
    return {**base, **extra}


@pytest.mark.parametrize("version", [0, 2, 99, -1, 2**40])
def test_a_format_version_this_gpmodels_does_not_read_is_refused_naming_the_versions_it_reads(version):
    with pytest.raises(DataError, match=f"version {version}; this gpmodels reads version.s. {READ_VERSIONS[0]}"):
        check_model_arrays(_arrays(format_version=np.array(version)), "m.npz")


@pytest.mark.parametrize("version", [np.array(1.0), np.array([1]), np.array("1"), np.array(True)])
def test_a_format_version_that_is_no_integer_scalar_is_refused(version):
    with pytest.raises(DataError, match="model format version"):
        check_model_arrays(_arrays(format_version=version), "m.npz")


@pytest.mark.parametrize("name", sorted(set(MODEL_SCHEMA) - {"format_version", "kind", "X_shape"}))
@pytest.mark.parametrize("bad", [np.ones(2, dtype=complex), np.array([b"x"]), np.array([1 + 0j])])
def test_every_declared_entry_refuses_a_complex_or_bytes_array_by_name(name, bad):
    arrays = _arrays(**{name: bad})
    if name.startswith("X_") and name != "X_dense":
        arrays.update(X_dense=None, X_shape=np.array([3, 2]))
        arrays = {k: v for k, v in arrays.items() if v is not None}
        valid = {"X_indptr": np.zeros(4, int), "X_indices": np.zeros(0, int), "X_data": np.zeros(0)}
        arrays.update({**valid, name: bad})
    with pytest.raises(DataError, match=f"array {name!r}|lacks the array"):
        check_model_arrays(arrays, "m.npz")


def test_every_kind_requires_only_declared_entries():
    for kind, required in MODEL_KINDS.items():
        assert set(required) <= set(MODEL_SCHEMA), kind


@pytest.mark.parametrize(
    ("entry", "value", "rule"),
    [
        ("classes", np.array(["a", "a"]), "no value twice"),
        ("scaler_std", np.array([1.0, -1.0]), "every value > 0"),
        ("scaler_idf", np.array([1.0, 0.0]), "every value > 0"),
        ("alpha", np.zeros((3, 2), dtype=complex), "must be float64"),
        ("X_dense", np.zeros((3, 2), dtype=np.float32), "must be float64"),
    ],
)
def test_the_issues_cases_name_the_entry_and_the_rule(entry, value, rule):
    kinds = {"scaler_std": "standardize", "scaler_idf": "tfidf"}
    extra = {entry: value, "scaler_kind": np.array(kinds[entry])} if entry in kinds else {entry: value}
    with pytest.raises(DataError, match=f"array {entry!r} .*{rule}"):
        check_model_arrays(_arrays(**extra), "m.npz")


@pytest.mark.parametrize(("kind", "entry"), [("standardize", "scaler_std"), ("tfidf", "scaler_idf")])
def test_a_scaler_without_its_training_statistic_is_refused(kind, entry):
    with pytest.raises(DataError, match=f"{entry}"):
        check_model_arrays(_arrays(scaler_kind=np.array(kind)), "m.npz")


def _csr(indptr, indices, shape=(2, 3)):
    return _arrays(
        X_dense=None,
        X_indptr=np.array(indptr),
        X_indices=np.array(indices, dtype=np.int64),
        X_data=np.ones(len(indices)),
        X_shape=np.array(shape),
        alpha=np.zeros((shape[0], 2)),
    )


@given(
    indptr=st.lists(st.integers(-3, 6), min_size=3, max_size=3),
    indices=st.lists(st.integers(-2, 5), min_size=0, max_size=5),
)
def test_generated_csr_structures_are_refused_unless_canonical(indptr, indices):
    arrays = {k: v for k, v in _csr(indptr, indices).items() if v is not None}
    valid = (
        indptr[0] == 0
        and indptr == sorted(indptr)
        and indptr[-1] == len(indices)
        and all(0 <= i < 3 for i in indices)
        and all(len(set(indices[a:b])) == b - a for a, b in zip(indptr, indptr[1:]))
    )
    if valid:
        assert check_model_arrays(arrays, "m.npz") == "map"
    else:
        with pytest.raises(DataError, match="X_ind|CSR"):
            check_model_arrays(arrays, "m.npz")


#: labels of every type a model folder keeps exactly (three classes each)
LABELS = st.one_of(
    st.lists(st.integers(0, 2**64 - 1), min_size=3, max_size=3, unique=True).map(lambda v: np.array(v, np.uint64)),
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=3, max_size=3, unique=True).map(
        lambda v: np.array(v, np.int64)
    ),
    st.lists(st.integers(-(2**53), 2**53), min_size=3, max_size=3, unique=True).map(lambda v: np.array(v, np.float64)),
    st.lists(st.text("0123456789", min_size=1, max_size=4), min_size=3, max_size=3, unique=True).map(np.array),
    st.just(np.array([False, True, True])),
)
#: folder names the file system allows: any characters but '/' and NUL, not '.' or '..', at most 255 bytes
FOLDER_NAMES = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1, max_size=30
).filter(lambda s: s not in (".", "..") and len(s.encode()) <= 255)


@settings(max_examples=15)
@given(labels=LABELS, folder=FOLDER_NAMES)
def test_generated_labels_and_folder_names_round_trip_exactly(tmp_path_factory, labels, folder):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((18, 2))
    k = len(np.unique(labels))
    y = labels[np.arange(18) % k] if labels.dtype.kind != "b" else (np.arange(18) % 2).astype(bool)
    est = GPClassifier(objective="map").fit(X, y)
    path = tmp_path_factory.mktemp("labels") / folder
    back = load_classifier(est.save(path))
    assert back.classes_.dtype == est.classes_.dtype
    np.testing.assert_array_equal(back.classes_, est.classes_)
    pred, pred_back = est.predict(X), back.predict(X)
    assert pred_back.dtype == pred.dtype and pred_back.tolist() == pred.tolist()
    np.testing.assert_array_equal(back.predict_proba(X), est.predict_proba(X))
    assert (path / MODEL_FILE).is_file()


def _checkpoint(path):
    from gpmodels.optimize.checkpoint import RunIdentity, write_checkpoint
    from gpmodels.optimize.lbfgs import OuterState

    rng = np.random.default_rng(3)
    state = OuterState(
        x=rng.standard_normal(3),
        value=1.5,
        gradient=rng.standard_normal(3),
        S=rng.standard_normal((2, 3)),
        Yd=rng.standard_normal((2, 3)),
        inner={"alpha_0": rng.standard_normal((4, 2))},
        iteration=2,
        evaluations=3,
        failed=0,
        elapsed=0.1,
        history=(),
    )
    identity = RunIdentity({"a": 1}, np.ones(3), np.arange(6.0).reshape(3, 2))
    write_checkpoint(path, state, identity)
    return state, identity


def _rewrite_with_checksum(path, arrays):
    """What a hostile editor does: change arrays, then recompute the (unkeyed) checksum."""
    from gpmodels.optimize.checkpoint import _checksum

    header = arrays.pop("header")
    arrays.pop("checksum", None)
    digest = _checksum(header.tobytes(), arrays)
    with open(path, "wb") as fh:
        np.savez(fh, header=header, checksum=np.frombuffer(digest.encode(), np.uint8), **arrays)


@settings(max_examples=40)
@given(
    name=st.sampled_from(["x", "value", "gradient", "S", "Yd", "theta0", "probe", "inner_alpha_0"]),
    change=st.sampled_from(["float32", "complex", "int", "nan", "drop_row", "add_axis"]),
)
@example(name="inner_alpha_0", change="complex")
def test_generated_checkpoint_edits_with_a_recomputed_checksum_are_refused_or_read_unchanged(
    tmp_path_factory, name, change
):
    from gpmodels.errors import CheckpointError
    from gpmodels.optimize.checkpoint import read_checkpoint

    if name.startswith("inner_") and change in ("int", "drop_row", "add_axis", "float32"):
        return  # an inner state's shapes are its objective's (the next test); float32, int: any stored dtype
    path = tmp_path_factory.mktemp("ck") / "checkpoint.npz"
    state, identity = _checkpoint(path)
    arrays = dict(np.load(path, allow_pickle=False))
    a = arrays[name]
    arrays[name] = {
        "float32": lambda: a.astype(np.float32),
        "complex": lambda: a.astype(complex),
        "int": lambda: a.astype(np.int64),
        "nan": lambda: np.full(a.shape, np.nan),
        "drop_row": lambda: a[:-1] if a.ndim else a[None],
        "add_axis": lambda: a[None],
    }[change]()
    _rewrite_with_checksum(path, arrays)
    try:
        back, _ = read_checkpoint(path, identity)
    except CheckpointError as exc:
        assert "is corrupt" in str(exc) or "belongs to another run" in str(exc)
        return
    for field in ("x", "gradient", "S", "Yd"):
        np.testing.assert_array_equal(getattr(back, field), getattr(state, field))
    assert back.value == state.value
    np.testing.assert_array_equal(back.inner["alpha_0"], state.inner["alpha_0"])


@pytest.mark.parametrize("shape", [(29, 3), (30, 2), (30,), (31, 3)])
def test_cv_learning_refuses_fold_states_of_other_shapes_than_its_folds(shape):
    from gpmodels.data import kfold_partition
    from gpmodels.inference.cv.learn import CVObjective
    from gpmodels.inference.cv.options import CVOptions
    from gpmodels.kernels import RBF
    from gpmodels.likelihoods import Softmax
    from gpmodels.priors import IndependentGP

    X = np.random.default_rng(0).standard_normal((45, 2))
    op = IndependentGP(RBF(0.5), "semi", 2.0, 1.0).operator(X, 3)
    folds = kfold_partition(45, 3, seed=1)
    objective = CVObjective(op, Softmax(), np.eye(3)[np.arange(45) % 3], folds, CVOptions())
    good = {f"alpha_{k}": np.zeros((45 - len(I), 3)) for k, I in enumerate(folds)}
    assert len(objective.restore_inner(good).alphas) == 3
    with pytest.raises(InputError, match="alpha arrays must have the shapes"):
        objective.restore_inner({**good, "alpha_1": np.zeros(shape)})
