"""What the outer optimiser minimises: the objective protocol, the joint vector, the log-space box.

An *objective* is what :func:`gpmodels.optimize.driver` minimises over a flat log-space vector x.
Either a plain function ``x -> (value, gradient)``, or an object with

- ``evaluate(x, seed) -> Trial`` (required): f(x), ∇f(x), whether the evaluation succeeded and the
  *inner state* it ended in (the CV folds' α[J_k], the Laplace mode, the VB variational state).
  ``seed`` is the inner state the evaluation should warm-start from: the optimiser passes the one of
  the last successful evaluation to the left along the line search (Seeger 2008, Sec. 4, fn. 8) and
  None for a cold start, so the result depends only on the optimiser's state, which is what makes a
  resumed run reproduce the uninterrupted one;
- ``identity() -> dict`` (optional): JSON-able facts that tie a checkpoint to the problem (data
  digests, settings), compared exactly on resume;
- ``probe() -> array`` (optional): a numerical fingerprint (e.g. K̃ v for a seeded v), compared to a
  relative 1e-9 on resume;
- ``restore_inner(arrays) -> inner`` (optional): the inverse of the inner state's ``to_arrays()``
  for checkpoints (without it the inner state must be a dict of named arrays, or None);
- ``resume_from(state)`` (optional): called with the optimiser state a run continues from (a
  checkpoint's), before the next evaluation, for what the objective derives from the run so far
  (the CV criterion's inner tolerance schedule follows the best value's progress).

:class:`FunctionObjective` makes the first kind an objective of the second: an evaluation that
raises a linear-algebra or floating-point error, or returns a non-finite value, is *failed* (a right
bracket of the line search), not a crash.

Bounds: always a (p, 2) box in the log space of x; :func:`log_box` builds the usual one, the
intersection of x0 ± ``half_width``, the absolute limits [lower, upper] and the parameters' own
bounds.
"""

from __future__ import annotations

import abc
from collections.abc import Callable

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.hyperparameters import is_log_name, natural_name
from gpmodels.optimize.checkpoint import digest_array, probe_operator
from gpmodels.optimize.lbfgs import Trial

__all__ = ["DEFAULT_BOX", "FunctionObjective", "JointParams", "JointObjective", "as_objective", "log_box"]

#: default half-width of the box around the start, in log units (e^10 ≈ 2.2e4).
DEFAULT_BOX = 10.0


class FunctionObjective:
    """A plain ``fun(x) -> (value, gradient)`` as an objective without inner state."""

    def __init__(self, fun: Callable[[np.ndarray], tuple[float, np.ndarray]]):
        if not callable(fun):
            raise InputError(f"the objective must be callable or have evaluate(x, seed); got {type(fun).__name__}")
        self.fun = fun

    def evaluate(self, x, seed=None) -> Trial:
        try:
            value, gradient = self.fun(np.array(x, dtype=np.float64))
        except (np.linalg.LinAlgError, FloatingPointError) as exc:
            return Trial(float("nan"), None, False, None, {"message": str(exc)})
        g = None if gradient is None else np.asarray(gradient, dtype=np.float64).ravel()
        ok = bool(np.isfinite(value) and g is not None and np.all(np.isfinite(g)))
        return Trial(float(value), g, ok, None, {} if ok else {"message": "non-finite value or gradient"})


def as_objective(fun):
    """``fun`` itself when it has ``evaluate(x, seed)``, else :class:`FunctionObjective` (fun)."""
    return fun if callable(getattr(fun, "evaluate", None)) else FunctionObjective(fun)


def log_box(
    x0, *, half_width: float = DEFAULT_BOX, lower: float = -np.inf, upper: float = np.inf, param_bounds=None, names=None
) -> np.ndarray:
    """(p, 2) box: [x0 - half_width, x0 + half_width] ∩ [lower, upper] ∩ ``param_bounds`` (log space).

    Raises :class:`InputError` when x0 lies outside the limits (naming the entry by ``names``).
    """
    x0 = np.asarray(x0, dtype=np.float64).ravel()
    b = np.column_stack([np.maximum(x0 - half_width, lower), np.minimum(x0 + half_width, upper)])
    if param_bounds is not None:
        pb = np.asarray(param_bounds, dtype=np.float64).reshape(-1, 2)
        if pb.shape != b.shape:
            raise InputError(f"Dimension mismatch: param_bounds must have shape {b.shape}; got {pb.shape}")
        b[:, 0] = np.maximum(b[:, 0], pb[:, 0])
        b[:, 1] = np.minimum(b[:, 1], pb[:, 1])
    outside = (x0 < b[:, 0]) | (x0 > b[:, 1])
    if np.any(outside):
        i = int(np.flatnonzero(outside)[0])
        which = names[i] if names is not None else f"x0[{i}]"
        natural = ""
        if names is not None and is_log_name(which):  # the value as the user wrote it, beside the log-space one
            natural = (
                f"; {natural_name(which, short=True)} = {np.exp(x0[i]):g} not in "
                f"[{np.exp(b[i, 0]):g}, {np.exp(b[i, 1]):g}]"
            )
        raise InputError(
            f"starting hyperparameter {which} = {x0[i]:g} (log space) lies outside the bounds "
            f"[{b[i, 0]:g}, {b[i, 1]:g}]{natural}; start inside them, or widen the learner's lower/upper or the "
            "hyperparameter's declared bounds (a prior's variance_bounds, a scikit-learn kernel's *_bounds)"
        )
    return b


class JointParams:
    """The joint vector (operator params, likelihood params) and its inverse ``build``."""

    def __init__(self, op, lik):
        self.op, self.lik = op, lik
        self.n_op = op.params.size

    @property
    def x0(self) -> np.ndarray:
        return np.concatenate([self.op.params, self.lik.params])

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.op.param_names) + tuple(self.lik.param_names)

    @property
    def bounds(self) -> np.ndarray:
        """(p, 2) own bounds: the operator's ``param_bounds``, the likelihood's unbounded."""
        lik = np.tile([-np.inf, np.inf], (self.lik.params.size, 1))
        return np.vstack([np.asarray(self.op.param_bounds, dtype=np.float64).reshape(-1, 2), lik])

    def build(self, x):
        x = np.asarray(x, dtype=np.float64)
        if x.shape != self.x0.shape:
            raise InputError(f"the joint hyperparameter vector has {self.x0.size} entries {self.names}; got {x.shape}")
        op = self.op.with_params(x[: self.n_op]) if self.n_op else self.op
        lik = self.lik.with_params(x[self.n_op :]) if x.size > self.n_op else self.lik
        return op, lik


class JointObjective(abc.ABC):
    """An objective over the joint (operator, likelihood) log-space vector whose inner state warm-starts
    the next evaluation (the Laplace mode, the VB variational state).

    Subclasses set ``criterion`` (its name in the checkpoint identity) and implement
    ``_evaluate(op, lik, seed) -> (value, gradient, inner, info)`` at the hyperparameters of x; an
    evaluation that raises a linear-algebra or floating-point error, or gives a non-finite value or
    gradient, is failed (a right bracket of the line search).
    """

    criterion = ""

    def __init__(self, op, lik, Y, options):
        self.joint = JointParams(op, lik)
        self.Y = lik.check_targets(Y, op.n_points, op.n_classes)
        self.options = options

    @abc.abstractmethod
    def _evaluate(self, op, lik, seed) -> tuple:
        """(value, gradient, inner state, info) of the criterion at ``op``, ``lik``, warm-started at ``seed``."""

    def evaluate(self, x, seed) -> Trial:
        op, lik = self.joint.build(x)
        try:
            value, gradient, inner, info = self._evaluate(op, lik, seed)
        except (np.linalg.LinAlgError, FloatingPointError) as exc:
            return Trial(float("nan"), None, False, None, {"message": str(exc)})
        ok = bool(np.isfinite(value) and np.all(np.isfinite(gradient)))
        return Trial(value, gradient, ok, inner, info)

    def identity(self) -> dict:
        op, lik = self.joint.op, self.joint.lik
        return {
            "criterion": self.criterion,
            "n": op.n_points,
            "C": op.n_classes,
            "targets": digest_array(self.Y),
            "likelihood": repr(lik),
            "operator": type(op).__name__,
            "options": attrs.asdict(self.options),
        }

    def probe(self) -> np.ndarray:
        return probe_operator(self.joint.op)
