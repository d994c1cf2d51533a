"""BLAS threads: how many the BLAS uses and a context that limits them (threadpoolctl), and
:func:`configure_openblas`, the short spin of idle OpenBLAS threads that the ``gpmodels`` command runs with.

Used where gpmodels runs its own threads over numpy work (CV folds at once, float32 tile products)
so that Python threads times BLAS threads does not oversubscribe the cores.  threadpoolctl is a core
dependency: it is the standard way to query and limit the BLAS of numpy (scikit-learn uses it too).
"""

from __future__ import annotations

import functools
import os
import sys

from threadpoolctl import ThreadpoolController

__all__ = ["blas_threads", "limit_blas_threads", "configure_openblas", "OPENBLAS_THREAD_TIMEOUT"]

#: 2^4 cycles of spin for an idle OpenBLAS thread (OpenBLAS's default is 2^28): a digits final fit
#: (n = 1198, C = 10) on two cores took 21.7 s with two BLAS threads, 3.3 s with one, 2.6 s with this spin
OPENBLAS_THREAD_TIMEOUT = "4"


@functools.lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    return ThreadpoolController()


def blas_threads() -> int:
    """The number of threads of the BLAS numpy uses (the largest, if several are loaded; 1 if none)."""
    return max((c.num_threads for c in _controller().lib_controllers if c.user_api == "blas"), default=1)


def limit_blas_threads(limit: int):
    """A context in which the BLAS uses at most ``limit`` (>= 1) threads."""
    return _controller().limit(limits=max(1, int(limit)), user_api="blas")


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
