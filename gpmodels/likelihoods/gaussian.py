"""Gaussian likelihood for regression: P(y | u) = N(y | u, σ²), σ² a log-space hyperparameter.

  -log P = r² / (2σ²) + log(2πσ²)/2,  r = y - u;   ∂_u = -r/σ²;   W = 1/σ²;   ∂W/∂u = 0.
  ∂/∂log σ²:  -r²/(2σ²) + 1/2,   r/σ²,   -1/σ².

Super-Gaussian form (exact; Nickisch & Seeger 2011, eq. (6)): G(x) = x/σ² + log(2πσ²), G' = 1/σ²,
so γ = σ² for every point and the VB bound is the exact -2 log P(y | θ).
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.hyperparameters import OneLogParameter
from gpmodels.likelihoods.diagonal import RealTargetLikelihood
from gpmodels.validation import positive_number, to_float

__all__ = ["Gaussian"]


@attrs.frozen
class Gaussian(OneLogParameter, RealTargetLikelihood):
    """N(y | u, noise) with ``noise`` = σ² > 0 (hyperparameter ``log_noise``)."""

    noise: float = attrs.field(default=1.0, converter=to_float, validator=positive_number())
    log_field = "noise"
    name_prefix = "lik."
    target_name = "Gaussian"
    log_concave = True
    conjugate = True

    def _nlp(self, U, Y):
        return (Y - U) ** 2 / (2.0 * self.noise) + 0.5 * np.log(2.0 * np.pi * self.noise)

    def _d1(self, U, Y):
        return (U - Y) / self.noise

    def _d2(self, U, Y):
        return np.full(np.shape(U), 1.0 / self.noise)

    def _d3(self, U, Y):
        return np.zeros(np.shape(U))

    def _dpsi(self, U, Y):
        r = Y - U
        return (
            (-(r**2) / (2.0 * self.noise) + 0.5)[None],
            (r / self.noise)[None],
            np.full((1,) + np.shape(U), -1.0 / self.noise),
        )

    def _sg_G(self, X, Y):
        return X / self.noise + np.log(2.0 * np.pi * self.noise)

    def _sg_dG(self, X, Y):
        return np.full(np.shape(X), 1.0 / self.noise)

    def _sg_d2G(self, X, Y):
        return np.zeros(np.shape(X))

    def _sg_dpsi(self, X, Y):
        return (1.0 - X / self.noise)[None]
