"""What every classification run writes: Brier score, ECE and reliability.png; and each run's report.md."""

import json

import numpy as np
import pytest
from conftest import figures, needs_matplotlib, toy_data_section, write_spec

from gpmodels.cli import main
from gpmodels.driver.saved import load_model
from gpmodels.scoring.calibration import brier_score, expected_calibration_error


def _run(tmp_path, objective=None, extra=None, name="r", flags=()):
    d = {
        "name": name,
        "description": "a toy run",
        "data": toy_data_section(tmp_path, n=80, n_train=50, d=3, seed=5, spread=1.5),
        "model": {"kernel": {"type": "rbf", "w": 0.5}, "sharing": "tied", "variance": 2.0},
        "output": {"dir": str(tmp_path / name)},
        **(extra or {}),
    }
    if objective:
        d["objective"] = objective
    assert main(["run", str(write_spec(tmp_path, d, f"{name}.yaml")), "--quiet", *flags]) == 0
    out = tmp_path / name
    return out, json.loads((out / "metrics.json").read_text())


def test_classification_metrics_hold_brier_and_ece_of_the_test_probabilities(tmp_path):
    out, m = _run(tmp_path)
    P = load_model(out).predict_proba(np.load(tmp_path / "test.npz")["X"])
    y = np.load(tmp_path / "test.npz")["y"]
    assert m["test_brier"] == pytest.approx(brier_score(P, y), rel=1e-6)
    assert m["test_ece"] == pytest.approx(expected_calibration_error(P, y), rel=1e-6, abs=1e-9)
    assert all((out / f).stat().st_size > 1000 for f in figures("reliability.png"))


def test_report_md_has_provenance_sizes_settings_flags_scores_and_plots(tmp_path):
    out, m = _run(tmp_path)
    text = (out / "report.md").read_text()
    for needle in (
        "# Run `r`",
        "a toy run",
        "## Provenance",
        m["gpmodels_version"],
        m["spec_sha256"],
        m["started_at"],
        "## Data",
        "| `n_train` | 50 |",
        "| `n_test` | 30 |",
        "| `n_classes` | 3 |",
        "## Settings",
        "| `objective.type` | map |",
        "| `evaluation.predictive` | plugin |",
        "## Convergence",
        "| `converged` | True |",
        "## Scores",
        "`test_error`",
        "`test_brier`",
        "`test_ece`",
        "`test_log_loss`",
        "## Timings",
        "`fit_seconds`",
        *(f"![{f}]({f})" for f in figures("reliability.png", "error_reject.png", "trace_Phi.png")),
    ):
        assert needle in text, needle
    assert f"| `test_error` | {m['test_error']:.6g} |" in text
    assert "Not converged" not in text


def test_report_md_names_unconverged_parts(tmp_path):
    out, m = _run(tmp_path, {"type": "map", "newton": {"max_iter": 1}}, name="short")
    assert m["converged"] is False
    assert "**Not converged:** `converged`." in (out / "report.md").read_text()


@needs_matplotlib
def test_a_forced_rerun_leaves_no_plot_or_report_of_the_earlier_run(tmp_path):
    out, _ = _run(tmp_path)
    assert (out / "reliability.png").exists()
    (out / "report.md").write_text("stale")
    _, m = _run(tmp_path, {"type": "crammer_singer"}, flags=("--force",))  # no probabilities: no reliability.png
    assert "test_brier" not in m
    assert not (out / "reliability.png").exists()
    text = (out / "report.md").read_text()
    assert text != "stale" and "| `objective.type` | crammer_singer |" in text


def test_score_legend_explains_the_names_it_knows():
    from gpmodels.driver.report_md import score_legend

    lines = score_legend(["test_prec", "test_hier_f1_argmax", "test_level2_acc_expected_loss", "fit_seconds"])
    text = "\n".join(lines)
    assert "`prec`: mean reciprocal rank of the true class" in text and "not scikit-learn's precision" in text
    assert "`hier_f1`: hierarchical F1" in text and "`level{d}_acc`" in text and "`…_argmax`" in text
    assert "seconds" not in text
    assert score_legend(["test_something_new"]) == []


def test_report_md_lists_the_learned_hyperparameters_with_their_classes(tmp_path):
    out, m = _run(
        tmp_path,
        objective={"type": "cv", "cv": {"folds": 3, "outer": {"max_iter": 2}}},
        extra={"model": {"kernel": {"type": "rbf", "w": 0.5}, "sharing": "semi", "variance": 2.0}},
    )
    text = (out / "report.md").read_text()
    section = text.split("## Learned hyperparameters")[1].split("##")[0]
    for k in m:
        if k.startswith("hyper."):
            assert f"`{k[len('hyper.') :]}`" in section
    assert "| `kernel0.w` |" in section and "all classes" in section
    assert m["hyper_scope.variance0"].startswith("class ") and m["hyper_scope.kernel0.w"] == "all classes"
