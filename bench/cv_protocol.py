"""A resumable benchmark protocol: one JSON file per finished (method, partition) row, checkpointed learning.

``RowStore(folder, config)`` owns an output folder.  ``config.json`` records what determines the
rows (spec, data digest, bench settings); opening a folder written under another configuration
raises :class:`OutputError` naming the differing keys (use a fresh folder), so rows of different
set-ups never mix.  Each finished row goes to ``rows/<method>-p<partition>.json`` (written to a
temporary file, then renamed: a row file is complete or absent); a rerun skips rows that exist.
The CV learning of an unfinished row checkpoints to ``checkpoints/<method>-p<partition>.npz``
through the package's checkpoint machinery (``optimize/checkpoint.py``, one file per task for
one-vs-rest) and resumes from it, so an interrupted row continues at its last outer iteration.

``learn_and_evaluate_row`` is ``cv_common.learn_and_evaluate`` with that checkpoint passed to the
learner (the shared helper takes none); its figures are the same keys plus ``resumed_from``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
from cv_common import Timed, new_clock

from gpmodels import metrics as M
from gpmodels.errors import OutputError
from gpmodels.inference.cv.learn import fit_learned, learn_hyperparameters
from gpmodels.inference.cv.one_vs_rest import learn_one_vs_rest
from gpmodels.optimize.checkpoint import Checkpointing

__all__ = ["RowStore", "learn_and_evaluate_row", "mean_sd_table"]


def _plain(obj):
    """``obj`` as JSON would give it back (tuples as lists, numpy scalars as numbers)."""
    return json.loads(json.dumps(obj, default=lambda o: o.item() if isinstance(o, np.generic) else str(o)))


def _write_atomic(path: Path, obj) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True))
    os.replace(tmp, path)


class RowStore:
    """Rows of one protocol configuration in ``folder`` (see the module docstring)."""

    def __init__(self, folder, config: dict):
        self.folder = Path(folder)
        self.config = _plain(config)
        (self.folder / "rows").mkdir(parents=True, exist_ok=True)
        (self.folder / "checkpoints").mkdir(exist_ok=True)
        path = self.folder / "config.json"
        if path.exists():
            old = json.loads(path.read_text())
            if old != self.config:
                keys = sorted(k for k in set(old) | set(self.config) if old.get(k) != self.config.get(k))
                raise OutputError(
                    f"{self.folder} holds rows of another configuration (differs in {keys}); "
                    "rerun with the same settings to resume, or give a fresh --out folder"
                )
        else:
            _write_atomic(path, self.config)

    def row_path(self, method: str, partition: int) -> Path:
        return self.folder / "rows" / f"{method}-p{partition}.json"

    def get(self, method: str, partition: int) -> dict | None:
        """The stored row, or None if it has not finished."""
        p = self.row_path(method, partition)
        return json.loads(p.read_text()) if p.exists() else None

    def put(self, method: str, partition: int, row: dict) -> dict:
        """Store a finished row (atomically); returns it as read back."""
        row = _plain({**row, "method": method, "partition": partition})
        _write_atomic(self.row_path(method, partition), row)
        return row

    def checkpoint(self, method: str, partition: int, identity: dict) -> Checkpointing:
        """The resumable checkpoint of the row's CV learning (identity: config, method, partition)."""
        return Checkpointing(self.folder / "checkpoints" / f"{method}-p{partition}.npz", resume=True,
                             identity={**_plain(identity), "method": method, "partition": partition})


def learn_and_evaluate_row(prior, likelihood, data, folds, options, *, checkpoint: Checkpointing,
                           one_vs_rest=False, say=print, label=""):
    """CV learning (checkpointed) + final fit + test scores for one method; returns a dict of figures."""
    clock = new_clock()
    C = data.n_classes
    t0 = time.perf_counter()

    def report(prefix):
        return lambda r: say(f"  {label}{prefix} it {r.iteration}: Ψ = {r.value:.5g}, "
                             f"{r.evaluations} eval ({r.failed} failed), {r.seconds:.1f} s")

    if not one_vs_rest:
        Y = np.eye(C)[data.y_train]
        op = Timed(prior.operator(data.X_train, C), clock)
        res = learn_hyperparameters(op, likelihood, Y, folds, options, checkpoint=checkpoint, on_iteration=report(""))
        learn_s = time.perf_counter() - t0
        t = time.perf_counter()
        model = fit_learned(res, likelihood, Y, options)
        fit_s = time.perf_counter() - t
        P = model.predict_proba(data.X_test)
        results, hyper = [res], res.hyperparameters()
    else:
        op2 = Timed(prior.operator(data.X_train, 2), clock)
        ovr = learn_one_vs_rest(op2, likelihood, data.y_train, C, folds, options, checkpoint=checkpoint,
                                on_iteration=lambda c, r: report(f" class {c}")(r))
        fit_s = sum(m.result.diagnostics.seconds for m in ovr.models)
        learn_s = time.perf_counter() - t0 - fit_s
        P = ovr.predict_proba(data.X_test)
        results = list(ovr.learned)
        hyper = {f"class{c}.{k}": v for c, r in enumerate(results) for k, v in r.hyperparameters().items()}
    evals = [e for r in results for e in r.evaluations]
    wall = max(learn_s + fit_s, 1e-12)
    return {
        "test_error": M.error(P, data.y_test),
        "test_log_loss": M.log_loss(P, data.y_test),
        "learning_seconds": learn_s,  # of this process: a resumed row counts only its own part
        "final_fit_seconds": fit_s,
        "evaluations": len(evals),
        "failed_evaluations": sum(not e.ok for e in evals),
        "outer_iterations": sum(r.outer.iteration for r in results),
        "seconds_per_evaluation": sum(e.seconds for e in evals) / max(1, len(evals)),
        "mvm_share": clock["mvm"] / wall,
        "grad_trace_share": clock["grad_trace"] / wall,
        "restrict_share": clock["restrict"] / wall,
        "kernel_build_share": clock["kernel_build"] / wall,
        "mvms": clock["mvm_calls"],
        "psi": [r.psi for r in results],
        "converged": all(r.converged for r in results),
        "resumed_from": [r.resumed_from for r in results],
        "hyperparameters": hyper,
    }


def mean_sd_table(rows: dict, keys) -> dict:
    """Per method: test error mean ± sd (in %, population sd as numpy's default) over its rows and the
    means of ``keys``."""
    out = {}
    for m, rs in rows.items():
        if not rs:
            continue
        e = np.array([r["test_error"] for r in rs]) * 100
        s = {k: float(np.mean([r[k] for r in rs])) for k in keys if all(k in r for r in rs)}
        s.update(test_error_mean=float(e.mean()), test_error_std=float(e.std()), test_errors=e.tolist(),
                 partitions=[r["partition"] for r in rs])
        out[m] = s
    return out
