"""The crammer_singer and hm3 objectives from specs; the multilabel loaders on ../shared/data."""

import json

import numpy as np
import pytest
from conftest import ROOT, SHARED_DATA, assert_spec_error, needs_shared_data, toy_classification, write_spec

from gpmodels.baselines.crammer_singer.loops import compiled_available
from gpmodels.cli import main
from gpmodels.data.multilabel_sets import encode_funcat_features, load_multilabel
from gpmodels.driver.loader import load_spec
from gpmodels.errors import DataError
from gpmodels.scoring.multilabel import check_multilabels

needs_data = needs_shared_data("enron_corr")


@pytest.mark.parametrize("engine", ["auto", "numpy"])
def test_crammer_singer_spec_runs(tmp_path, engine):
    X, y = toy_classification(90, 3, d=4, seed=0)
    np.savez(tmp_path / "tr.npz", X=X[:60], y=y[:60])
    np.savez(tmp_path / "te.npz", X=X[60:], y=y[60:])
    d = {
        "name": "cs",
        "data": {"path": str(tmp_path / "tr.npz"), "test_path": str(tmp_path / "te.npz")},
        "model": {"kernel": {"type": "rbf", "w": "auto"}},
        "objective": {"type": "crammer_singer", "crammer_singer": {"beta": 0.5, "epsilon": 1e-4, "engine": engine}},
        "evaluation": {"train_scores": True},
        "output": {"dir": str(tmp_path / "out")},
    }
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"]) == 0
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["test_error"] < 0.2 and m["converged"] and m["duality_gap"] >= -1e-9 and m["n_support"] > 0
    assert all(not isinstance(v, (dict, list)) for v in m.values())
    assert m["engine"] == ("numpy" if engine == "numpy" or not compiled_available() else "compiled")


def test_bad_max_margin_specs_name_the_key():
    base = {"name": "x", "data": {"dataset": "satimage"}, "model": {"kernel": {"type": "linear"}}}
    for obj, key, msg in [
        (
            {"type": "crammer_singer", "crammer_singer": {"cooling": "fast"}},
            "objective.crammer_singer.cooling",
            "one of",
        ),
        ({"type": "crammer_singer", "crammer_singer": {"engine": "c"}}, "objective.crammer_singer.engine", "one of"),
        (
            {"type": "crammer_singer", "crammer_singer": {"selection": "cyclic"}},
            "objective.crammer_singer.selection",
            "cyclic",
        ),
        ({"type": "hm3", "hm3": {"compare": ["svn"]}}, "objective.hm3.compare", "'svn'"),
        ({"type": "hm3", "hm3": {"los": "delta"}}, "objective.hm3.los", "did you mean 'loss'"),
    ]:
        assert_spec_error({**base, "objective": obj}, key, msg)


@pytest.mark.parametrize("name", ["satimage-cs", "enron-hm3", "news20-hm3"])
def test_example_specs_are_valid(name):
    spec, _ = load_spec(ROOT / "specs" / f"{name}.yaml")
    assert spec.objective.type in ("crammer_singer", "hm3")


@needs_data
def test_hm3_spec_on_enron_subsample(tmp_path):
    d = {
        "name": "e",
        "data": {
            "dataset": "enron_corr",
            "root": str(SHARED_DATA),
            "scaling": "unit_norm",
            "max_train": 120,
            "max_test": 60,
        },
        "model": {"kernel": {"type": "linear"}},
        "objective": {"type": "hm3", "hm3": {"max_passes": 5, "chunk_size": 60, "compare": ["hsvm"]}},
        "output": {"dir": str(tmp_path / "out")},
    }
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"]) == 0
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["n_train"] == 120 and m["n_test"] == 60 and m["n_classes"] == 56
    for key in (
        "test_zero_one",
        "test_delta",
        "test_htilde_sibling",
        "test_f1",
        "test_level3_recall",
        "hsvm_f1",
        "hsvm_fit_seconds",
        "dual",
        "duality_gap",
    ):
        assert key in m
    assert 0.0 < m["test_f1"] <= 1.0


@needs_data
@pytest.mark.parametrize("name", ["enron_corr", "derisi_FUN", "church_FUN"])
def test_multilabel_loaders(name):
    d = load_multilabel(name, SHARED_DATA)
    check_multilabels(d.Y_train, d.tree)
    assert d.Y_train.shape[1] == d.tree.n_nodes == d.Y_test.shape[1]
    X = d.X_train.toarray() if d.sparse else d.X_train
    assert np.all(np.isfinite(X)) and np.all(np.isfinite(d.X_test.toarray() if d.sparse else d.X_test))
    if name == "derisi_FUN":
        assert d.X_train.shape == (1608 + 842, 63) and d.tree.n_nodes == 499
        assert load_multilabel(name, SHARED_DATA, validation="drop").X_train.shape == (1608, 63)
    if name == "enron_corr":
        assert d.X_train.shape == (988, 1001) and d.Y_train.sum(axis=1).mean() == pytest.approx(5.11, abs=0.01)


def test_funcat_encoding_and_unknown_sets():
    Xtr = np.array([[1.0, 0.0], [np.nan, 2.0], [3.0, np.nan]])
    Xte = np.array([[np.nan, 1.0]])
    a, b = encode_funcat_features(Xtr, Xte, [("numeric", 0), ("nominal", 3)])
    assert a.shape == (3, 4) and b.shape == (1, 4)
    np.testing.assert_allclose(a[:, 0], [-1.0 / np.sqrt(2 / 3), 0.0, 1.0 / np.sqrt(2 / 3)])  # mean 2, std sqrt(2/3)
    np.testing.assert_array_equal(a[:, 1:], [[1, 0, 0], [0, 0, 1], [0, 0, 0]])
    assert b[0, 0] == 0.0 and b[0, 1:].tolist() == [0, 1, 0]
    with pytest.raises(DataError, match="did you mean 'derisi_FUN'"):
        load_multilabel("derisi_FUNN", SHARED_DATA)
