"""Run a validated spec: load data, dispatch to the objective's runner, evaluate, write the report.

The driver only: each objective type has a runner in ``RUNNERS`` (``objective.type`` -> function, the
explicit table of :mod:`gpmodels.driver.runners`); a runner gets the
spec, the loaded data and ``say``, a :class:`~gpmodels.progress.Console` (``say(msg)`` prints a
message, ``say.bar(...)`` opens a progress bar; both may be off), and returns a
:class:`~gpmodels.driver.outcome.RunOutcome`: its own metrics,
the test-set predictive probabilities when it has them (then error, log-loss, prec and the
error-reject curve are added here), a diagnostics dict and the resolved spec.

The report folder holds ``metrics.json`` (a flat object of scalars), ``spec.resolved.yaml`` (the
spec with every default and ``auto`` value filled in), ``diagnostics.json``, ``model.npz`` (when
the runner can save its model; see :mod:`gpmodels.persistence`), and plots: ``error_reject.png``
with ``error_reject.csv`` (when there are probabilities), ``confusion_levels.json`` and
``levels.png`` (accuracy per tree level and decision rule, when the data have a class tree), and
one ``trace_<name>.png`` per criterion trace the runner reports (e.g. Φ over Newton iterations).
Classification runs add ``test_brier`` and ``test_ece`` to the metrics and ``reliability.png``; every run
writes ``report.md`` (:mod:`gpmodels.driver.report_md`: provenance, data sizes, settings, convergence
flags, scores, timings and the plots).  The plots need matplotlib (the ``plots`` extra); without it the run
skips them and says so in its messages, run.log and report.md (:data:`gpmodels.reports.PLOTS_SKIPPED`).
"""

from __future__ import annotations

import contextlib
import datetime
import inspect
import json
import time
import warnings
from importlib import metadata
from pathlib import Path

import attrs
import numpy as np

from gpmodels import __version__, reports
from gpmodels.data.datasets import Dataset
from gpmodels.driver.build import build_engine_config, check_files
from gpmodels.driver.build_data import build_data, build_tree, resolve_path
from gpmodels.driver.loader import dump_yaml, grant_imports
from gpmodels.driver.outcome import Runner
from gpmodels.driver.output import claim_output, output_folder, spec_digest
from gpmodels.driver.report_md import write_report_md
from gpmodels.driver.runners import RUNNERS as BUILTIN_RUNNERS
from gpmodels.driver.sections.spec import Spec
from gpmodels.engine.factory import open_engine
from gpmodels.errors import CheckpointWarning, DataError, GPModelsError, NumericalError, SpecError
from gpmodels.kernels.device.backend import device_in_use
from gpmodels.progress import Console
from gpmodels.safe_write import write_new
from gpmodels.scoring import metrics as M
from gpmodels.scoring.calibration import brier_score, expected_calibration_error, reliability_curve
from gpmodels.scoring.decisions import argmax_rule, min_expected_taxo

__all__ = [
    "run_spec",
    "output_dir",
    "RUNNERS",
    "register_runner",
    "run_identity",
    "package_version",
    "provenance",
    "start_log",
    "LOG_FILE",
]

#: the run's messages, plain text (one line each, UTC time first), in the report folder
LOG_FILE = "run.log"


def package_version() -> str:
    """The installed distribution's version (``importlib.metadata``), else ``gpmodels.__version__``."""
    try:
        return metadata.version("gpmodels")
    except metadata.PackageNotFoundError:
        return __version__


def start_log(kind: str, spec, out_dir: Path, command, *, quiet: bool, progress: bool) -> tuple[dict, Console]:
    """The provenance of a run or study (``kind``) and its Console, with ``run.log`` in ``out_dir``
    started afresh by a line that names the version, the spec's digest and the command."""
    origin = provenance(spec, command)
    say = Console(spec.name, messages=not quiet, bars=progress and not quiet, log=str(out_dir / LOG_FILE))
    write_new(out_dir, LOG_FILE, "")
    say.write_log(
        f"gpmodels {origin['gpmodels_version']}: {kind} {spec.name!r} (spec {origin['spec_sha256'][:12]}); "
        f"command: {origin['command']}"
    )
    return origin, say


def provenance(spec, command: str | None = None) -> dict:
    """What a run or study records of where it came from: ``gpmodels_version``, ``started_at`` (UTC,
    ISO 8601), ``command`` (the command line when run by the CLI, ``"python"`` for an API call) and
    ``spec_sha256`` (:func:`~gpmodels.driver.output.spec_digest`, the digest ``run.json`` holds)."""
    return {
        "gpmodels_version": package_version(),
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command if command is not None else "python",
        "spec_sha256": spec_digest(spec),
    }


#: objective.type -> runner; the explicit table of :mod:`gpmodels.driver.runners` (extend with ``register_runner``)
RUNNERS: dict[str, Runner] = dict(BUILTIN_RUNNERS)


def register_runner(objective_type: str, runner: Runner | None = None):
    """Add a runner for ``objective.type`` (user extensions); usable as ``register_runner(t, fn)`` or as a
    decorator.  The built-in runners are the table ``gpmodels.driver.runners.RUNNERS``, not registered."""

    def add(fn: Runner) -> Runner:
        RUNNERS[objective_type] = fn
        return fn

    return add if runner is None else add(runner)


def output_dir(spec: Spec, out: str | Path | None) -> Path:
    """The report folder of a run (``--out``, else ``output.dir`` with ``{name}``), resolved and checked as
    ``validate`` does (:func:`~gpmodels.driver.output.output_folder`)."""
    if out is not None:
        return output_folder(out, "--out")
    return output_folder(spec.output.dir.replace("{name}", spec.name), "output.dir")


def _hierarchical_scores(spec: Spec, data: Dataset, base_dir, P: np.ndarray, out_dir: Path, figures: bool) -> dict:
    """acc, prec, pacc, taxo-loss and per-level accuracies on the test set (Sec. 6.1) when the data
    have a class tree; per-level confusion matrices go to ``confusion_levels.json`` and, with ``figures``,
    the accuracy per tree level (one bar per decision rule) to ``levels.png``."""
    tree = build_tree(spec, data, base_dir)
    if tree is None:
        return {}
    rules = ("argmax", "expected_loss") if spec.evaluation.decision == "both" else (spec.evaluation.decision,)
    out, levels = {}, {}
    for rule in rules:
        rep = M.hierarchical_report(P, data.y_test, tree, rule)
        out.update({f"test_{k}_{rule}" if k not in ("acc", "prec") else f"test_{k}": v for k, v in rep.items()})
        y_pred = argmax_rule(P) if rule == "argmax" else min_expected_taxo(P, tree)
        levels[rule] = {
            str(d): {"nodes": s["nodes"], "accuracy": s["accuracy"], "confusion": s["confusion"].tolist()}
            for d, s in M.level_confusion(y_pred, data.y_test, tree).items()
        }
    write_new(out_dir, "confusion_levels.json", json.dumps(levels, indent=1) + "\n")
    depths = sorted(levels[rules[0]], key=int)
    if figures:
        reports.plot_bars(
            [f"level {d}" for d in depths],
            {rule: [levels[rule][d]["accuracy"] for d in depths] for rule in rules},
            out_dir / "levels.png",
            ylabel="accuracy",
            title=f"{spec.name}: accuracy per tree level",
        )
    return out


def _calibration(P: np.ndarray, y, out_dir: Path, name: str, figures: bool) -> dict:
    """Brier score and top-label ECE (15 equal-width bins) of the test probabilities, and with ``figures``
    the reliability diagram ``reliability.png`` (:mod:`gpmodels.scoring.calibration`)."""
    if figures:
        reports.plot_reliability(
            {name: reliability_curve(P, y)}, out_dir / "reliability.png", title=f"{name}: reliability (top label)"
        )
    return {"test_brier": brier_score(P, y), "test_ece": expected_calibration_error(P, y)}


def _read_data(spec: Spec, base_dir) -> Dataset:
    """``build_data``, with a reader's unforeseen error (EOFError of a truncated .npz, ...) turned into a
    DataError that names the data keys and describes the files, never quoting them; a loader's own
    DataError is prefixed with the key of the file it names."""
    d = spec.data
    files = {
        key: resolve_path(value, base_dir, key, must_exist=False)
        for key, value in (("data.path", d.path), ("data.test_path", d.test_path))
        if value is not None
    }
    try:
        return build_data(spec, base_dir)
    except DataError as exc:
        keys = [key for key, p in files.items() if str(p) in str(exc)]
        if keys and not str(exc).startswith(keys[0]):
            raise DataError(f"{keys[0]}: {exc}") from None
        raise
    except (GPModelsError, MemoryError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - a reader's own error may quote the file
        described = [f"{key} {p} ({p.stat().st_size if p.is_file() else 'no'} bytes)" for key, p in files.items()]
        what = ", ".join(described) or f"data set {d.dataset!r}"
        raise DataError(
            f"the data cannot be read: {what} ({type(exc).__name__}); a data file is an .npz of plain "
            "arrays X, y, an .arff or svmlight text"
        ) from None


def run_identity(spec: Spec) -> dict:
    """What ``run.json`` records of a run (see :mod:`gpmodels.driver.output`)."""
    return {"kind": "run", "name": spec.name, "objective": spec.objective.type, "spec_sha256": spec_digest(spec)}


def run_spec(
    spec: Spec,
    base_dir: Path | None = None,
    out: str | Path | None = None,
    *,
    quiet: bool = False,
    progress: bool = False,
    force: bool = False,
    allow_import=(),
    command: str | None = None,
) -> dict:
    """Fit and evaluate ``spec``; returns the metrics written to ``metrics.json``.

    Messages go to stdout unless ``quiet``; ``progress`` adds tqdm bars on stderr (Newton
    iterations, CV outer iterations) unless ``quiet``.  Neither changes any result.

    The report folder is checked, locked and cleared of an earlier run's artefacts before any work
    (:func:`~gpmodels.driver.output.claim_output`); one holding another spec's report is refused
    unless ``force``.  ``allow_import``: modules a ``model.prior: module:builder`` path may import.

    Provenance: ``metrics.json`` records :func:`provenance` (version, start time, ``command``: the
    command line of the CLI, ``"python"`` by default, spec digest); ``run.log`` receives every message
    of the run as plain text (also with ``quiet``; never the bars), and how it ended."""
    spec = grant_imports(spec, allow_import)
    runner = RUNNERS.get(spec.objective.type)
    if runner is None:
        raise SpecError(
            f"no runner for objective type {spec.objective.type!r}; known: {sorted(RUNNERS)}", "objective.type"
        )
    check_files(spec, base_dir)
    out_dir = output_dir(spec, out)
    with claim_output(out_dir, run_identity(spec), force=force, key="--out" if out is not None else "output.dir"):
        origin, say = start_log("run", spec, out_dir, command, quiet=quiet, progress=progress)
        try:
            with console_warnings(say):
                return _run(spec, runner, base_dir, out_dir, say, origin)
        except KeyboardInterrupt as exc:
            say.write_log(f"interrupted ({exc or 'Ctrl-C'}); a learning checkpoint, if any, is kept")
            raise
        except BaseException as exc:
            say.write_log(f"failed: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}")
            raise


@contextlib.contextmanager
def console_warnings(say: Console):
    """Route the :class:`~gpmodels.errors.CheckpointWarning` s of the block to the run's console and
    run.log (so ``--quiet`` prints none and the log keeps them); other warnings are shown as usual."""
    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, CheckpointWarning):
                say(f"warning: {message}")
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.simplefilter("always", CheckpointWarning)
        warnings.showwarning = show
        yield


def check_finite_metrics(metrics: dict) -> None:
    """Refuse metrics with NaN or infinite numbers (an overflowing kernel matrix, a diverged fit): they are
    a failure, never a report, and metrics.json stays valid JSON."""
    bad = sorted(k for k, v in metrics.items() if isinstance(v, (float, np.floating)) and not np.isfinite(v))
    if bad:
        raise NumericalError(
            f"the run gave non-finite results ({', '.join(bad[:8])}): the kernel matrix or the fit "
            "overflowed (inputs on a scale far from 1? set data.scaling: standard, or a smaller "
            "kernel variance / w); nothing of it is reported"
        )


def _call_runner(runner, spec: Spec, data, base_dir, say: Console, engine):
    """The runner on ``engine``, passed as ``engine=`` to the runners that take it; a runner without
    that keyword runs in this process, which a Dask engine was not asked for."""
    if "engine" not in inspect.signature(runner).parameters:
        if spec.engine.type == "dask":
            raise SpecError(
                f"objective type {spec.objective.type!r} does not run on a dask engine; use "
                "`engine.type: auto` or `local`",
                "engine.type",
            )
        return runner(spec, data, base_dir, say)
    if spec.engine.type != "auto":
        say(f"engine: {engine!r}")
    return runner(spec, data, base_dir, say, engine=engine)


def _json_safe(value):
    """Diagnostics as valid JSON: a non-finite number (a failed trial's Ψ, an unbounded step) becomes
    its name as text ("NaN", "Infinity"), so the file is JSON that any reader parses."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return _json_safe(value.tolist())
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):
        return str(float(value)).replace("inf", "Infinity").replace("nan", "NaN")
    return value


def _draw(spec: Spec, outcome, out_dir: Path, curve) -> None:
    """The run's figures: the error-reject ``curve`` (None: no probabilities), one ``trace_<name>.png`` per
    criterion trace of more than one value (with the gradient norms below where the runner gives them) and
    the hyperparameter paths."""
    if curve is not None:
        reports.plot_error_reject(
            {spec.name: curve}, out_dir / "error_reject.png", title=f"{spec.name}: error-reject curve"
        )
    for name, values in outcome.traces.items():
        series = values if isinstance(values, dict) else {name: values}  # a dict: one line per entry
        if any(len(v) > 1 for v in series.values()):
            unit = outcome.trace_units.get(name, "iteration")
            label, grads = outcome.trace_gradients.get(name, ("gradient norm", None))
            reports.plot_traces(
                series,
                out_dir / f"trace_{name}.png",
                xlabel=unit,
                ylabel=name,
                title=f"{spec.name}: {reports.criterion_label(name)} over {unit}s",
                gradients=grads if grads is None or isinstance(grads, dict) else {name: grads},
                gradient_label=label,
            )
    if outcome.paths is not None:
        reports.plot_paths(
            outcome.paths[0], outcome.paths[1], out_dir / "hyperparameters.png", title=f"{spec.name}: hyperparameters"
        )


def _run(spec: Spec, runner, base_dir, out_dir: Path, say: Console, origin: dict) -> dict:
    t0 = time.perf_counter()
    device = device_in_use(spec.model.representation.device)  # `cuda` without a GPU fails here, before any work
    data = _read_data(spec, base_dir)
    say(
        f"data {data.name}: {data.X_train.shape[0]} train, {data.X_test.shape[0]} test, {data.n_classes} classes, "
        f"{data.X_train.shape[1]} features{' (sparse)' if data.sparse else ''}"
    )
    spec = _engine_beside_device(spec, device, say)
    # runners see the effective report folder (``--out`` included) in ``spec.output.dir``
    with open_engine(build_engine_config(spec.engine)) as engine:
        outcome = _call_runner(
            runner, attrs.evolve(spec, output=attrs.evolve(spec.output, dir=str(out_dir))), data, base_dir, say, engine
        )
    metrics = {"name": spec.name, **origin, "device": device}
    figures = reports.plots_available()
    if not figures:
        say(reports.PLOTS_SKIPPED)
    curve, hier = None, {}
    if outcome.probabilities is not None:
        scores, curve, hier = _test_scores(spec, data, base_dir, outcome.probabilities, out_dir, figures)
        metrics.update(scores)
    if figures:
        _draw(spec, outcome, out_dir, curve)
    metrics.update(
        {
            "n_train": int(data.X_train.shape[0]),
            "n_test": int(data.X_test.shape[0]),
            "n_classes": data.n_classes,
            "n_features": int(data.X_train.shape[1]),
        }
    )
    metrics.update(outcome.metrics)
    metrics.update(hier)
    if outcome.plan is not None:
        metrics.update(outcome.plan.as_metrics())
        for line in outcome.plan.describe():
            say(f"plan: {line}")
    metrics["total_seconds"] = time.perf_counter() - t0
    check_finite_metrics(metrics)
    _write_run_files(outcome, metrics, out_dir, figures)
    _say_results(say, metrics, out_dir)
    return metrics


def _engine_beside_device(spec: Spec, device: str, say: Console) -> Spec:
    """The spec with an engine that can use ``device``: worker processes (``processes``, or ``auto`` where
    it plans several) start as fresh interpreters (``spawn``: the kernel matrices declare it), each
    rebuilding the matrices in its own device context, since a forked child cannot use the parent's
    CUDA context (``start_method: fork`` is an error); Dask workers would hold the matrices on their
    CPUs (``dask`` is an error)."""
    if device.startswith("cpu") or spec.engine.type == "local":
        return spec
    if spec.engine.type == "dask":
        raise SpecError(
            f"kernel matrices on {device} cannot be held by Dask workers: engine.type dask; allowed with a "
            "GPU: engine.type auto, local or processes",
            "engine.type",
        )
    if spec.engine.start_method == "fork":
        raise SpecError(
            f"kernel matrices on {device}: a forked worker cannot use the CUDA context of this process; "
            "allowed with a GPU: engine.start_method spawn, forkserver or null",
            "engine.start_method",
        )
    say(f"engine: {spec.engine.type} (kernel matrices on {device}; worker processes, if any, rebuild them there)")
    return spec


def _test_scores(
    spec: Spec, data: Dataset, base_dir, P: np.ndarray, out_dir: Path, figures: bool
) -> tuple[dict, list, dict]:
    """(error, log-loss, prec and calibration metrics; the error-reject curve, also written as CSV; the
    hierarchical scores) of the test probabilities P; non-finite probabilities are a
    :class:`NumericalError`."""
    if not np.all(np.isfinite(P)):
        bad = int(np.sum(~np.all(np.isfinite(P), axis=1)))
        raise NumericalError(
            f"the fitted model gives non-finite test probabilities for {bad} points: the kernel "
            "matrix or the fit overflowed (inputs on a scale far from 1? set data.scaling: standard, "
            "or a smaller kernel variance / w); nothing of it is reported"
        )
    scores = M.classification_report(P, data.y_test)
    metrics = {"test_error": scores["error"], "test_log_loss": scores["log_loss"], "test_prec": scores["prec"]}
    metrics.update(_calibration(P, data.y_test, out_dir, spec.name, figures))
    curve = M.error_reject_curve(P, data.y_test, spec.evaluation.error_reject)
    write_new(out_dir, "error_reject.csv", "reject_fraction,error\n" + "".join(f"{a},{e}\n" for a, e in curve))
    return metrics, curve, _hierarchical_scores(spec, data, base_dir, P, out_dir, figures)


def _write_run_files(outcome, metrics: dict, out_dir: Path, figures: bool) -> None:
    """metrics.json, diagnostics.json, spec.resolved.yaml (with the effective report folder), the
    model folder's files when the runner saves one, and report.md (which says when figures were skipped)."""
    resolved = attrs.evolve(outcome.resolved, output=attrs.evolve(outcome.resolved.output, dir=str(out_dir)))
    write_new(out_dir, "metrics.json", json.dumps(metrics, indent=2, allow_nan=False) + "\n")
    write_new(
        out_dir,
        "diagnostics.json",
        json.dumps(_json_safe(outcome.diagnostics), indent=2, default=float, allow_nan=False) + "\n",
    )
    dump_yaml(resolved.to_dict(), out_dir / "spec.resolved.yaml")
    if outcome.save is not None:
        outcome.save(out_dir)
    write_report_md(out_dir, resolved, metrics, figures_note=None if figures else reports.PLOTS_SKIPPED)


def _say_results(say: Console, metrics: dict, out_dir: Path) -> None:
    """The test scores, the hierarchical ones per decision rule, and the report folder's files."""
    if "test_log_loss" in metrics:
        say(
            f"test error {100 * metrics['test_error']:.2f} %, log-loss {metrics['test_log_loss']:.4f}, "
            f"mean reciprocal rank of the true class (prec) {metrics['test_prec']:.4f}"
        )
    for rule in ("argmax", "expected_loss"):
        if f"test_taxo_{rule}" in metrics:
            say(
                f"hierarchical ({rule} decisions): taxo-loss {metrics[f'test_taxo_{rule}']:.4f}, "
                f"parent accuracy {metrics[f'test_pacc_{rule}']:.4f}, "
                f"hierarchical F1 {metrics[f'test_hier_f1_{rule}']:.4f}"
            )
    say(f"report: {out_dir}/ ({', '.join(sorted(p.name for p in out_dir.iterdir() if not p.name.startswith('.')))})")
