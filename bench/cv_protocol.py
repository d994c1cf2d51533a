"""A resumable benchmark protocol: one JSON file per finished (method, partition) row, checkpointed learning.

``RowStore(folder, config)`` owns an output folder.  ``config.json`` records what determines the
rows (spec, data digest, bench settings); opening a folder written under another configuration
raises :class:`OutputError` naming the differing keys (use a fresh folder), so rows of different
set-ups never mix.  Each finished row goes to ``rows/<method>-p<partition>.json`` (written to a
temporary file, then renamed: a row file is complete or absent); a rerun skips rows that exist.
The CV learning of an unfinished row checkpoints to ``checkpoints/<method>-p<partition>.npz``
through the package's checkpoint machinery (``optimize/checkpoint.py``, one file per task for
one-vs-rest) and resumes from it, so an interrupted row continues at its last outer iteration.

The rows are computed by ``cv_common.learn_and_evaluate`` with the row's checkpoint.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from gpmodels.errors import OutputError
from gpmodels.optimize.checkpoint import Checkpointing

__all__ = ["RowStore", "mean_sd_table"]


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

    def get(self, method: str, partition: int, folds_digest: str) -> dict | None:
        """The stored row, or None if it has not finished.  A row computed on other folds than
        ``folds_digest`` (a partition drawn by an older ``kfold_partition``) raises OutputError."""
        p = self.row_path(method, partition)
        if not p.exists():
            return None
        row = json.loads(p.read_text())
        if row.get("folds_digest") != folds_digest:
            raise OutputError(
                f"{p} was computed on other folds than partition {partition} has now (the stratified "
                "partition changed in issue 12); use a fresh folder"
            )
        return row

    def put(self, method: str, partition: int, row: dict, folds_digest: str) -> dict:
        """Store a finished row (atomically) with the digest of its folds; returns it as read back."""
        row = _plain({**row, "method": method, "partition": partition, "folds_digest": folds_digest})
        _write_atomic(self.row_path(method, partition), row)
        return row

    def checkpoint(self, method: str, partition: int, identity: dict) -> Checkpointing:
        """The resumable checkpoint of the row's CV learning (identity: config, method, partition)."""
        return Checkpointing(
            self.folder / "checkpoints" / f"{method}-p{partition}.npz",
            resume=True,
            identity={**_plain(identity), "method": method, "partition": partition},
        )


def mean_sd_table(rows: dict, keys) -> dict:
    """Per method: test error mean ± sd (in %, population sd as numpy's default) over its rows and the
    means of ``keys``."""
    out = {}
    for m, rs in rows.items():
        if not rs:
            continue
        e = np.array([r["test_error"] for r in rs]) * 100
        s = {k: float(np.mean([r[k] for r in rs])) for k in keys if all(k in r for r in rs)}
        s.update(
            test_error_mean=float(e.mean()),
            test_error_std=float(e.std()),
            test_errors=e.tolist(),
            partitions=[r["partition"] for r in rs],
        )
        out[m] = s
    return out
