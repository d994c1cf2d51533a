"""Plots of gpmodels/reports.py: every iterate in trace plots, x axes named by what they count, distinct
colours and an outside legend in hyperparameters.png, the reliability diagram."""

import json

import numpy as np
import pytest
from conftest import needs_matplotlib, toy_data_section, write_spec

from gpmodels import reports
from gpmodels.cli import main
from gpmodels.scoring.calibration import reliability_curve


@pytest.fixture
def figures(monkeypatch):
    """Every figure saved by reports: {file name: (x label, [(x, y) of each line], figure facts)}."""
    mcolors = pytest.importorskip("matplotlib.colors")
    seen = {}
    save = reports._save

    def spy(fig, path):
        fig.canvas.draw()
        ax = fig.axes[0]
        lines = [
            (np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float))
            for ln in ax.get_lines()
            if ln.get_label() and not ln.get_label().startswith("_")
        ]
        colours = [
            (mcolors.to_hex(ln.get_color()), ln.get_linestyle())
            for ln in ax.get_lines()
            if not ln.get_label().startswith("_")
        ]
        legend = ax.get_legend()
        outside = legend is not None and legend.get_window_extent().x0 >= ax.get_window_extent().x1
        seen[path.name if hasattr(path, "name") else str(path)] = {
            "xlabel": ax.get_xlabel(),
            "lines": lines,
            "colours": colours,
            "legend_outside": outside,
        }
        return save(fig, path)

    monkeypatch.setattr(reports, "_save", spy)
    return seen


def test_trace_plot_keeps_the_final_iterate_at_the_minimum(tmp_path, figures):
    values = [10.0, 4.0, 2.5, 2.0, 2.0]  # the last two at the minimum: gap 0
    reports.plot_traces({"Phi": values}, tmp_path / "t.png", log_gap=True)
    ((x, y),) = figures["t.png"]["lines"]
    assert x.size == len(values) and np.all(np.isfinite(y))
    gap, floor = reports.log_gap_values(values)
    assert y[-1] == floor == pytest.approx(0.05) and np.array_equal(y, gap)


def test_hyperparameter_paths_have_distinct_colours_and_the_legend_outside(tmp_path, figures):
    names = [f"kernel{c}.log_w" for c in range(6)] + [f"log_variance{c}" for c in range(6)]
    reports.plot_paths(names, np.random.default_rng(0).normal(size=(5, 12)), tmp_path / "h.png")
    f = figures["h.png"]
    assert len({c for c, _ in f["colours"]}) == 12, "12 lines need 12 colours"
    assert f["legend_outside"]
    assert len(set(reports.line_styles(60))) == 60 and len(set(reports.line_styles(200))) == 200


def _files(tmp_path):
    return toy_data_section(tmp_path, n=70, n_train=50, d=3, seed=3, spread=2.0)


@pytest.mark.parametrize(
    "objective, trace, unit, count",
    [
        ({"type": "map"}, "Phi", "Newton iteration", "newton_iterations"),
        ({"type": "cv", "cv": {"folds": 3, "outer": {"max_iter": 3}}}, "Psi", "outer iteration", "outer_iterations"),
        ({"type": "laplace", "laplace": {"learn_max_iter": 4}}, "criterion", "outer iteration", None),
    ],
)
def test_run_traces_plot_every_iterate_against_what_they_count(tmp_path, figures, objective, trace, unit, count):
    d = {
        "name": "p",
        "data": _files(tmp_path),
        "output": {"dir": str(tmp_path / "o")},
        "objective": objective,
        "model": {"kernel": {"type": "rbf", "w": 0.5}, "sharing": "tied", "variance": 2.0},
    }
    if objective["type"] == "laplace":
        d["data"]["positive_class"] = "1"
        d["model"]["likelihood"] = "logistic"
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"]) == 0
    m = json.loads((tmp_path / "o" / "metrics.json").read_text())
    f = figures[f"trace_{trace}.png"]
    assert f["xlabel"] == unit
    ((x, y),) = f["lines"]
    if count is None:  # Laplace: one value per outer iteration, the start first
        count_value = len(json.loads((tmp_path / "o" / "diagnostics.json").read_text())["trace"]) - 1
    else:
        count_value = m[count]
    assert x.size == count_value + 1 and np.all(np.isfinite(y))


def test_reliability_diagram_draws_the_non_empty_bins(tmp_path, figures):
    P = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.55, 0.45]])
    y = np.array([0, 1, 1, 0])
    reports.plot_reliability({"m": reliability_curve(P, y, 10)}, tmp_path / "r.png")
    lines = figures["r.png"]["lines"]
    assert [x.size for x, _ in lines] == [2, 3]  # the diagonal, then 3 non-empty bins


@needs_matplotlib
def test_trace_plot_draws_the_values_as_they_are_and_the_gradient_norm_on_a_log_axis(tmp_path, monkeypatch):
    drawn = {}
    save = reports._save

    def spy(fig, path):
        drawn["axes"] = [
            (ax.get_yscale(), [np.asarray(ln.get_ydata(), float) for ln in ax.get_lines()]) for ax in fig.axes
        ]
        return save(fig, path)

    monkeypatch.setattr(reports, "_save", spy)
    values, grads = [10.0, 4.0, 2.5, 2.0, 2.0], [3.0, 1.0, 0.1, 1e-4, 1e-7]
    reports.plot_traces({"Phi": values}, tmp_path / "t.png", gradients={"Phi": grads}, gradient_label="RMS")
    (scale_top, (top,)), (scale_bottom, (bottom,)) = drawn["axes"]
    assert scale_top == "linear" and np.array_equal(top, values)  # no "value - min" drop at the end
    assert scale_bottom == "log" and np.array_equal(bottom, grads)


def test_hyperparameter_names_carry_the_classes_they_act_on():
    import gpmodels as gp

    X = np.random.default_rng(0).normal(size=(8, 2))
    names = ("a", "b", "c")
    semi = gp.IndependentGP(gp.RBF(w=1.0), sharing="semi", sigma2=1.0, learn_sigma2=True).operator(X, 3)
    assert reports.class_scopes(semi.param_names, semi.param_classes(), names) == [
        "kernel0.log_w (all classes)",
        "log_variance0 (class a)",
        "log_variance1 (class b)",
        "log_variance2 (class c)",
        "log_sigma2",
    ]
    sep = gp.IndependentGP(gp.ARD(w=[1.0, 2.0]), sharing="separate").operator(X, 3)
    assert sep.param_classes() == ((0,), (0,), (1,), (1,), (2,), (2,), (0,), (1,), (2,))
    groups = gp.IndependentGP(
        gp.RBF(w=1.0), sharing=None, kernel_groups=[[0, 2], [1]], variance_groups=[[0], [1], [2]]
    ).operator(X, 3)
    assert reports.hyperparameter_classes(groups.describe(), groups.param_classes(), names) == {
        "kernel0.w": "classes a, c",
        "kernel1.w": "class b",
        "variance0": "class a",
        "variance1": "class b",
        "variance2": "class c",
    }


def test_hyperparameters_of_a_regression_keep_their_names():
    """One latent function and no class names (a regression): no class labels, no error."""
    assert reports.class_scopes(["kernel0.log_w", "log_variance0"], [(0,), (0,)], ()) == [
        "kernel0.log_w",
        "log_variance0",
    ]
    assert reports.hyperparameter_classes({"kernel0.w": 1.0}, [(0,)], ()) == {}


@pytest.mark.parametrize(
    "objective, trace",
    [
        ({"type": "map"}, "Phi"),
        ({"type": "one_vs_rest", "learn": False}, "Phi"),
        ({"type": "cv", "cv": {"folds": 3, "outer": {"max_iter": 2}}}, "Psi"),
        ({"type": "laplace", "laplace": {"learn_max_iter": 3}}, "criterion"),
        ({"type": "vb", "vb": {"learn_max_iter": 3}}, "criterion"),
    ],
)
@needs_matplotlib
def test_run_traces_draw_the_gradient_norm_of_every_iterate_below(tmp_path, monkeypatch, objective, trace):
    drawn = {}
    save = reports._save

    def spy(fig, path):
        drawn[path.name] = [
            (ax.get_yscale(), [np.asarray(ln.get_ydata(), float) for ln in ax.get_lines()]) for ax in fig.axes
        ]
        return save(fig, path)

    monkeypatch.setattr(reports, "_save", spy)
    d = {
        "name": "g",
        "data": _files(tmp_path),
        "output": {"dir": str(tmp_path / "o")},
        "objective": objective,
        "model": {"kernel": {"type": "rbf", "w": 0.5}, "sharing": "tied", "variance": 2.0},
    }
    if objective["type"] in ("laplace", "vb"):  # binary: the logistic likelihood of the marginal objectives
        d["data"]["positive_class"] = "1"
        d["model"]["likelihood"] = "logistic"
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"]) == 0
    (top_scale, top), (bottom_scale, bottom) = drawn[f"trace_{trace}.png"]
    assert top_scale == "linear" and bottom_scale == "log" and len(top) == len(bottom) >= 1
    assert all(t.size == b.size for t, b in zip(top, bottom))
    assert all(np.all(b[np.isfinite(b)] > 0) for b in bottom)


def _texts_of_every_figure(monkeypatch):
    """{file name: every text drawn (titles, axis labels, legend entries, figure notes)} of the figures saved."""
    seen = {}
    save = reports._save

    def spy(fig, path):
        texts = [t.get_text() for t in fig.texts]
        for ax in fig.axes:
            texts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
            if ax.get_legend() is not None:
                texts += [t.get_text() for t in ax.get_legend().get_texts()]
        seen[path.name] = [t for t in texts if t]
        return save(fig, path)

    monkeypatch.setattr(reports, "_save", spy)
    return seen


@needs_matplotlib
def test_every_figure_of_a_run_names_the_run_and_shows_the_greek_criteria(tmp_path, monkeypatch):
    seen = _texts_of_every_figure(monkeypatch)
    d = {
        "name": "named-run",
        "data": _files(tmp_path),
        "output": {"dir": str(tmp_path / "o")},
        "objective": {"type": "cv", "cv": {"folds": 3, "outer": {"max_iter": 2}}},
        "model": {"kernel": {"type": "rbf", "w": 0.5}, "sharing": "tied", "variance": 2.0},
    }
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"]) == 0
    assert {"error_reject.png", "trace_Psi.png", "hyperparameters.png"} <= set(seen)
    for name, texts in seen.items():
        assert any("named-run" in t for t in texts), (name, texts)
        assert not any("Psi" in t or "Phi" in t for t in texts), (name, texts)
    assert any("Ψ" in t for t in seen["trace_Psi.png"])


@needs_matplotlib
def test_a_studys_error_reject_figure_names_the_models_without_probabilities(tmp_path, monkeypatch):
    from conftest import three_model_study

    seen = _texts_of_every_figure(monkeypatch)
    study = three_model_study(tmp_path)
    study["models"].append(
        {"name": "svm", "model": {"kernel": {"type": "rbf", "w": 0.3}}, "objective": {"type": "crammer_singer"}}
    )
    study["output"] = {"dir": str(tmp_path / "st")}
    assert main(["study", str(write_spec(tmp_path, study)), "--quiet"]) == 0
    texts = seen["error_reject.png"]
    assert any("no probabilities" in t and "svm" in t for t in texts), texts
    assert not any(t.strip() == "svm" for t in texts)  # no curve, no legend entry
