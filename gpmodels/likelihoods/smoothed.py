"""The variance-smoothed loss of VB: the inner problem of the double loop at fixed variances z.

Nickisch & Seeger (2011), Sec. 2.3, eq. (12): with the super-Gaussian form -2 log P(y|u) =
G(s²) + ℓ_lin(u) (``likelihoods/diagonal.py``) and marginal variances z fixed, minimising the VB
bound over γ gives the smoothed loss

    ℓ̃(u, z) = min_γ [(s² + z)/γ + h(γ)] + ℓ_lin(u) = G(s² + z) + ℓ_lin(u),

so the inner problem min_u u^T K^{-1} u + Σ_i ℓ̃(u_i, z_i) is a MAP problem with Φ_lh = ½ Σ ℓ̃ (the
½ because Newton–CG minimises ½ α^T K α + Φ_lh).  z -> 0 recovers MAP ("VB is variance-smoothed
joint MAP").  Derivatives in u (s' = ds/du = ±1):

    ∂Φ_lh = s s' G'(x) + ℓ_lin'/2,    ∂²Φ_lh = G'(x) + 2 s² G''(x),    x = s² + z.

For a log-concave likelihood ℓ̃ is convex and Newton uses ∂²Φ_lh (> 0 for z > 0).  Otherwise
(Student-t) it uses G'(x), the curvature of the majoriser given by the tangent of the concave G
at x (``curvature_kind = "majoriser"``).
"""

from __future__ import annotations

from operator import attrgetter

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.likelihoods.base import Likelihood
from gpmodels.likelihoods.diagonal import DiagonalFactor, DiagonalLikelihood

__all__ = ["VarianceSmoothed"]


def _base(instance, attribute, base):
    if not isinstance(base, Likelihood) or not base.has_super_gaussian:
        raise InputError(
            f"VB needs a likelihood with a super-Gaussian form (logistic, gaussian, laplace, "
            f"student_t); got {type(base).__name__}"
        )


def _z(z):
    z = np.asarray(z, dtype=np.float64)
    if not np.all(np.isfinite(z)) or np.any(z < 0):
        raise InputError("the marginal variances z must be finite and >= 0")
    return z


@attrs.frozen(eq=False)
class VarianceSmoothed(Likelihood):
    """Φ_lh(u) = ½ Σ_i [G(s_i² + z_i) + ℓ_lin(u_i)] for a base likelihood with a super-Gaussian form."""

    base: DiagonalLikelihood = attrs.field(validator=_base)
    z: np.ndarray = attrs.field(converter=_z)

    hessian_form = "diagonal"

    log_concave = property(attrgetter("base.log_concave"))
    target_encoding = property(attrgetter("base.target_encoding"))

    @property
    def curvature_kind(self) -> str:
        return "hessian" if self.base.log_concave else "majoriser"

    def check_targets(self, Y, n, n_classes):
        Y = self.base.check_targets(Y, n, n_classes)
        if self.z.shape != Y.shape:
            raise InputError(f"Dimension mismatch: z must have shape {Y.shape}; got {self.z.shape}")
        return Y

    def _parts(self, U, Y):
        s = self.base.sg_s(U, Y)
        sp = -1.0 if self.base.vb_residual else 1.0
        return s, sp, s**2 + self.z

    def value(self, U, Y) -> float:
        s, _, x = self._parts(U, Y)
        return 0.5 * float(np.sum(self.base.sg_G(x, Y) + self.base.sg_lin(U, Y)))

    def gradient(self, U, Y):
        s, sp, x = self._parts(U, Y)
        lin = 0.0 if self.base.vb_residual else -0.5 * Y
        return s * sp * self.base.sg_dG(x, Y) + lin

    def hessian_diag(self, U, Y):
        s, _, x = self._parts(U, Y)
        return self.base.sg_dG(x, Y) + 2.0 * s**2 * self.base.sg_d2G(x, Y)

    def value_per_point(self, U, Y) -> np.ndarray:
        s, _, x = self._parts(U, Y)
        return 0.5 * np.sum(self.base.sg_G(x, Y) + self.base.sg_lin(U, Y), axis=1)

    def exact_hessian_factor(self, U, Y) -> DiagonalFactor:
        """W^{1/2} of the exact second derivative (``hessian_diag``), whatever Newton's curvature is."""
        return DiagonalFactor(self.hessian_diag(U, Y), exact=True)

    def hessian_factor(self, U, Y):
        if self.base.log_concave:
            return DiagonalFactor(self.hessian_diag(U, Y), exact=True)
        _, _, x = self._parts(U, Y)
        return DiagonalFactor(self.base.sg_dG(x, Y), exact=False)

    def gamma(self, U, Y):
        """The optimal γ of the bound at u: 1/γ = G'(s² + z) (Nickisch & Seeger 2011, Sec. 2.3)."""
        _, _, x = self._parts(U, Y)
        return 1.0 / self.base.sg_dG(x, Y)

    def predict(self, U):
        return self.base.predict(U)

    def __repr__(self):
        return f"VarianceSmoothed({self.base!r}, z of shape {self.z.shape})"
