"""Gaussian (RBF) covariance shapes: isotropic (Seeger 2008, eq. 7) and ARD.

Isotropic: M(x, x') = exp(-(w/2) ||x - x'||^2), so K^(c) = v_c M.  With A = (-(1/2)||x_a - x_b||^2),
M = exp(w A), hence dM/dlog w = w M∘A (Seeger 2008, Sec. 7.3).  The contraction
Σ_ab (w M∘A)_ab G_ab is computed from H = M∘G without forming A:
Σ_ab H_ab ||x1_a - x2_b||^2 = (H 1)·|x1|^2 + (H^T 1)·|x2|^2 - 2 Σ (X1 ∘ H X2), O(n1 n2 d).

ARD: M(x, x') = exp(-(1/2) Σ_j w_j (x_j - x'_j)^2), dM/dlog w_j = w_j M∘A_j, the same contraction
per input dimension.
"""

from __future__ import annotations

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.errors import InputError
from gpmodels.hyperparameters import OneLogParameter
from gpmodels.kernels.base import Kernel, same_points, sq_dists, sq_norms
from gpmodels.kernels.device.forms import GaussianForm
from gpmodels.kernels.width import Width, WidthValue, length_scale_field
from gpmodels.validation import array_of, optional, positive_number, to_float, to_float_array

__all__ = ["RBF", "ARD"]


def _h_times(H: np.ndarray, X2) -> np.ndarray:
    """H X2 as a dense array, shape (n1, d)."""
    if sp.issparse(X2):
        return np.asarray((X2.T @ H.T).T)
    return H @ X2


def _row_dot(X1, Y: np.ndarray) -> np.ndarray:
    """Σ_a X1_aj Y_aj per column j, shape (d,)."""
    if sp.issparse(X1):
        return np.asarray(X1.multiply(Y).sum(axis=0)).ravel()
    return np.einsum("aj,aj->j", X1, Y)


def _squared(X):
    return X.multiply(X) if sp.issparse(X) else X * X


@attrs.frozen(eq=False, repr=False)
class RBF(Width, OneLogParameter, Kernel):
    """Isotropic Gaussian shape exp(-(w/2)||x - x'||^2), w = 1/ℓ² > 0 (Seeger 2008, eq. 7): ``w`` or
    ``length_scale`` ℓ, neither: ``'auto'`` (:mod:`gpmodels.kernels.width`)."""

    w: float | str | None = attrs.field(default=None, converter=to_float, validator=WidthValue(positive_number()))
    _length_scale: float | None = length_scale_field(to_float, optional(positive_number()))
    log_field = "w"
    spec_type = "rbf"
    isotropic = True

    def gram(self, X1, X2) -> np.ndarray:
        d2 = sq_dists(X1, X2)
        d2 *= -0.5 * self.w
        return np.exp(d2, out=d2)

    @property
    def has_sq_dist_form(self) -> bool:
        return True

    @property
    def distance_form(self) -> GaussianForm:
        return GaussianForm([self.w], isotropic=True)

    def gram_from_sq_dists(self, D: np.ndarray) -> np.ndarray:
        d2 = D * (-0.5 * self.w)
        return np.exp(d2, out=d2)

    def grad_contract_from_sq_dists(self, D, G, gram) -> np.ndarray:
        # dM/dlog w = w M∘A with A = -D/2 (module docstring)
        return np.array([-0.5 * self.w * float(np.einsum("ab,ab,ab->", gram, G, D))])

    def diag(self, X) -> np.ndarray:
        return np.ones(X.shape[0])

    def grad_contract(self, X1, X2, G, gram=None) -> np.ndarray:
        M = self.gram(X1, X2) if gram is None else gram
        H = M * G
        s = H.sum(axis=1) @ sq_norms(X1) + H.sum(axis=0) @ sq_norms(X2) - 2.0 * _row_dot(X1, _h_times(H, X2)).sum()
        return np.array([-0.5 * self.w * s])

    def diag_grad_contract(self, X, g) -> np.ndarray:
        return np.zeros(1)


@attrs.frozen(eq=False, repr=False)
class ARD(Width, Kernel):
    """Gaussian shape with one inverse squared length-scale per input dimension, w_j = 1/ℓ_j² > 0: ``w`` or
    ``length_scale``, neither: ``'auto'`` (:mod:`gpmodels.kernels.width`)."""

    w: np.ndarray | str | None = attrs.field(
        default=None, converter=to_float_array, validator=WidthValue(array_of(positive_number()))
    )
    _length_scale: np.ndarray | None = length_scale_field(to_float_array, optional(array_of(positive_number())))

    spec_type = "ard"
    isotropic = False

    @property
    def params(self) -> np.ndarray:
        self.require_width()
        return np.log(self.w)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(f"log_w{j}" for j in range(self.w.size))

    def with_params(self, theta) -> ARD:
        return ARD(w=np.exp(np.asarray(theta, dtype=float).ravel()))

    def _check_dim(self, X) -> None:
        if X.shape[1] != self.w.size:
            raise InputError(f"ARD kernel has {self.w.size} length-scales but the inputs have {X.shape[1]} features")

    @property
    def distance_form(self) -> GaussianForm:
        return GaussianForm(self.w, isotropic=False)

    def _scaled(self, X):
        s = np.sqrt(self.w)
        return X @ sp.diags(s) if sp.issparse(X) else X * s

    def gram(self, X1, X2) -> np.ndarray:
        self._check_dim(X1)
        self._check_dim(X2)
        Z1 = self._scaled(X1)
        Z2 = Z1 if same_points(X1, X2) else self._scaled(X2)
        d2 = sq_dists(Z1, Z2)
        d2 *= -0.5
        return np.exp(d2, out=d2)

    def diag(self, X) -> np.ndarray:
        return np.ones(X.shape[0])

    def grad_contract(self, X1, X2, G, gram=None) -> np.ndarray:
        M = self.gram(X1, X2) if gram is None else gram
        H = M * G
        t1 = np.asarray(_squared(X1).T @ H.sum(axis=1)).ravel()
        t2 = np.asarray(_squared(X2).T @ H.sum(axis=0)).ravel()
        s = t1 + t2 - 2.0 * _row_dot(X1, _h_times(H, X2))
        return -0.5 * self.w * s

    def diag_grad_contract(self, X, g) -> np.ndarray:
        return np.zeros(self.w.size)

    def _static_key(self) -> tuple:
        return (self.w.size,)
