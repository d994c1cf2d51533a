"""The per-run ``report.md``: one human-readable page beside ``metrics.json`` in the report folder.

Sections: provenance (package version, start time, command line, spec digest), data (sizes), settings
(objective, model, evaluation), convergence (every ``*converged*`` flag of the metrics), scores
(test and train scores, calibration included), timings (every ``*seconds`` figure) and the plots of
the folder, linked as images.  Everything comes from the metrics dict and the resolved spec; the
file holds no figure that ``metrics.json`` does not.
"""

from __future__ import annotations

from pathlib import Path

from gpmodels.spec.sections.spec import Spec

__all__ = ["write_report_md", "REPORT_FILE"]

REPORT_FILE = "report.md"


def _value(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _table(rows) -> list[str]:
    rows = list(rows)
    if not rows:
        return ["(none)"]
    return ["| key | value |", "|---|---|", *(f"| `{k}` | {_value(v)} |" for k, v in rows)]


def _settings(spec: Spec) -> list[tuple[str, object]]:
    m, o, e = spec.model, spec.objective, spec.evaluation
    kernel = getattr(m.kernel, "type", None) if m.kernel is not None else "combination"
    return [("objective.type", o.type), ("objective.method", o.method), ("model.prior", m.prior),
            ("model.likelihood", m.likelihood), ("model.kernel", kernel), ("model.sharing", m.sharing),
            ("evaluation.predictive", e.predictive), ("seed", spec.seed)]


def write_report_md(out_dir: Path, spec: Spec, metrics: dict) -> Path:
    """Write ``report.md`` into ``out_dir`` from the run's ``metrics`` and resolved ``spec`` (module docstring)."""
    scores = [(k, v) for k, v in metrics.items() if k.startswith(("test_", "train_", "plugin_test_"))]
    flags = [(k, v) for k, v in metrics.items() if "converged" in k]
    times = [(k, v) for k, v in metrics.items() if k.endswith("seconds")]
    plots = sorted(p.name for p in out_dir.glob("*.png"))
    lines = [f"# Run `{spec.name}`", ""]
    if spec.description:
        lines += [spec.description.strip(), ""]
    lines += ["## Provenance", "", *_table((k, metrics.get(k)) for k in
                                           ("gpmodels_version", "started_at", "command", "spec_sha256")), ""]
    lines += ["## Data", "", *_table((k, metrics.get(k)) for k in ("n_train", "n_test", "n_classes", "n_features")),
              ""]
    lines += ["## Settings", "", *_table(_settings(spec)), "", "The whole resolved spec: `spec.resolved.yaml`.", ""]
    lines += ["## Convergence", "", *_table(flags), ""]
    unconverged = [k for k, v in flags if v is False]
    if unconverged:
        lines += [f"**Not converged:** {', '.join(f'`{k}`' for k in unconverged)}.", ""]
    lines += ["## Scores", "", *_table(scores), "", "## Timings (seconds)", "", *_table(times), ""]
    lines += ["## Plots", ""] + ([f"![{p}]({p})" for p in plots] or ["(none)"]) + [""]
    path = out_dir / REPORT_FILE
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
