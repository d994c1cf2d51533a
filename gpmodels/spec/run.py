"""Run a validated spec: load data, build the model, fit, evaluate and write the report folder.

The report folder holds ``metrics.json`` (a flat object of scalars), ``spec.resolved.yaml`` (the
spec with every default and ``auto`` value filled in), ``error_reject.csv`` and
``diagnostics.json`` (the Newton trace).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import attrs
import numpy as np

from .. import metrics as M
from ..inference.map import fit_map
from ..validation import labels_to_targets
from .build import (build_data, build_likelihood, build_newton_options, build_prior, check_files,
                    resolve_kernel)
from .loader import dump_yaml
from .sections import Spec

__all__ = ["run_spec", "output_dir"]


def output_dir(spec: Spec, out: str | Path | None) -> Path:
    return Path(out) if out is not None else Path(spec.output.dir.replace("{name}", spec.name))


def _say(quiet: bool, msg: str) -> None:
    if not quiet:
        print(msg, flush=True)


def run_spec(spec: Spec, base_dir: Path | None = None, out: str | Path | None = None, *, quiet: bool = False) -> dict:
    """Fit and evaluate ``spec``; returns the metrics written to ``metrics.json``."""
    check_files(spec, base_dir)
    out_dir = output_dir(spec, out)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    data = build_data(spec, base_dir)
    C = data.n_classes
    _say(quiet, f"[{spec.name}] data {data.name}: {data.y_train.size} train, {data.y_test.size} test, "
                f"{C} classes, {data.X_train.shape[1]} features{' (sparse)' if data.sparse else ''}")
    resolved_kernel = resolve_kernel(spec.model.kernel, data.X_train)
    resolved = attrs.evolve(spec, model=attrs.evolve(spec.model, kernel=resolved_kernel),
                            output=attrs.evolve(spec.output, dir=str(out_dir)))
    prior = build_prior(resolved.model, data.X_train, base_dir)
    likelihood = build_likelihood(resolved.model)
    t_build = time.perf_counter()
    op = prior.operator(data.X_train, C)
    build_seconds = time.perf_counter() - t_build
    Y = labels_to_targets(data.y_train, C)
    t_fit = time.perf_counter()
    model = fit_map(op, likelihood, Y, build_newton_options(resolved.objective), method=resolved.objective.method)
    fit_seconds = time.perf_counter() - t_fit
    diag = model.result.diagnostics
    _say(quiet, f"[{spec.name}] fit: {diag.iterations} Newton iterations, {diag.mvm_count} MVMs, "
                f"{fit_seconds:.2f} s, Φ = {model.result.phi:.6g} ({diag.message})")
    t_pred = time.perf_counter()
    P = model.predict_proba(data.X_test)
    predict_seconds = time.perf_counter() - t_pred
    scores = M.classification_report(P, data.y_test)
    out = {
        "name": spec.name,
        "test_error": scores["error"],
        "test_log_loss": scores["log_loss"],
        "test_prec": scores["prec"],
        "fit_seconds": fit_seconds,
        "kernel_build_seconds": build_seconds,
        "predict_seconds": predict_seconds,
        "total_seconds": 0.0,
        "n_train": int(data.y_train.size),
        "n_test": int(data.y_test.size),
        "n_classes": C,
        "n_features": int(data.X_train.shape[1]),
        "newton_iterations": diag.iterations,
        "cg_iterations": int(sum(diag.cg_iterations)),
        "mvm_count": diag.mvm_count,
        "phi": float(model.result.phi),
        "gradient_rms": float(diag.grad_norm[-1]),
        "converged": bool(diag.converged),
    }
    if spec.evaluation.train_scores:
        Ptr = likelihood.predict(model.result.u)
        tr = M.classification_report(Ptr, data.y_train)
        out.update({"train_error": tr["error"], "train_log_loss": tr["log_loss"], "train_prec": tr["prec"]})
    curve = M.error_reject_curve(P, data.y_test, spec.evaluation.error_reject)
    out["total_seconds"] = time.perf_counter() - t0
    (out_dir / "metrics.json").write_text(json.dumps(out, indent=2) + "\n")
    (out_dir / "error_reject.csv").write_text("reject_fraction,error\n" + "".join(f"{a},{e}\n" for a, e in curve))
    (out_dir / "diagnostics.json").write_text(json.dumps(diag.as_dict(), indent=2) + "\n")
    dump_yaml(resolved.to_dict(), out_dir / "spec.resolved.yaml")
    _say(quiet, f"[{spec.name}] test error {100 * scores['error']:.2f} %, log-loss {scores['log_loss']:.4f}, "
                f"prec {scores['prec']:.4f}")
    _say(quiet, f"[{spec.name}] report: {out_dir}/ (metrics.json, spec.resolved.yaml, error_reject.csv, diagnostics.json)")
    return out
