"""Linear and polynomial covariance shapes.

Linear: M(x, x') = x^T x' (the variance v_c of K^(c) = v_c x^T x' belongs to the prior).  It has no
shape parameters; on sparse X it is represented without forming X X^T (Seeger 2008, App. D.3),
see :class:`gpmodels.kernels.feature_gram.FeatureGram`.

Polynomial: M(x, x') = (γ x^T x' + c)^d with integer degree d >= 1 (fixed), γ > 0 and offset c > 0
as log-space parameters (c = 0 is allowed and then fixed, not a parameter).
dM/dlog γ = d B^(d-1) γ S and dM/dlog c = d B^(d-1) c with S = x^T x', B = γ S + c.
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.kernels.base import Kernel, ParameterFreeKernel, cross_product, sq_norms
from gpmodels.validation import nonnegative_number, positive_int, positive_number, to_float, to_int

__all__ = ["Linear", "Polynomial"]


@attrs.frozen(eq=False)
class Linear(ParameterFreeKernel):
    """Inner product x^T x' on dense or sparse inputs; no parameters."""

    is_linear = True

    spec_type = "linear"

    def gram(self, X1, X2) -> np.ndarray:
        return cross_product(X1, X2)

    def diag(self, X) -> np.ndarray:
        return sq_norms(X)

    def grad_contract(self, X1, X2, G, gram=None) -> np.ndarray:
        return np.zeros(0)

    def diag_grad_contract(self, X, g) -> np.ndarray:
        return np.zeros(0)


@attrs.frozen(eq=False)
class Polynomial(Kernel):
    """(γ x^T x' + c)^d; parameters log γ and (when c > 0) log c."""

    degree: int = attrs.field(default=2, converter=to_int, validator=positive_int())
    scale: float = attrs.field(default=1.0, converter=to_float, validator=positive_number())
    offset: float = attrs.field(default=1.0, converter=to_float, validator=nonnegative_number())

    spec_type = "polynomial"

    @property
    def params(self) -> np.ndarray:
        if self.offset > 0:
            return np.log([self.scale, self.offset])
        return np.log([self.scale])

    @property
    def param_names(self) -> tuple[str, ...]:
        return ("log_scale", "log_offset") if self.offset > 0 else ("log_scale",)

    def with_params(self, theta) -> Polynomial:
        t = np.exp(np.asarray(theta, dtype=float).ravel())
        if t.size != self.params.size:
            raise InputError(f"Polynomial expects {self.params.size} parameters; got {t.size}")
        return Polynomial(degree=self.degree, scale=t[0], offset=t[1] if t.size > 1 else 0.0)

    def gram(self, X1, X2) -> np.ndarray:
        return (self.scale * cross_product(X1, X2) + self.offset) ** self.degree

    def diag(self, X) -> np.ndarray:
        return (self.scale * sq_norms(X) + self.offset) ** self.degree

    def _grads(self, S: np.ndarray, G: np.ndarray) -> np.ndarray:
        B = self.scale * S + self.offset
        P = self.degree * B ** (self.degree - 1) * G
        out = [np.sum(P * S) * self.scale]
        if self.offset > 0:
            out.append(np.sum(P) * self.offset)
        return np.array(out)

    def grad_contract(self, X1, X2, G, gram=None) -> np.ndarray:
        return self._grads(cross_product(X1, X2), G)

    def diag_grad_contract(self, X, g) -> np.ndarray:
        return self._grads(sq_norms(X), g)

    def _static_key(self) -> tuple:
        return (self.degree, self.offset == 0)
