"""Whether a learned model can be trusted: the checks every hyperparameter learner's result passes through.

An outer optimisation that "converged" says only that the criterion stopped moving inside the box; the model
fitted afterwards at the learned hyperparameters can still be broken.  :func:`assess_learning` names what
makes it suspect, in words a user can act on:

- a hyperparameter that ended at a bound of the box it was learned in (the criterion still fell towards the
  bound: variances that run away on separable data, widths that go to 0 or infinity), named with its natural
  value and the bound;
- a final fit at the learned hyperparameters that did not converge (its Newton message), so that its α is not
  the MAP point of the criterion that was learned;
- a final fit whose training log loss is worse than that of the fit at the starting hyperparameters (given when
  the caller fitted there too: a learned model should fit its training data at least as well as its start).

The result is a :class:`LearningOutcome`: empty ``problems`` for a model to trust.  The estimators warn with
them (:class:`~gpmodels.errors.ConvergenceWarning`) and keep them as ``learning_outcome_``; the spec driver
writes them to ``metrics.json`` (``learning_problems``) and prints them.
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.hyperparameters import natural_name, natural_value

__all__ = ["LearningOutcome", "assess_learning", "at_bounds", "BOUND_TOL"]

#: a log-space hyperparameter within this distance of a bound of its box sits at that bound
BOUND_TOL = 1e-6


@attrs.frozen
class LearningOutcome:
    """What makes a learned model suspect (``problems``, one sentence each; empty: none)."""

    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict:
        """The flat entries of ``metrics.json``: ``learning_ok`` and the problems joined by "; "."""
        return {"learning_ok": self.ok, "learning_problems": "; ".join(self.problems)}


def at_bounds(names, theta, bounds) -> tuple[str, ...]:
    """One sentence per log-space hyperparameter of ``theta`` (named by ``names``) at a bound of ``bounds`` (p, 2)."""
    theta = np.asarray(theta, dtype=np.float64).ravel()
    b = np.asarray(bounds, dtype=np.float64).reshape(-1, 2)
    found = []
    for name, x, (lo, hi) in zip(names, theta, b):
        for side, bound in (("lower", lo), ("upper", hi)):
            if np.isfinite(bound) and abs(x - bound) <= BOUND_TOL * max(1.0, abs(bound)):
                found.append(
                    f"hyperparameter {natural_name(name)} = {natural_value(name, x):.4g} ended at its {side} bound "
                    f"{natural_value(name, bound):.4g} (the criterion still fell towards it: a wider bound may fit "
                    "better, and on separable data variances grow without end; set the bound or fix the hyperparameter)"
                )
    return tuple(found)


def _train_log_loss(model, Y) -> float:
    """Mean -log P(y_i | u_i) of a MAP model at its training points (the likelihood's own ``value``)."""
    u = model.result.u
    return float(model.likelihood.value(u, Y)) / max(1, np.shape(u)[0])


def assess_learning(names, theta, bounds, final, Y=None, *, start=None) -> LearningOutcome:
    """The problems of a model learned at ``theta`` in ``bounds`` and fitted as ``final`` (a MAP model); ``start``:
    the fit at the starting hyperparameters on the same targets ``Y``, to compare training log losses with."""
    problems = list(at_bounds(names, theta, bounds))
    diag = final.result.diagnostics
    if not diag.converged:
        problems.append(
            f"the final fit at the learned hyperparameters did not converge ({diag.message}) after "
            f"{diag.iterations} Newton iterations: its α is not the MAP point the criterion was learned for"
        )
    if start is not None and Y is not None:
        learned, started = _train_log_loss(final, Y), _train_log_loss(start, Y)
        if learned > started:
            problems.append(
                f"the learned model fits its training data worse than the start (training log loss {learned:.4g} "
                f"against {started:.4g} at the starting hyperparameters)"
            )
    return LearningOutcome(tuple(problems))
