"""Numba's parallel loops under the thread policy of :mod:`gpmodels.linalg.blas_threads`.

A compiled product's loops are written once as plain Python over ``_prange`` (``range`` when read or run
uncompiled) and :func:`compile_parallel` compiles them with ``numba.prange`` in its place.  Their thread
count comes from :func:`compiled_threads`: as many as the BLAS may use, so that an engine's workers,
which limit their BLAS threads, do not oversubscribe the cores with these loops either; Numba's count
is set per calling thread for the call only (:func:`numba_threads`).

The threading layer: GNU OpenMP (Numba's ``omp`` layer on Linux wheels) aborts a forked child of a process
that has used it ("fork() called from a process already using GNU OpenMP"), and the engines fork their
workers; so unless ``NUMBA_THREADING_LAYER`` names one, the loops run on TBB where it is installed (thread-
and fork-safe) and else on Numba's ``workqueue`` (fork-safe, but one launch at a time per process: the
launches of :func:`numba_threads` blocks hold a process-wide lock, so threads of an engine take turns,
each launch using its threads).

Numba is the optional extra ``fast`` (``pip install gpmodels[fast]``): :data:`AVAILABLE` says whether
it is installed; callers keep a numpy or scipy path for when it is not.
"""

from __future__ import annotations

import contextlib
import importlib.util
import threading
import types

from gpmodels.linalg.blas_threads import blas_threads

__all__ = [
    "AVAILABLE",
    "compile_parallel",
    "compiled_threads",
    "compiled_width",
    "numba_threads",
    "choose_threading_layer",
]

#: whether Numba is installed (imported on the first compilation only: it takes about 0.5 s)
AVAILABLE = importlib.util.find_spec("numba") is not None

#: one parallel launch at a time in this process (the workqueue layer is not thread-safe)
_LAUNCH = threading.Lock()


def choose_threading_layer() -> str:
    """Numba's threading layer for our loops (module docstring): as configured if the environment names one,
    else ``tbb`` where importable, else ``workqueue``.  Set before Numba's first parallel launch."""
    import numba

    if numba.config.THREADING_LAYER == "default":
        try:
            from numba.np.ufunc import tbbpool  # noqa: F401 - loads only with a compatible TBB

            numba.config.THREADING_LAYER = "tbb"
        except ImportError:
            numba.config.THREADING_LAYER = "workqueue"
    return numba.config.THREADING_LAYER


def compile_parallel(function, *, fastmath: bool = True, **compiled_globals):
    """``function`` compiled by Numba with parallel loops: its global ``_prange`` becomes ``numba.prange``
    and the globals named in ``compiled_globals`` the (compiled) functions given there; cached on disk,
    the GIL released; with ``fastmath`` float64 sums reassociated into vector registers (their last bits
    then depend on the machine's vector width, as BLAS's do) and products fused into multiply-adds,
    without it every operation rounded as numpy rounds it."""
    import numba

    choose_threading_layer()
    namespace = {**function.__globals__, **compiled_globals, "_prange": numba.prange}
    parallel = types.FunctionType(function.__code__, namespace, function.__name__, function.__defaults__)
    parallel.__qualname__ = function.__qualname__
    parallel.__module__ = function.__module__
    flags = {"reassoc", "contract"} if fastmath else False
    return numba.njit(cache=True, parallel=True, nogil=True, boundscheck=False, fastmath=flags)(parallel)


#: the threads of compiled loops that ask for none, where a :func:`compiled_width` block sets them (None: the BLAS's)
_width: int | None = None


def compiled_threads(requested: int | None = None) -> int:
    """Threads for a compiled parallel loop: ``requested``, else the :func:`compiled_width` in force, else as
    many as the BLAS may use; at most Numba's pool."""
    import numba

    if requested is None:
        requested = blas_threads() if _width is None else _width
    return max(1, min(numba.config.NUMBA_NUM_THREADS, int(requested)))


@contextlib.contextmanager
def compiled_width(threads: int):
    """Compiled loops that ask for no thread count run on ``threads`` threads in this block, whatever the BLAS's
    limit: an engine's worker given a map's last job while the other workers idle
    (:class:`~gpmodels.engine.processes.ProcessEngine`).  Their results do not change with it: every compiled
    loop fixes its rows' order and its partial sums' ranges itself."""
    global _width
    previous, _width = _width, max(1, int(threads))
    try:
        yield
    finally:
        _width = previous


@contextlib.contextmanager
def numba_threads(threads: int):
    """Numba's thread count for this calling thread set to ``threads`` for the duration of the block, which
    holds the process's launch lock (module docstring)."""
    import numba

    with _LAUNCH:
        previous = numba.get_num_threads()
        numba.set_num_threads(max(1, int(threads)))
        try:
            yield
        finally:
            numba.set_num_threads(previous)
