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

A form may have shape parameters η after the scales (the rational quadratic's α): θ = (log s, log η),
with ∂M/∂log η a function of D and M alone (:meth:`DistanceForm.extra_derivatives`), contracted as
Σ_ab (∂M/∂log η)_ab G_ab.  A profile with a kink at D = 0 (Matérn ν = 1/2) reads D with the entries
below rounding set to 0 (``snaps``), as the host's :func:`~gpmodels.kernels.stationary.snapped_sq_dists`
does, and its slope is 0 where it meets D = 0 (every (z_aj - z_bj)^2 it multiplies is 0 there).

The kernels with a form: RBF and ARD (:class:`GaussianForm`), Matérn ν = 1/2, 3/2, 5/2 isotropic and ARD
(:class:`MaternForm`, R&W eq. 4.14-4.17), rational quadratic isotropic and ARD
(:class:`RationalQuadraticForm`, R&W eq. 4.19): :data:`DEVICE_KERNELS`.
"""

from __future__ import annotations

import abc

import attrs
import numpy as np

from gpmodels.validation import to_float_array

__all__ = ["DistanceForm", "GaussianForm", "MaternForm", "RationalQuadraticForm", "DEVICE_KERNELS", "FusedProfile"]

#: the spec names of the kernels whose matrices a device builds (one kernel per matrix: sums, products
#: and the other kernels stay on the CPU)
DEVICE_KERNELS = ("rbf", "ard", "matern", "matern_ard", "rational_quadratic", "rational_quadratic_ard")


class FusedProfile:
    """The profiles g that the fused device products (:mod:`gpmodels.kernels.device.fused`) evaluate in
    registers; a form names its own by :attr:`DistanceForm.fused_profile` as (kind, parameter)."""

    GAUSSIAN, MATERN_12, MATERN_32, MATERN_52, RATIONAL_QUADRATIC = range(5)


@attrs.frozen(eq=False)
class DistanceForm(abc.ABC):
    """M = g(D_s) with θ = log s; ``scales``: s, shape (1,) isotropic or (d,) one per input."""

    scales: np.ndarray = attrs.field(converter=to_float_array)
    isotropic: bool = True

    #: whether ``slope`` reads D (else it is given None and M alone)
    slope_needs_distances = True
    #: whether D is read with the entries below rounding set to exactly 0 (a profile with a kink at 0)
    snaps = False

    @abc.abstractmethod
    def profile(self, xp, D):
        """g(D), elementwise, in namespace ``xp``."""

    @abc.abstractmethod
    def slope(self, xp, D, M):
        """g'(D) elementwise, given M = g(D) of the same tile."""

    @property
    @abc.abstractmethod
    def fused_profile(self) -> tuple[int, float]:
        """(a :class:`FusedProfile` kind, its shape parameter) for the fused device products."""

    @property
    def n_extra(self) -> int:
        """The number of shape parameters η after the scales."""
        return 0

    def extra_derivatives(self, xp, D, M) -> list:
        """∂M/∂log η for each shape parameter, elementwise over the tile (D, M)."""
        return []

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

    @property
    def fused_profile(self):
        return FusedProfile.GAUSSIAN, 0.0


def _safe_divide(xp, a, b):
    """a / b where b > 0, else 0 (elementwise; no division by 0 is evaluated)."""
    pos = b > 0
    return xp.where(pos, a / xp.where(pos, b, 1.0), 0.0)


@attrs.frozen(eq=False)
class MaternForm(DistanceForm):
    """Matérn g(D) for ν = 1/2, 3/2, 5/2, with s = √(2ν D) (R&W eq. 4.14-4.17; the host's
    :mod:`gpmodels.kernels.matern`): g = e^{-√D}, (1 + s) e^{-s}, (1 + s + s^2/3) e^{-s};
    g'(D) = -g/(2√D) (0 at D = 0), -(3/2) e^{-s}, -(5/6)(1 + s) e^{-s}."""

    nu: float = 1.5
    snaps = True

    def profile(self, xp, D):
        if self.nu == 0.5:
            return xp.exp(-xp.sqrt(D))
        s = xp.sqrt(D * (2.0 * self.nu))
        poly = 1.0 + s if self.nu == 1.5 else 1.0 + s + s * s / 3.0
        return poly * xp.exp(-s)

    def slope(self, xp, D, M):
        if self.nu == 0.5:
            return _safe_divide(xp, M * -0.5, xp.sqrt(D))
        s = xp.sqrt(D * (2.0 * self.nu))
        if self.nu == 1.5:
            return M / (1.0 + s) * -1.5  # e^{-s} from M: one division instead of another exp
        return M / (1.0 + s + s * s / 3.0) * (1.0 + s) * (-5.0 / 6.0)

    @property
    def fused_profile(self):
        kinds = {0.5: FusedProfile.MATERN_12, 1.5: FusedProfile.MATERN_32, 2.5: FusedProfile.MATERN_52}
        return kinds[self.nu], 0.0


@attrs.frozen(eq=False)
class RationalQuadraticForm(DistanceForm):
    """g(D) = (1 + u)^{-α}, u = D/(2α); g'(D) = -g/(2(1 + u)); ∂g/∂log α = α g (u/(1 + u) - log(1 + u))
    (R&W eq. 4.19; the host's :mod:`gpmodels.kernels.rational_quadratic`).  θ = (log s, log α)."""

    alpha: float = 1.0
    snaps = True

    def profile(self, xp, D):
        return xp.exp(xp.log1p(D / (2.0 * self.alpha)) * -self.alpha)

    def slope(self, xp, D, M):
        return M / (1.0 + D / (2.0 * self.alpha)) * -0.5

    @property
    def fused_profile(self):
        return FusedProfile.RATIONAL_QUADRATIC, float(self.alpha)

    @property
    def n_extra(self) -> int:
        return 1

    def extra_derivatives(self, xp, D, M):
        u = D / (2.0 * self.alpha)
        return [M * (u / (1.0 + u) - xp.log1p(u)) * self.alpha]
