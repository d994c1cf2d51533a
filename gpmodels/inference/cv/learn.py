"""Hyperparameter learning by minimising the CV criterion Ψ, with checkpoints; the final fit.

Seeger 2008, Sec. 4: a fixed (seeded) q-partition; the outer optimiser (``outer.py``) moves the
log-space hyperparameters θ of the operator; every evaluation builds the operator at θ once
(``with_params``) and computes Ψ and ∇Ψ by ``cv.cv_criterion``, warm-started from the inner state
{α[J_k]} of the last successful evaluation.  After the start and after every successful outer
iteration the state is checkpointed (``checkpoint.py``); a run given the same checkpoint path
resumes from it.  Then the final fit on all training points with the learned θ and separate
Newton settings (Sec. 6.2: k1 = 13, k2 = 25, k3 = 40 for learning, k1 = 30, k2 = 50 for the
final fit).

Everything is generic over the operator protocol: the hyperparameters are whatever ``op.params``
holds (kernel shapes, variances, a learned intercept variance, and — once the structured priors
exist — ANOVA variances or coupling / factor-loading entries).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Callable

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.likelihoods.base import Likelihood
from gpmodels.operators.base import Operator
from gpmodels.optimize.checkpoint import RunIdentity, digest_array, probe_operator, read_checkpoint, write_checkpoint
from gpmodels.inference.cv.criterion import CVOptions, check_partition, cv_criterion
from gpmodels.inference.map.model import MAPModel, fit_map
from gpmodels.inference.map.newton_cg import NewtonOptions, NewtonStep
from gpmodels.optimize.lbfgs import OuterOptions, OuterRecord, OuterState, Trial, minimize_outer
from gpmodels.validation import boolean, instance_of, number, one_of, to_float, to_path

__all__ = ["LearnOptions", "Checkpointing", "LearnResult", "learn_hyperparameters", "fit_learned",
           "EvaluationLog", "FINAL_METHODS"]


FINAL_METHODS = ("newton_cg", "exact")


@attrs.frozen
class LearnOptions:
    """Settings of CV learning and of the final fit.

    ``cv``: one Ψ evaluation (inner k1, k2, k3, failure threshold); ``outer``: the quasi-Newton
    optimiser (default ftol 1e-4: Ψ from truncated inner fits is noisy at about 1e-6 relative, and
    decreases of 1e-4 · Ψ no longer move the test scores); ``final``: Newton settings of the final
    fit (its k1, k2), by ``final_method``;
    ``lower``/``upper``: log-space box for every hyperparameter (intersected with the
    operator's own ``param_bounds``).
    """

    cv: CVOptions = attrs.field(factory=CVOptions, validator=instance_of(CVOptions))
    outer: OuterOptions = attrs.field(factory=lambda: OuterOptions(ftol=1e-4), validator=instance_of(OuterOptions))
    final: NewtonOptions = attrs.field(factory=lambda: NewtonOptions(max_iter=30, cg_max_iter=50),
                                       validator=instance_of(NewtonOptions))
    final_method: str = attrs.field(default="newton_cg", validator=one_of(FINAL_METHODS))
    lower: float = attrs.field(default=-15.0, converter=to_float, validator=number())  # log space
    upper: float = attrs.field(default=15.0, converter=to_float, validator=number())

    def __attrs_post_init__(self):
        if not self.lower < self.upper:
            raise InputError(f"LearnOptions.lower must be below upper (lower < upper); "
                             f"got lower={self.lower!r} and upper={self.upper!r}")


@attrs.frozen
class Checkpointing:
    """Where to checkpoint and whether to resume.

    ``resume=True``: continue from ``path`` when it exists (a corrupt or foreign file raises
    :class:`CheckpointError`); ``False``: start afresh and overwrite it.  ``identity``: what else
    identifies the run (e.g. the spec), compared exactly on resume.
    """

    path: Path = attrs.field(converter=to_path, validator=instance_of(Path, what="a path (str or os.PathLike)"))
    resume: bool = attrs.field(default=True, validator=boolean())
    identity: dict = attrs.field(factory=dict, validator=instance_of(dict))


@attrs.frozen
class EvaluationLog:
    """One Ψ evaluation of this process (not restored on resume)."""

    ok: bool
    psi: float
    seconds: float
    mvms: int
    summary: dict


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

    @property
    def history(self) -> tuple:
        return self.outer.history

    @property
    def converged(self) -> bool:
        return self.outer.converged

    @property
    def message(self) -> str:
        return self.outer.message

    def hyperparameters(self) -> dict:
        """Learned values by name, natural units where the name says ``log_``."""
        return self.operator.describe()


def _bounds(op: Operator, lower: float, upper: float) -> np.ndarray:
    b = np.array(op.param_bounds, dtype=float).reshape(-1, 2)
    b[:, 0] = np.maximum(b[:, 0], lower)
    b[:, 1] = np.minimum(b[:, 1], upper)
    return b


def learn_hyperparameters(op: Operator, likelihood: Likelihood, Y, folds, options: LearnOptions | None = None, *,
                          checkpoint: Checkpointing | None = None,
                          on_iteration: Callable[[OuterRecord], None] | None = None) -> LearnResult:
    """Minimise Ψ over ``op.params`` starting from the operator's current hyperparameters.

    ``Y``: targets (n, C); ``folds``: the fixed partition (q index arrays, e.g. from
    ``data.kfold_partition`` with a seed).  ``on_iteration(record)`` gets the progress record of
    the start and of every outer iteration, after the checkpoint for it was written; it may raise
    to stop the run (the checkpoint then holds that iteration).
    """
    opts = options or LearnOptions()
    n, C = op.n_points, op.n_classes
    Y = likelihood.check_targets(Y, n, C)
    folds = check_partition(folds, n)
    theta0 = np.array(op.params, dtype=float)
    if theta0.size == 0:
        raise InputError("the operator has no hyperparameters to learn")
    bounds = _bounds(op, opts.lower, opts.upper)
    outside = (theta0 < bounds[:, 0]) | (theta0 > bounds[:, 1])
    if np.any(outside):
        i = int(np.flatnonzero(outside)[0])
        raise InputError(f"starting hyperparameter {op.param_names[i]} = {theta0[i]:g} (log space) lies outside the "
                         f"bounds [{bounds[i, 0]:g}, {bounds[i, 1]:g}]; widen lower/upper")
    log: list[EvaluationLog] = []

    def evaluate(theta, seed):
        t = time.perf_counter()
        try:
            op_t = op.with_params(theta)  # once per evaluation; folds restrict it
            ev = cv_criterion(op_t, likelihood, Y, folds, opts.cv, state=seed)
        except (np.linalg.LinAlgError, FloatingPointError) as exc:
            log.append(EvaluationLog(False, float("nan"), time.perf_counter() - t, 0, {"message": str(exc)}))
            return Trial(float("nan"), None, False, None, {"message": str(exc)})
        info = ev.summary()
        info["message"] = ev.message
        info["seconds"] = time.perf_counter() - t
        log.append(EvaluationLog(ev.ok, ev.psi, info["seconds"], ev.mvm_count, info))
        return Trial(ev.psi, ev.gradient, ev.ok, ev.state, info)

    state, resumed_from, identity = None, None, None
    if checkpoint is not None:
        identity = RunIdentity(
            exact={"names": list(op.param_names), "n": n, "C": C, "targets": digest_array(Y),
                   "folds": [digest_array(I) for I in folds], "bounds": bounds.tolist(),
                   "likelihood": repr(likelihood), "operator": type(op).__name__,
                   "options": {"cv": attrs.asdict(opts.cv), "outer": attrs.asdict(opts.outer)},
                   "caller": checkpoint.identity},
            theta0=theta0, probe=probe_operator(op))
        if checkpoint.resume and checkpoint.path.exists():
            state, _ = read_checkpoint(checkpoint.path, identity)
            resumed_from = state.iteration

    reported = [None if state is None else state.iteration]
    last_good = [None if state is None else state.iteration]

    def on_iter(s: OuterState):
        if checkpoint is not None:
            try:
                write_checkpoint(checkpoint.path, s, identity)
                last_good[0] = s.iteration
            except OSError as exc:  # disk full, permissions: the learning goes on without this checkpoint
                kept = ("none yet" if last_good[0] is None else f"the one of outer iteration {last_good[0]}")
                warnings.warn(f"cannot write the checkpoint {checkpoint.path} ({exc.strerror or type(exc).__name__}); "
                              f"learning goes on; the last good checkpoint there: {kept}", RuntimeWarning,
                              stacklevel=2)
        if on_iteration is not None and s.history and s.iteration != reported[0]:
            reported[0] = s.iteration
            on_iteration(s.history[-1])

    final = minimize_outer(evaluate, theta0, bounds, opts.outer, state=state, on_iteration=on_iter)
    return LearnResult(operator=op.with_params(final.x), theta=final.x.copy(), names=tuple(op.param_names),
                       psi=final.value, gradient=final.gradient.copy(), outer=final, resumed_from=resumed_from,
                       evaluations=tuple(log))


def fit_learned(result: LearnResult, likelihood: Likelihood, Y, options: LearnOptions | None = None, *,
                on_iteration: Callable[[NewtonStep], None] | None = None) -> MAPModel:
    """The final fit on all training points at the learned hyperparameters (``options.final``);
    ``on_iteration`` reports its Newton iterations."""
    opts = options or LearnOptions()
    return fit_map(result.operator, likelihood, Y, opts.final, method=opts.final_method, on_iteration=on_iteration)

