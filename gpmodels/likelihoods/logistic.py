"""Binary logistic likelihood for one latent function: P(y | u) = σ(y u), y ∈ {-1, +1}.

Rasmussen & Williams (2006), Sec. 3.4 and Alg. 3.1/3.2/5.1; σ(t) = 1 / (1 + e^{-t}).  With
π = σ(u) (the probability of y = +1) and t = (y + 1)/2 ∈ {0, 1}:

  -log P = log(1 + e^{-y u}),   ∂_u = π - t,   W = π (1 - π),   ∂W/∂u = π (1 - π)(1 - 2π).

W > 0, so V = W^{1/2} and ran W is everything (``project_alpha`` is the identity).

Super-Gaussian form (Jaakkola & Jordan 2000; Nickisch & Seeger 2011, Sec. 2.3):
-2 log σ(y u) = 2 log(2 cosh(u/2)) - y u = G(u²) + ℓ_lin(u) with G(x) = 2 log(2 cosh(√x / 2)),
G'(x) = tanh(√x/2) / (2√x) = 2 λ(√x) (λ(ξ) = tanh(ξ/2)/(4ξ)), so 1/γ = 2λ(ξ), b = y/2.
"""

from __future__ import annotations

import attrs
import numpy as np
from scipy.special import expit

from gpmodels.likelihoods.diagonal import SignedTargetLikelihood

__all__ = ["Logistic"]

#: below this x = s² the G'(x), G''(x) of the logistic use their Taylor series (cancellation).
_SERIES_X = 1e-3


@attrs.frozen
class Logistic(SignedTargetLikelihood):
    """P(y = ±1 | u) = σ(±u) over a single latent function (targets (n,) or (n, 1) in {-1, +1})."""

    target_name = "logistic"
    log_concave = True
    has_super_gaussian = True

    def _nlp(self, U, Y):
        return np.logaddexp(0.0, -Y * U)

    def _d1(self, U, Y):
        return expit(U) - 0.5 * (Y + 1.0)

    def _d2(self, U, Y):
        p = expit(U)
        return p * (1.0 - p)

    def _d3(self, U, Y):
        p = expit(U)
        return p * (1.0 - p) * (1.0 - 2.0 * p)

    def predict(self, U) -> np.ndarray:
        """(m, 2) probabilities of (y = -1, y = +1) at latent values U of shape (m, 1)."""
        u = np.asarray(U, dtype=np.float64).reshape(-1)
        return np.column_stack([expit(-u), expit(u)])

    # ------------------------------------------------------------------ super-Gaussian form
    def _sg_G(self, X, Y):
        r = np.sqrt(X)
        return r + 2.0 * np.log1p(np.exp(-r))  # 2 log(2 cosh(r/2)), stable

    def _sg_dG(self, X, Y):
        r = np.sqrt(np.maximum(X, 0.0))
        small = X < _SERIES_X
        rs = np.where(small, 1.0, r)
        series = 0.25 - X / 48.0 + X**2 / 480.0
        return np.where(small, series, np.tanh(rs / 2.0) / (2.0 * rs))

    def _sg_d2G(self, X, Y):
        r = np.sqrt(np.maximum(X, 0.0))
        small = X < _SERIES_X
        rs = np.where(small, 1.0, r)
        th = np.tanh(rs / 2.0)
        exact = ((1.0 - th**2) / (4.0 * rs) - th / (2.0 * rs**2)) / (2.0 * rs)
        return np.where(small, -1.0 / 48.0 + X / 240.0, exact)
