"""Plots for run and study reports (matplotlib with the Agg backend; files, never windows).

- ``plot_error_reject``: error on the accepted points against the rejected fraction (Seeger 2008,
  Fig. 3), one line per model;
- ``plot_traces``: criterion values over iterations (Φ per Newton iteration, Ψ per outer iteration) on
  a linear axis and, below, the gradient norm on a log axis;
- ``plot_paths``: hyperparameters over outer iterations, named with the classes they act on
  (:func:`class_scopes`);
- ``plot_bars``: grouped bar chart (e.g. per-level scores of a hierarchy);
- ``plot_reliability``: reliability diagram, accuracy against confidence per bin (top label).
matplotlib is the optional extra ``plots`` (``pip install gpmodels[plots]``), imported on first use so that
importing gpmodels stays fast.  :func:`plots_available` says whether it is installed; the driver skips the
figures without it and says so once (:data:`PLOTS_SKIPPED`, in the run's messages, run.log and report.md),
and a plot function called without it raises :class:`~gpmodels.errors.OptionalDependencyError`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from gpmodels.errors import OptionalDependencyError
from gpmodels.safe_write import write_new

__all__ = [
    "plots_available",
    "PLOTS_EXTRA",
    "PLOTS_SKIPPED",
    "CRITERION_LABELS",
    "criterion_label",
    "plot_error_reject",
    "plot_traces",
    "plot_paths",
    "plot_bars",
    "read_error_reject_csv",
    "plot_reliability",
    "line_styles",
    "log_gap_values",
    "class_scopes",
    "hyperparameter_classes",
]


#: how to install the figures' package
PLOTS_EXTRA = "pip install gpmodels[plots]"
#: the one line a run or study writes when it skips its figures
PLOTS_SKIPPED = f"figures skipped: matplotlib is not installed ({PLOTS_EXTRA} draws them)"


#: criterion trace keys (ASCII: they name the files, ``trace_Psi.png``) -> the symbols the figures show
CRITERION_LABELS = {"Psi": "Ψ", "Phi": "Φ"}


def plots_available() -> bool:
    """Whether matplotlib, the package of the ``plots`` extra, is installed (found without importing it)."""
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # an import hook that refuses it, a half-removed module
        return False


def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise OptionalDependencyError(
            f"drawing a figure needs matplotlib, which is not installed: {PLOTS_EXTRA}"
        ) from None
    return matplotlib


def _plt():
    matplotlib = _matplotlib()

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _integer_ticks(*axes) -> None:
    """Iteration axes: ticks at whole numbers only."""
    from matplotlib.ticker import MaxNLocator

    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _save(fig, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fmt = path.suffix.lstrip(".") or "png"
    write_new(path.parent, path.name, lambda fh: fig.savefig(fh, dpi=110, format=fmt))
    _plt().close(fig)
    return path


def read_error_reject_csv(path) -> list[tuple[float, float]]:
    rows = Path(path).read_text().strip().splitlines()[1:]
    return [tuple(float(v) for v in r.split(",")) for r in rows]


def criterion_label(name: str) -> str:
    """The symbol a figure shows for a criterion trace's key (``Psi`` -> Ψ, ``Phi`` -> Φ); other keys as they are."""
    return CRITERION_LABELS.get(name, name)


def plot_error_reject(
    curves: Mapping[str, Sequence[tuple[float, float]]],
    path,
    title: str = "Error-reject curve",
    without_probabilities: Sequence[str] = (),
) -> Path:
    """One curve per model; ``without_probabilities``: models that have none (no curve), named in a note in
    the figure so that their absence is not read as a missing run."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for name, curve in curves.items():
        a, e = zip(*curve)
        ax.plot(a, e, marker="o", ms=3, label=name)
    ax.set_xlabel("rejected fraction")
    ax.set_ylabel("error on accepted points")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if without_probabilities:
        fig.subplots_adjust(bottom=0.22)
        fig.text(
            0.01,
            0.01,
            "no probabilities, no curve: " + ", ".join(without_probabilities),
            fontsize=7,
            color="0.35",
            ha="left",
            va="bottom",
            wrap=True,
        )
    return _save(fig, path)


def log_gap_values(values) -> tuple[np.ndarray, float]:
    """(value - min(value), floor) with every point kept: the gap is 0 at the minimum (usually the final
    iterate), which a log axis cannot show, so zeros are drawn at ``floor`` = a tenth of the smallest
    positive gap (1 when there is none); non-finite values stay NaN."""
    v = np.asarray(values, dtype=float)
    finite = np.isfinite(v)
    gap = np.full(v.shape, np.nan)
    if not finite.any():
        return gap, 1.0
    gap[finite] = v[finite] - v[finite].min()
    positive = gap[finite & (gap > 0)]
    floor = float(positive.min()) / 10.0 if positive.size else 1.0
    gap[finite & (gap <= 0)] = floor
    return gap, floor


def plot_traces(
    traces: Mapping[str, Sequence[float]],
    path,
    xlabel: str = "iteration",
    ylabel: str = "criterion",
    title: str = "",
    log_gap: bool = False,
    gradients: Mapping[str, Sequence[float]] | None = None,
    gradient_label: str = "gradient norm",
) -> Path:
    """One line per trace, every iterate from the start (0) to the final one, the values as they are;
    ``gradients`` (the same names and lengths) adds a panel below with the gradient norm of each iterate on
    a log axis, which shows convergence without the artefact of ``log_gap``: that option plots value -
    min(value) on a log axis, where the minimum drawn at the floor of :func:`log_gap_values` (a dotted line
    marks it) makes every trace end in a steep drop."""
    plt = _plt()
    if gradients:
        fig, (ax, axg) = plt.subplots(2, 1, figsize=(5.5, 6), gridspec_kw={"height_ratios": [3, 2]})
        for name, g in gradients.items():
            g = np.asarray(g, dtype=float)
            axg.semilogy(np.arange(g.size), np.where(g > 0, g, np.nan), marker="o", ms=3, label=name)
        axg.set_xlabel(xlabel)
        axg.set_ylabel(gradient_label)
        axg.grid(alpha=0.3, which="both")
        if len(gradients) > 1:
            axg.legend(fontsize=8)
        _integer_ticks(axg)
    else:
        fig, ax = plt.subplots(figsize=(5.5, 4))
    for name, values in traces.items():
        v = np.asarray(values, dtype=float)
        if log_gap:
            gap, floor = log_gap_values(v)
            ax.semilogy(np.arange(v.size), gap, marker="o", ms=3, label=criterion_label(name))
            ax.axhline(floor, color="0.6", lw=0.8, ls=":")
        else:
            ax.plot(np.arange(v.size), v, marker="o", ms=3, label=criterion_label(name))
    ax.set_xlabel(xlabel)
    ylabel = criterion_label(ylabel)
    ax.set_ylabel(f"{ylabel} - min (min at the dotted floor)" if log_gap else ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    if len(traces) > 1:
        ax.legend(fontsize=8)
    _integer_ticks(ax)
    return _save(fig, path)


def plot_paths(
    names: Sequence[str], values, path, xlabel: str = "outer iteration", title: str = "Hyperparameters"
) -> Path:
    """values: (iterations, p) array of log-space hyperparameters, one line per name, each with its own
    colour and line style (:func:`line_styles`); the legend sits right of the axes, outside the data."""
    plt = _plt()
    v = np.atleast_2d(np.asarray(values, dtype=float))
    styles = line_styles(len(names))
    ncol = 1 if len(names) <= 20 else 2
    fig, ax = plt.subplots(figsize=(6 + 2.2 * ncol, 4))
    for j, name in enumerate(names):
        color, ls = styles[j]
        ax.plot(np.arange(v.shape[0]), v[:, j], marker=".", color=color, ls=ls, label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("value (log space)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=ncol, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    _integer_ticks(ax)
    return _save(fig, path)


def class_scopes(
    names: Sequence[str], param_classes: Sequence[Sequence[int] | None], class_names: Sequence[str]
) -> list[str]:
    """Each hyperparameter name with the classes it acts on (``Operator.param_classes``):
    ``kernel0.log_w (class 1)``, ``log_variance0 (all classes)``, ``kernel1.log_w (classes 2, 3)``;
    a name without classes is kept as it is, and so is every name when there are no class names to give
    (regression: one latent function)."""
    return [
        str(name) if _scope(cls, class_names) is None else f"{name} ({_scope(cls, class_names)})"
        for name, cls in zip(names, param_classes)
    ]


def hyperparameter_classes(
    hyperparameters: Mapping[str, float], param_classes: Sequence[Sequence[int] | None], class_names: Sequence[str]
) -> dict[str, str]:
    """{name: the classes it acts on, in words} for the hyperparameters (in ``params`` order) that act on
    particular classes, for metrics.json and report.md (none without class names: regression)."""
    return {
        name: _scope(cls, class_names)
        for name, cls in zip(hyperparameters, param_classes)
        if _scope(cls, class_names) is not None
    }


def _scope(cls: Sequence[int] | None, class_names: Sequence[str]) -> str | None:
    """The classes ``cls`` in words; None for no classes, or for indices without a name (regression)."""
    if cls is None or not len(cls) or max(cls) >= len(class_names):
        return None
    if len(cls) == len(class_names) and len(cls) > 1:
        return "all classes"
    if len(cls) == 1:
        return f"class {class_names[cls[0]]}"
    return "classes " + ", ".join(str(class_names[c]) for c in cls[:4]) + (", …" if len(cls) > 4 else "")


def line_styles(n: int) -> list[tuple[tuple, str]]:
    """n distinct (colour, line style) pairs: the 20 colours of matplotlib's ``tab20`` (so up to 20 lines
    differ in colour), then the same colours dashed, dotted, dash-dotted (80 distinct pairs), and beyond
    that colours sampled from ``hsv``."""
    matplotlib = _matplotlib()

    tab = matplotlib.colormaps["tab20"]
    dashes = ("-", "--", ":", "-.")
    if n <= 20 * len(dashes):
        return [(tuple(tab(k % 20)), dashes[k // 20]) for k in range(n)]
    hsv = matplotlib.colormaps["hsv"]
    return [(tuple(hsv(k / n)), dashes[k % len(dashes)]) for k in range(n)]


def plot_bars(
    groups: Sequence[str], series: Mapping[str, Sequence[float]], path, ylabel: str = "score", title: str = ""
) -> Path:
    """Grouped bars: one group per entry of ``groups``, one bar per series."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(4.5, 0.9 * len(groups) * max(1, len(series))), 4))
    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    for k, (name, vals) in enumerate(series.items()):
        ax.bar(x + k * width - 0.4 + width / 2, vals, width, label=name)
    ax.set_xticks(x)
    ax.set_xticklabels(groups)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    return _save(fig, path)


def plot_reliability(curves: Mapping[str, object], path, title: str = "Reliability diagram") -> Path:
    """Reliability diagram: per confidence bin, the accuracy of the top-label predictions against their
    mean confidence (one line per :class:`~gpmodels.scoring.calibration.ReliabilityCurve`; empty bins
    left out), the diagonal of perfect calibration, and the share of points per bin as bars below."""
    plt = _plt()
    fig, (ax, axc) = plt.subplots(2, 1, figsize=(5, 5.5), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot([0, 1], [0, 1], color="0.5", lw=1, ls="--", label="calibrated")
    width = 1.0 / max(1, len(curves))
    for k, (name, c) in enumerate(curves.items()):
        full = np.asarray(c.counts) > 0
        ax.plot(np.asarray(c.confidence)[full], np.asarray(c.accuracy)[full], marker="o", ms=4, label=name)
        edges = np.asarray(c.edges)
        bw = np.diff(edges) * width
        axc.bar(edges[:-1] + k * bw, np.asarray(c.counts) / max(1, int(np.sum(c.counts))), bw, align="edge", label=name)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    axc.set_xlabel("confidence (largest class probability)")
    axc.set_ylabel("share of points")
    axc.grid(alpha=0.3, axis="y")
    return _save(fig, path)
