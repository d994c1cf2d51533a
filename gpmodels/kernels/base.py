"""Covariance functions: the shape M(x, x') of a kernel, without its variance.

A class kernel is K^(c)(x, x') = v_c M^(l_c)(x, x') (Seeger 2008, App. D.1): the variance v_c
belongs to the prior (so that classes can share M but not v, the "semi" mode), the shape M and its
parameters belong to a :class:`Kernel`.  Parameters live in log space.

Must be defined: ``gram``, ``params``, ``param_names``, ``with_params``.
For speed (generic defaults exist): ``diag``, ``grad_contract``, ``diag_grad_contract``.
Declared capability: ``has_sq_dist_form`` (M is a function of the squared distances alone); a
kernel that declares it defines ``gram_from_sq_dists`` and ``grad_contract_from_sq_dists``.
Optional: ``param_bounds`` (log-space box of the parameters; default unbounded).

Kernels compose: ``k1 + k2`` and ``k1 * k2`` are :class:`~gpmodels.kernels.composite.KernelSum` and
:class:`~gpmodels.kernels.composite.KernelProduct` (a positive number stands for a
:class:`~gpmodels.kernels.constant.Constant`; adding 0 leaves a kernel unchanged, so ``sum(kernels)`` works).

``grad_contract(X1, X2, G)`` is the kernel's only derivative primitive: the vector over
parameters p of Σ_ab ∂M(x1_a, x2_b)/∂θ_p · G_ab.  Every representation (stored, blocked, low
rank) reduces its ``grad_trace`` to it, so a kernel with an analytic contraction makes all of
them fast.
"""

from __future__ import annotations

import abc
from collections.abc import Callable

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.errors import GPModelsError, InputError
from gpmodels.hyperparameters import ParameterFree, Parameterised, natural_values
from gpmodels.linalg.finite_differences import central_differences
from gpmodels.nested_params import NestedParams

__all__ = ["Kernel", "ParameterFreeKernel", "sq_norms", "sq_dists", "cross_product", "same_points", "FD_STEP_KERNEL"]

FD_STEP_KERNEL = 1e-6


def sq_norms(X) -> np.ndarray:
    """Row-wise squared Euclidean norms of a dense or sparse matrix, shape (n,)."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


def same_points(X1, X2) -> bool:
    """Whether X1 and X2 hold the same points (the same object, or equal shapes and values).

    The kernels take their symmetric path (X Xᵀ by one symmetric product, an exact 0 diagonal of the squared
    distances) on this test rather than on object identity, so that a result depends on the values alone: a
    model fitted in a worker process and sent back predicts the training points bit for bit as it does where
    the training array is the very object passed in."""
    if X1 is X2:
        return True
    if X1.shape != X2.shape:
        return False
    if sp.issparse(X1) or sp.issparse(X2):
        return sp.issparse(X1) and sp.issparse(X2) and (X1 != X2).nnz == 0
    return bool(np.array_equal(X1, X2))


def cross_product(X1, X2) -> np.ndarray:
    """X1 X2^T as a dense array for dense or sparse inputs (X1 X1^T, one symmetric product, when
    :func:`same_points`)."""
    if same_points(X1, X2):
        X2 = X1
    if sp.issparse(X1) or sp.issparse(X2):
        out = X1 @ X2.T
        return out.toarray() if sp.issparse(out) else np.asarray(out)
    return X1 @ X2.T


def sq_dists(X1, X2) -> np.ndarray:
    """Squared Euclidean distances ||x1_a - x2_b||^2, shape (n1, n2), clipped at 0 (exactly 0 on the
    diagonal when :func:`same_points`)."""
    if same_points(X1, X2):
        X2 = X1
    d2 = sq_norms(X1)[:, None] + sq_norms(X2)[None, :] - 2.0 * cross_product(X1, X2)
    np.maximum(d2, 0.0, out=d2)
    if X1 is X2:
        np.fill_diagonal(d2, 0.0)
    return d2


def _spec_value(value):
    """A kernel field's value as YAML writes it: an array as a list of floats, an int as an int, a word
    (``'auto'``) as it is, else a float."""
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        return [float(v) for v in value]
    return int(value) if isinstance(value, (int, np.integer)) else float(value)


class Kernel(NestedParams, Parameterised):
    """A covariance shape function M(x, x') with log-space parameters; scikit-learn's ``get_params`` /
    ``set_params`` over its constructor's arguments (:class:`~gpmodels.nested_params.NestedParams`)."""

    #: whether the kernel accepts scipy.sparse CSR inputs.
    supports_sparse: bool = True

    @abc.abstractmethod
    def gram(self, X1, X2) -> np.ndarray:
        """Matrix (M(x1_a, x2_b))_{a,b}, shape (n1, n2)."""

    # ----------------------------------------------------------------- for speed
    def diag(self, X) -> np.ndarray:
        """(M(x_a, x_a))_a.  Generic default: one 1 x 1 Gram per point."""
        return np.array([self.gram(X[a : a + 1], X[a : a + 1])[0, 0] for a in range(X.shape[0])])

    def grad_contract(self, X1, X2, G, gram=None) -> np.ndarray:
        """Σ_ab ∂M_ab/∂θ_p G_ab for every p; ``gram`` may pass M(X1, X2) if already known.

        Generic default: central finite differences of the Gram matrix.
        """
        return central_differences(self.params, lambda t: np.sum(self.with_params(t).gram(X1, X2) * G), FD_STEP_KERNEL)

    #: whether M = X X^T (the linear kernel): it can be applied as X (X^T B) without forming M
    is_linear: bool = False

    #: the kernel's ``type`` in a spec's ``model.kernel`` section; None where the spec language has no name for it
    spec_type: str | None = None

    def spec_section(self) -> dict | None:
        """This kernel as a spec's ``model.kernel`` section (what a model folder's spec records), or None
        where the spec language has no name for it.  Generic default: ``spec_type`` and the values of the
        kernel's attrs fields, which carry the spec's key names (arrays as lists)."""
        if self.spec_type is None:
            return None
        values = {
            f.name: _spec_value(getattr(self, f.name)) for f in attrs.fields(type(self)) if f.metadata.get("spec", True)
        }
        return {"type": self.spec_type, **values}

    @property
    def has_sq_dist_form(self) -> bool:
        """Whether M is a function of the squared distances D_ab = ||x_a - x_b||^2 alone (isotropic
        stationary shapes, constants and their sums and products): then ``gram_from_sq_dists`` and
        ``grad_contract_from_sq_dists`` give M and its contraction from D, and a stored matrix keeps D
        to rebuild M at new parameters (:class:`~gpmodels.kernels.stored_gram.SqDistCache`).
        Default: whether the class defines ``gram_from_sq_dists``; compositions say it from their terms."""
        return type(self).gram_from_sq_dists is not Kernel.gram_from_sq_dists

    @property
    def param_bounds(self) -> np.ndarray:
        """(p, 2) lower and upper bounds of ``params`` (log space; unbounded: ±inf).  Learners
        intersect their search box with them (a scikit-learn kernel's bounds arrive here)."""
        return np.tile([-np.inf, np.inf], (self.params.size, 1))

    def gram_from_sq_dists(self, D: np.ndarray) -> np.ndarray | None:
        """M from the squared distances D_ab = ||x_a - x_b||^2 for kernels that are a function of
        them alone (``has_sq_dist_form``), else None.  Lets a stored matrix be rebuilt at new
        parameters without recomputing the distances (they do not change with w)."""
        return None

    @property
    def distance_form(self):
        """The declared scaled squared-distance form M = g(Σ_j s_j (x_j - x'_j)^2) with θ = log s
        (:class:`~gpmodels.kernels.device.forms.DistanceForm`), from which a device builds M; None
        for kernels without one."""
        return None

    def grad_contract_from_sq_dists(self, D: np.ndarray, G: np.ndarray, gram: np.ndarray) -> np.ndarray | None:
        """``grad_contract`` from the squared distances D and M = ``gram`` of the same block (for the
        kernels of ``gram_from_sq_dists``; None otherwise): one pass over the block instead of
        products with the features."""
        return None

    def diag_grad_contract(self, X, g) -> np.ndarray:
        """Σ_a ∂M(x_a, x_a)/∂θ_p g_a for every p.  Generic default: finite differences."""
        return central_differences(self.params, lambda t: np.dot(self.with_params(t).diag(X), g), FD_STEP_KERNEL)

    # ----------------------------------------------------------------- composition
    def __add__(self, other):
        return self if _is_zero(other) else _compose("+", self, other)

    def __radd__(self, other):
        return self if _is_zero(other) else _compose("+", other, self)

    def __mul__(self, other):
        return _compose("*", self, other)

    def __rmul__(self, other):
        return _compose("*", other, self)

    # ----------------------------------------------------------------- identity
    def key(self) -> tuple:
        """Hashable identity: equal keys mean equal Gram matrices on the same inputs."""
        return (type(self).__name__, tuple(np.round(self.params, 15)), self._static_key())

    def _static_key(self) -> tuple:
        """Configuration that is not a parameter (degree of a polynomial, ...)."""
        return ()

    def check_inputs(self, X) -> None:
        """Raise if this kernel cannot take X (sparse input to a dense-only kernel)."""

        if sp.issparse(X) and not self.supports_sparse:
            raise InputError(f"the {type(self).__name__} kernel needs dense inputs; got a sparse matrix")

    def __repr__(self) -> str:
        desc = ", ".join(f"{n}={v:.4g}" for n, v in natural_values(self.param_names, self.params).items())
        return f"{type(self).__name__}({desc})"


#: What ``left + right`` and ``left * right`` build (either side a kernel or a number), by operator:
#: :mod:`gpmodels.kernels.composite` declares KernelSum and KernelProduct with :func:`define_composition`
#: when it is imported.  ``gpmodels/kernels/__init__.py`` imports that module, and Python runs a
#: package's ``__init__`` before any module in it, so whichever kernel module a program imports first,
#: the operators are declared before a kernel exists (tests/kernels/test_composition_hook.py).
_COMPOSITIONS: dict[str, Callable[[object, object], Kernel]] = {}


def define_composition(op: str, build: Callable[[object, object], Kernel]) -> None:
    """Declare what the operator ``op`` ("+" or "*") builds from two kernels: ``build(left, right)``."""
    if op not in ("+", "*"):
        raise InputError(f"a kernel composition is '+' or '*'; got {op!r}")
    _COMPOSITIONS[op] = build


def _compose(op: str, left, right) -> Kernel:
    """``left op right`` by the declared composition."""
    build = _COMPOSITIONS.get(op)
    if build is None:
        raise GPModelsError(
            f"kernel {op!r} is declared by gpmodels.kernels.composite, which importing gpmodels.kernels loads; "
            "it has not run in this interpreter"
        )
    return build(left, right)


def _is_zero(value) -> bool:
    """Whether ``value`` is the plain number 0 (the start of ``sum(kernels)``)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) and value == 0


class ParameterFreeKernel(ParameterFree, Kernel):
    """A kernel without hyperparameters (linear, precomputed): empty ``params``."""
