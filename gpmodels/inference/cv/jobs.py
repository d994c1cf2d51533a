"""The folds of a CV evaluation as jobs of an engine (:mod:`gpmodels.engine`).

:func:`run_folds` maps over the jobs (tasks, θ, options): one fold per job by
:func:`~gpmodels.inference.cv.fold.evaluate_fold`, or ``CVOptions.folds_per_fit`` folds in lockstep
(:mod:`gpmodels.inference.cv.stacked`), with the shared state :class:`FoldContext` (the operator at
the learning run's start, the likelihood, the targets; shipped to each worker once per run).  The
results are taken in fold order by the accumulation of Ψ, E, F and the failure rule.  The engine does
not change the numbers: with the same BLAS threads per job they are the same arrays, bit for bit.
"""

from __future__ import annotations

import threading

import numpy as np

from gpmodels.engine.auto import resident_bytes
from gpmodels.engine.base import Workload
from gpmodels.inference.cv.fold import evaluate_fold
from gpmodels.inference.cv.stacked import evaluate_stacked_folds
from gpmodels.likelihoods.base import Likelihood
from gpmodels.operators.base import Operator

__all__ = ["FoldContext", "run_folds", "fold_workload"]


class FoldContext:
    """The shared state of a CV learning run's fold jobs: the operator at the run's start
    hyperparameters ``base``, the likelihood and the targets Y (n, C), shipped to each worker of an
    engine once (:meth:`~gpmodels.engine.base.Engine.imap_shared`).

    :meth:`operator_at` gives the operator at θ, built once per θ and process by ``base.with_params``
    (the same call as the learner's, so the same numbers); :meth:`prime` gives it the operator the
    caller already built at θ, which the jobs run in this process then use."""

    def __init__(self, base: Operator, likelihood: Likelihood, Y: np.ndarray):
        self.base, self.likelihood, self.Y = base, likelihood, Y
        self._at: tuple | None = (np.array(base.params, dtype=np.float64), base)
        self._lock = threading.Lock()

    def prime(self, theta, op: Operator) -> None:
        """``op`` is the operator at θ (built by ``base.with_params(θ)``)."""
        with self._lock:
            self._at = (np.array(theta, dtype=np.float64), op)

    def operator_at(self, theta: np.ndarray) -> Operator:
        """The operator at θ, kept for the next jobs at the same θ (the previous one is freed first)."""
        with self._lock:
            if self._at is None or not np.array_equal(self._at[0], theta):
                self._at = None
                self._at = (np.array(theta, dtype=np.float64), self.base.with_params(theta))
            return self._at[1]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def run_folds(context: FoldContext, job: tuple) -> list[tuple]:
    """The folds of one job of an engine's map: per fold (FoldResult, None), or (None, message) when its
    exact solves failed.  ``job`` = (tasks, θ, opts, plan, gradient): one task runs by
    :func:`~gpmodels.inference.cv.fold.evaluate_fold`, several in lockstep
    (:func:`~gpmodels.inference.cv.stacked.evaluate_stacked_folds`, ``CVOptions.folds_per_fit``); the
    operator at θ comes from the shared :class:`FoldContext`.  Module-level so that a process or Dask
    engine can ship it."""
    tasks, theta, opts, plan, gradient = job
    op, lik, Y = context.operator_at(theta), context.likelihood, context.Y
    try:
        if len(tasks) == 1:
            return [(evaluate_fold(tasks[0], op, lik, Y, opts, gradient, plan), None)]
        return [(f, None) for f in evaluate_stacked_folds(list(tasks), op, lik, Y, opts, gradient, plan)]
    except np.linalg.LinAlgError as exc:  # exact solves at extreme hyperparameters
        return [(None, str(exc))] * len(tasks)


def fold_workload(op: Operator, jobs: int, folds_per_job: int = 1, compiled: bool = False) -> Workload:
    """What ``jobs`` fold jobs on ``op`` ask of an engine's workers: each builds the operator at new
    hyperparameters (the arrays of ``op``) and its folds' restricted copies of it (each at most as large);
    ``compiled``: the refits' host passes run as compiled sweeps (the execution plan's ``sweeps``)."""
    return Workload(
        tasks=jobs, worker_bytes=(1 + folds_per_job) * resident_bytes(op), points=op.n_points, compiled=compiled
    )
