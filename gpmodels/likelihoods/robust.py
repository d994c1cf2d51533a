"""Robust regression likelihoods: Laplace (scale τ) and Student-t (ν degrees of freedom, scale σ).

**Laplace**: P(y | u) = exp(-|r|/τ) / (2τ), r = y - u.  -log P is not twice differentiable
(∂² = 0 away from r = 0), so Newton uses the curvature of the quadratic majoriser
|r|/τ <= r²/(2τc) + c/(2τ) (equality at |r| = c), i.e. w = 1/(τ max(|r|, ε τ)): the IRLS
weight of L1 regression.  w > 0 keeps the Newton system (5) positive definite; since the quadratic
lies above -log P the full step decreases Φ, and the line search enforces it.
Super-Gaussian form: |r|/τ = min_γ r²/(2γ) + γ/(2τ²) (DESIGN.md), G(x) = 2√x/τ + 2 log(2τ).

**Student-t**: P(y | u) = Γ((ν+1)/2) / (Γ(ν/2) √(νπ) σ) (1 + r²/(νσ²))^{-(ν+1)/2}.
Not log-concave: ∂²(-log P) = (ν+1)(a - r²)/(a + r²)², a = νσ², is negative for |r| > √a
(outliers).  Newton therefore uses the majoriser curvature w = (ν+1)/(a + r²) (-log P is a
concave function of r², so its tangent in r² gives a quadratic upper bound in u).  This is the
weight of the EM / IRLS algorithm for the t scale mixture.  We choose it over (a) the positive
part max(∂², 0) -- zero for outliers, so g̃ = W^{-1/2} g is undefined exactly where the gradient
is largest -- and over (b) Fisher scoring w = (ν+1)/((ν+3)σ²), which is positive but constant, so
it cannot down-weight outliers and its step is not guaranteed to decrease Φ without the line
search.  The majoriser step is an MM step: it decreases Φ at λ = 1, w >= ∂² everywhere, and w = ∂²
at r = 0.  The Laplace MLM (which needs the true Hessian at the mode) uses ``hessian_diag``.
Super-Gaussian form: G(x) = (ν+1) log(1 + x/a) + 2c, c the log normaliser.
Hyperparameters (log space): ``lik.log_scale`` and, with ``learn_df=True``, ``lik.log_df``.
"""

from __future__ import annotations

import attrs
import numpy as np
from scipy.special import digamma, gammaln

from gpmodels.errors import InputError
from gpmodels.hyperparameters import OneLogParameter
from gpmodels.likelihoods.diagonal import RealTargetLikelihood
from gpmodels.validation import boolean, positive_number, to_float

__all__ = ["Laplace", "StudentT"]

#: relative floor ε of |r| / τ in the Laplace IRLS weight.
LAPLACE_RESIDUAL_FLOOR = 1e-9


def _params_from(theta, names, cls_name):
    theta = np.asarray(theta, dtype=np.float64).ravel()
    if theta.size != len(names) or not np.all(np.isfinite(theta)):
        raise InputError(f"{cls_name} has parameters {names}; got {theta.tolist()}")
    return np.exp(theta)


@attrs.frozen
class Laplace(OneLogParameter, RealTargetLikelihood):
    """exp(-|y - u|/τ)/(2τ) with ``scale`` τ > 0 (hyperparameter ``lik.log_scale``)."""

    scale: float = attrs.field(default=1.0, converter=to_float, validator=positive_number())
    log_field = "scale"
    name_prefix = "lik."
    target_name = "Laplace"
    log_concave = True
    smooth = False
    curvature_kind = "majoriser"

    def _nlp(self, U, Y):
        return np.abs(Y - U) / self.scale + np.log(2.0 * self.scale)

    def _d1(self, U, Y):
        return np.sign(U - Y) / self.scale

    def _d2(self, U, Y):
        return np.zeros(np.shape(U))

    def _d3(self, U, Y):
        return np.zeros(np.shape(U))

    def _curvature(self, U, Y):
        c = np.maximum(np.abs(Y - U), LAPLACE_RESIDUAL_FLOOR * self.scale)
        return 1.0 / (self.scale * c)

    def _dpsi(self, U, Y):
        return (
            (1.0 - np.abs(Y - U) / self.scale)[None],
            (-np.sign(U - Y) / self.scale)[None],
            np.zeros((1,) + np.shape(U)),
        )

    def _sg_G(self, X, Y):
        return 2.0 * np.sqrt(X) / self.scale + 2.0 * np.log(2.0 * self.scale)

    def _sg_dG(self, X, Y):
        return 1.0 / (self.scale * np.sqrt(np.maximum(X, np.finfo(float).tiny)))

    def _sg_d2G(self, X, Y):
        return -0.5 / (self.scale * np.maximum(X, np.finfo(float).tiny) ** 1.5)

    def _sg_dpsi(self, X, Y):
        return (2.0 - 2.0 * np.sqrt(X) / self.scale)[None]


@attrs.frozen
class StudentT(RealTargetLikelihood):
    """Student-t noise with ``df`` ν > 0 and ``scale`` σ > 0; see the module docstring."""

    df: float = attrs.field(default=4.0, converter=to_float, validator=positive_number())
    scale: float = attrs.field(default=1.0, converter=to_float, validator=positive_number())
    learn_df: bool = attrs.field(default=False, validator=boolean())
    target_name = "Student-t"
    log_concave = False
    curvature_kind = "majoriser"

    @property
    def params(self):
        return np.array([np.log(self.scale), np.log(self.df)] if self.learn_df else [np.log(self.scale)])

    @property
    def param_names(self):
        return ("lik.log_scale", "lik.log_df") if self.learn_df else ("lik.log_scale",)

    def with_params(self, theta):
        v = _params_from(theta, self.param_names, "StudentT")
        return StudentT(df=float(v[1]) if self.learn_df else self.df, scale=float(v[0]), learn_df=self.learn_df)

    @property
    def _a(self):
        return self.df * self.scale**2

    def _log_norm(self):
        """c = -log Γ((ν+1)/2) + log Γ(ν/2) + log(νπσ²)/2, so -log P = (ν+1)/2 log(1 + r²/a) + c."""
        nu = self.df
        return -gammaln((nu + 1) / 2) + gammaln(nu / 2) + 0.5 * np.log(nu * np.pi * self.scale**2)

    def _nlp(self, U, Y):
        r2 = (Y - U) ** 2
        return 0.5 * (self.df + 1) * np.log1p(r2 / self._a) + self._log_norm()

    def _d1(self, U, Y):
        r = Y - U
        return -(self.df + 1) * r / (self._a + r**2)

    def _d2(self, U, Y):
        r2 = (Y - U) ** 2
        return (self.df + 1) * (self._a - r2) / (self._a + r2) ** 2

    def _d3(self, U, Y):
        r = Y - U
        a = self._a
        return 2.0 * (self.df + 1) * r * (3 * a - r**2) / (a + r**2) ** 3

    def _curvature(self, U, Y):
        return (self.df + 1) / (self._a + (Y - U) ** 2)

    def _dpsi(self, U, Y):
        nu, a = self.df, self._a
        r = Y - U
        r2 = r**2
        # by log σ (∂a/∂log σ = 2a)
        n_s = 1.0 - (nu + 1) * r2 / (a + r2)
        g_s = (nu + 1) * r * 2 * a / (a + r2) ** 2
        w_s = (nu + 1) * (3 * r2 - a) / (a + r2) ** 3 * 2 * a
        if not self.learn_df:
            return n_s[None], g_s[None], w_s[None]
        s2 = self.scale**2
        # by log ν (∂a/∂ν = σ²), times ν
        dc = -0.5 * digamma((nu + 1) / 2) + 0.5 * digamma(nu / 2) + 0.5 / nu
        n_v = nu * (0.5 * np.log1p(r2 / a) - (nu + 1) * r2 * s2 / (2 * a * (a + r2)) + dc)
        g_v = nu * (-r / (a + r2) + (nu + 1) * r * s2 / (a + r2) ** 2)
        w_v = nu * ((a - r2) / (a + r2) ** 2 + (nu + 1) * s2 * (3 * r2 - a) / (a + r2) ** 3)
        return np.stack([n_s, n_v]), np.stack([g_s, g_v]), np.stack([w_s, w_v])

    def _sg_G(self, X, Y):
        return (self.df + 1) * np.log1p(X / self._a) + 2.0 * self._log_norm()

    def _sg_dG(self, X, Y):
        return (self.df + 1) / (self._a + X)

    def _sg_d2G(self, X, Y):
        return -(self.df + 1) / (self._a + X) ** 2

    def _sg_dpsi(self, X, Y):
        nu, a = self.df, self._a
        d_s = 2.0 - 2.0 * (nu + 1) * X / (a + X)
        if not self.learn_df:
            return d_s[None]
        dc = -0.5 * digamma((nu + 1) / 2) + 0.5 * digamma(nu / 2) + 0.5 / nu
        d_v = nu * (np.log1p(X / a) - (nu + 1) * X * self.scale**2 / (a * (a + X)) + 2 * dc)
        return np.stack([d_s, d_v])
