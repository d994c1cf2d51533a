"""A prior at given hyperparameters: what hyperparameter learning returns, as a prior object.

``LearnedPrior(prior, theta, names).operator(X, C)`` is ``prior.operator(X, C).with_params(theta)``:
the operator of ``prior`` at the log-space hyperparameter vector θ (its ``param_names`` must be
``names``).  It is the prior counterpart of scikit-learn's ``Kernel.clone_with_theta``, so a learned
model's prior can be passed on (``GPClassifier(prior=est.kernel_, objective="map")`` refits at the
learned hyperparameters) and read (:meth:`hyperparameters`).
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.hyperparameters import natural_values
from gpmodels.nested_params import NestedParams
from gpmodels.operators.base import Operator

__all__ = ["LearnedPrior"]


def _float_tuple(values) -> tuple[float, ...]:
    return tuple(float(v) for v in np.ravel(np.asarray(values, dtype=np.float64)))


@attrs.frozen
class LearnedPrior(NestedParams):
    """``prior`` (an object with ``operator(X, n_classes)``) at the log-space hyperparameters ``theta``
    named ``names`` (the operator's ``param_names``)."""

    prior: object
    theta: tuple[float, ...] = attrs.field(converter=_float_tuple)
    names: tuple[str, ...] = attrs.field(converter=tuple)

    def __attrs_post_init__(self):
        if len(self.theta) != len(self.names):
            raise InputError(f"LearnedPrior: {len(self.theta)} hyperparameter values for {len(self.names)} names")

    @property
    def class_names(self) -> tuple[str, ...] | None:
        """The class order the underlying prior declares (its optional ``class_names``), or None."""
        return getattr(self.prior, "class_names", None)

    @property
    def device(self) -> str:
        """Where the wrapped prior puts its kernel matrices (``cpu`` when it does not say)."""
        return getattr(self.prior, "device", "cpu")  # optional: declared by priors with a representation

    def on_device(self, device: str) -> LearnedPrior:
        """The same learned values on the wrapped prior moved to ``device`` (its ``on_device``)."""
        move = getattr(self.prior, "on_device", None)  # optional: declared by priors with a representation
        if move is None:
            raise InputError(
                f"LearnedPrior: the prior {type(self.prior).__name__} declares no on_device; set "
                "where its kernel matrices live on the prior itself"
            )
        return attrs.evolve(self, prior=move(device))

    def operator(self, X, n_classes: int) -> Operator:
        op = self.prior.operator(X, n_classes)
        if tuple(op.param_names) != self.names:
            raise InputError(
                f"LearnedPrior: the prior's operator has the hyperparameters {tuple(op.param_names)}; "
                f"the learned values are for {self.names}"
            )
        return op.with_params(np.asarray(self.theta)) if self.theta else op

    def hyperparameters(self) -> dict[str, float | np.ndarray]:
        """Learned values by name, in natural units (:func:`gpmodels.hyperparameters.natural_values`)."""
        return natural_values(self.names, np.asarray(self.theta))
