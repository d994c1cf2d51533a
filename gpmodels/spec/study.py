"""Study specs: several models on the same data and splits, compared in one table.

A study names the data, evaluation and output once and lists ``models``, each with its own
``name``, ``model`` and ``objective`` sections.  Every entry becomes an ordinary :class:`Spec`
(sharing the study's seed, so the same split and subsamples) and runs through ``run_spec`` into
``<out>/<entry name>/``; the study then writes ``study.md``, ``study.csv`` and ``study.json`` (the
comparison table), ``error_reject.png`` (all models' curves) and ``report.md`` linking them.
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import attrs

from gpmodels.errors import SpecError
from gpmodels.spec.schema import Node, option
from gpmodels.spec.sections import DataSpec, EvaluationSpec, ModelSpec, ObjectiveSpec, OutputSpec, Spec

__all__ = ["StudyEntry", "StudySpec", "run_study", "DEFAULT_COLUMNS"]

DEFAULT_COLUMNS = ("test_error", "test_log_loss", "test_prec", "fit_seconds", "total_seconds")


@attrs.frozen
class StudyEntry(Node):
    """One model of a study: its name, model and objective (data and evaluation are the study's)."""

    name: str = option(kind="str", doc="the model's name (its row in the table and its sub-folder)")
    model: ModelSpec = option(kind="node", node=ModelSpec, doc="model")
    objective: ObjectiveSpec = option(ObjectiveSpec, kind="node", node=ObjectiveSpec, doc="objective")


@attrs.frozen
class StudySpec(Node):
    """A study: one data set and split, several models, one comparison table."""

    name: str = option(kind="str", doc="the study's name")
    description: str | None = option(None, kind="str", doc="free text")
    seed: int = option(0, kind="int", minimum=0, doc="seed shared by every model (same split and subsamples)")
    data: DataSpec = option(kind="node", node=DataSpec, doc="data, shared by all models")
    evaluation: EvaluationSpec = option(EvaluationSpec, kind="node", node=EvaluationSpec, doc="evaluation")
    output: OutputSpec = option(OutputSpec, kind="node", node=OutputSpec, doc="output folder of the study")
    models: tuple = option(kind="list[node]", node=StudyEntry, doc="the compared models")
    columns: tuple = option(DEFAULT_COLUMNS, kind="list[str]", doc="metrics shown in the table")

    def check(self, path):
        if not self.models:
            raise SpecError("a study needs at least one model", f"{path}.models" if path else "models")
        names = [m.name for m in self.models]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise SpecError(f"model names must be unique; repeated: {dup}", "models")
        for i, e in enumerate(self.models):
            try:
                self.entry_spec(e, "runs")
            except SpecError as exc:
                raise SpecError(str(exc).split(": ", 1)[-1], f"models[{i}].{exc.path}" if exc.path else f"models[{i}]") from None

    def entry_spec(self, entry: StudyEntry, out_dir) -> Spec:
        spec = Spec(name=entry.name, description=self.description, seed=self.seed, data=self.data, model=entry.model,
                    objective=entry.objective, evaluation=self.evaluation, output=OutputSpec(dir=str(Path(out_dir) / entry.name)))
        spec.check("")
        return spec


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


def run_study(study: StudySpec, base_dir: Path | None = None, out=None, *, quiet: bool = False,
              progress: bool = False) -> list[dict]:
    """Run every model of the study; returns the table rows (one metrics dict per model).

    Messages go to stdout unless ``quiet``; ``progress`` adds tqdm bars on stderr unless ``quiet``:
    one over the study's rows (the model and its test error in the postfix) and each run's own."""
    from gpmodels import reports
    from gpmodels.progress import Console
    from gpmodels.spec.run import run_spec

    say = Console(study.name, messages=not quiet, bars=progress and not quiet)
    out_dir = Path(out) if out is not None else Path(study.output.dir.replace("{name}", study.name))
    out_dir.mkdir(parents=True, exist_ok=True)
    rows, curves = [], {}
    t0 = time.perf_counter()
    with say.bar(len(study.models), "models", unit="model") as bar:
        for i, entry in enumerate(study.models, start=1):
            say(f"model {i}/{len(study.models)}: {entry.name}")
            spec = study.entry_spec(entry, out_dir)
            metrics = run_spec(spec, base_dir, out_dir / entry.name, quiet=quiet, progress=progress)
            rows.append({"model": entry.name, **metrics})
            er = out_dir / entry.name / "error_reject.csv"
            if er.is_file():
                curves[entry.name] = reports.read_error_reject_csv(er)
            bar.goto(i, model=entry.name, **({"test_error": metrics["test_error"]} if "test_error" in metrics else {}))
    cols = ["model"] + [c for c in study.columns if any(c in r for r in rows)]
    md = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    md += ["| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for r in rows]
    table = "\n".join(md) + "\n"
    (out_dir / "study.md").write_text(table)
    with open(out_dir / "study.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    (out_dir / "study.json").write_text(json.dumps({"study": study.name, "rows": rows}, indent=2, default=float) + "\n")
    plots = []
    if curves:
        reports.plot_error_reject(curves, out_dir / "error_reject.png", title=f"{study.name}: error-reject curves")
        plots.append("error_reject.png")
    report = [f"# Study {study.name}", "", study.description or "", "",
              f"Data: `{study.data.dataset or study.data.path}`, seed {study.seed}; "
              f"{len(rows)} models, {time.perf_counter() - t0:.1f} s in all.", "", table]
    report += [f"![{p}]({p})" for p in plots]
    report += ["", "Per-model reports: " + ", ".join(f"[{r['model']}]({r['model']}/metrics.json)" for r in rows)]
    (out_dir / "report.md").write_text("\n".join(report) + "\n")
    if not quiet:
        print(table, end="")
    say(f"report: {out_dir}/report.md")
    return rows
