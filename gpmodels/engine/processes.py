"""Worker processes that hold the shared state of many maps: the process engine.

Threads cannot run CV folds at once in CPython: between the BLAS calls (one symv per class and CG
step for separate kernels) the inner loops are Python and numpy on |J| x C arrays that hold the
GIL.  Measured on digits mc-sep (n = 1198, C = 10, 5 folds, 2 cores, one BLAS thread per fold):
two threads took 32.8 s against 18.6 s for one, while two independent processes each ran at
97 % of the speed of one alone.

:class:`ProcessEngine` starts ``workers`` processes (forked where the platform can and the shared
state allows, see below: they inherit the shared state without pickling it) when a map gets a ``shared``
object its workers do not hold, and keeps them for the next maps with the same object: a learning
run ships the operator at the start hyperparameters, the likelihood and the targets once, and every
Ψ evaluation ships only θ and the folds' index sets and inner state.  Every worker limits its BLAS
to ``blas_threads`` threads (default: the cores over the workers), so that processes times BLAS
threads does not oversubscribe the cores.  A map with fewer jobs than workers starts only as many.

A worker calls the map's ``fn(shared, job)`` with the ``shared`` object it was given: the same code
on the same inputs as in this process, so the results are the same arrays, bit for bit, as the
serial engine's with the same BLAS threads.

A map whose jobs are not whole rounds of the workers (5 CV folds on 2 workers) ends with fewer jobs than
workers: those last jobs start when the others are done and run their compiled loops (the sparse products,
Newton–CG's row sweeps, the tree products: :func:`~gpmodels.linalg.compiled_loops.compiled_width`) on the
cores over their number, where the other workers would idle; their BLAS threads, and with them the results,
stay the same.  One cold H1 Ψ evaluation at section B of WIPO-alpha (5 folds, 2 workers): 863 s with the fifth
fold on one thread, 761 s on two.

How the workers start is declared, never probed: ``start_method``
(:data:`~gpmodels.engine.state.START_METHODS`) when given, else what the map's shared state declares
(:func:`~gpmodels.engine.state.worker_start_method`: kernel matrices on a CUDA device declare
``spawn``), else ``fork``.  Workers started by ``spawn`` or
``forkserver`` are fresh interpreters: they get the shared state pickled (device representations as
their recipe, rebuilt in each worker's own device context) and re-import ``__main__``, so a script that
uses them needs an ``if __name__ == "__main__"`` guard.  They cost start-up: measured on the 2-core
reference machine under load, a pool of 2 (5) workers that import gpmodels starts in 1.7 s (2.8 s) by
``spawn`` and 0.05 s (0.14 s) by ``fork`` (a worker that imports PyTorch and opens CUDA takes longer).
A ``fork`` asked for explicitly with a shared state that needs a fresh interpreter is an
:class:`~gpmodels.errors.EngineError` before any worker starts, never a crash inside a forked child.

A worker ends itself when the process that started it is gone (a thread polls its parent every
``PARENT_POLL_SECONDS``), so a run killed by SIGKILL leaves no worker alive.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from gpmodels.engine.base import Engine, EngineConfig, LocalEngine, Workload, results_in_order
from gpmodels.engine.state import FRESH_START_METHODS, START_METHODS, worker_start_method
from gpmodels.errors import EngineError, InputError
from gpmodels.linalg.blas_threads import limit_blas_threads, usable_cores
from gpmodels.linalg.compiled_loops import compiled_width

__all__ = ["ProcessEngine", "START_METHOD"]

#: the start method of workers whose shared state declares none: ``fork`` where there is one (the
#: workers inherit the shared state without pickling it, and a caller's script is not re-imported:
#: ``spawn`` re-runs a main module that lacks a ``if __name__ == "__main__"`` guard); OpenBLAS
#: re-creates its threads in a forked child
START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"

#: in a worker process: the shared state it was started with and its BLAS limit (held while referenced)
_HELD: dict = {}


#: how often a worker checks that the process that started it is alive (seconds)
PARENT_POLL_SECONDS = 0.5


def _watch_parent(parent: int) -> None:
    """End this worker as soon as ``parent`` is gone (the worker is then re-parented): a killed run
    (SIGKILL, or SIGTERM while the pool is held) leaves no worker behind holding its pipes or lock."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)


def _start_worker(shared, blas: int, parent: int | None = None, pickled: bool = False) -> None:
    """Initializer of a worker: die with the process that started it, ``parent`` (a daemon thread watches
    it; None: this process's parent), limit the BLAS threads, and keep the map's shared state, unpickled
    here when it came ``pickled`` (a fresh interpreter: device representations rebuild their arrays now,
    under the BLAS limit)."""
    watched = os.getppid() if parent is None else parent  # a forkserver's worker: the server, which ends with us
    threading.Thread(target=_watch_parent, args=(watched,), name="gpmodels-parent-watch", daemon=True).start()
    limit = limit_blas_threads(blas)
    _HELD.update(shared=pickle.loads(shared) if pickled else shared, limit=limit)


def _started() -> bool:
    return "shared" in _HELD


def _call(fn, job):
    """A job in a worker: the map's own ``fn`` on the shared state this worker holds."""
    return fn(_HELD["shared"], job)


def wide_tail_threads(workload: Workload | None, jobs: int, workers: int, cores: int, threads: int) -> int:
    """The compiled threads of each of a map's last jobs, those that do not fill a round of the ``workers``
    (of ``threads`` each), where its ``workload`` declares compiled jobs (module docstring): the ``cores`` over
    their number; 0 where the jobs fill their rounds, run no compiled loops, or would get no more threads than
    a worker has (then waiting for the others would only cost)."""
    tail = jobs % workers if jobs > workers else 0
    if workload is None or not workload.compiled or tail == 0:
        return 0
    width = cores // tail
    return width if width > threads else 0


def wide_tail_note(workload: Workload | None, workers: int, cores: int, threads: int) -> str:
    """The worker plan's words for :func:`wide_tail_threads` (empty where there is no wide tail)."""
    jobs = 0 if workload is None else workload.tasks
    width = wide_tail_threads(workload, jobs, workers, cores, threads)
    if not width:
        return ""
    return f"; the last {jobs % workers} after the others, on {width} threads of compiled loops each"


def _then_wide(pool, fn, first: list, rest: list, width: int):
    """The results of the futures ``first`` in order, then of ``rest`` submitted once those are done, each job's
    compiled loops on ``width`` threads."""
    yield from results_in_order(first)
    yield from results_in_order([pool.submit(_call_wide, fn, job, width) for job in rest])


def _call_wide(fn, job, threads: int):
    """:func:`_call` with the compiled loops on ``threads`` threads (a map's last jobs, the other workers idle)."""
    with compiled_width(threads):
        return fn(_HELD["shared"], job)


class ProcessEngine(Engine):
    """``workers`` worker processes with ``blas_threads`` BLAS threads each, started by ``start_method``
    (None: as the shared state declares, else ``fork``; module docstring).

    Use as a context manager (the workers stop on leaving it, errors included).  ``start_seconds``:
    wall seconds the last start of workers took (processes up, shared state unpickled, BLAS limited);
    ``started_with``: the start method they used."""

    def __init__(
        self,
        workers: int,
        blas_threads: int | None = None,
        *,
        cores: int | None = None,
        start_method: str | None = None,
    ):
        if int(workers) < 1 or (blas_threads is not None and int(blas_threads) < 1):
            raise InputError(
                f"ProcessEngine needs workers >= 1 and blas_threads >= 1 or None; got workers={workers}, "
                f"blas_threads={blas_threads}"
            )
        available = multiprocessing.get_all_start_methods()
        if start_method is not None and (start_method not in START_METHODS or start_method not in available):
            raise InputError(
                f"The 'start_method' parameter of ProcessEngine must be None or one of {available} on this "
                f"platform; got {start_method!r} instead"
            )
        self.workers = int(workers)
        self.cores = int(cores) if cores else usable_cores()
        self.blas_threads = int(blas_threads) if blas_threads else max(1, self.cores // self.workers)
        self.start_method = start_method
        self.start_seconds = 0.0
        self.started_with: str | None = None
        self._pool: ProcessPoolExecutor | None = None
        self._shared = None
        self._size = 0

    @classmethod
    def from_config(cls, config: EngineConfig) -> ProcessEngine:
        cores = config.cores or usable_cores()
        return cls(config.n_workers or cores, config.blas_threads, cores=cores, start_method=config.start_method)

    def workers_for(self, workload: Workload) -> int:
        return max(1, min(self.workers, workload.tasks))

    def start_method_for(self, shared) -> str:
        """How workers holding ``shared`` start: this engine's ``start_method``, else the one ``shared``
        declares, else :data:`START_METHOD`.  A ``fork`` that ``shared`` cannot survive is an EngineError."""
        needed = worker_start_method(shared)
        method = self.start_method or needed or START_METHOD
        if needed is not None and method not in FRESH_START_METHODS:
            raise EngineError(
                f"the shared state of this map holds state that a forked worker cannot use (it declares "
                f"start method {needed!r}: arrays on a device, whose CUDA context a forked child cannot "
                f"re-initialise); allowed: ProcessEngine(start_method=None, 'spawn' or 'forkserver') "
                f"(engine.start_method in a spec), or a local engine; got start_method={method!r}"
            )
        return method

    def _pool_for(self, shared, size: int) -> ProcessPoolExecutor:
        """The pool whose workers hold ``shared`` (started now if they hold something else or too few)."""
        if self._pool is not None and self._shared is shared and self._size >= size:
            return self._pool
        self.close()
        if multiprocessing.current_process().daemon:
            raise EngineError(
                "a process engine cannot start workers inside a daemonic process (a task of a process "
                "pool or of a Dask worker); use the engine's inner() engine there"
            )
        method = self.start_method_for(shared)
        t = time.perf_counter()
        fresh = method in FRESH_START_METHODS  # the state pickled once here, unpickled by each worker
        state = pickle.dumps(shared, protocol=pickle.HIGHEST_PROTOCOL) if fresh else shared
        pool = ProcessPoolExecutor(
            size,
            mp_context=multiprocessing.get_context(method),
            initializer=_start_worker,
            initargs=(state, self.blas_threads, None if method == "forkserver" else os.getpid(), fresh),
        )
        try:
            for f in [pool.submit(_started) for _ in range(size)]:  # start them now, fail early
                f.result()
        except BrokenProcessPool as exc:
            pool.shutdown(wait=False, cancel_futures=True)
            raise EngineError(
                f"the {size} worker processes ({method}) did not start: one died while receiving the shared "
                "state or starting (its traceback is on stderr)"
            ) from exc
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        self.start_seconds, self.started_with = time.perf_counter() - t, method
        self._pool, self._shared, self._size = pool, shared, size
        return pool

    def worker_plan(self, workload: Workload) -> tuple[int, str]:
        workers, reason = super().worker_plan(workload)
        return workers, reason + wide_tail_note(workload, workers, self.cores, self.blas_threads)

    def imap_shared(self, fn, shared, jobs, workload=None):
        jobs = list(jobs)
        size = min(self.workers, len(jobs))
        if size <= 1:
            return LocalEngine(blas_threads=self.blas_threads).imap_shared(fn, shared, jobs)
        pool = self._pool_for(shared, size)
        width = wide_tail_threads(workload, len(jobs), size, self.cores, self.blas_threads)
        if not width:
            return results_in_order([pool.submit(_call, fn, job) for job in jobs])
        head = len(jobs) - len(jobs) % size
        first = [pool.submit(_call, fn, job) for job in jobs[:head]]
        return _then_wide(pool, fn, first, jobs[head:], width)

    def close(self) -> None:
        pool, self._pool, self._shared, self._size = self._pool, None, None, 0
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __repr__(self) -> str:
        method = "" if self.start_method is None else f", start_method={self.start_method!r}"
        return f"ProcessEngine(workers={self.workers}, blas_threads={self.blas_threads}{method})"
