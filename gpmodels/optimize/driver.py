"""The one outer optimiser: ``minimize`` and its result type ``OptimizeResult``.

Every hyperparameter learner of the package (the CV criterion Ψ, the Laplace MLM, the VB bound
φ_VB, the MKL criteria by weights) minimises its criterion over one flat log-space vector by the
projected L-BFGS of ``lbfgs.py`` (failed evaluations as right brackets, warm starts from the inner
state of the last successful evaluation; Seeger 2008, Sec. 4).  This module adds what all of them
share: one bound convention (a log-space box, :func:`~gpmodels.optimize.objective.log_box`),
checkpoints after the start and after every successful iteration (``checkpoint.py``; a run given
the same checkpoint path resumes from it and ends where the uninterrupted run ends), per-iteration
progress callbacks, and one result type.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import attrs
import numpy as np

from gpmodels.errors import CheckpointWarning, InputError
from gpmodels.hyperparameters import natural_values
from gpmodels.optimize.checkpoint import (
    Checkpointing,
    RunIdentity,
    read_checkpoint,
    write_checkpoint,
)
from gpmodels.optimize.lbfgs import (
    OuterOptions,
    OuterRecord,
    OuterState,
    minimize_outer,
)
from gpmodels.optimize.objective import JointObjective, as_objective, log_box

__all__ = ["OptimizeResult", "minimize", "minimize_joint", "outer_options", "run_identity"]


@attrs.frozen(eq=False)
class OptimizeResult:
    """Outcome of :func:`minimize`.

    ``x`` (log space) by ``names``; ``value``, ``gradient`` of the criterion there; counts over
    resumes (``failed``: evaluations that did not succeed); ``trace``: one :class:`OuterRecord` per
    iteration (0: the start); ``seconds``: optimisation time over resumes; ``state``: the optimiser's
    final state (its ``inner``: the objective's inner state at x); ``resumed_from``: the iteration a
    checkpoint resumed from, or None.
    """

    names: tuple[str, ...]
    x: np.ndarray
    value: float
    gradient: np.ndarray
    iterations: int
    evaluations: int
    failed: int
    converged: bool
    message: str
    trace: tuple
    seconds: float
    state: OuterState
    resumed_from: int | None = None

    @classmethod
    def from_state(cls, state: OuterState, names, resumed_from: int | None = None) -> OptimizeResult:
        return cls(
            tuple(names),
            state.x.copy(),
            float(state.value),
            state.gradient.copy(),
            state.iteration,
            state.evaluations,
            state.failed,
            state.converged,
            state.message,
            state.history,
            state.elapsed,
            state,
            resumed_from,
        )

    @property
    def values(self) -> tuple[float, ...]:
        """The criterion after every iteration (the start first)."""
        return tuple(r.value for r in self.trace)

    def describe(self) -> dict:
        """Hyperparameters by name, natural units for ``log_`` names."""
        return natural_values(self.names, self.x)


def outer_options(max_iter: int = 100, tol: float = 1e-6) -> OuterOptions:
    """L-BFGS settings from an iteration limit and one tolerance, as the marginal-likelihood learners
    take them: ftol = gtol = ``tol``/100 (relative decrease; max-norm of the projected gradient
    relative to max(1, |f|)), at most max(100, 10 ``max_iter``) evaluations.

    ftol is below ``tol`` because it also bounds the decrease the quasi-Newton model *predicts*
    (``lbfgs.py``), which near the optimum stops an iteration or two before a measured decrease of
    ``tol`` would (scipy's L-BFGS-B has only the measured test);
    these criteria are evaluated exactly (no noise floor), so those last iterations are worth their
    evaluations."""
    return OuterOptions(
        max_iter=max_iter, max_evaluations=max(100, 10 * int(max_iter)), ftol=tol * 1e-2, gtol=tol * 1e-2
    )


def run_identity(objective, x0, names, bounds, options: OuterOptions, caller: dict) -> RunIdentity:
    """What ties a checkpoint to this run: the objective's ``identity()`` and ``probe()`` (when it
    has them), the names, box and optimiser settings, and the caller's identity (e.g. the spec)."""
    own = getattr(objective, "identity", None)
    exact = dict(own()) if callable(own) else {}
    exact.update(
        {"names": list(names), "bounds": np.asarray(bounds).tolist(), "outer": attrs.asdict(options), "caller": caller}
    )
    probe = getattr(objective, "probe", None)
    return RunIdentity(
        exact=exact,
        theta0=np.array(x0, dtype=float),
        probe=np.asarray(probe(), dtype=float) if callable(probe) else np.zeros(0),
    )


def _iteration_hook(
    checkpoint: Checkpointing | None, identity: RunIdentity | None, state: OuterState | None, on_iteration
) -> Callable[[OuterState], None]:
    """The optimiser's per-iteration callback: write the checkpoint (a failed write warns, and learning
    goes on), then report the new iteration's record to ``on_iteration`` once (not the state resumed from)."""
    reported = [None if state is None else state.iteration]
    last_good = [None if state is None else state.iteration]

    def on_iter(s: OuterState):
        if checkpoint is not None:
            try:
                write_checkpoint(checkpoint.path, s, identity)
                last_good[0] = s.iteration
            except OSError as exc:  # disk full, permissions: the learning goes on without this checkpoint
                kept = "none yet" if last_good[0] is None else f"the one of outer iteration {last_good[0]}"
                warnings.warn(
                    f"cannot write the checkpoint {checkpoint.path} ({exc.strerror or type(exc).__name__}); "
                    f"learning goes on; the last good checkpoint there: {kept}",
                    CheckpointWarning,
                    stacklevel=2,
                )
        if on_iteration is not None and s.history and s.iteration != reported[0]:
            reported[0] = s.iteration
            on_iteration(s.history[-1])

    return on_iter


def minimize(
    fun,
    x0,
    names,
    bounds=None,
    options: OuterOptions | None = None,
    *,
    state: OuterState | None = None,
    checkpoint: Checkpointing | None = None,
    on_iteration: Callable[[OuterRecord], None] | None = None,
    seed=None,
) -> OptimizeResult:
    """Minimise an objective over the log-space box ``bounds`` from ``x0``.

    ``fun``: an objective (``evaluate(x, seed) -> Trial``, see ``objective.py``) or a plain
    ``x -> (value, gradient)``; ``names``: one per entry of x; ``bounds``: (p, 2), default
    :func:`log_box` (x0 ± 10); ``options``: the L-BFGS settings; ``state``: continue from this
    optimiser state; ``checkpoint``: write the state after the start and after every successful
    iteration, and with ``resume`` continue from an existing file (a corrupt or foreign one raises
    :class:`~gpmodels.errors.CheckpointError`); ``on_iteration(record)``: the progress record of the
    start and of every iteration, after its checkpoint was written (it may raise to stop the run: the
    checkpoint then holds that iteration); ``seed``: inner state for the first evaluation.
    """
    opts = options or OuterOptions()
    objective = as_objective(fun)
    x0 = np.array(x0, dtype=np.float64).ravel()
    names = tuple(names)
    if len(names) != x0.size:
        raise InputError(
            f"Dimension mismatch: names must have {x0.size} entries (one per hyperparameter); got {len(names)}"
        )
    if x0.size == 0:
        raise InputError("there are no hyperparameters to learn (x0 is empty)")
    bounds = log_box(x0) if bounds is None else np.asarray(bounds, dtype=np.float64)
    resumed_from, identity = None, None
    if checkpoint is not None:
        identity = run_identity(objective, x0, names, bounds, opts, checkpoint.identity)
        if checkpoint.resume and checkpoint.path.exists():
            state, _ = read_checkpoint(checkpoint.path, identity, getattr(objective, "restore_inner", None))
            resumed_from = state.iteration
    on_iter = _iteration_hook(checkpoint, identity, state, on_iteration)
    if state is not None and hasattr(objective, "resume_from"):
        objective.resume_from(state)
    final = minimize_outer(objective.evaluate, x0, bounds, opts, state=state, on_iteration=on_iter, seed=seed)
    return OptimizeResult.from_state(final, names, resumed_from)


def minimize_joint(
    objective: JointObjective,
    *,
    x0=None,
    bounds=None,
    outer: OuterOptions | None = None,
    max_iter: int = 100,
    tol: float = 1e-6,
    checkpoint: Checkpointing | None = None,
    on_iteration=None,
) -> tuple[OptimizeResult, object, object]:
    """:func:`minimize` of a :class:`JointObjective` from ``x0`` (default: the current hyperparameters)
    in ``bounds`` (default: x0 ± 10 within the operator's own bounds) with ``outer`` (default
    :func:`outer_options` (max_iter, tol)); returns (result, operator, likelihood) at the optimum."""
    joint = objective.joint
    start = joint.x0 if x0 is None else np.asarray(x0, dtype=np.float64)
    if bounds is None:
        bounds = log_box(start, param_bounds=joint.bounds, names=joint.names)
    result = minimize(
        objective,
        start,
        joint.names,
        bounds,
        outer or outer_options(max_iter, tol),
        checkpoint=checkpoint,
        on_iteration=on_iteration,
    )
    op, lik = joint.build(result.x)
    return result, op, lik
