"""`evaluation.predictive: plugin | laplace` of the map and cv runners (gpmodels/driver/runners/common.py)."""

import json

import pytest
from conftest import toy_data_section, write_spec

from gpmodels.cli import main
from gpmodels.driver.sections.spec import Spec
from gpmodels.errors import SpecError


def _files(tmp_path, C=3, n=60):
    # overlapping classes: uncertain points
    toy_data_section(tmp_path, n=n + 30, n_train=n, C=C, d=3, seed=4, spread=1.2)


def _spec(tmp_path, name, evaluation, objective=None, **model):
    d = {
        "name": name,
        "data": {"path": str(tmp_path / "train.npz"), "test_path": str(tmp_path / "test.npz")},
        "model": {"kernel": {"type": "rbf", "w": 0.5}, "sharing": "tied", "variance": 8.0, **model},
        "evaluation": evaluation,
        "output": {"dir": str(tmp_path / name)},
    }
    if objective is not None:
        d["objective"] = objective
    return write_spec(tmp_path, d, f"{name}.yaml")


def _metrics(tmp_path, name):
    return json.loads((tmp_path / name / "metrics.json").read_text())


def test_laplace_predictive_in_a_map_run_differs_from_the_plugin_run_of_the_same_model(tmp_path):
    _files(tmp_path)
    assert main(["run", str(_spec(tmp_path, "plug", {})), "--quiet"]) == 0
    assert (
        main(["run", str(_spec(tmp_path, "lap", {"predictive": "laplace", "predictive_samples": 4000})), "--quiet"])
        == 0
    )
    plug, lap = _metrics(tmp_path, "plug"), _metrics(tmp_path, "lap")
    assert plug["predictive"] == "plugin" and lap["predictive"] == "laplace"
    # the laplace run records the plug-in scores of the same fit: equal to the plug-in run's
    assert lap["plugin_test_log_loss"] == pytest.approx(plug["test_log_loss"], rel=1e-12)
    assert lap["plugin_test_brier"] == pytest.approx(plug["test_brier"], rel=1e-12)
    assert lap["plugin_test_error"] == pytest.approx(plug["test_error"], abs=1e-12)
    # averaging over Σ_* changes the probabilities (variance 8 leaves Σ_* large away from the data)
    assert abs(lap["test_log_loss"] - plug["test_log_loss"]) > 1e-3
    assert lap["predictive_converged"] and lap["predictive_matvecs"] > 0 and lap["predictive_seconds"] > 0
    assert "predictive_seconds" not in plug


def test_laplace_predictive_is_seeded_by_the_spec_seed(tmp_path):
    _files(tmp_path)
    for name in ("a", "b"):
        assert (
            main(["run", str(_spec(tmp_path, name, {"predictive": "laplace", "predictive_samples": 300})), "--quiet"])
            == 0
        )
    assert _metrics(tmp_path, "a")["test_log_loss"] == _metrics(tmp_path, "b")["test_log_loss"]


def test_lanczos_latent_at_full_rank_gives_the_exact_predictive(tmp_path):
    _files(tmp_path, n=20)
    ev = {"predictive": "laplace", "predictive_samples": 500}
    assert main(["run", str(_spec(tmp_path, "ex", ev)), "--quiet"]) == 0
    assert (
        main(
            [
                "run",
                str(_spec(tmp_path, "lz", {**ev, "predictive_latent": "lanczos", "predictive_rank": 60})),
                "--quiet",
            ]
        )
        == 0
    )
    ex, lz = _metrics(tmp_path, "ex"), _metrics(tmp_path, "lz")
    assert lz["predictive_latent"] == "lanczos"
    assert lz["test_log_loss"] == pytest.approx(ex["test_log_loss"], rel=1e-6)


def test_laplace_predictive_after_cv_learning(tmp_path):
    _files(tmp_path, n=30)
    objective = {"type": "cv", "cv": {"folds": 3, "outer": {"max_iter": 2}}}
    assert main(
        [
            "run",
            str(
                _spec(
                    tmp_path, "cv", {"predictive": "laplace", "predictive_samples": 300}, objective, sharing="separate"
                )
            ),
            "--quiet",
        ]
    ) in (0,)
    m = _metrics(tmp_path, "cv")
    assert m["predictive"] == "laplace" and "plugin_test_log_loss" in m
    assert m["test_log_loss"] != m["plugin_test_log_loss"]


def test_laplace_predictive_of_a_binary_logistic_model(tmp_path):
    toy_data_section(tmp_path, n=60, n_train=40, C=2, d=2, seed=1, spread=1.0)
    assert (
        main(
            [
                "run",
                str(_spec(tmp_path, "lo", {"predictive": "laplace", "predictive_samples": 500}, likelihood="logistic")),
                "--quiet",
            ]
        )
        == 0
    )
    m = _metrics(tmp_path, "lo")
    assert m["predictive"] == "laplace" and m["test_log_loss"] != m["plugin_test_log_loss"]


def test_predictive_keys_are_checked_at_construction():
    base = {"name": "x", "data": {"dataset": "satimage"}, "model": {"kernel": {"type": "rbf", "w": 1.0}}}
    with pytest.raises(SpecError, match="evaluation.predictive_samples"):
        Spec.from_dict({**base, "evaluation": {"predictive": "laplace", "predictive_samples": 0}})
    with pytest.raises(SpecError, match="evaluation.predictive_latent"):
        Spec.from_dict({**base, "evaluation": {"predictive_latent": "dense"}})
    with pytest.raises(SpecError, match="objectives map and cv; got objective 'laplace'"):
        Spec.from_dict(
            {
                **base,
                "model": {"kernel": {"type": "rbf", "w": 1.0}, "likelihood": "logistic"},
                "data": {"dataset": "satimage", "positive_class": "1"},
                "objective": {"type": "laplace"},
                "evaluation": {"predictive": "laplace"},
            }
        )
    assert Spec.from_dict({**base, "evaluation": {"predictive": "laplace"}}).evaluation.predictive == "laplace"
