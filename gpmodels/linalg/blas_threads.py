"""The one thread policy of gpmodels: the cores this process may use, the BLAS thread count and its
limits (threadpoolctl), and the thread pools of our own compiled / tiled products.

- :func:`usable_cores`: the cores of this process's affinity mask (``os.sched_getaffinity``, so that
  ``taskset`` and container limits are respected); the engines size their workers from it
  (:mod:`gpmodels.engine.auto`).
- :func:`blas_threads` / :func:`limit_blas_threads`: how many threads the BLAS uses, and a context
  that limits them.  An engine sets the limit of each of its workers (workers × BLAS threads = the
  cores); code that runs its own threads over numpy work asks :func:`blas_threads` how many it may use.
- :func:`thread_pool`: a pool of k threads of this process (float32 tile products, the compiled
  symmetric product), one per size and process: a forked worker does not inherit its parent's
  threads, so it gets pools of its own.
- :func:`one_blas_thread`: one BLAS thread for work whose BLAS calls are all too small for a thread
  team; where it applies is the execution plan's choice
  (:mod:`gpmodels.inference.execution_plan`: ``host_blas`` and :func:`~gpmodels.inference.execution_plan.dense_blas`).
- :func:`configure_openblas`: the short spin of idle OpenBLAS threads that the ``gpmodels`` command
  runs with.

threadpoolctl is a core dependency: it is the standard way to query and limit the BLAS of numpy
(scikit-learn uses it too).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from threadpoolctl import ThreadpoolController

__all__ = [
    "usable_cores",
    "blas_threads",
    "limit_blas_threads",
    "thread_pool",
    "configure_openblas",
    "OPENBLAS_THREAD_TIMEOUT",
    "one_blas_thread",
]

#: 2^4 cycles of spin for an idle OpenBLAS thread (OpenBLAS's default is 2^28): a digits final fit
#: (n = 1198, C = 10) on two cores took 21.7 s with two BLAS threads, 3.3 s with one, 2.6 s with this spin
OPENBLAS_THREAD_TIMEOUT = "4"


def usable_cores() -> int:
    """The number of cores this process may run on (its affinity mask; ``os.cpu_count()`` where the
    platform has no affinity)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


@functools.lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    return ThreadpoolController()


def blas_threads() -> int:
    """The number of threads of the BLAS numpy uses (the largest, if several are loaded; 1 if none)."""
    return max((c.num_threads for c in _controller().lib_controllers if c.user_api == "blas"), default=1)


def limit_blas_threads(limit: int):
    """A context in which the BLAS uses at most ``limit`` (>= 1) threads (also a plain object: the
    limit holds while it is referenced, until its ``restore_original_limits``)."""
    return _controller().limit(limits=max(1, int(limit)), user_api="blas")


def one_blas_thread():
    """A context in which the BLAS uses one thread, for work whose BLAS calls are all small: there waking
    a thread team costs more than the call.  Only in the main thread (threadpoolctl's limit is
    process-wide, and the engines set their worker threads' limits themselves); no change where the BLAS
    has one thread already."""
    if threading.current_thread() is not threading.main_thread() or blas_threads() == 1:
        return contextlib.nullcontext()
    return limit_blas_threads(1)


def thread_pool(workers: int) -> ThreadPoolExecutor:
    """A pool of ``workers`` threads of this process, kept for reuse (module docstring)."""
    return _pool_of(int(workers), os.getpid())


@functools.lru_cache(maxsize=8)
def _pool_of(workers: int, pid: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(workers, thread_name_prefix="gpmodels")


def configure_openblas() -> None:
    """Run this program with ``OPENBLAS_THREAD_TIMEOUT=4`` unless the environment sets it.

    After every call an idle OpenBLAS thread spins for 2^28 cycles; Newton–CG alternates short BLAS
    calls with numpy work in the main thread, which that spinning slows (:data:`OPENBLAS_THREAD_TIMEOUT`).
    OpenBLAS reads the variable once, when numpy loads it, and numpy is loaded by ``import gpmodels``:
    so when an OpenBLAS is loaded already, the program is started again (``os.execv`` of the same
    command line, in the same process id) with the variable set.  The ``gpmodels`` command calls this
    first; a script calls it first thing, or sets the variable before it imports numpy.  Nothing
    happens when the variable is set, whatever its value; elsewhere than on POSIX (where ``execv``
    would start a second process) the variable is only set, for the processes this one starts."""
    if "OPENBLAS_THREAD_TIMEOUT" in os.environ:
        return
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = OPENBLAS_THREAD_TIMEOUT
    if os.name == "posix" and any(c.internal_api == "openblas" for c in _controller().lib_controllers):
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, sys.orig_argv)
