"""Stationary covariance shapes M(x, x') = f(r²) of a scaled squared distance, isotropic and ARD.

Isotropic: r² = w ||x - x'||² with one inverse squared length-scale w > 0 (w = 1/ℓ²; the RBF of
Seeger 2008, eq. 7 uses the same w).  ARD: r² = Σ_j w_j (x_j - x'_j)², one w_j per input dimension.
A subclass gives the profile f(r²) (``_profile``), its slope f'(r²) = ∂f/∂(r²) (``_slope``) and,
where it has shape parameters η besides w, the matrices ∂M/∂log η (``_extra_derivatives``).

Derivatives in log w (what ``grad_contract`` contracts with G):

* isotropic: ∂M/∂log w = f'(r²) r², so Σ_ab G_ab ∂M_ab/∂log w = Σ_ab G_ab (r² f'(r²))_ab: one pass
  over the squared distances D (``grad_contract_from_sq_dists``, the stored matrices' fast path);
* ARD: ∂M/∂log w_j = f'(r²) w_j (x_j - x'_j)², and with H = f'(r²)∘G
  Σ_ab H_ab (x1_aj - x2_bj)² = (X1²)ᵀ(H 1) + (X2²)ᵀ(Hᵀ 1) - 2 Σ_a X1_aj (H X2)_aj, O(n1 n2 d) for all
  j at once (the contraction of :class:`~gpmodels.kernels.rbf.ARD`, with f'(r²) = -M/2 there).

Every profile here has f(0) = 1 and ∂f(0)/∂θ = 0, so ``diag`` is 1 and its derivatives vanish.

Squared distances from ``|x|² + |x'|² - 2 xᵀx'`` carry a rounding error of a few ulps of
|x|² + |x'|² even for equal points (the diagonal of a Gram built in row blocks); entries below
``SNAP_RTOL`` times |x|² + |x'|² are set to exactly 0 (:func:`snapped_sq_dists`).  For smooth profiles
this changes M by O(1e-12); for Matérn ν = 1/2, whose profile e^{-r} has a kink at 0, it is what
keeps the diagonal at exactly 1 and the representations in agreement.
"""

from __future__ import annotations

import abc

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.errors import InputError
from gpmodels.kernels.base import Kernel, cross_product, same_points, sq_norms
from gpmodels.kernels.rbf import _h_times, _row_dot, _squared
from gpmodels.kernels.width import Width, WidthValue, length_scale_field
from gpmodels.validation import array_of, optional, positive_number, to_float, to_float_array

__all__ = ["Profile", "StationaryKernel", "StationaryARDKernel", "snapped_sq_dists", "SNAP_RTOL"]

#: squared distances below this share of |x|² + |x'|² are rounding and count as 0
SNAP_RTOL = 1e-12


def snapped_sq_dists(X1, X2) -> np.ndarray:
    """||x1_a - x2_b||², shape (n1, n2), clipped at 0 and set to 0 below ``SNAP_RTOL`` (|x1_a|² + |x2_b|²)
    (module docstring); exactly 0 on the diagonal when :func:`~gpmodels.kernels.base.same_points`."""
    if same_points(X1, X2):
        X2 = X1
    n1 = sq_norms(X1)
    n2 = n1 if X2 is X1 else sq_norms(X2)
    scale = n1[:, None] + n2[None, :]
    d2 = scale - 2.0 * cross_product(X1, X2)
    d2[d2 <= SNAP_RTOL * scale] = 0.0
    if X1 is X2:
        np.fill_diagonal(d2, 0.0)
    return d2


class Profile(abc.ABC):
    """The profile f(r²) of a stationary kernel and its derivatives (module docstring)."""

    @abc.abstractmethod
    def _profile(self, R2: np.ndarray) -> np.ndarray:
        """f(r²) elementwise (R2 is read, never written)."""

    @abc.abstractmethod
    def _slope(self, R2: np.ndarray, M: np.ndarray) -> np.ndarray:
        """f'(r²) = ∂f/∂(r²) elementwise, finite everywhere (0 where a singular slope meets r² = 0,
        where every (x_j - x'_j)² it multiplies is 0)."""

    def _r2_slope(self, R2: np.ndarray, M: np.ndarray) -> np.ndarray:
        """r² f'(r²) = ∂M/∂log w (isotropic); a subclass may give a form that stays finite at r² = 0."""
        return R2 * self._slope(R2, M)

    def _extra_derivatives(self, R2: np.ndarray, M: np.ndarray) -> list[np.ndarray]:
        """∂M/∂log η for the profile's own parameters η, in the order of ``_extra_params``."""
        return []

    def _extra_params(self) -> tuple[tuple[str, float], ...]:
        """(name, natural value) of the profile's own positive parameters (attrs fields of that name)."""
        return ()

    def _with(self, w, extra: np.ndarray):
        """A copy with w and the profile's own parameters (natural values)."""
        return attrs.evolve(self, w=w, **{n: float(v) for (n, _), v in zip(self._extra_params(), extra)})

    #: one w for all input dimensions (True) or one w_j per dimension (ARD)
    isotropic: bool

    @property
    def w_list(self):
        """The w's as a sequence ([w] or the w_j), as the device forms take them with ``isotropic``."""
        return [self.w] if self.isotropic else self.w


@attrs.frozen(eq=False, repr=False)
class StationaryKernel(Width, Profile, Kernel):
    """Isotropic M = f(w ||x - x'||²), parameters log w then the profile's own (module docstring); ``w`` or
    ``length_scale`` ℓ = 1/√w, neither: ``'auto'`` (:mod:`gpmodels.kernels.width`)."""

    w: float | str | None = attrs.field(default=None, converter=to_float, validator=WidthValue(positive_number()))
    _length_scale: float | None = length_scale_field(to_float, optional(positive_number()))
    isotropic = True

    # ----------------------------------------------------------------- parameters
    @property
    def params(self) -> np.ndarray:
        self.require_width()
        return np.log([self.w] + [v for _, v in self._extra_params()])

    @property
    def param_names(self) -> tuple[str, ...]:
        return ("log_w",) + tuple(f"log_{n}" for n, _ in self._extra_params())

    def with_params(self, theta):
        t = np.exp(np.asarray(theta, dtype=float).ravel())
        if t.size != self.params.size:
            raise InputError(
                f"{type(self).__name__} has {self.params.size} parameters {self.param_names}; got {t.size} values"
            )
        return self._with(float(t[0]), t[1:])

    # ----------------------------------------------------------------- matrices
    @property
    def has_sq_dist_form(self) -> bool:
        return True

    def gram_from_sq_dists(self, D):
        return self._profile(self.w * D)

    def gram(self, X1, X2):
        return self.gram_from_sq_dists(snapped_sq_dists(X1, X2))

    def diag(self, X):
        return np.ones(X.shape[0])

    def grad_contract_from_sq_dists(self, D, G, gram):
        R2 = self.w * D
        M = self._profile(R2) if gram is None else gram
        parts = [self._r2_slope(R2, M)] + self._extra_derivatives(R2, M)
        return np.array([float(np.vdot(P, G)) for P in parts])

    def grad_contract(self, X1, X2, G, gram=None):
        return self.grad_contract_from_sq_dists(snapped_sq_dists(X1, X2), G, gram)

    def diag_grad_contract(self, X, g):
        return np.zeros(self.params.size)


@attrs.frozen(eq=False, repr=False)
class StationaryARDKernel(Width, Profile, Kernel):
    """ARD M = f(Σ_j w_j (x_j - x'_j)²), parameters log w_j then the profile's own (module docstring); ``w``
    or ``length_scale``, neither: ``'auto'`` (:mod:`gpmodels.kernels.width`)."""

    w: np.ndarray | str | None = attrs.field(
        default=None, converter=to_float_array, validator=WidthValue(array_of(positive_number()))
    )
    _length_scale: np.ndarray | None = length_scale_field(to_float_array, optional(array_of(positive_number())))
    isotropic = False

    @property
    def params(self) -> np.ndarray:
        self.require_width()
        return np.log(np.concatenate([self.w, [v for _, v in self._extra_params()]]))

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(f"log_w{j}" for j in range(self.w.size)) + tuple(f"log_{n}" for n, _ in self._extra_params())

    def with_params(self, theta):
        t = np.exp(np.asarray(theta, dtype=float).ravel())
        if t.size != self.params.size:
            raise InputError(f"{type(self).__name__} has {self.params.size} parameters; got {t.size} values")
        return self._with(t[: self.w.size], t[self.w.size :])

    def _check_dim(self, X) -> None:
        if X.shape[1] != self.w.size:
            raise InputError(
                f"{type(self).__name__} kernel has {self.w.size} length-scales but the inputs have "
                f"{X.shape[1]} features"
            )

    def _scaled(self, X):
        self._check_dim(X)
        s = np.sqrt(self.w)
        return X @ sp.diags(s) if sp.issparse(X) else X * s

    def _r2(self, X1, X2) -> np.ndarray:
        Z1 = self._scaled(X1)
        return snapped_sq_dists(Z1, Z1 if same_points(X1, X2) else self._scaled(X2))

    def gram(self, X1, X2):
        return self._profile(self._r2(X1, X2))

    def diag(self, X):
        return np.ones(X.shape[0])

    def grad_contract(self, X1, X2, G, gram=None):
        R2 = self._r2(X1, X2)
        M = self._profile(R2) if gram is None else gram
        H = self._slope(R2, M) * G
        t1 = np.asarray(_squared(X1).T @ H.sum(axis=1)).ravel()
        t2 = np.asarray(_squared(X2).T @ H.sum(axis=0)).ravel()
        w_part = self.w * (t1 + t2 - 2.0 * _row_dot(X1, _h_times(H, X2)))
        extra = [float(np.vdot(P, G)) for P in self._extra_derivatives(R2, M)]
        return np.concatenate([w_part, extra])

    def diag_grad_contract(self, X, g):
        return np.zeros(self.params.size)

    def _static_key(self) -> tuple:
        return (self.w.size,)
