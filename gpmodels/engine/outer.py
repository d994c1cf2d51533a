"""What an outer joblib parallelism leaves this process: the cores an estimator's own engine may use.

scikit-learn runs ``cross_val_score(est, X, y, n_jobs=k)`` and ``GridSearchCV(est, n_jobs=k)`` on joblib:
by default k loky worker processes, each started with the thread variables (``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, ...) set to ``cpu_count() // k`` (joblib's
``_prepare_worker_env``; ``parallel_config(inner_max_num_threads=t)`` sets t instead), which threadpoolctl
then reports as the BLAS limit in that worker.  Each task runs inside ``parallel_config`` with joblib's
nested backend, whose ``nesting_level`` is 1 or more (0 at the top).  An estimator whose own engine took
every core in every such worker would run k × cores processes at once (issue 41: 23.7 s at k = 2 against
10.1 s serially); :func:`cores_left` gives it its share instead:

- at the top (nesting level 0): the usable cores, or fewer where ``parallel_config(n_jobs=j)`` is in
  effect (j > 0: at most j; -1: all);
- inside a joblib task in a worker process: the BLAS limit joblib left there (at least 1), never more
  than the usable cores;
- inside a joblib task on a thread (the threading backend): 1, this process's cores being shared by the
  outer threads already.

:func:`read_outer` reads the state from joblib and threadpoolctl (joblib is only asked when a program has
imported it: a task of joblib's can only run where it is); the sizing itself is a pure function of it,
so the tests inject the limits.
"""

from __future__ import annotations

import sys
import threading

import attrs

from gpmodels.linalg.blas_threads import blas_threads, usable_cores

__all__ = ["OuterParallelism", "cores_left", "read_outer", "engine_cores"]


@attrs.frozen
class OuterParallelism:
    """The outer parallelism this process runs in: joblib's ``nesting_level`` (0 at the top), the
    ``n_jobs`` of ``parallel_config`` in effect (None: not set), whether the task runs on a thread other
    than the main one, and the BLAS thread limit in effect (threadpoolctl)."""

    nesting_level: int = 0
    n_jobs: int | None = None
    in_thread: bool = False
    blas_limit: int | None = None


def cores_left(usable: int, outer: OuterParallelism) -> int:
    """The cores the estimator's engine may use out of ``usable`` under ``outer`` (module docstring)."""
    usable = max(1, int(usable))
    if outer.nesting_level <= 0:
        n = outer.n_jobs
        return min(usable, int(n)) if isinstance(n, int) and n > 0 else usable
    if outer.in_thread:
        return 1
    return max(1, min(usable, outer.blas_limit or usable))


def read_outer() -> OuterParallelism:
    """The outer parallelism of this process now, from joblib (when imported) and threadpoolctl."""
    joblib_parallel = sys.modules.get("joblib.parallel")
    if joblib_parallel is None:
        return OuterParallelism()
    backend, n_jobs = joblib_parallel.get_active_backend()
    return OuterParallelism(
        nesting_level=int(getattr(backend, "nesting_level", 0) or 0),
        n_jobs=n_jobs if isinstance(n_jobs, int) else None,
        in_thread=threading.current_thread() is not threading.main_thread(),
        blas_limit=blas_threads(),
    )


def engine_cores(outer: OuterParallelism | None = None) -> int:
    """The cores of this process that the estimator's engine may use: :func:`cores_left` of the usable
    cores (:func:`~gpmodels.linalg.blas_threads.usable_cores`) under ``outer`` (None: :func:`read_outer`)."""
    return cores_left(usable_cores(), read_outer() if outer is None else outer)
