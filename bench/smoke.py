"""The benches' ``--smoke`` mode: a run at a tiny size that checks a bench end to end in seconds (its figures are
not measurements).  A smoke run that needs a named data set or a device the machine lacks says so and ends with
a JSON line naming what was skipped, so the suite's smoke test passes on a machine without them."""

from __future__ import annotations

import json

from gpmodels.data.datasets import find_data_root
from gpmodels.errors import DataError

SMOKE_HELP = "a tiny run (seconds) that checks the bench end to end; its figures are not measurements"


def missing_data(*datasets: str) -> list[str]:
    """The named data sets that the data root (``$GPMODELS_DATA``, ``./data``, ``../shared/data``) lacks."""
    try:
        root = find_data_root()
    except DataError:
        return list(datasets)
    return [d for d in datasets if not (root / d).is_dir()]


def cuda_missing() -> str | None:
    """Why no CUDA device is usable here, or None when one is."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    return None if torch.cuda.is_available() else "no CUDA device visible to PyTorch"


def skipped(bench: str, reason: str) -> dict:
    """Say that the smoke run of ``bench`` skipped its work and why; print and return its JSON summary."""
    out = {"bench": bench, "smoke": True, "skipped": reason}
    print(f"{bench} --smoke: skipped ({reason})")
    print(json.dumps(out))
    return out


def skip_without_data(bench: str, *datasets: str) -> bool:
    """True (after saying so) when a named data set is absent, so the caller returns."""
    missing = missing_data(*datasets)
    if missing:
        skipped(bench, f"data set(s) {', '.join(missing)} not found under the data root")
    return bool(missing)
