"""The per-run ``report.md``: one human-readable page beside ``metrics.json`` in the report folder.

Sections: provenance (package version, start time, command line, spec digest), data (sizes), settings
(objective, model, evaluation), learned hyperparameters (every ``hyper.*`` value, natural units, with the
classes each acts on where a ``hyper_scope.*`` entry names them), convergence (every ``*converged*`` flag of the
metrics), scores (test and train scores, calibration included, with a legend that says what each score name means:
:func:`score_legend`), timings (every ``*seconds`` figure) and the plots of the folder, linked as
images.  Everything comes from the metrics dict and the resolved spec; the file holds no figure that
``metrics.json`` does not.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpmodels.driver.sections.spec import Spec
from gpmodels.safe_write import write_new

__all__ = ["write_report_md", "REPORT_FILE", "SCORE_MEANINGS", "score_legend"]

REPORT_FILE = "report.md"

#: What a score's base name means (the metrics keys are ``test_`` / ``train_`` / ``plugin_test_`` + base
#: name, + ``_argmax`` / ``_expected_loss`` for the decision rule of a hierarchical score).
SCORE_MEANINGS = {
    "error": "fraction of test points whose most probable class is wrong",
    "acc": "accuracy, 1 − error",
    "log_loss": "mean −log P̂(true class) (natural log)",
    "prec": "mean reciprocal rank of the true class among the classes sorted by probability (1: always "
    "ranked first; Seeger 2008, Sec. 6.1) — not scikit-learn's precision",
    "brier": "Brier score: mean squared distance of the probability vector to the one-hot truth",
    "ece": "expected calibration error of the top-label probability (15 equal-width bins)",
    "rmse": "root mean squared error of the predictive mean",
    "pacc": "parent accuracy: the predicted leaf's parent equals the true leaf's",
    "taxo": "taxo-loss: half the tree path length between the predicted and the true leaf",
    "hier_precision": "hierarchical precision (Kiritchenko et al.): Σ|S ∩ T| / Σ|S|, S and T the predicted and "
    "true classes with their ancestors, root excluded",
    "hier_recall": "hierarchical recall: Σ|S ∩ T| / Σ|T|",
    "hier_f1": "hierarchical F1: 2 hP hR / (hP + hR)",
    "zero_one": "multilabel ℓ0/1: fraction of examples whose node labels are not all right",
    "delta": "multilabel ℓΔ: mean number of wrong node labels",
    "f1": "micro F1 over tree nodes",
    "precision": "micro precision over tree nodes",
    "recall": "micro recall over tree nodes",
}


def _base_name(key: str) -> str:
    for prefix in ("plugin_test_", "test_", "train_"):
        if key.startswith(prefix):
            key = key[len(prefix) :]
            break
    for suffix in ("_argmax", "_expected_loss"):
        if key.endswith(suffix):
            key = key[: -len(suffix)]
    return key


def score_legend(keys) -> list[str]:
    """Markdown lines "`name`: meaning" for the score base names among ``keys`` that :data:`SCORE_MEANINGS`
    explains, in its order, plus the decision-rule suffixes when a key carries one."""
    keys = list(keys)
    bases = {_base_name(k) for k in keys}
    lines = [f"- `{b}`: {m}" for b, m in SCORE_MEANINGS.items() if b in bases]
    if any(re.fullmatch(r"level\d+_acc", b) for b in bases):
        lines.append(
            "- `level{d}_acc`: accuracy at tree depth d: the depth-d ancestors of the predicted and the true leaf agree"
        )
    if any(k.endswith(("_argmax", "_expected_loss")) for k in keys):
        lines.append(
            "- `…_argmax` / `…_expected_loss`: the decisions scored: the most probable class, or the "
            "Bayes rule of the score (Seeger 2008, Sec. 6.1)"
        )
    return lines


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
    return [
        ("objective.type", o.type),
        ("objective.solver", o.solver),
        ("model.prior", m.prior),
        ("model.likelihood", m.likelihood),
        ("model.kernel", kernel),
        ("model.sharing", m.sharing),
        ("evaluation.predictive", e.predictive),
        ("seed", spec.seed),
    ]


def write_report_md(out_dir: Path, spec: Spec, metrics: dict, *, figures_note: str | None = None) -> Path:
    """Write ``report.md`` into ``out_dir`` from the run's ``metrics`` and resolved ``spec`` (module docstring);
    ``figures_note``: a line for the Plots section when the run drew no figures (matplotlib missing)."""
    scores = [(k, v) for k, v in metrics.items() if k.startswith(("test_", "train_", "plugin_test_"))]
    flags = [(k, v) for k, v in metrics.items() if "converged" in k]
    times = [(k, v) for k, v in metrics.items() if k.endswith("seconds")]
    plots = sorted(p.name for p in out_dir.glob("*.png"))
    lines = [f"# Run `{spec.name}`", ""]
    if spec.description:
        lines += [spec.description.strip(), ""]
    lines += [
        "## Provenance",
        "",
        *_table((k, metrics.get(k)) for k in ("gpmodels_version", "started_at", "command", "spec_sha256")),
        "",
    ]
    lines += ["## Data", "", *_table((k, metrics.get(k)) for k in ("n_train", "n_test", "n_classes", "n_features")), ""]
    lines += ["## Settings", "", *_table(_settings(spec)), "", "The whole resolved spec: `spec.resolved.yaml`.", ""]
    hyper = [(k[len("hyper.") :], v) for k, v in metrics.items() if k.startswith("hyper.")]
    if hyper:
        scope = {k[len("hyper_scope.") :]: v for k, v in metrics.items() if k.startswith("hyper_scope.")}
        lines += [
            "## Learned hyperparameters",
            "",
            "| hyperparameter | value | acts on |",
            "|---|---|---|",
            *(f"| `{k}` | {_value(v)} | {scope.get(k, '')} |" for k, v in hyper),
            "",
        ]
    plan = [(k[len("plan.") :], v) for k, v in metrics.items() if k.startswith("plan.")]
    if plan:
        lines += [
            "## Execution plan",
            "",
            "| decision | choice | why |",
            "|---|---|---|",
            *(f"| `{k}` | {_value(v)} | {metrics.get(f'plan_reason.{k}', '')} |" for k, v in plan),
            "",
        ]
    lines += ["## Convergence", "", *_table(flags), ""]
    unconverged = [k for k, v in flags if v is False]
    if unconverged:
        lines += [f"**Not converged:** {', '.join(f'`{k}`' for k in unconverged)}.", ""]
    lines += ["## Scores", "", *_table(scores), ""]
    legend = score_legend(k for k, _ in scores)
    if legend:
        lines += ["What the names mean:", "", *legend, ""]
    lines += ["## Timings (seconds)", "", *_table(times), ""]
    lines += ["## Plots", ""] + ([f"![{p}]({p})" for p in plots] or [figures_note or "(none)"]) + [""]
    return write_new(out_dir, REPORT_FILE, "\n".join(lines))
