"""Matérn covariance shapes with ν = 1/2, 3/2, 5/2, isotropic and ARD (Rasmussen & Williams 2006, eq. 4.14-4.17).

With r² the scaled squared distance of :mod:`gpmodels.kernels.stationary` (r² = w ||x - x'||², w = 1/ℓ²,
or Σ_j w_j (x_j - x'_j)²) and s = √(2ν) r:

* ν = 1/2: f = e^{-r},                      f'(r²) = -e^{-r} / (2r),        r² f'(r²) = -(r/2) e^{-r};
* ν = 3/2: f = (1 + s) e^{-s},              f'(r²) = -(3/2) e^{-s},         r² f'(r²) = -(s²/2) e^{-s};
* ν = 5/2: f = (1 + s + s²/3) e^{-s},       f'(r²) = -(5/6)(1 + s) e^{-s},  r² f'(r²) = -(s²/6)(1 + s) e^{-s}.

f'(r²) of ν = 1/2 is unbounded at r = 0, where every (x_j - x'_j)² it multiplies is 0: the ARD
contraction takes it as 0 there; r² f'(r²) is finite everywhere.  The same forms as scikit-learn's
``Matern(length_scale=ℓ, nu=ν)`` with w = 1/ℓ².
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.kernels.device.forms import MaternForm
from gpmodels.kernels.stationary import Profile, StationaryARDKernel, StationaryKernel
from gpmodels.validation import one_of, to_float

__all__ = ["Matern", "MaternARD", "MATERN_NUS"]

#: the smoothness values with closed forms
MATERN_NUS = (0.5, 1.5, 2.5)


class MaternProfile(Profile):
    """f(r²) of the Matérn class for ν in :data:`MATERN_NUS` (module docstring)."""

    nu: float

    def _profile(self, R2):
        if self.nu == 0.5:
            return np.exp(-np.sqrt(R2))
        s = np.sqrt((2.0 * self.nu) * R2)
        poly = 1.0 + s if self.nu == 1.5 else 1.0 + s + s * s / 3.0
        return poly * np.exp(-s)

    def _exp_part(self, s, M):
        """e^{-s} from M = poly(s) e^{-s}: one division instead of another exp."""
        return M / (1.0 + s) if self.nu == 1.5 else M / (1.0 + s + s * s / 3.0)

    def _slope(self, R2, M):
        if self.nu == 0.5:
            r = np.sqrt(R2)
            out = np.zeros_like(r)
            np.divide(-0.5 * M, r, out=out, where=r > 0)
            return out
        s = np.sqrt((2.0 * self.nu) * R2)
        e = self._exp_part(s, M)
        return -1.5 * e if self.nu == 1.5 else (-5.0 / 6.0) * (1.0 + s) * e

    def _r2_slope(self, R2, M):
        if self.nu == 0.5:
            return -0.5 * np.sqrt(R2) * M
        s2 = (2.0 * self.nu) * R2
        s = np.sqrt(s2)
        e = self._exp_part(s, M)
        return -0.5 * s2 * e if self.nu == 1.5 else (-1.0 / 6.0) * s2 * (1.0 + s) * e

    @property
    def distance_form(self) -> MaternForm:
        return MaternForm(self.w_list, isotropic=self.isotropic, nu=self.nu)


@attrs.frozen(eq=False, repr=False)
class Matern(MaternProfile, StationaryKernel):
    """Isotropic Matérn shape of smoothness ``nu`` (1/2, 3/2, 5/2), w = 1/ℓ² > 0; parameter log w."""

    nu: float = attrs.field(default=1.5, converter=to_float, validator=one_of(MATERN_NUS))

    spec_type = "matern"

    def _static_key(self) -> tuple:
        return (self.nu,)


@attrs.frozen(eq=False, repr=False)
class MaternARD(MaternProfile, StationaryARDKernel):
    """Matérn shape with one inverse squared length-scale w_j per input dimension; parameters log w_j."""

    nu: float = attrs.field(default=1.5, converter=to_float, validator=one_of(MATERN_NUS))

    spec_type = "matern_ard"

    def _static_key(self) -> tuple:
        return (self.w.size, self.nu)
