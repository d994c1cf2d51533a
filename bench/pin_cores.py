"""``--cores N`` of the benches: pin this process, and every process it starts, to N of the cores it
may use, before numpy starts the BLAS threads.  The engines then size their workers and BLAS threads
from those N (``os.sched_getaffinity``, :mod:`gpmodels.engine.auto`), as they would on an N-core
machine or under ``taskset``.

Imported first (no numpy here): ``pin_from_argv()`` reads ``--cores N`` / ``--cores=N`` from the
command line itself, so that the pinning precedes every import that could start threads; the
bench's argparse declares the option for its help and checks.
"""

from __future__ import annotations

import os
import sys

__all__ = ["pin_cores", "pin_from_argv"]


def pin_cores(n: int) -> list[int]:
    """Pin this process to the first ``n`` cores of its affinity mask; returns them."""
    usable = sorted(os.sched_getaffinity(0))
    if not 1 <= n <= len(usable):
        raise SystemExit(f"--cores must be between 1 and the {len(usable)} usable cores {usable}; got {n}")
    chosen = usable[:n]
    os.sched_setaffinity(0, chosen)
    return chosen


def pin_from_argv(argv: list[str] | None = None) -> int | None:
    """Pin to ``--cores N`` of ``argv`` (default: ``sys.argv``) if given; returns N or None."""
    argv = sys.argv[1:] if argv is None else argv
    for i, arg in enumerate(argv):
        value = (
            arg.split("=", 1)[1]
            if arg.startswith("--cores=")
            else (argv[i + 1] if arg == "--cores" and i + 1 < len(argv) else None)
        )
        if value is not None:
            try:
                n = int(value)
            except ValueError:
                raise SystemExit(f"--cores must be a whole number of cores; got {value!r}") from None
            pin_cores(n)
            return n
    return None
