"""Constant and white-noise covariance shapes, the building blocks of scaled and noisy kernels.

* :class:`Constant`: M(x, x') = c, c > 0 (scikit-learn's ``ConstantKernel``); ``c * k`` is the product
  :class:`~gpmodels.kernels.composite.KernelProduct` of a Constant and k.  ∂M/∂log c = c.
  A function of the squared distances (any D gives c), so it keeps a stored matrix's fast path.
* :class:`White`: M(x, x') = σ² [x = x'], σ² > 0 (scikit-learn's ``WhiteKernel``); ∂M/∂log σ² = M.
  Points are equal when their squared distance is below ``SNAP_RTOL`` (|x|² + |x'|²)
  (:func:`~gpmodels.kernels.stationary.snapped_sq_dists`).  Unlike scikit-learn, which adds the noise
  only to the Gram matrix of one set of points with itself, this is a function of the inputs, so a
  new point equal to a training point gets σ² in its cross covariance too (and duplicated training
  points are correlated); on distinct points the training Gram matrices agree.
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.hyperparameters import OneLogParameter
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.stationary import snapped_sq_dists
from gpmodels.validation import positive_number, to_float

__all__ = ["Constant", "White"]


@attrs.frozen(eq=False)
class Constant(OneLogParameter, Kernel):
    """M(x, x') = value > 0; parameter log value."""

    value: float = attrs.field(default=1.0, converter=to_float, validator=positive_number())
    log_field = "value"
    spec_type = "constant"

    @property
    def has_sq_dist_form(self) -> bool:
        return True

    def gram(self, X1, X2):
        return np.full((X1.shape[0], X2.shape[0]), self.value)

    def gram_from_sq_dists(self, D):
        return np.full(D.shape, self.value)

    def diag(self, X):
        return np.full(X.shape[0], self.value)

    def grad_contract(self, X1, X2, G, gram=None):
        return np.array([self.value * float(np.sum(G))])

    def grad_contract_from_sq_dists(self, D, G, gram):
        return np.array([self.value * float(np.sum(G))])

    def diag_grad_contract(self, X, g):
        return np.array([self.value * float(np.sum(g))])


@attrs.frozen(eq=False)
class White(OneLogParameter, Kernel):
    """M(x, x') = noise [x = x'] (module docstring); parameter log noise."""

    noise: float = attrs.field(default=1.0, converter=to_float, validator=positive_number())
    log_field = "noise"
    spec_type = "white"

    def gram(self, X1, X2):
        return np.where(snapped_sq_dists(X1, X2) == 0.0, self.noise, 0.0)

    def diag(self, X):
        return np.full(X.shape[0], self.noise)

    def grad_contract(self, X1, X2, G, gram=None):
        M = self.gram(X1, X2) if gram is None else gram
        return np.array([float(np.vdot(M, G))])

    def diag_grad_contract(self, X, g):
        return np.array([self.noise * float(np.sum(g))])
