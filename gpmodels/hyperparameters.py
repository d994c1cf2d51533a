"""Hyperparameter names and their natural values.

Hyperparameters are one flat vector in an unconstrained space, positive ones by their logarithm;
a name whose last dotted component starts with ``log_`` (``kernel.log_w``, ``lik.log_noise``) says
so.  This is the one place that turns such a (name, value) pair into the natural pair
(``kernel.w``, e^value), for ``Operator.describe``, optimiser results and run metrics.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Iterable, Mapping
from typing import ClassVar

import attrs
import numpy as np

from gpmodels.errors import InputError

__all__ = [
    "Parameterised",
    "ParameterFree",
    "OneLogParameter",
    "is_log_name",
    "natural_name",
    "natural_value",
    "natural_values",
    "with_length_scales",
]


class Parameterised(abc.ABC):
    """Hyperparameters as one flat vector in an unconstrained (log) space, a name per entry, and an
    immutable copy at other values: the interface of kernels, operators and likelihoods that the outer
    optimiser and checkpoints work with (scikit-learn's ``Kernel.theta`` / ``clone_with_theta``)."""

    @property
    @abc.abstractmethod
    def params(self) -> np.ndarray:
        """Hyperparameters as one flat vector in unconstrained (log) space."""

    @property
    @abc.abstractmethod
    def param_names(self) -> tuple[str, ...]:
        """A name per entry of ``params``."""

    @abc.abstractmethod
    def with_params(self, theta):
        """A copy with hyperparameters ``theta`` (same layout as ``params``)."""


class ParameterFree:
    """Mixin of a :class:`Parameterised` without hyperparameters: empty ``params``; ``with_params``
    accepts only an empty vector."""

    @property
    def params(self) -> np.ndarray:
        return np.zeros(0)

    @property
    def param_names(self) -> tuple[str, ...]:
        return ()

    def with_params(self, theta):
        size = np.asarray(theta).size
        if size:
            raise InputError(f"{type(self).__name__} has no hyperparameters; got {size} values")
        return self


class OneLogParameter:
    """Mixin of a :class:`Parameterised` attrs class whose one hyperparameter is the positive field named
    ``log_field``, kept by its logarithm: ``params`` = [log value], ``param_names`` = (``<name_prefix>log_<field>``,),
    ``with_params(θ)`` the copy with the field at e^θ (θ one finite number)."""

    log_field: ClassVar[str]
    name_prefix: ClassVar[str] = ""

    @property
    def params(self) -> np.ndarray:
        return np.array([np.log(getattr(self, self.log_field))])

    @property
    def param_names(self) -> tuple[str, ...]:
        return (f"{self.name_prefix}log_{self.log_field}",)

    def with_params(self, theta):
        theta = np.asarray(theta, dtype=np.float64).ravel()
        if theta.size != 1 or not np.isfinite(theta[0]):
            name = self.param_names[0]
            raise InputError(f"{type(self).__name__} has one hyperparameter ({name}); got {theta.tolist()}")
        return attrs.evolve(self, **{self.log_field: float(np.exp(theta[0]))})


def is_log_name(name: str) -> bool:
    """Whether ``name`` holds a logarithm: its last dotted component starts with ``log_``."""
    return name.split(".")[-1].startswith("log_")


def natural_name(name: str, *, short: bool = False) -> str:
    """``name`` without its ``log_`` marks (``short``: its last dotted component only)."""
    if short:
        name = name.split(".")[-1]
    return name.replace("log_", "") if is_log_name(name) else name


def natural_value(name: str, value: float) -> float:
    """e^value for a ``log_`` name, else the value itself."""
    return float(np.exp(value)) if is_log_name(name) else float(value)


def natural_values(names: Iterable[str], values, *, short: bool = False, prefix: str = "") -> dict:
    """{prefix + natural name: natural value} for parallel ``names`` and ``values``."""
    return {f"{prefix}{natural_name(n, short=short)}": natural_value(n, v) for n, v in zip(names, np.ravel(values))}


#: a natural name of an inverse squared length-scale: ``w``, ``w3`` (ARD), ``kernel0.w``, ``k1.w2``
_WIDTH = re.compile(r"^(?P<head>(?:.*\.)?)w(?P<index>\d*)(?P<tail>(?: \(.*\))?)$")


def with_length_scales(values: Mapping[str, float]) -> dict:
    """``values`` (natural name -> natural value) with the length-scale ℓ = 1/√w after every width w
    (``kernel0.w`` -> ``kernel0.length_scale``, ARD's ``w3`` -> ``length_scale3``), for reports that show
    both (:mod:`gpmodels.kernels.width`)."""
    out = {}
    for name, value in values.items():
        out[name] = value
        m = _WIDTH.match(name)
        if m is not None and isinstance(value, (int, float, np.number)) and value > 0:
            out[f"{m['head']}length_scale{m['index']}{m['tail']}"] = float(1.0 / np.sqrt(value))
    return out
