"""CV folds on worker processes for the whole of a learning run.

The folds of a Ψ evaluation are independent tasks (:func:`~gpmodels.inference.cv.criterion.evaluate_fold`).
Threads cannot run them at once in CPython: between the BLAS calls (one symv per class and CG
step for separate kernels) the inner loops are Python and numpy on |J| x C arrays that hold the
GIL.  Measured on digits mc-sep (n = 1198, C = 10, 5 folds, 2 cores, one BLAS thread per fold):
two threads took 32.8 s against 18.6 s for one, while two independent processes each ran at
97 % of the speed of one alone.

`FoldProcesses` starts ``workers`` processes once per learning run (forked where the platform
can, see ``_START_METHOD``) and gives each the operator at the start hyperparameters, the
likelihood and the targets once.  An evaluation then ships only θ, the fold's index sets and its
part of the inner state; each worker builds the operator at θ itself (``op.with_params(θ)``, kept
for the next fold of the same evaluation) and returns the :class:`FoldResult`.  Every worker
limits its BLAS to ``blas_threads() // workers`` threads, so that processes times BLAS threads
does not oversubscribe the cores.

The results are the same arrays, bit for bit, as the sequential loop with that many BLAS threads:
a worker runs the same code on the same inputs (θ is shipped as the parent's exact float64 values
and the operator is built from it by the same ``with_params``).
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from gpmodels.errors import InputError
from gpmodels.inference.cv.criterion import _fold_task, results_in_order
from gpmodels.likelihoods.base import Likelihood
from gpmodels.linalg.blas_threads import blas_threads, limit_blas_threads
from gpmodels.operators.base import Operator

__all__ = ["FoldProcesses"]

_WORKER: dict = {}
#: ``fork`` where there is one: the workers inherit the run's inputs without pickling them, and a
#: caller's script is not re-imported (``spawn`` re-runs a main module that lacks a
#: ``if __name__ == "__main__"`` guard); OpenBLAS re-creates its threads in a forked child
_START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


def _start_worker(op: Operator, likelihood: Likelihood, Y: np.ndarray, threads: int) -> None:
    """Initializer of a worker process: keep the run's fixed inputs, limit the BLAS threads."""
    _WORKER.update(op=op, likelihood=likelihood, Y=Y, theta=None, op_theta=None,
                   limit=limit_blas_threads(threads))  # threadpoolctl's limit holds while referenced


def _ready() -> bool:
    return bool(_WORKER)


def _fold_at(task, theta: np.ndarray, opts, gradient: bool) -> tuple:
    """One fold at hyperparameters θ in a worker (the operator at θ is built once per θ)."""
    if _WORKER["theta"] is None or not np.array_equal(_WORKER["theta"], theta):
        _WORKER["op_theta"] = None  # free the previous matrices before building the new ones
        _WORKER["op_theta"] = _WORKER["op"].with_params(theta)
        _WORKER["theta"] = theta
    return _fold_task((task, _WORKER["op_theta"], _WORKER["likelihood"], _WORKER["Y"], opts, gradient))


class FoldProcesses:
    """A pool of worker processes that evaluates CV folds (module docstring).

    Use as a context manager (the workers stop on leaving it, errors included).
    :meth:`at` gives the ``map_folds`` of :func:`~gpmodels.inference.cv.criterion.cv_criterion`
    for the operator ``op.with_params(theta)``.
    """

    def __init__(self, op: Operator, likelihood: Likelihood, Y, workers: int):
        if int(workers) < 2:
            raise InputError(f"FoldProcesses needs at least 2 workers; got {workers}")
        self.workers = int(workers)
        threads = max(1, blas_threads() // self.workers)
        self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context(_START_METHOD),
                                         initializer=_start_worker, initargs=(op, likelihood, np.asarray(Y), threads))
        for f in [self._pool.submit(_ready) for _ in range(self.workers)]:  # start them now, fail early
            f.result()

    def at(self, theta):
        """``map_folds(fn, jobs)`` for the operator at θ: each job's fold runs on a worker at θ
        (``fn`` and the job's operator are not shipped; the worker's own are used)."""
        theta = np.array(theta, dtype=np.float64)

        def map_folds(fn, jobs):
            return results_in_order([self._pool.submit(_fold_at, task, theta, opts, gradient)
                                     for task, _op, _lik, _Y, opts, gradient in jobs])

        return map_folds

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> FoldProcesses:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
