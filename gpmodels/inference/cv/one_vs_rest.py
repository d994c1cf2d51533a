"""One-vs-rest with CV-learned hyperparameters per binary task (Seeger 2008, Sec. 6.2, "1rest").

C binary classifiers, the c-th separating class c from all others, each a softmax model with two
classes ("We use our method with C = 2 in order to implement the binary classifiers"), each with
its own hyperparameters learned by the CV criterion Ψ on the same fold partition, then a final
fit.  Prediction: x* -> argmax_c P̂_c(+1 | x*), P̂_c(+1 | x*) the first class' predictive
probability of the c-th classifier (footnote 16: asymptotically P(y* = c | x*), so the rule is
optimal).

``predict_proba`` returns the scores normalised to sum to one per row (a distribution, for
log-loss and ranking-based scores); ``predict_scores`` the raw P̂_c(+1 | x*).

``learn_one_vs_rest`` learns every task by Ψ; ``fit_one_vs_rest`` fits every task at the given
hyperparameters (no learning).  Both take an engine (:mod:`gpmodels.engine`): where it runs several
tasks at once (``engine.workers_for``), the C tasks are its jobs, each learnt with its folds one
after the other (the engine's ``inner()``); otherwise the tasks run here one after the other and the
engine runs each task's folds.  ``learn_binary_task`` does one task, for
callers that report progress per task (the ``one_vs_rest`` runner of the spec driver).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import attrs
import numpy as np

from gpmodels.engine.auto import AutoEngine, resident_bytes
from gpmodels.engine.base import Engine, LocalEngine, Workload
from gpmodels.errors import InputError
from gpmodels.inference.cv.learn import Checkpointing, LearnOptions, LearnResult, fit_learned, learn_hyperparameters
from gpmodels.inference.map.model import MAPModel, fit_map
from gpmodels.inference.map.newton import NewtonSolver
from gpmodels.likelihoods.base import Likelihood
from gpmodels.operators.base import Operator

__all__ = [
    "OneVsRestModel",
    "learn_one_vs_rest",
    "fit_one_vs_rest",
    "learn_binary_task",
    "binary_targets",
    "check_one_vs_rest",
    "task_checkpoint",
    "task_workload",
]


def binary_targets(y, c: int) -> np.ndarray:
    """Targets (n, 2) of the task 'class c' (column 0) against 'the rest' (column 1)."""
    y = np.asarray(y)
    pos = (y == c).astype(float)
    return np.column_stack([pos, 1.0 - pos])


@attrs.frozen(eq=False)
class OneVsRestModel:
    """C fitted binary models; prediction by the largest P̂_c(+1 | x).

    ``learned``: the LearnResult of every task, or empty when the tasks were fitted at given
    hyperparameters (``fit_one_vs_rest``)."""

    models: tuple  # MAPModel (or any predictor with predict_proba) per class
    learned: tuple = ()  # LearnResult per class, or ()

    def predict_scores(self, X_new) -> np.ndarray:
        """P̂_c(+1 | x) for every class c, shape (m, C)."""
        return np.column_stack([m.predict_proba(X_new)[:, 0] for m in self.models])

    def predict_proba(self, X_new) -> np.ndarray:
        """The scores normalised per row, shape (m, C)."""
        S = self.predict_scores(X_new)
        return S / S.sum(axis=1, keepdims=True)

    def predict(self, X_new) -> np.ndarray:
        return np.argmax(self.predict_scores(X_new), axis=1)


def check_one_vs_rest(binary_op: Operator, Y) -> tuple[np.ndarray, int]:
    """The integer labels and C of one-hot targets Y (n, C), after checking the operator has two
    classes, Y one row per point with a single 1, and every class a point."""
    if binary_op.n_classes != 2:
        raise InputError(
            f"one-vs-rest needs a two-class operator for the binary tasks; got {binary_op.n_classes} classes"
        )
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[0] != binary_op.n_points or Y.shape[1] < 2:
        raise InputError(
            f"one-vs-rest targets Y must have shape ({binary_op.n_points}, C) with C >= 2 classes; got {Y.shape}"
        )
    if not (np.all((Y == 0.0) | (Y == 1.0)) and np.all(Y.sum(axis=1) == 1.0)):
        raise InputError("one-vs-rest targets Y must be one-hot rows (hard labels: labels_to_targets(y, C))")
    y, C = np.argmax(Y, axis=1), Y.shape[1]
    missing = np.setdiff1d(np.arange(C), y)
    if missing.size:
        raise InputError(f"one-vs-rest: classes {missing.tolist()} have no training point")
    return y, C


def task_checkpoint(checkpoint: Checkpointing | None, c: int) -> Checkpointing | None:
    """The checkpoint of task c: the path gets a ``-class<c>`` suffix, the identity the class."""
    if checkpoint is None:
        return None
    p = Path(checkpoint.path)
    return attrs.evolve(
        checkpoint,
        path=p.with_name(f"{p.stem}-class{c}{p.suffix}"),
        identity={**checkpoint.identity, "one_vs_rest_class": c},
    )


def learn_binary_task(
    binary_op: Operator,
    likelihood: Likelihood,
    Yc,
    folds,
    options: LearnOptions | None = None,
    *,
    checkpoint: Checkpointing | None = None,
    on_iteration=None,
    engine: Engine | None = None,
) -> tuple[MAPModel, LearnResult]:
    """The binary task with targets ``Yc`` (n, 2) ('class c' against the rest: ``binary_targets(y, c)``):
    learn its hyperparameters by Ψ from ``binary_op``'s, then the final fit.  ``checkpoint`` is used
    as given (see :func:`task_checkpoint`); ``on_iteration(record)`` reports the outer iterations;
    ``engine``: where the folds run (as in :func:`learn_hyperparameters`)."""
    opts = options or LearnOptions()
    res = learn_hyperparameters(
        binary_op, likelihood, Yc, folds, opts, checkpoint=checkpoint, on_iteration=on_iteration, engine=engine
    )
    return fit_learned(res, likelihood, Yc, opts), res


def _learn_task(shared: tuple, job: tuple):
    """Task c of :func:`learn_one_vs_rest` as an engine's job: (model, LearnResult)."""
    binary_op, likelihood, y, folds, options, engine = shared
    c, checkpoint = job
    return learn_binary_task(
        binary_op, likelihood, binary_targets(y, c), folds, options, checkpoint=checkpoint, engine=engine
    )


def _fit_task(shared: tuple, c: int) -> MAPModel:
    """Task c of :func:`fit_one_vs_rest` as an engine's job."""
    binary_op, likelihood, y, solver = shared
    return fit_map(binary_op, likelihood, binary_targets(y, c), solver)


def task_workload(binary_op: Operator, C: int) -> Workload:
    """C binary tasks on ``binary_op``: each worker builds the operator at its own hyperparameters
    and the folds' restricted copies."""
    return Workload(tasks=C, worker_bytes=2 * resident_bytes(binary_op), points=binary_op.n_points)


def learn_one_vs_rest(
    binary_op: Operator,
    likelihood: Likelihood,
    Y,
    folds,
    options: LearnOptions | None = None,
    *,
    checkpoint: Checkpointing | None = None,
    on_iteration: Callable[[int, object], None] | None = None,
    engine: Engine | None = None,
) -> OneVsRestModel:
    """Learn and fit the C binary models.

    ``binary_op``: the prior's operator over the training points for two classes (the starting
    hyperparameters of every binary task); ``Y``: one-hot targets (n, C); ``folds``: the
    partition shared by all tasks.  ``checkpoint``: its path gets a ``-class<c>`` suffix per task;
    a resumed run skips finished tasks through their finished checkpoints.
    ``on_iteration(c, record)`` reports progress (of tasks run here, one after the other).
    ``engine`` (None: an :class:`~gpmodels.engine.auto.AutoEngine` for this call): the C tasks as
    its jobs where it runs several at once, else their folds (module docstring).
    """
    y, C = check_one_vs_rest(binary_op, Y)
    with contextlib.ExitStack() as stack:
        if engine is None:
            engine = stack.enter_context(AutoEngine())
        workload = task_workload(binary_op, C)
        if engine.workers_for(workload) > 1:
            shared = (binary_op, likelihood, y, folds, options, engine.inner())
            done = engine.map_shared(
                _learn_task, shared, [(c, task_checkpoint(checkpoint, c)) for c in range(C)], workload
            )
            return OneVsRestModel(tuple(m for m, _ in done), tuple(r for _, r in done))
        models, learned = [], []
        for c in range(C):
            report = None if on_iteration is None else (lambda rec, c=c: on_iteration(c, rec))
            model, res = learn_binary_task(
                binary_op,
                likelihood,
                binary_targets(y, c),
                folds,
                options,
                checkpoint=task_checkpoint(checkpoint, c),
                on_iteration=report,
                engine=engine,
            )
            models.append(model)
            learned.append(res)
    return OneVsRestModel(tuple(models), tuple(learned))


def fit_one_vs_rest(
    binary_op: Operator, likelihood: Likelihood, Y, solver: NewtonSolver | None = None, *, engine: Engine | None = None
) -> OneVsRestModel:
    """Fit the C binary models at ``binary_op``'s hyperparameters with ``solver`` (Newton–CG by
    default; no learning) for one-hot targets ``Y`` (n, C), as the jobs of ``engine`` (None: one after
    the other here)."""
    y, C = check_one_vs_rest(binary_op, Y)
    engine = engine or LocalEngine()
    shared = (binary_op, likelihood, y, solver)
    return OneVsRestModel(tuple(engine.map_shared(_fit_task, shared, range(C), task_workload(binary_op, C))))
