"""Central finite differences in a parameter vector: the generic gradient defaults of kernels and
operators (and the reference of the conformance checks) share this one loop."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["central_differences"]


def central_differences(theta, value_at: Callable[[np.ndarray], float], step: float) -> np.ndarray:
    """(f(θ + h e_p) - f(θ - h e_p)) / 2h for every p: an O(h²) estimate of ∂f/∂θ_p."""
    theta = np.asarray(theta, dtype=np.float64)
    out = np.empty(theta.size)
    for p in range(theta.size):
        tp, tm = theta.copy(), theta.copy()
        tp[p] += step
        tm[p] -= step
        out[p] = (value_at(tp) - value_at(tm)) / (2 * step)
    return out
