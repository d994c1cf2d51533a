"""Factorised likelihoods: P(y | u) = Π_ic P(y_ic | u_ic), so W = ∇∇_u Φ_lh is diagonal.

For these the Hessian factor of Seeger 2008, Sec. 5.1.1 is simply V = W^{1/2} (a diagonal matrix),
g̃ = W^{-1/2} g, the warm start β = W^{-1/2} α and the App. B preconditioner
diag(I + V^T K̃ V)_ic = 1 + w_ic K̃_i,cc.  W > 0 everywhere, so ran W is the whole space and
``project_alpha`` is the identity (the softmax needs the projection because its W is singular).

A subclass gives elementwise functions of (u, y), arrays of shape (n, C) (C = 1: a single latent
function, the setting of binary classification and regression here):

  ``_nlp``   -log P(y | u)          ``_d1``  ∂/∂u of it       ``_d2``  ∂²/∂u²     ``_d3``  ∂³/∂u³
  ``_curvature``   the weight w used by Newton (default ``_d2``).  Likelihoods that are not
                   log-concave (Student-t) or not twice differentiable (Laplace, hinge) use the
                   curvature of a quadratic *majoriser* of -log P touching it at u (then
                   ``curvature_kind = "majoriser"``): w >= ∂²(-log P) everywhere and w > 0, so the
                   Newton system stays positive definite and its step decreases Φ (an MM step).
  ``_dpsi``  derivatives by the likelihood's own log-space hyperparameters ψ: a triple of arrays
             (p, n, C) of ∂_ψ(-log P), ∂_ψ ∂_u(-log P), ∂_ψ ∂²_u(-log P) (Laplace MLM gradients).

Super-Gaussian representation (Nickisch & Seeger 2011, Sec. 2.3; used by VB, ``inference/marginal/vb.py``):
every likelihood here is written as -2 log P(y | u) = G(s²) + ℓ_lin(u) with G concave and
increasing in x = s² >= 0 and

  ``vb_residual = True``  (Gaussian, Laplace, Student-t):  s = y - u, ℓ_lin = 0;
  ``vb_residual = False`` (logistic, y = ±1):              s = u,     ℓ_lin = -y u  (b = y/2).

Concavity gives P(y|u) = max_{γ>0} exp(b u - s²/(2γ) - h(γ)/2) with 1/γ = G'(x) at the touching
x and h(γ) = G(x) - x G'(x) (Legendre duality).  Hooks: ``_sg_G``, ``_sg_dG``, ``_sg_d2G`` (in x)
and ``_sg_dpsi`` (∂G/∂ψ, shape (p, n, C)).
"""

from __future__ import annotations

import abc
from typing import ClassVar

import numpy as np

from gpmodels.errors import InputError
from gpmodels.likelihoods.base import HessianFactor, Likelihood
from gpmodels.validation import check_finite, check_shape

__all__ = [
    "DiagonalLikelihood",
    "RealTargetLikelihood",
    "SignedTargetLikelihood",
    "DiagonalFactor",
    "as_single_latent",
    "check_pm1_targets",
]

#: smallest Newton weight: keeps W^{-1/2} finite where σ(u)(1 - σ(u)) underflows.
_W_FLOOR = 1e-300


def as_single_latent(name: str, Y, n: int, n_classes: int) -> np.ndarray:
    """Targets for a likelihood over one latent function: shape (n,) or (n, 1) -> (n, 1), finite."""
    if n_classes != 1:
        raise InputError(
            f"{name} models a single latent function: the operator must have n_classes = 1; got {n_classes}"
        )
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 1:
        Y = Y[:, None]
    check_shape("Y", Y, (n, 1))
    check_finite("Y", Y)
    return np.ascontiguousarray(Y)


def check_pm1_targets(name: str, Y, n: int, n_classes: int) -> np.ndarray:
    """Binary targets in {-1, +1}, shape (n,) or (n, 1) -> (n, 1); anything else is an InputError."""
    Y = as_single_latent(f"the {name} likelihood", Y, n, n_classes)
    bad = (Y != 1.0) & (Y != -1.0)
    if np.any(bad):
        i = int(np.flatnonzero(bad.ravel())[0])
        raise InputError(
            f"{name} labels must be in {{-1, +1}}; got {float(Y.ravel()[i])!r} at position {i} "
            f"({int(bad.sum())} such labels)"
        )
    return Y


class DiagonalFactor(HessianFactor):
    """V = W^{1/2} for a diagonal W = diag(w), w > 0, all arrays (n, C)."""

    def __init__(self, w: np.ndarray, exact: bool = True):
        self._w_given = w
        self.w = np.maximum(w, _W_FLOOR)
        self.sqrt_w = np.sqrt(self.w)
        self.free = np.ones(w.shape, dtype=bool)
        self.fixed_alpha = None
        self.exact = bool(exact)

    def V(self, x):
        return self.sqrt_w * x

    def Vt(self, y):
        return self.sqrt_w * y

    def W(self, x):
        return self.w * x

    def g_tilde(self, g):
        return g / self.sqrt_w

    def beta_init(self, alpha):
        return alpha / self.sqrt_w

    def precond_diag(self, diag_K, point_block_mvm):
        return 1.0 + self.w * diag_K  # diag(I + W^{1/2} K̃ W^{1/2}), App. B with diagonal W

    def rows(self, rows: slice) -> DiagonalFactor:
        return DiagonalFactor(self._w_given[rows], self.exact)

    def diagonal_W(self) -> np.ndarray:
        """w as given (before the floor that keeps W^{1/2} and W^{-1/2} finite)."""
        return self._w_given


class DiagonalLikelihood(Likelihood):
    """Elementwise likelihood; see the module docstring for the hooks a subclass defines."""

    hessian_form = "diagonal"
    #: "hessian": Newton uses the exact second derivative; "majoriser": see the module docstring.
    curvature_kind: str = "hessian"
    #: super-Gaussian form: s = y - u (True) or s = u with the linear term -y u (False).
    vb_residual: bool = True
    #: whether -log P is continuously differentiable in u (False for the Laplace likelihood's kink).
    smooth: bool = True
    #: whether the ``_sg_*`` hooks are defined (a normalised likelihood with a VB bound).
    has_super_gaussian: bool = False

    # ------------------------------------------------------------------ elementwise hooks
    @abc.abstractmethod
    def _nlp(self, U, Y) -> np.ndarray:
        """-log P(y_ic | u_ic), shape (n, C)."""

    @abc.abstractmethod
    def _d1(self, U, Y) -> np.ndarray:
        """∂/∂u of ``_nlp``."""

    @abc.abstractmethod
    def _d2(self, U, Y) -> np.ndarray:
        """∂²/∂u² of ``_nlp`` (the exact Hessian diagonal)."""

    @abc.abstractmethod
    def _d3(self, U, Y) -> np.ndarray:
        """∂³/∂u³ of ``_nlp`` (Laplace MLM gradient, R&W Alg. 5.1 line 9)."""

    def _curvature(self, U, Y) -> np.ndarray:
        return self._d2(U, Y)

    def _dpsi(self, U, Y):
        z = np.zeros((0,) + np.shape(U))
        return z, z, z

    def _sg_G(self, X, Y):
        raise InputError(f"{type(self).__name__} has no super-Gaussian (VB) representation")

    def _sg_dG(self, X, Y):
        raise InputError(f"{type(self).__name__} has no super-Gaussian (VB) representation")

    def _sg_d2G(self, X, Y):
        raise InputError(f"{type(self).__name__} has no super-Gaussian (VB) representation")

    def _sg_dpsi(self, X, Y):
        return np.zeros((0,) + np.shape(X))

    # ------------------------------------------------------------------ Likelihood protocol
    def value(self, U, Y) -> float:
        return float(np.sum(self._nlp(U, Y)))

    def gradient(self, U, Y) -> np.ndarray:
        return self._d1(U, Y)

    def hessian_factor(self, U, Y) -> DiagonalFactor:
        return DiagonalFactor(self._curvature(U, Y), exact=self.curvature_kind == "hessian")

    # ------------------------------------------------------------------ exact derivatives (MLM, CV)
    def exact_hessian_factor(self, U, Y) -> DiagonalFactor:
        """V = W^{1/2} of the exact second derivative (not the majoriser curvature).  Where W < 0 (Student-t
        away from the mode's bulk) no real factor exists: V uses W floored at 1e-300 and ``diagonal_W``
        keeps the signed values for the exact paths that use W itself."""
        return DiagonalFactor(self.hessian_diag(U, Y), exact=True)

    def trace_hessian_derivative(self, U, Y, S) -> np.ndarray:
        """diag(S_i) ∘ ∂³_u Φ_lh: W is diagonal, ∂W_ii/∂u_i is the third derivative (R&W Alg. 5.1 line 9)."""
        return np.einsum("icc->ic", S) * self.third_derivative(U, Y)

    def value_per_point(self, U, Y) -> np.ndarray:
        """Σ_c -log P(y_ic | u_ic) per point."""
        return np.sum(self._nlp(U, Y), axis=1)

    def check_laplace(self) -> None:
        if not self.smooth or not self.has_super_gaussian:
            raise InputError(
                f"the Laplace approximation needs a smooth, normalised likelihood; {type(self).__name__} "
                f"is {'a loss' if self.smooth else 'not differentiable (W = 0 almost everywhere)'} "
                f"(use the VB objective for the Laplace likelihood)"
            )

    def hessian_diag(self, U, Y) -> np.ndarray:
        """The exact W = ∂²_u Φ_lh elementwise (may be negative when not log-concave)."""
        return self._d2(U, Y)

    def third_derivative(self, U, Y) -> np.ndarray:
        """∂³_u Φ_lh elementwise, i.e. ∂W/∂u."""
        return self._d3(U, Y)

    def param_derivatives(self, U, Y):
        """(∂_ψ Φ_lh summed per ψ (p,), ∂_ψ g (p, n, C), ∂_ψ W (p, n, C)) for the log-space ψ."""
        a, b, c = self._dpsi(U, Y)
        return a.reshape(a.shape[0], a[0].size if a.shape[0] else 0).sum(axis=1), b, c

    # ------------------------------------------------------------------ super-Gaussian (VB)
    def sg_s(self, U, Y) -> np.ndarray:
        """s(u): the residual y - u (``vb_residual``) or u itself."""
        return Y - U if self.vb_residual else U

    def sg_lin(self, U, Y) -> np.ndarray:
        """ℓ_lin(u) elementwise: 0 or -y u."""
        return np.zeros_like(U) if self.vb_residual else -Y * U

    def sg_b(self, Y) -> np.ndarray:
        """b of the bound exp(b u - u²/(2γ) - h/2) when ``vb_residual`` is False (b = y/2)."""
        return 0.5 * Y

    def sg_G(self, X, Y):
        return self._sg_G(X, Y)

    def sg_dG(self, X, Y):
        return self._sg_dG(X, Y)

    def sg_d2G(self, X, Y):
        return self._sg_d2G(X, Y)

    def sg_dpsi(self, X, Y):
        return self._sg_dpsi(X, Y)


class RealTargetLikelihood(DiagonalLikelihood):
    """A noise model of real targets y = u + r over one latent function (targets (n,) or (n, 1)), r symmetric
    about 0: s = y - u in the super-Gaussian form, and u itself is the point prediction.  A subclass names
    itself in ``target_name`` ("the <target_name> likelihood" in target errors)."""

    target_name: ClassVar[str]
    target_encoding = "real"
    vb_residual = True
    has_super_gaussian = True

    def check_targets(self, Y, n, n_classes):
        return as_single_latent(f"the {self.target_name} likelihood", Y, n, n_classes)

    def predict(self, U) -> np.ndarray:
        """The predictive location of y at latent values U: u itself (the median of the symmetric noise,
        and its mean where that exists), shape (m, 1)."""
        return np.asarray(U, dtype=np.float64).reshape(-1, 1)


class SignedTargetLikelihood(DiagonalLikelihood):
    """Binary labels y = ±1 over one latent function (targets (n,) or (n, 1)): s = u with the linear term
    ℓ_lin = -y u in the super-Gaussian form.  A subclass names itself in ``target_name`` (target errors)."""

    target_name: ClassVar[str]
    target_encoding = "signed"
    vb_residual = False

    def check_targets(self, Y, n, n_classes):
        return check_pm1_targets(self.target_name, Y, n, n_classes)
