"""Engines: the one way independent work runs (CV folds, one-vs-rest binary models, study rows).

An :class:`Engine` maps a pure function over independent jobs and returns the results in the
jobs' order.  Its primitive is :meth:`Engine.imap_shared`: ``fn(shared, job)`` for every job, where
``shared`` (an operator, the likelihood, the targets: large, the same for every job and for many
maps) is shipped to each worker once and the jobs (a fold's index sets and inner state, a class
number) are small.  The engines:

- :class:`LocalEngine` ``(threads=k)``: this process, one job after the other (k = 1) or on k
  threads with the BLAS threads split between them;
- :class:`gpmodels.engine.processes.ProcessEngine`: k worker processes that hold ``shared``;
- :class:`gpmodels.engine.auto.AutoEngine` (the default): sizes the workers and their BLAS threads
  from the cores this process may use and the memory each worker needs, then runs on one of the two
  above;
- :class:`gpmodels.engine.dask.DaskEngine`: a dask.distributed cluster (jobs as tasks, or the kernel
  matrices held in row blocks on its workers, :mod:`gpmodels.engine.dask_gram`).

What an engine can do is declared, not probed: :meth:`Engine.workers_for` (how many jobs of a
workload run at once), :meth:`Engine.inner` (the engine that work inside one of its jobs uses: the
serial one, so that parallel levels do not nest) and :meth:`Engine.representation` (how the kernel
matrices of an operator built for this engine are held).

The results do not depend on the engine: every job runs the same code on the same inputs, and the
caller sums them in job order.  With the same BLAS threads per job they are the same arrays, bit for
bit, on every engine and worker count (tests/engine/test_engines.py).

:func:`~gpmodels.engine.factory.open_engine` turns an :class:`EngineConfig` (the spec section ``engine``)
into an engine; use it as a context manager so that workers it started stop on errors and Ctrl-C too.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence

import attrs

from gpmodels.engine.state import START_METHODS
from gpmodels.errors import InputError
from gpmodels.linalg.blas_threads import blas_threads, limit_blas_threads, thread_pool
from gpmodels.validation import boolean, instance_of, nonnegative_int, one_of, optional, positive_int, positive_number

__all__ = ["Engine", "LocalEngine", "EngineConfig", "Workload", "ENGINE_TYPES", "DISTRIBUTE_MODES", "results_in_order"]

#: ``auto``: sized from the cores and memory (the default); ``local``: this process (``n_workers``
#: threads, 1: one job after the other); ``processes``: worker processes; ``dask``: a Dask cluster
ENGINE_TYPES = ("auto", "local", "processes", "dask")
#: what a dask engine spreads over its workers: the kernel matrices (``gram``: row blocks held on the
#: workers, every MVM one task per block) or the independent pieces of work (``tasks``: CV folds,
#: one-vs-rest binary models, study rows, each with in-process matrices on a worker)
DISTRIBUTE_MODES = ("gram", "tasks")


@attrs.frozen
class Workload:
    """What a map is about to run, for engines that size themselves (:class:`~gpmodels.engine.auto.AutoEngine`).

    ``tasks``: independent jobs; ``worker_bytes``: memory one worker needs for them beyond what it
    shares with this process (a fold worker builds the operator at new hyperparameters and its
    restrictions); ``points``: training points of the problem (None: unknown), below the auto
    engine's ``min_points`` a worker process costs more than it saves; ``compiled``: the jobs' time goes
    to compiled loops that run faster on more threads (the execution plan's compiled ``sweeps``), so a
    process engine gives a map's last jobs the cores the idle workers leave."""

    tasks: int = attrs.field(validator=nonnegative_int())
    worker_bytes: int = attrs.field(default=0, validator=nonnegative_int())
    points: int | None = attrs.field(default=None, validator=optional(nonnegative_int()))
    compiled: bool = attrs.field(default=False, validator=instance_of(bool))


@attrs.frozen
class EngineConfig:
    """How to start an engine (the spec section ``engine``).

    ``type``: one of :data:`ENGINE_TYPES`.  ``n_workers``: workers (threads for ``local``, processes
    for ``processes``, Dask workers of a LocalCluster); None: one for ``local``, otherwise sized from
    ``cores``.  ``blas_threads``: BLAS threads of each worker (None: ``cores`` // workers).
    ``cores``: the cores to use (None: those of this process's affinity mask); ``memory_gb``: memory
    the workers may use together (None: the machine's available memory).  ``start_method``: how
    worker processes start (:data:`~gpmodels.engine.state.START_METHODS`; None: ``fork``, or ``spawn``
    where the shared state declares it, as kernel matrices on a CUDA device do).

    Dask only: ``scheduler``, the address of a running Dask scheduler (``tcp://host:8786``); None
    starts a ``LocalCluster`` of ``n_workers`` worker processes (threads when ``processes`` is false)
    with ``threads_per_worker`` threads and ``memory_limit`` each (Dask's syntax: ``"4GiB"``,
    ``"auto"``); ``distribute``, one of :data:`DISTRIBUTE_MODES`; ``block_rows``, rows of one held
    block of a distributed kernel matrix (None: n split evenly over the cluster's worker threads).
    """

    type: str = attrs.field(default="auto", validator=one_of(ENGINE_TYPES))
    n_workers: int | None = attrs.field(default=None, validator=optional(positive_int()))
    blas_threads: int | None = attrs.field(default=None, validator=optional(positive_int()))
    cores: int | None = attrs.field(default=None, validator=optional(positive_int()))
    memory_gb: float | None = attrs.field(default=None, validator=optional(positive_number()))
    scheduler: str | None = attrs.field(default=None, validator=optional(instance_of(str, what="an address string")))
    threads_per_worker: int = attrs.field(default=1, validator=positive_int())
    memory_limit: str = attrs.field(default="auto", validator=instance_of(str, what="a size like '4GiB' or 'auto'"))
    processes: bool = attrs.field(default=True, validator=boolean())
    distribute: str = attrs.field(default="gram", validator=one_of(DISTRIBUTE_MODES))
    block_rows: int | None = attrs.field(default=None, validator=optional(positive_int()))
    start_method: str | None = attrs.field(default=None, validator=optional(one_of(START_METHODS)))


def results_in_order(futures: Sequence) -> Iterator:
    """The futures' results in their order; closing the generator early (a failed CV evaluation)
    cancels those not started yet.  An exception is raised when its future's result is reached."""
    try:
        for f in futures:
            yield f.result()
    finally:
        for f in futures:
            f.cancel()


def _apply(fn: Callable, item):
    """``fn(item)``: :meth:`Engine.map` as a shared-state map whose shared state is ``fn``."""
    return fn(item)


class Engine(abc.ABC):
    """Runs independent work; see the module docstring.

    Required: :meth:`imap_shared`.  The others have defaults that suit an engine running in this
    process: one job at a time, the serial engine inside a job, kernel matrices held in-process."""

    # ------------------------------------------------------------------ must be defined
    @abc.abstractmethod
    def imap_shared(self, fn: Callable, shared, jobs: Sequence, workload: Workload | None = None) -> Iterator:
        """``fn(shared, job)`` for every job, yielded in the order of ``jobs``; ``fn`` must be pure and
        module-level (a process or Dask engine ships it by reference).  ``shared`` goes to each worker
        once and is kept there while the next maps get the same object.  Closing the iterator early
        leaves the jobs not started undone; an exception of ``fn`` is raised when its job's result is
        reached."""

    # ------------------------------------------------------------------ defaults
    def workers_for(self, workload: Workload) -> int:
        """How many jobs of ``workload`` run at once (1: one after the other)."""
        return 1

    def worker_plan(self, workload: Workload) -> tuple[int, str]:
        """How many jobs of ``workload`` run at once, and why (the execution plan records it)."""
        workers = self.workers_for(workload)
        return workers, f"{workers} of {workload.tasks} jobs at once on {self!r}"

    def inner(self) -> Engine:
        """The engine for work inside one of this engine's jobs (serial: parallel levels do not nest)."""
        return LocalEngine()

    def representation(self, config):
        """What builds the kernel matrices of an operator run on this engine, from a
        :class:`~gpmodels.kernels.representations.RepresentationConfig`: the configuration itself
        (matrices in this process) unless the engine holds them on its workers."""
        return config

    def map_shared(self, fn: Callable, shared, jobs: Sequence, workload: Workload | None = None) -> list:
        """``[fn(shared, job) for job in jobs]``, run as :meth:`imap_shared` runs it."""
        return list(self.imap_shared(fn, shared, list(jobs), workload))

    def map(self, fn: Callable, items: Iterable) -> list:
        """``[fn(x) for x in items]``, in the order of ``items`` (``fn`` is the shared state)."""
        return self.map_shared(_apply, fn, list(items))

    def close(self) -> None:
        """Stop what the engine started (nothing for the local engine)."""
        return None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalEngine(Engine):
    """This process: the jobs one after the other (``threads=1``, lazily: a consumer that stops
    early saves the rest), or on ``threads`` threads, each with ``blas_threads`` BLAS threads (None:
    the BLAS threads split between them).  CPython runs the numpy glue between BLAS calls one thread
    at a time, so threads gain little over one after the other for CV folds; worker processes do
    (:class:`~gpmodels.engine.processes.ProcessEngine`)."""

    def __init__(self, threads: int = 1, blas_threads: int | None = None):
        if int(threads) < 1 or (blas_threads is not None and int(blas_threads) < 1):
            raise InputError(
                f"LocalEngine needs threads >= 1 and blas_threads >= 1 or None; got threads={threads}, "
                f"blas_threads={blas_threads}"
            )
        self.threads = int(threads)
        self.blas_threads = None if blas_threads is None else int(blas_threads)

    def workers_for(self, workload: Workload) -> int:
        return max(1, min(self.threads, workload.tasks))

    def imap_shared(self, fn, shared, jobs, workload=None):
        jobs = list(jobs)
        workers = min(self.threads, len(jobs))
        if workers <= 1:
            return self._serial(fn, shared, jobs)
        return self._threaded(fn, shared, jobs, workers)

    def _serial(self, fn, shared, jobs):
        limit = limit_blas_threads(self.blas_threads) if self.blas_threads else contextlib.nullcontext()
        with limit:
            for job in jobs:
                yield fn(shared, job)

    def _threaded(self, fn, shared, jobs, workers):
        with limit_blas_threads(self.blas_threads or max(1, blas_threads() // workers)):
            pool = thread_pool(workers)
            yield from results_in_order([pool.submit(fn, shared, job) for job in jobs])

    def __repr__(self) -> str:
        return f"LocalEngine(threads={self.threads})"
