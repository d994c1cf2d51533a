"""Hyperparameter names and their natural values.

Hyperparameters are one flat vector in an unconstrained space, positive ones by their logarithm;
a name whose last dotted component starts with ``log_`` (``kernel.log_w``, ``lik.log_noise``) says
so.  This is the one place that turns such a (name, value) pair into the natural pair
(``kernel.w``, e^value), for ``Operator.describe``, optimiser results and run metrics.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["is_log_name", "natural_name", "natural_value", "natural_values"]


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
