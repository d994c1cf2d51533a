"""Hyperparameter learning by minimising the CV criterion Ψ, with checkpoints; the final fit.

Seeger 2008, Sec. 4: a fixed (seeded) q-partition; the outer optimiser
(``gpmodels.optimize.driver``) moves the log-space hyperparameters θ of the operator; every
evaluation builds the operator at θ once (``with_params``) and computes Ψ and ∇Ψ by
``cv_criterion``, warm-started from the inner state {α[J_k]} of the last successful evaluation
(:class:`CVObjective`).  After the start and after every successful outer iteration the state is
checkpointed (``optimize/checkpoint.py``); a run given the same checkpoint path resumes from it.  Then the final fit
on all training points with the learned θ and separate
Newton settings (Sec. 6.2: k1 = 13, k2 = 25, k3 = 40 for learning, k1 = 30, k2 = 50 for the
final fit).

Everything is generic over the operator protocol: the hyperparameters are whatever ``op.params``
holds (kernel shapes, variances, a learned intercept variance, and — once the structured priors
exist — ANOVA variances or coupling / factor-loading entries).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from operator import attrgetter

import attrs
import numpy as np

from gpmodels.engine.auto import AutoEngine
from gpmodels.engine.base import Engine, LocalEngine
from gpmodels.errors import InputError
from gpmodels.inference.cv.criterion import criterion_on
from gpmodels.inference.cv.jobs import FoldContext
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.cv.partition import check_partition
from gpmodels.inference.cv.state import CVState
from gpmodels.inference.cv.tolerances import INNER_TOLERANCES, ProgressTracker, scheduled_options
from gpmodels.inference.cv.warm_start import scaled_warm_start
from gpmodels.inference.execution_plan import ExecutionPlan
from gpmodels.inference.map.model import MAPModel, fit_map
from gpmodels.inference.map.newton import NewtonOptions, NewtonStep
from gpmodels.inference.map.solvers import SOLVER_NAMES, make_solver
from gpmodels.likelihoods.base import Likelihood
from gpmodels.operators.base import Operator
from gpmodels.optimize.checkpoint import Checkpointing, digest_array, probe_operator
from gpmodels.optimize.driver import minimize
from gpmodels.optimize.lbfgs import OuterOptions, OuterRecord, OuterState, Trial
from gpmodels.optimize.objective import log_box
from gpmodels.validation import instance_of, number, one_of, to_float

__all__ = [
    "LearnOptions",
    "Checkpointing",
    "LearnResult",
    "learn_hyperparameters",
    "fit_learned",
    "EvaluationLog",
    "CVObjective",
    "start_from_folds",
]


def _numbers_only(field, value) -> bool:
    """A checkpoint identity leaves out how the folds are executed (``folds_per_fit``: in lockstep or one by
    one, the same fits), as it leaves out the engine: a run may resume either way."""
    return field.name != "folds_per_fit"


def _named_callables(inst, field, value):
    """A checkpoint identity's value: a policy callable by its qualified name (JSON has no functions)."""
    if callable(value) and not attrs.has(type(value)):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', type(value).__name__)}"
    return value


@attrs.frozen
class LearnOptions:
    """Settings of CV learning and of the final fit.

    ``cv``: one Ψ evaluation (inner k1, k2, k3, failure threshold); ``outer``: the quasi-Newton
    optimiser (default ftol 1e-4: Ψ from truncated inner fits is noisy at about 1e-6 relative, and
    decreases of 1e-4 · Ψ no longer move the test scores; score_patience 3: stop when the folds'
    held-out misclassifications have not improved for 3 iterations — on digits mc-sep the test
    error stayed at 1.3–1.5 % over the last 8 of 12 iterations; score_rtol 0.01: by more than 1 %
    of their best — such a count (~200 of 2000 on satimage-2000, binomial sd ~13) moves by one or two
    between nearby hyperparameters by chance: there the count stayed within 199–201 over the last 6
    of 9 iterations while Ψ fell 1.3 %, and stopping after 5 iterations gave 9.30 % test error
    against 9.05 % after 9, in 11.8 s against 17.5 s); ``final``: Newton settings of the final
    fit (its k1, k2), by the solver ``final_solver`` names (``newton-cg`` or ``exact``);
    ``lower``/``upper``: log-space box for every hyperparameter (intersected with the
    operator's own ``param_bounds``); ``inner_tolerances``: ``adaptive`` loosens the refits' and
    accumulation solves' tolerances far from the optimum (``inference/cv/tolerances.py``; the
    ``cv`` values are the tightest used), ``fixed`` uses the ``cv`` values throughout.
    """

    cv: CVOptions = attrs.field(factory=CVOptions, validator=instance_of(CVOptions))
    outer: OuterOptions = attrs.field(
        factory=lambda: OuterOptions(ftol=1e-4, score_patience=3, score_rtol=0.01), validator=instance_of(OuterOptions)
    )
    final: NewtonOptions = attrs.field(
        factory=lambda: NewtonOptions(max_iter=30, cg_max_iter=50), validator=instance_of(NewtonOptions)
    )
    final_solver: str = attrs.field(default="newton-cg", validator=one_of(SOLVER_NAMES))
    lower: float = attrs.field(default=-15.0, converter=to_float, validator=number())  # log space
    upper: float = attrs.field(default=15.0, converter=to_float, validator=number())
    inner_tolerances: str = attrs.field(default="adaptive", validator=one_of(INNER_TOLERANCES))

    def __attrs_post_init__(self):
        if not self.lower < self.upper:
            raise InputError(
                f"LearnOptions.lower must be below upper (lower < upper); "
                f"got lower={self.lower!r} and upper={self.upper!r}"
            )


@attrs.frozen
class EvaluationLog:
    """One Ψ evaluation of this process (not restored on resume)."""

    ok: bool
    psi: float
    seconds: float
    mvms: int
    summary: dict
    plan: ExecutionPlan | None = None  # where and how its folds ran


@attrs.frozen(eq=False)
class LearnResult:
    """Learned hyperparameters and how the learning went."""

    operator: Operator  # at the learned hyperparameters
    theta: np.ndarray
    names: tuple
    psi: float
    gradient: np.ndarray
    outer: OuterState
    resumed_from: int | None  # outer iteration the run resumed from, or None
    evaluations: tuple  # EvaluationLog of this process
    folds: tuple = ()  # the partition Ψ was computed on (with ``outer.inner``: the final fit's start)
    bounds: np.ndarray | None = None  # (p, 2) the log-space box θ was learned in

    history = property(attrgetter("outer.history"))
    converged = property(attrgetter("outer.converged"))
    message = property(attrgetter("outer.message"))

    def hyperparameters(self) -> dict:
        """Learned values by name, natural units where the name says ``log_``."""
        return self.operator.describe()

    @property
    def plan(self) -> ExecutionPlan | None:
        """The execution plan of this process's last Ψ evaluation (None: it made none)."""
        return self.evaluations[-1].plan if self.evaluations else None


class CVObjective:
    """Ψ over ``op.params`` as an outer-optimiser objective (see ``optimize/objective.py``).

    Every evaluation builds the operator at θ once (``with_params``; the folds restrict it) and runs
    ``cv_criterion`` warm-started from ``seed`` (a :class:`CVState`).  Linear-algebra and
    floating-point errors make a failed evaluation.  ``log`` collects an :class:`EvaluationLog` per
    evaluation of this process.  ``inner_tolerances="adaptive"``: each evaluation's inner
    tolerances follow the progress of the best Ψ so far (:func:`scheduled_options`).  The folds of
    every evaluation run on ``engine`` (None: one after the other here), all with one shared
    :class:`~gpmodels.inference.cv.jobs.FoldContext`, which a worker receives once.
    """

    def __init__(
        self,
        op: Operator,
        likelihood: Likelihood,
        Y,
        folds,
        options: CVOptions,
        inner_tolerances: str = "fixed",
        engine: Engine | None = None,
    ):
        self.op, self.likelihood, self.Y, self.folds, self.options = op, likelihood, Y, folds, options
        self.inner_tolerances = inner_tolerances
        self.engine = engine or LocalEngine()
        self.context = FoldContext(op, likelihood, Y)
        self.progress = ProgressTracker()
        self.log: list[EvaluationLog] = []

    def options_now(self) -> CVOptions:
        """The options of the next evaluation (scheduled when adaptive)."""
        if self.inner_tolerances == "adaptive":
            return scheduled_options(self.options, self.progress.rho)
        return self.options

    def evaluate(self, theta, seed) -> Trial:
        t = time.perf_counter()
        try:
            op_t = self.op.with_params(theta)
            opts = self.options_now()
            ev = criterion_on(self.context, op_t, self.folds, opts, state=seed, engine=self.engine)
        except (np.linalg.LinAlgError, FloatingPointError) as exc:
            self.log.append(EvaluationLog(False, float("nan"), time.perf_counter() - t, 0, {"message": str(exc)}))
            return Trial(float("nan"), None, False, None, {"message": str(exc)})
        info = ev.summary()
        info["message"] = ev.message
        info["grad_tol"], info["accumulation_tol"] = opts.newton.grad_tol, opts.accumulation_tol
        if info["held_out_errors"] >= 0:
            info["score"] = info["held_out_errors"]  # the outer optimiser's optional held-out stopping rule
        if ev.ok:
            self.progress.update(ev.psi)
        info["seconds"] = time.perf_counter() - t
        self.log.append(EvaluationLog(ev.ok, ev.psi, info["seconds"], ev.mvm_count, info, ev.plan))
        return Trial(ev.psi, ev.gradient, ev.ok, ev.state, info)

    def resume_from(self, state) -> None:
        """Rebuild the inner tolerance schedule's progress from the run so far (its iterations' Ψ),
        so that a resumed run schedules its evaluations as the uninterrupted one did."""
        self.progress = ProgressTracker()
        for rec in state.history:
            self.progress.update(rec.value)

    def identity(self) -> dict:
        op = self.op
        return {
            "n": op.n_points,
            "C": op.n_classes,
            "targets": digest_array(self.Y),
            "folds": [digest_array(I) for I in self.folds],
            "likelihood": repr(self.likelihood),
            "operator": type(op).__name__,
            "options": {"cv": attrs.asdict(self.options, filter=_numbers_only, value_serializer=_named_callables)},
        }

    def probe(self) -> np.ndarray:
        return probe_operator(self.op)

    def restore_inner(self, arrays: dict) -> CVState:
        """The inner state of a checkpoint (:meth:`CVState.from_arrays`), every fold's α[J_k] of shape
        (|J_k|, C), J_k the points outside the held-out fold I_k, for this run's folds (else InputError:
        the checkpoint reads as corrupt)."""
        state = CVState.from_arrays(arrays)
        n, C = self.op.n_points, self.op.n_classes
        shapes = [(n - len(I), C) for I in self.folds]
        if [a.shape for a in state.alphas] != shapes:
            raise InputError(f"the folds' alpha arrays must have the shapes {shapes[:4]} (|J_k|, C) of this run")
        return state


def learn_hyperparameters(
    op: Operator,
    likelihood: Likelihood,
    Y,
    folds,
    options: LearnOptions | None = None,
    *,
    checkpoint: Checkpointing | None = None,
    on_iteration: Callable[[OuterRecord], None] | None = None,
    engine: Engine | None = None,
) -> LearnResult:
    """Minimise Ψ over ``op.params`` starting from the operator's current hyperparameters.

    ``Y``: targets (n, C); ``folds``: the fixed partition (q index arrays, e.g. from
    ``data.kfold_partition`` with a seed).  ``on_iteration(record)`` gets the progress record of
    the start and of every outer iteration, after the checkpoint for it was written; it may raise
    to stop the run (the checkpoint then holds that iteration).  The optimisation is
    :func:`gpmodels.optimize.driver` on a :class:`CVObjective`.  ``engine``: where the folds of
    every evaluation run (:mod:`gpmodels.engine`); None: an :class:`~gpmodels.engine.auto.AutoEngine`
    for this run, sized from the cores and memory, closed at its end.  The result does not depend on
    the engine (with the same BLAS threads per fold, bit for bit).
    """
    opts = options or LearnOptions()
    n, C = op.n_points, op.n_classes
    Y = likelihood.check_targets(Y, n, C)
    folds = check_partition(folds, n)
    theta0 = np.array(op.params, dtype=float)
    if theta0.size == 0:
        raise InputError("the operator has no hyperparameters to learn")
    bounds = log_box(
        theta0,
        half_width=np.inf,
        lower=opts.lower,
        upper=opts.upper,
        param_bounds=op.param_bounds,
        names=op.param_names,
    )
    with contextlib.ExitStack() as stack:
        if engine is None:
            engine = stack.enter_context(AutoEngine())
        objective = CVObjective(op, likelihood, Y, folds, opts.cv, opts.inner_tolerances, engine)
        res = minimize(
            objective, theta0, op.param_names, bounds, opts.outer, checkpoint=checkpoint, on_iteration=on_iteration
        )
    return LearnResult(
        operator=op.with_params(res.x),
        theta=res.x.copy(),
        names=tuple(op.param_names),
        psi=res.value,
        gradient=res.gradient.copy(),
        outer=res.state,
        resumed_from=res.resumed_from,
        evaluations=tuple(objective.log),
        folds=folds,
        bounds=bounds,
    )


def start_from_folds(state: CVState | None, folds, n: int) -> np.ndarray | None:
    """A start for the fit on all n points from the inner state at the learned hyperparameters:
    at each point the mean of its entries in the α[J_k] of the q - 1 folds that train on it
    (None without a state).  Each α[J_k] is the MAP dual vector on (q - 1)/q of the points, and
    their mean a start near the full fit's α (its scale is then set by :func:`scaled_warm_start`):
    the final fit of digits mc-sep took 4 Newton iterations and 67 MVMs from it, 20 and 1002 from
    α = 0 at the same hyperparameters (the same Φ)."""
    if state is None or not folds or len(state.alphas) != len(folds):
        return None
    C = state.alphas[0].shape[1]
    total, count = np.zeros((n, C)), np.zeros(n)
    mask = np.ones(n, dtype=bool)
    for I, alpha in zip(folds, state.alphas):
        mask[I] = False
        total[mask] += alpha
        count[mask] += 1
        mask[I] = True
    if np.any(count == 0):
        return None
    return total / count[:, None]


def fit_learned(
    result: LearnResult,
    likelihood: Likelihood,
    Y,
    options: LearnOptions | None = None,
    *,
    on_iteration: Callable[[NewtonStep], None] | None = None,
) -> MAPModel:
    """The final fit on all training points at the learned hyperparameters (``options.final``),
    started from the folds' inner state (:func:`start_from_folds`, scaled by Φ along t α as the
    refits are, :func:`scaled_warm_start`; cold when there is none); ``on_iteration`` reports its
    Newton iterations."""
    opts = options or LearnOptions()
    op = result.operator
    alpha0 = start_from_folds(getattr(result.outer, "inner", None), result.folds, op.n_points)
    if alpha0 is not None:
        alpha0, _ = scaled_warm_start(op, likelihood, likelihood.check_targets(Y, op.n_points, op.n_classes), alpha0)
    return fit_map(
        op, likelihood, Y, make_solver(opts.final_solver, opts.final), alpha0=alpha0, on_iteration=on_iteration
    )
