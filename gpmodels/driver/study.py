"""Running study specs: several models on the same data and splits, compared in one table.

A study (its schema: :mod:`gpmodels.driver.sections.study`) names the data, evaluation and output
once and lists ``models``, each with its own ``name``, ``model`` and ``objective`` sections.  Every
entry becomes an ordinary :class:`~gpmodels.driver.sections.spec.Spec` (sharing the study's seed, so the
same split and subsamples) and runs through ``run_spec`` into ``<out>/<entry name>/``; the study then
writes ``study.md``, ``study.csv`` and ``study.json`` (the comparison table), ``error_reject.png``
(all models' curves) and ``report.md`` linking them.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import sys
import time
from pathlib import Path

import attrs

from gpmodels import reports
from gpmodels.driver.build import build_engine_config
from gpmodels.driver.loader import grant_imports
from gpmodels.driver.output import STUDY_ARTEFACTS, claim_output, output_folder, spec_digest
from gpmodels.driver.report_md import score_legend
from gpmodels.driver.run import run_spec, start_log
from gpmodels.driver.sections.study import StudySpec
from gpmodels.engine.factory import open_engine
from gpmodels.errors import GPModelsError
from gpmodels.safe_write import write_new

__all__ = ["run_study", "failed_models", "study_identity"]


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


def _first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an error's message, bounded (for the table and the console)."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    text = text if isinstance(exc, GPModelsError) else f"{type(exc).__name__}: {text}"
    return text if len(text) <= limit else text[:limit] + "..."


def study_identity(study: StudySpec) -> dict:
    """What the study folder's ``run.json`` records."""
    return {"kind": "study", "name": study.name, "objective": "study", "spec_sha256": spec_digest(study)}


def run_study(
    study: StudySpec,
    base_dir: Path | None = None,
    out=None,
    *,
    quiet: bool = False,
    progress: bool = False,
    force: bool = False,
    allow_import=(),
    command: str | None = None,
) -> list[dict]:
    """Run every model of the study; returns the table rows (one metrics dict per model).

    A model that fails does not stop the study: its row has ``status: failed`` and ``error`` (the
    first line of its message), the console names it, and the table and report are written all the
    same; the caller tells failures by :func:`failed_models` (``gpmodels study`` exits with 1).
    The study folder is checked, locked and cleared like a run's (``force`` as in ``run_spec``).

    Messages go to stdout unless ``quiet``; ``progress`` adds tqdm bars on stderr unless ``quiet``:
    one over the study's rows (the model and its test error in the postfix) and each run's own.
    Provenance as in ``run_spec``: ``study.json`` records :func:`~gpmodels.driver.run.provenance` (version,
    start time, ``command``, spec digest), ``run.log`` in the study folder the study's messages (each
    model's own ``run.log`` is in its sub-folder)."""
    study = grant_imports(study, allow_import)
    out_dir = study_folder(study, out)
    with claim_output(
        out_dir,
        study_identity(study),
        force=force,
        artefacts=STUDY_ARTEFACTS,
        key="--out" if out is not None else "output.dir",
    ):
        origin, say = start_log("study", study, out_dir, command, quiet=quiet, progress=progress)
        for entry in study.models:  # a link planted at a model's sub-folder would send its report elsewhere
            if (out_dir / entry.name).is_symlink():
                (out_dir / entry.name).unlink()
        try:
            return _run_study(
                study,
                base_dir,
                out_dir,
                say,
                functools.partial(run_spec, command=origin["command"]),
                origin,
                quiet=quiet,
                progress=progress,
                force=force,
            )
        except KeyboardInterrupt:
            say.write_log("interrupted (Ctrl-C)")
            raise


def study_folder(study: StudySpec, out=None) -> Path:
    """The report folder of a study (``--out``, else ``output.dir``), resolved and checked as ``validate``
    does (:func:`~gpmodels.driver.output.output_folder`)."""
    if out is not None:
        return output_folder(out, "--out")
    return output_folder(study.output.dir.replace("{name}", study.name), "output.dir")


def failed_models(rows: list[dict]) -> list[str]:
    """Names of the study rows whose model failed."""
    return [r["model"] for r in rows if r.get("status") == "failed"]


def _row_task(job: tuple) -> tuple:
    """One study row as an independent task: (metrics, None) or (None, the first line of its error)."""
    run_spec, spec, base_dir, out, force = job
    try:
        return run_spec(spec, base_dir, out, quiet=True, progress=False, force=force), None
    except Exception as exc:  # noqa: BLE001 - one model's failure must not lose the others' rows
        return None, _first_line(exc)


def _run_rows(study, base_dir, out_dir: Path, say, run_spec, *, quiet, progress, force):
    """(entry, (metrics, error)) per model in order: one after the other here, or, with
    ``engine: {type: processes}`` or ``{type: dask, distribute: tasks}``, all as parallel jobs of the
    engine (each run then in-process on its worker; the report folder must be reachable from the
    workers)."""
    specs = [study.entry_spec(entry, out_dir) for entry in study.models]
    if study.rows_as_tasks:
        config = build_engine_config(study.engine)
        if config.start_method is None and any(s.model.representation.device != "cpu" for s in specs):
            config = attrs.evolve(config, start_method="spawn")  # rows that open a CUDA context: fresh workers
        with open_engine(config) as engine:
            say(f"{len(specs)} models as parallel tasks on {engine!r}")
            done = engine.map(_row_task, [(run_spec, spec, base_dir, out_dir / spec.name, force) for spec in specs])
        yield from zip(study.models, done)
        return
    for i, (entry, spec) in enumerate(zip(study.models, specs), start=1):
        say(f"model {i}/{len(study.models)}: {entry.name}")
        try:
            yield (
                entry,
                (run_spec(spec, base_dir, out_dir / entry.name, quiet=quiet, progress=progress, force=force), None),
            )
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - one model's failure must not lose the others' rows
            yield entry, (None, _first_line(exc))


def _write_tables(out_dir: Path, name: str, rows: list[dict], cols: list[str], origin: dict) -> str:
    """The study's table over ``cols`` as study.md (returned), study.csv, and study.json (all rows with the
    provenance ``origin``)."""
    md = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    md += ["| " + " | ".join(_fmt(r.get(c)).replace("|", "/").replace("\n", " ") for c in cols) + " |" for r in rows]
    table = "\n".join(md) + "\n"
    write_new(out_dir, "study.md", table)
    text = io.StringIO(newline="")
    w = csv.DictWriter(text, fieldnames=cols, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    write_new(out_dir, "study.csv", text.getvalue())
    write_new(
        out_dir, "study.json", json.dumps({"study": name, **origin, "rows": rows}, indent=2, default=float) + "\n"
    )
    return table


def _run_study(study, base_dir, out_dir: Path, say, run_spec, origin, *, quiet, progress, force) -> list[dict]:
    rows, curves = [], {}
    t0 = time.perf_counter()
    with say.bar(len(study.models), "models", unit="model") as bar:
        for i, (entry, (metrics, error)) in enumerate(
            _run_rows(study, base_dir, out_dir, say, run_spec, quiet=quiet, progress=progress, force=force), start=1
        ):
            if error is not None:
                print(f"gpmodels: study {study.name}: model {entry.name!r} failed: {error}", file=sys.stderr)
                say.write_log(f"model {entry.name!r} failed: {error}")
                rows.append({"model": entry.name, "status": "failed", "error": error})
                bar.goto(i, model=entry.name)
                continue
            rows.append({"model": entry.name, "status": "ok", **metrics})
            er = out_dir / entry.name / "error_reject.csv"
            if er.is_file():
                curves[entry.name] = reports.read_error_reject_csv(er)
            bar.goto(i, model=entry.name, **({"test_error": metrics["test_error"]} if "test_error" in metrics else {}))
    failed = failed_models(rows)
    cols = ["model"] + (["status"] if failed else []) + [c for c in study.columns if any(c in r for r in rows)]
    cols += ["error"] if failed else []
    table = _write_tables(out_dir, study.name, rows, cols, origin)
    plots, figures = [], reports.plots_available()
    if curves and not figures:
        say(reports.PLOTS_SKIPPED)
    if curves and figures:
        without = [r["model"] for r in rows if r.get("status") == "ok" and r["model"] not in curves]
        reports.plot_error_reject(
            curves,
            out_dir / "error_reject.png",
            title=f"{study.name}: error-reject curves",
            without_probabilities=without,
        )
        plots.append("error_reject.png")
    report = [
        f"# Study {study.name}",
        "",
        study.description or "",
        "",
        f"Data: `{study.data.dataset or study.data.path}`, seed {study.seed}; "
        f"{len(rows)} models, {time.perf_counter() - t0:.1f} s in all."
        + (f" Failed: {', '.join(failed)} (their errors are in the table)." if failed else ""),
        "",
        table,
    ]
    legend = score_legend(c for c in cols if c.startswith(("test_", "train_", "plugin_test_")))
    report += ["What the names mean:", "", *legend, ""] if legend else []
    report += [f"![{p}]({p})" for p in plots] or ([reports.PLOTS_SKIPPED] if curves else [])
    report += [
        "",
        "Per-model reports: "
        + ", ".join(f"[{r['model']}]({r['model']}/metrics.json)" for r in rows if r["status"] == "ok"),
    ]
    write_new(out_dir, "report.md", "\n".join(report) + "\n")
    if not quiet:
        print(table, end="")
    say(f"report: {out_dir}/report.md")
    return rows
