"""Kernels that a device can build from X: the scaled squared-distance form M = g(D_s).

A kernel declares :attr:`~gpmodels.kernels.base.Kernel.distance_form` (None by default) when its
shape is a function g of the scaled squared distance D_s(x, x') = Σ_j s_j (x_j - x'_j)^2 and its
parameters are the log scales: θ = log s (one s shared by all inputs for an isotropic kernel, one
per input for ARD).  With Z = X diag(√s) the form needs only array-API operations:

    D_ab = |z_a|^2 + |z_b|^2 - 2 z_a·z_b                       (one GEMM per tile)
    M_ab = g(D_ab)
    ∂M_ab/∂log s_j = g'(D_ab) (z_aj - z_bj)^2                  (Seeger 2008, Sec. 7.3 for the RBF)

so that, with H = g'(D)∘G, the contraction Σ_ab ∂M_ab/∂log s_j G_ab is, per input j,
(H 1)·z_j^2 + (H^T 1)·z_j^2 - 2 Σ_a z_aj (H Z)_aj: O(n1 n2 d) with no per-input n1 x n2 array;
an isotropic kernel sums it over j.  Every function takes the array namespace ``xp`` explicitly.
"""

from __future__ import annotations

import abc

import attrs
import numpy as np

from gpmodels.validation import to_float_array

__all__ = ["DistanceForm", "GaussianForm"]


@attrs.frozen(eq=False)
class DistanceForm(abc.ABC):
    """M = g(D_s) with θ = log s; ``scales``: s, shape (1,) isotropic or (d,) one per input."""

    scales: np.ndarray = attrs.field(converter=to_float_array)
    isotropic: bool = True

    #: whether ``slope`` reads D (else it is given None and M alone)
    slope_needs_distances = True

    @abc.abstractmethod
    def profile(self, xp, D):
        """g(D), elementwise, in namespace ``xp``."""

    @abc.abstractmethod
    def slope(self, xp, D, M):
        """g'(D) elementwise, given M = g(D) of the same tile."""

    @property
    def diagonal_value(self) -> float:
        """g(0) = M(x, x)."""
        return float(self.profile(np, np.zeros(1))[0])

    def input_scales(self, d: int) -> np.ndarray:
        """√s for each of d inputs, shape (d,): Z = X diag(√s)."""
        s = np.sqrt(self.scales)
        return np.full(d, s[0]) if self.isotropic else s


@attrs.frozen(eq=False)
class GaussianForm(DistanceForm):
    """g(D) = exp(-D/2), g'(D) = -g(D)/2: the RBF (isotropic, s = w) and ARD (s = w_j) shapes."""

    slope_needs_distances = False

    def profile(self, xp, D):
        return xp.exp(D * -0.5)

    def slope(self, xp, D, M):
        return M * -0.5
