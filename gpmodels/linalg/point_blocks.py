"""The per-point C x C blocks of a linear map that acts on each point's C values separately (a
likelihood's factor V, an operator's point-block part): the generic defaults of likelihoods and
operators share this one loop."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["point_blocks"]


def point_blocks(apply: Callable[[np.ndarray], np.ndarray], n: int, C: int) -> np.ndarray:
    """The blocks A_i of a point-block-diagonal map ``apply`` on (n, C) arrays, as (n, C, C): column c of
    every A_i is ``apply`` of the unit vector e_c at every point (C applications)."""
    out = np.empty((n, C, C))
    E = np.zeros((n, C))
    for c in range(C):
        E[:, c] = 1.0
        out[:, :, c] = apply(E)
        E[:, c] = 0.0
    return out
