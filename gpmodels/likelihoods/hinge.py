"""Quadratically smoothed hinge loss (a loss, not a normalised likelihood), y ∈ {-1, +1}.

For MKL with the SVM loss (Nickisch & Seeger 2011, Table 1 and eq. (3)).  With t = 1 - y u:

  ℓ_ε(t) = 0 (t <= 0),   t² / (2ε) (0 < t < ε),   t - ε/2 (t >= ε),

which is within ε/2 of the hinge max(0, t) everywhere and continuously differentiable, so the MKL
criterion with ℓ_ε is within nε of the hinge criterion (the tests compare both with cvxpy).
∂²ℓ_ε vanishes where the gradient does not (t >= ε), so Newton uses the curvature of a quadratic
majoriser touching ℓ_ε at t (``curvature_kind = "majoriser"``, as for the Laplace likelihood):
w = 1/ε on (0, ε) (exact), w = 1/t for t >= ε (the IRLS weight), and w = 1/(ε + 2|t|) for t <= 0, the
smallest c with c (t' - t)²/2 >= ℓ_ε(t') for all t' (attained at t' = ε + |t|).  There is no super-Gaussian (VB)
form: the hinge
is not a normalised likelihood (Sollich 2000).
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.likelihoods.diagonal import SignedTargetLikelihood
from gpmodels.validation import positive_number, to_float

__all__ = ["SmoothedHinge"]


@attrs.frozen
class SmoothedHinge(SignedTargetLikelihood):
    """ℓ_ε(1 - y u) over a single latent function; ``eps`` the smoothing width."""

    eps: float = attrs.field(default=1e-3, converter=to_float, validator=positive_number())
    target_name = "hinge"
    log_concave = True
    curvature_kind = "majoriser"

    def _t(self, U, Y):
        return 1.0 - Y * U

    def _nlp(self, U, Y):
        t = self._t(U, Y)
        return np.where(t <= 0, 0.0, np.where(t < self.eps, t**2 / (2 * self.eps), t - self.eps / 2))

    def _d1(self, U, Y):
        t = self._t(U, Y)
        return -Y * np.clip(t / self.eps, 0.0, 1.0)

    def _d2(self, U, Y):
        t = self._t(U, Y)
        return np.where((t > 0) & (t < self.eps), 1.0 / self.eps, 0.0)

    def _d3(self, U, Y):
        return np.zeros(np.shape(U))

    def _curvature(self, U, Y):
        t = self._t(U, Y)
        return np.where(t > 0, 1.0 / np.maximum(t, self.eps), 1.0 / (self.eps - 2.0 * t))

    def predict(self, U) -> np.ndarray:
        """(m, 2) hard decisions (y = -1, y = +1) by the sign of u (a loss has no probabilities)."""
        u = np.asarray(U, dtype=np.float64).reshape(-1)
        p = np.where(u > 0, 1.0, np.where(u < 0, 0.0, 0.5))
        return np.column_stack([1.0 - p, p])
