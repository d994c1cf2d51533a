"""Run a validated spec: load data, dispatch to the objective's runner, evaluate, write the report.

Each objective type has a runner in ``RUNNERS`` (``objective.type`` -> function); a runner gets the
spec, the loaded data and a ``say`` callback, and returns a :class:`RunOutcome`: its own metrics,
the test-set predictive probabilities when it has them (then error, log-loss, prec and the
error-reject curve are added here), a diagnostics dict and the resolved spec.

The report folder holds ``metrics.json`` (a flat object of scalars), ``spec.resolved.yaml`` (the
spec with every default and ``auto`` value filled in), ``error_reject.csv`` (when there are
probabilities) and ``diagnostics.json``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

import attrs
import numpy as np

from .. import metrics as M
from ..data.datasets import Dataset
from ..errors import SpecError
from ..inference.map import fit_map
from ..validation import labels_to_targets
from .build import build_data, build_likelihood, build_newton_options, build_prior, check_files, resolve_kernel
from .loader import dump_yaml
from .sections import Spec

__all__ = ["run_spec", "output_dir", "RunOutcome", "RUNNERS", "register_runner"]


@attrs.frozen
class RunOutcome:
    """What a runner returns (see the module docstring)."""

    metrics: dict
    probabilities: np.ndarray | None
    diagnostics: dict
    resolved: Spec


Runner = Callable[[Spec, Dataset, "Path | None", Callable[[str], None]], RunOutcome]
RUNNERS: dict[str, Runner] = {}


def register_runner(objective_type: str):
    def deco(fn: Runner) -> Runner:
        RUNNERS[objective_type] = fn
        return fn
    return deco


def output_dir(spec: Spec, out: str | Path | None) -> Path:
    return Path(out) if out is not None else Path(spec.output.dir.replace("{name}", spec.name))


@register_runner("map")
def run_map(spec: Spec, data: Dataset, base_dir: Path | None, say) -> RunOutcome:
    """MAP fit at the given hyperparameters by Newton–CG or exact Newton."""
    C = data.n_classes
    resolved = attrs.evolve(spec, model=attrs.evolve(spec.model, kernel=resolve_kernel(spec.model.kernel, data.X_train)))
    prior = build_prior(resolved.model, data.X_train, base_dir)
    likelihood = build_likelihood(resolved.model)
    t = time.perf_counter()
    op = prior.operator(data.X_train, C)
    build_seconds = time.perf_counter() - t
    t = time.perf_counter()
    model = fit_map(op, likelihood, labels_to_targets(data.y_train, C), build_newton_options(resolved.objective),
                    method=resolved.objective.method)
    fit_seconds = time.perf_counter() - t
    diag = model.result.diagnostics
    say(f"fit: {diag.iterations} Newton iterations, {diag.mvm_count} MVMs, {fit_seconds:.2f} s, "
        f"Φ = {model.result.phi:.6g} ({diag.message})")
    t = time.perf_counter()
    P = model.predict_proba(data.X_test)
    metrics = {
        "fit_seconds": fit_seconds,
        "kernel_build_seconds": build_seconds,
        "predict_seconds": time.perf_counter() - t,
        "newton_iterations": diag.iterations,
        "cg_iterations": int(sum(diag.cg_iterations)),
        "mvm_count": diag.mvm_count,
        "phi": float(model.result.phi),
        "gradient_rms": float(diag.grad_norm[-1]),
        "converged": bool(diag.converged),
    }
    if spec.evaluation.train_scores:
        tr = M.classification_report(likelihood.predict(model.result.u), data.y_train)
        metrics.update({f"train_{k}": v for k, v in tr.items()})
    return RunOutcome(metrics, P, diag.as_dict(), resolved)


def run_spec(spec: Spec, base_dir: Path | None = None, out: str | Path | None = None, *, quiet: bool = False) -> dict:
    """Fit and evaluate ``spec``; returns the metrics written to ``metrics.json``."""
    runner = RUNNERS.get(spec.objective.type)
    if runner is None:
        raise SpecError(f"no runner for objective type {spec.objective.type!r}; known: {sorted(RUNNERS)}", "objective.type")
    check_files(spec, base_dir)
    out_dir = output_dir(spec, out)
    out_dir.mkdir(parents=True, exist_ok=True)

    def say(msg: str) -> None:
        if not quiet:
            print(f"[{spec.name}] {msg}", flush=True)

    t0 = time.perf_counter()
    data = build_data(spec, base_dir)
    say(f"data {data.name}: {data.y_train.size} train, {data.y_test.size} test, {data.n_classes} classes, "
        f"{data.X_train.shape[1]} features{' (sparse)' if data.sparse else ''}")
    # runners see the effective report folder (``--out`` included) in ``spec.output.dir``
    outcome = runner(attrs.evolve(spec, output=attrs.evolve(spec.output, dir=str(out_dir))), data, base_dir, say)
    metrics = {"name": spec.name}
    if outcome.probabilities is not None:
        scores = M.classification_report(outcome.probabilities, data.y_test)
        metrics.update({"test_error": scores["error"], "test_log_loss": scores["log_loss"], "test_prec": scores["prec"]})
        curve = M.error_reject_curve(outcome.probabilities, data.y_test, spec.evaluation.error_reject)
        (out_dir / "error_reject.csv").write_text("reject_fraction,error\n" + "".join(f"{a},{e}\n" for a, e in curve))
    metrics.update({"n_train": int(data.y_train.size), "n_test": int(data.y_test.size), "n_classes": data.n_classes,
                    "n_features": int(data.X_train.shape[1])})
    metrics.update(outcome.metrics)
    metrics["total_seconds"] = time.perf_counter() - t0
    resolved = attrs.evolve(outcome.resolved, output=attrs.evolve(outcome.resolved.output, dir=str(out_dir)))
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    (out_dir / "diagnostics.json").write_text(json.dumps(outcome.diagnostics, indent=2, default=float) + "\n")
    dump_yaml(resolved.to_dict(), out_dir / "spec.resolved.yaml")
    if "test_error" in metrics:
        say(f"test error {100 * metrics['test_error']:.2f} %, log-loss {metrics['test_log_loss']:.4f}, "
            f"prec {metrics['test_prec']:.4f}")
    say(f"report: {out_dir}/ ({', '.join(sorted(p.name for p in out_dir.iterdir()))})")
    return metrics


from . import run_cv as _run_cv  # noqa: E402,F401  (registers the `cv` runner)
