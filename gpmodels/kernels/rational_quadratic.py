"""Rational quadratic covariance shapes, isotropic and ARD (Rasmussen & Williams 2006, eq. 4.19).

With r² the scaled squared distance of :mod:`gpmodels.kernels.stationary` and u = r² / (2α):

    f = (1 + u)^{-α},   f'(r²) = -f / (2 (1 + u)),   ∂f/∂log α = α f (u / (1 + u) - log(1 + u)).

α > 0 is a log-space parameter after the w's; α → ∞ gives the RBF shape exp(-r²/2).  The same form as
scikit-learn's ``RationalQuadratic(length_scale=ℓ, alpha=α)`` with w = 1/ℓ².
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.kernels.device.forms import RationalQuadraticForm
from gpmodels.kernels.stationary import Profile, StationaryARDKernel, StationaryKernel
from gpmodels.validation import positive_number, to_float

__all__ = ["RationalQuadratic", "RationalQuadraticARD"]


class RationalQuadraticProfile(Profile):
    """f(r²) = (1 + r²/(2α))^{-α} (module docstring)."""

    alpha: float

    def _profile(self, R2):
        return np.exp(-self.alpha * np.log1p(R2 / (2.0 * self.alpha)))

    def _slope(self, R2, M):
        return -0.5 * M / (1.0 + R2 / (2.0 * self.alpha))

    def _extra_params(self):
        return (("alpha", self.alpha),)

    def _extra_derivatives(self, R2, M):
        u = R2 / (2.0 * self.alpha)
        return [self.alpha * M * (u / (1.0 + u) - np.log1p(u))]

    @property
    def distance_form(self) -> RationalQuadraticForm:
        return RationalQuadraticForm(self.w_list, isotropic=self.isotropic, alpha=self.alpha)


@attrs.frozen(eq=False, repr=False)
class RationalQuadratic(RationalQuadraticProfile, StationaryKernel):
    """Isotropic rational quadratic shape, w = 1/ℓ² > 0 and α > 0; parameters log w, log α."""

    alpha: float = attrs.field(default=1.0, converter=to_float, validator=positive_number())
    spec_type = "rational_quadratic"


@attrs.frozen(eq=False, repr=False)
class RationalQuadraticARD(RationalQuadraticProfile, StationaryARDKernel):
    """Rational quadratic shape with one w_j per input dimension and α > 0; parameters log w_j, log α."""

    alpha: float = attrs.field(default=1.0, converter=to_float, validator=positive_number())
    spec_type = "rational_quadratic_ard"
