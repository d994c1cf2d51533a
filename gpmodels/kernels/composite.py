"""Sums and products of kernels, and kernels with bounded or fixed parameters.

* :class:`KernelSum`: M = Σ_t M_t; ∂M/∂θ_t = ∂M_t/∂θ_t, so the contraction with G is each term's own
  contraction, concatenated (parameters ``k0.…``, ``k1.…`` in term order).
* :class:`KernelProduct`: M = Π_t M_t; by the product rule ∂M/∂θ_t = (Π_{s≠t} M_s) ∘ ∂M_t/∂θ_t, so term
  t's contraction is its own contraction with G ∘ Π_{s≠t} M_s (the products of the other terms by prefix
  and suffix products, never by division: a term may be 0).  The diagonal and its derivatives likewise.
* :class:`Constrained`: a kernel with some parameters fixed (no longer parameters) and log-space
  bounds on the rest, as scikit-learn kernels carry them (``bounds``, ``"fixed"``).

Both compositions keep every capability their terms share: sparse inputs, and the squared-distance form
(``has_sq_dist_form``) that lets a stored matrix rebuild M and its contraction from cached distances
(:class:`~gpmodels.kernels.stored_gram.SqDistCache`).  Representations see one kernel: stored,
blocked, low-rank and distributed matrices, and the CV and Laplace gradients, need nothing more.

``k1 + k2`` and ``k1 * k2`` build them (nested sums and products are flattened); a positive number in
them stands for a :class:`~gpmodels.kernels.constant.Constant`.
"""

from __future__ import annotations

import abc
import functools
import numbers
import operator
from operator import attrgetter

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.hyperparameters import natural_values
from gpmodels.kernels.base import Kernel, define_composition
from gpmodels.kernels.constant import Constant

__all__ = ["KernelSum", "KernelProduct", "Constrained", "as_kernel_term"]


def as_kernel_term(value, op: str) -> Kernel:
    """A kernel for one side of ``k + value`` / ``k * value``: a Kernel, or a positive number as a Constant."""
    if isinstance(value, Kernel):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return Constant(float(value))
    raise InputError(
        f"a kernel {op} {type(value).__name__}: the other side must be a gpmodels Kernel or a "
        f"positive number; got {value!r}"
    )


def _terms(value) -> tuple:
    terms = tuple(value) if isinstance(value, (list, tuple)) else value
    if not isinstance(terms, tuple) or not terms:
        raise InputError(f"a kernel sum or product needs a non-empty list of kernels; got {value!r}")
    for i, t in enumerate(terms):
        if not isinstance(t, Kernel):
            raise InputError(f"term {i} of a kernel sum or product must be a gpmodels Kernel; got {t!r}")
    return terms


def _flatten(cls, terms: tuple) -> tuple:
    out = []
    for t in terms:
        out.extend(t.terms if type(t) is cls else (t,))
    return tuple(out)


def _split(sizes: list[int], theta: np.ndarray) -> list[np.ndarray]:
    bounds = np.cumsum([0] + sizes)
    return [theta[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


@attrs.frozen(eq=False, repr=False)
class _Composite(Kernel):
    """Terms and their joint parameter vector; the subclass says how the terms combine."""

    terms: tuple = attrs.field(converter=_terms)

    def __attrs_post_init__(self):
        object.__setattr__(self, "terms", _flatten(type(self), self.terms))

    @property
    def params(self) -> np.ndarray:
        parts = [t.params for t in self.terms]
        return np.concatenate(parts) if parts else np.zeros(0)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(f"k{i}.{n}" for i, t in enumerate(self.terms) for n in t.param_names)

    @property
    def param_bounds(self) -> np.ndarray:
        return np.vstack([t.param_bounds.reshape(-1, 2) for t in self.terms])

    def with_params(self, theta):
        theta = np.asarray(theta, dtype=float).ravel()
        sizes = [t.params.size for t in self.terms]
        if theta.size != sum(sizes):
            raise InputError(
                f"{type(self).__name__} has {sum(sizes)} parameters {self.param_names}; got {theta.size} values"
            )
        return type(self)(tuple(t.with_params(p) if p.size else t for t, p in zip(self.terms, _split(sizes, theta))))

    @property
    def supports_sparse(self) -> bool:
        return all(t.supports_sparse for t in self.terms)

    @property
    def has_sq_dist_form(self) -> bool:
        return all(t.has_sq_dist_form for t in self.terms)

    @staticmethod
    @abc.abstractmethod
    def _COMBINE(a, b):
        """How two terms' values combine: ``operator.add`` (sum) or ``operator.mul`` (product)."""

    def _fold(self, values):
        """The terms' values combined by the subclass's ``_COMBINE`` (+ or elementwise *), left to right."""
        return functools.reduce(self._COMBINE, values)

    def gram(self, X1, X2):
        return self._fold(t.gram(X1, X2) for t in self.terms)

    def gram_from_sq_dists(self, D):
        if not self.has_sq_dist_form:
            return None
        return self._fold(t.gram_from_sq_dists(D) for t in self.terms)

    def diag(self, X):
        return self._fold(t.diag(X) for t in self.terms)

    def check_inputs(self, X) -> None:
        for t in self.terms:
            t.check_inputs(X)

    def key(self) -> tuple:
        return (type(self).__name__, tuple(t.key() for t in self.terms))

    def spec_section(self) -> dict | None:
        """``{type: sum | product, terms: [the terms' sections]}``; None when a term has no spec name."""
        terms = [t.spec_section() for t in self.terms]
        return None if any(s is None for s in terms) else {"type": self._SPEC_TYPE, "terms": terms}

    def __repr__(self) -> str:
        return "(" + f" {self._SYMBOL} ".join(repr(t) for t in self.terms) + ")"


@attrs.frozen(eq=False, repr=False)
class KernelSum(_Composite):
    """M = Σ_t M_t over ``terms`` (module docstring)."""

    _SYMBOL = "+"
    _SPEC_TYPE = "sum"
    _COMBINE = operator.add

    def grad_contract(self, X1, X2, G, gram=None):
        one = gram if len(self.terms) == 1 else None
        return np.concatenate([t.grad_contract(X1, X2, G, gram=one) for t in self.terms])

    def grad_contract_from_sq_dists(self, D, G, gram):
        if not self.has_sq_dist_form:
            return None
        return np.concatenate([t.grad_contract_from_sq_dists(D, G, t.gram_from_sq_dists(D)) for t in self.terms])

    def diag_grad_contract(self, X, g):
        return np.concatenate([t.diag_grad_contract(X, g) for t in self.terms])


def _others(mats: list[np.ndarray]) -> list[np.ndarray | None]:
    """Π_{s≠t} mats_s for every t by prefix and suffix products (None for a single term: the product is 1)."""
    m = len(mats)
    if m == 1:
        return [None]
    prefix = [None] * m
    acc = None
    for t in range(m):
        prefix[t] = acc
        acc = mats[t] if acc is None else acc * mats[t]
    out, acc = [None] * m, None
    for t in range(m - 1, -1, -1):
        out[t] = prefix[t] if acc is None else (acc if prefix[t] is None else prefix[t] * acc)
        acc = mats[t] if acc is None else acc * mats[t]
    return out


@attrs.frozen(eq=False, repr=False)
class KernelProduct(_Composite):
    """M = Π_t M_t over ``terms`` (module docstring)."""

    _SYMBOL = "*"
    _SPEC_TYPE = "product"
    _COMBINE = operator.mul

    @staticmethod
    def _contract(terms, grams, G, contract) -> np.ndarray:
        # term t: its own contraction with G ∘ Π_{s≠t} M_s (product rule), skipped without parameters
        parts = []
        for t, M, rest in zip(terms, grams, _others(grams)):
            if t.params.size:
                parts.append(contract(t, G if rest is None else G * rest, M))
        return np.concatenate(parts) if parts else np.zeros(0)

    def grad_contract(self, X1, X2, G, gram=None):
        grams = [t.gram(X1, X2) for t in self.terms]
        return self._contract(self.terms, grams, G, lambda t, H, M: t.grad_contract(X1, X2, H, gram=M))

    def grad_contract_from_sq_dists(self, D, G, gram):
        if not self.has_sq_dist_form:
            return None
        grams = [t.gram_from_sq_dists(D) for t in self.terms]
        return self._contract(self.terms, grams, G, lambda t, H, M: t.grad_contract_from_sq_dists(D, H, M))

    def diag_grad_contract(self, X, g):
        diags = [t.diag(X) for t in self.terms]
        return self._contract(self.terms, diags, g, lambda t, h, _: t.diag_grad_contract(X, h))


def _sum(left, right) -> KernelSum:
    """``left + right`` (one side a kernel, the other a kernel or a positive number)."""
    return KernelSum((as_kernel_term(left, "+"), as_kernel_term(right, "+")))


def _product(left, right) -> KernelProduct:
    """``left * right`` (one side a kernel, the other a kernel or a positive number)."""
    return KernelProduct((as_kernel_term(left, "*"), as_kernel_term(right, "*")))


define_composition("+", _sum)
define_composition("*", _product)


def _free_mask(value, size: int) -> np.ndarray:
    mask = np.ones(size, dtype=bool) if value is None else np.asarray(value, dtype=bool).ravel()
    if mask.shape != (size,):
        raise InputError(f"Dimension mismatch: the free-parameter mask must have shape ({size},); got {mask.shape}")
    return mask


@attrs.frozen(eq=False, repr=False)
class Constrained(Kernel):
    """``kernel`` with the parameters where ``free`` is False held fixed, and log-space ``bounds``
    ((number of free parameters, 2); None: unbounded) on the others.  Matrices are the kernel's own."""

    kernel: Kernel = attrs.field(validator=attrs.validators.instance_of(Kernel))
    bounds: np.ndarray | None = attrs.field(default=None)
    free: np.ndarray | None = attrs.field(default=None)

    def __attrs_post_init__(self):
        free = _free_mask(self.free, self.kernel.params.size)
        object.__setattr__(self, "free", free)
        n = int(free.sum())
        b = np.tile([-np.inf, np.inf], (n, 1)) if self.bounds is None else np.asarray(self.bounds, dtype=float)
        if b.shape != (n, 2):
            raise InputError(
                f"Dimension mismatch: bounds of the {n} free parameters of {self.kernel!r} must have "
                f"shape ({n}, 2); got {b.shape}"
            )
        if np.any(np.isnan(b)) or np.any(b[:, 0] >= b[:, 1]):
            raise InputError(f"bounds of {self.kernel!r} must satisfy lower < upper (log space); got {b.tolist()}")
        object.__setattr__(self, "bounds", b)

    @property
    def params(self) -> np.ndarray:
        return self.kernel.params[self.free]

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(n for n, f in zip(self.kernel.param_names, self.free) if f)

    @property
    def param_bounds(self) -> np.ndarray:
        return self.bounds

    def with_params(self, theta):
        theta = np.asarray(theta, dtype=float).ravel()
        if theta.size != int(self.free.sum()):
            raise InputError(
                f"Constrained kernel has {int(self.free.sum())} free parameters {self.param_names}; "
                f"got {theta.size} values"
            )
        full = self.kernel.params.copy()
        full[self.free] = theta
        return Constrained(self.kernel.with_params(full) if full.size else self.kernel, self.bounds, self.free)

    supports_sparse = property(attrgetter("kernel.supports_sparse"))
    is_linear = property(attrgetter("kernel.is_linear"))
    has_sq_dist_form = property(attrgetter("kernel.has_sq_dist_form"))

    @property
    def distance_form(self):
        """The kernel's device form when its parameters are all free or all held (the form's gradient is
        over all of them, or none is asked for); None when only some are held."""
        return self.kernel.distance_form if self.free.all() or not self.free.any() else None

    def check_inputs(self, X) -> None:
        self.kernel.check_inputs(X)

    def gram(self, X1, X2):
        return self.kernel.gram(X1, X2)

    def gram_from_sq_dists(self, D):
        return self.kernel.gram_from_sq_dists(D)

    def diag(self, X):
        return self.kernel.diag(X)

    def grad_contract(self, X1, X2, G, gram=None):
        return self.kernel.grad_contract(X1, X2, G, gram=gram)[self.free]

    def grad_contract_from_sq_dists(self, D, G, gram):
        out = self.kernel.grad_contract_from_sq_dists(D, G, gram)
        return None if out is None else out[self.free]

    def diag_grad_contract(self, X, g):
        return self.kernel.diag_grad_contract(X, g)[self.free]

    def key(self) -> tuple:
        return ("Constrained", self.kernel.key(), tuple(self.free.tolist()))

    def spec_section(self) -> dict | None:
        """The kernel's own section at its current values: the spec language has no bounds and no fixed
        parameters, so a kernel rebuilt from it has every parameter free and unbounded (a model folder stores
        the values, which is all that predicting needs: :mod:`gpmodels.estimators.saving`)."""
        return self.kernel.spec_section()

    def __repr__(self) -> str:
        fixed = [n for n, f in zip(self.kernel.param_names, self.free) if not f]
        low, high = (natural_values(self.param_names, self.bounds[:, j]) for j in (0, 1))
        desc = ", ".join(f"{n} in [{low[n]:.3g}, {high[n]:.3g}]" for n in low)
        return f"{self.kernel!r}[{desc}{'; fixed ' + ', '.join(fixed) if fixed else ''}]"
