"""The ``auto`` engine (the default): workers and BLAS threads sized from the cores and the memory.

:func:`plan_workers` is the sizing rule, a pure function of what it is given (the tests inject the
cores and the memory):

- the cores are those of this process's affinity mask (``os.sched_getaffinity``: ``taskset`` and
  container limits are respected), or ``cores`` when given;
- workers = min(cores, independent tasks, workers whose memory fits): never more workers than
  tasks, never more than the memory holds (``worker_bytes`` each out of ``available_bytes``);
- BLAS threads per worker = cores // workers, so that workers × BLAS threads = the cores (up to the
  remainder of that division, which stays idle rather than oversubscribe);
- one worker (this process, the jobs one after the other with all the cores' BLAS threads) when the
  problem has fewer than ``min_points`` training points: there a job takes milliseconds and a
  worker process costs more than it saves.  Measured (2 cores shared with other work, load ~17;
  three Ψ evaluations of 5 folds, RBF mc-sep, C = 3; serial with one BLAS thread against 2 worker
  processes, pool start included): 150 points 0.35 / 0.40 s, 300 points 0.61 / 0.58 s, 1200 points
  10.2 / 8.1 s; ``MIN_POINTS`` = 500 stays on the safe side of the crossing;
- one worker inside a daemonic process (a task of a process pool or a Dask worker), which may not
  start processes;
- kernel matrices on a device (a shared state that declares device contexts,
  :func:`~gpmodels.engine.state.worker_devices`): every worker builds its own on the card, so the
  memory that bounds the workers is the device's free memory (:data:`MEMORY_SHARE` of it), not the
  host's; the workers start by ``spawn`` (:class:`~gpmodels.engine.processes.ProcessEngine`), which
  costs seconds of start-up (PyTorch imported and a CUDA context opened per worker), and their
  products contend for the one card: such maps stay in this process below ``MIN_POINTS_DEVICE``
  (measured: see there).

:class:`AutoEngine` applies the plan per map: a plan of one worker runs in this process
(:class:`~gpmodels.engine.base.LocalEngine`), more run on a
:class:`~gpmodels.engine.processes.ProcessEngine` of that size, kept while the next maps get the same
plan and shared state.  Inside ``with AutoEngine() as engine:`` this process's own BLAS uses at most
the cores (the work between maps: the gradient trace, the final fit); ``close`` stops the workers.
"""

from __future__ import annotations

import multiprocessing

import attrs
import numpy as np

from gpmodels.engine.base import Engine, EngineConfig, LocalEngine, Workload
from gpmodels.engine.outer import OuterParallelism, cores_left, read_outer
from gpmodels.engine.processes import ProcessEngine, wide_tail_note
from gpmodels.engine.state import resident_bytes, worker_devices
from gpmodels.errors import InputError
from gpmodels.kernels.memory_budget import GIB, available_memory_bytes
from gpmodels.linalg.blas_threads import blas_threads, limit_blas_threads, usable_cores

__all__ = [
    "AutoEngine",
    "WorkerPlan",
    "plan_workers",
    "resident_bytes",
    "engine_for_jobs",
    "MIN_POINTS",
    "MIN_POINTS_DEVICE",
    "MEMORY_SHARE",
]

#: below this many training points the auto engine runs the jobs in this process (module docstring)
MIN_POINTS = 500
#: below this many training points the auto engine keeps maps whose shared state holds kernel matrices
#: on a device in this process.  Measured on one H100 (16 cores): two Ψ evaluations of 5 folds at
#: n = 1200, C = 4 took 0.38 s here, and on 2 (5) spawned workers 5.0 s of start-up and then 4-7 s
#: (6-11 s) per evaluation (the workers' products contend for the one card); satimage mc-sep (n = 4435,
#: 13 evaluations) took 17.0 s here and 16.8 s on 5 spawned workers, 5.4 s of it their start-up
MIN_POINTS_DEVICE = 4000
#: share of the available memory the auto engine lets its workers take together
MEMORY_SHARE = 0.8


@attrs.frozen
class WorkerPlan:
    """How the auto engine runs a workload: ``workers`` at once with ``blas_threads`` BLAS threads
    each, and why."""

    workers: int
    blas_threads: int
    reason: str


def plan_workers(
    cores: int, workload: Workload, available_bytes: int | None, *, min_points: int = MIN_POINTS, can_fork: bool = True
) -> WorkerPlan:
    """The auto engine's plan for ``workload`` on ``cores`` cores with ``available_bytes`` of memory
    for the workers (None: unknown, not a limit); the rule is in the module docstring."""
    cores = max(1, int(cores))
    tasks = max(1, workload.tasks)
    if not can_fork:
        return WorkerPlan(1, cores, "a daemonic process cannot start workers")
    if workload.points is not None and workload.points < min_points:
        return WorkerPlan(1, cores, f"{workload.points} points < {min_points}: jobs too small for worker processes")
    fit = cores
    if workload.worker_bytes > 0 and available_bytes is not None:
        fit = max(1, int(available_bytes // workload.worker_bytes))
    workers = max(1, min(cores, tasks, fit))
    reason = f"{workers} of {cores} cores as workers: {tasks} tasks" + (
        f", memory for {fit} workers of {workload.worker_bytes / GIB:.2g} GiB" if fit < cores else ""
    )
    return WorkerPlan(workers, max(1, cores // workers), reason)


class AutoEngine(Engine):
    """Workers and BLAS threads sized per map by :func:`plan_workers` (module docstring).

    ``cores`` (None: this process's affinity mask), ``memory_gb`` (None: the share
    :data:`MEMORY_SHARE` of the available memory), ``min_points``: as in :func:`plan_workers`;
    ``min_points_device``: the same for maps whose shared state holds kernel matrices on a device;
    ``start_method``: that of its worker processes (None: as the shared state declares, else fork)."""

    def __init__(
        self,
        cores: int | None = None,
        memory_gb: float | None = None,
        *,
        min_points: int = MIN_POINTS,
        min_points_device: int = MIN_POINTS_DEVICE,
        start_method: str | None = None,
    ):
        self.cores = int(cores) if cores else usable_cores()
        self.memory_gb = memory_gb
        self.min_points = int(min_points)
        self.min_points_device = int(min_points_device)
        self.start_method = start_method
        self._procs: ProcessEngine | None = None
        self._limit = None

    @classmethod
    def from_config(cls, config: EngineConfig) -> AutoEngine:
        return cls(config.cores, config.memory_gb, start_method=config.start_method)

    def plan(self, workload: Workload, shared=None) -> WorkerPlan:
        """The plan for ``workload`` on this engine's cores and memory; ``shared``: the map's shared
        state, whose device contexts (:func:`~gpmodels.engine.state.worker_devices`) bound the workers
        by the device's free memory instead of the host's (each worker builds its matrices there)."""
        devices = [] if shared is None else worker_devices(shared)
        if devices:
            free = [d.free_bytes() for d in devices if callable(getattr(d, "free_bytes", None))]
            known = [f for f in free if f is not None]
            available = int(MEMORY_SHARE * min(known)) if known else None
        elif self.memory_gb is not None:
            available = int(self.memory_gb * GIB)
        else:
            free = available_memory_bytes()
            available = None if free is None else int(MEMORY_SHARE * free)
        return plan_workers(
            self.cores,
            workload,
            available,
            min_points=self.min_points_device if devices else self.min_points,
            can_fork=not multiprocessing.current_process().daemon,
        )

    def workers_for(self, workload: Workload) -> int:
        return self.plan(workload).workers

    def worker_plan(self, workload: Workload) -> tuple[int, str]:
        plan = self.plan(workload)
        threads = f"{plan.blas_threads} BLAS thread" + ("s" if plan.blas_threads != 1 else "")
        return plan.workers, f"{plan.reason}; {threads} each" + wide_tail_note(
            workload, plan.workers, self.cores, plan.blas_threads
        )

    def imap_shared(self, fn, shared, jobs, workload=None):
        jobs = list(jobs)
        workload = attrs.evolve(workload, tasks=len(jobs)) if workload is not None else Workload(len(jobs))
        plan = self.plan(workload, shared)
        if plan.workers <= 1:
            return LocalEngine(blas_threads=plan.blas_threads).imap_shared(fn, shared, jobs)
        procs = self._procs
        if procs is None or (procs.workers, procs.blas_threads) != (plan.workers, plan.blas_threads):
            self.close()
            procs = self._procs = ProcessEngine(
                plan.workers, plan.blas_threads, cores=self.cores, start_method=self.start_method
            )
        return procs.imap_shared(fn, shared, jobs, workload)

    def __enter__(self) -> AutoEngine:
        if self._limit is None and blas_threads() > self.cores:
            self._limit = limit_blas_threads(self.cores)
        return self

    def close(self) -> None:
        """Stop the workers (the next map starts new ones)."""
        procs, self._procs = self._procs, None
        if procs is not None:
            procs.close()

    def __exit__(self, *exc) -> None:
        self.close()
        limit, self._limit = self._limit, None
        if limit is not None:
            limit.restore_original_limits()

    def __repr__(self) -> str:
        return f"AutoEngine(cores={self.cores}{'' if self.memory_gb is None else f', memory_gb={self.memory_gb}'})"


def engine_for_jobs(n_jobs, owner: str = "the estimator", outer: OuterParallelism | None = None) -> Engine:
    """scikit-learn's ``n_jobs`` as an engine: None -> :class:`AutoEngine` (sized from the cores and
    memory), 1 -> this process, one job after the other, k > 1 -> k worker processes, -1 -> one per
    usable core, -k -> the usable cores + 1 - k (at least one).  ``owner`` names the parameter's
    owner in the error for anything else.

    Under an outer joblib parallelism (``cross_val_score(..., n_jobs=2)``, ``GridSearchCV(n_jobs=k)``;
    ``outer``, None: read now) the cores are what it leaves this process
    (:func:`~gpmodels.engine.outer.cores_left`): the auto engine is sized from them, and inside a joblib
    task k is at most them, so that the workers in all never outnumber the cores."""
    outer = read_outer() if outer is None else outer
    cores = cores_left(usable_cores(), outer)
    if n_jobs is None:
        return AutoEngine(cores)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise InputError(
            f"The 'n_jobs' parameter of {owner} must be None, a positive int or a negative int (-1: all "
            f"cores); got {n_jobs!r} instead"
        )
    workers = int(n_jobs) if n_jobs > 0 else max(1, cores + 1 + int(n_jobs))
    shared = outer.nesting_level > 0 or cores < usable_cores()  # an outer parallelism holds the other cores
    if shared:
        workers = min(workers, cores)
    return LocalEngine() if workers == 1 else ProcessEngine(workers, cores=cores if shared else None)
