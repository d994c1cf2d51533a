"""scikit-learn kernel objects as gpmodels kernels, with their bounds.

:func:`from_sklearn` maps the kernels with a native counterpart exactly (the same matrices, so fits
agree to rounding) and wraps any other scikit-learn kernel generically (:class:`SklearnKernel`):

================================================  ==================================================
scikit-learn                                      gpmodels
================================================  ==================================================
``ConstantKernel(c)``                             ``Constant(c)``
``RBF(ℓ)`` (ℓ a number / one per feature)         ``RBF(w=1/ℓ²)`` / ``ARD(w=1/ℓ²)``
``Matern(ℓ, nu)``, ν in 1/2, 3/2, 5/2             ``Matern(w=1/ℓ², nu)`` / ``MaternARD``
``Matern(ℓ, nu=inf)``                             ``RBF`` / ``ARD``
``RationalQuadratic(ℓ, α)``                       ``RationalQuadratic(w=1/ℓ², alpha=α)``
``WhiteKernel(σ²)``                               ``White(σ²)`` (see :mod:`gpmodels.kernels.constant`)
``DotProduct(σ0)``                                ``Constant(σ0²) + Linear()``
``k1 + k2``, ``k1 * k2`` (``Sum``, ``Product``)   ``KernelSum``, ``KernelProduct`` of the mapped terms
anything else (``ExpSineSquared``, ...)           :class:`SklearnKernel`
================================================  ==================================================

scikit-learn's hyperparameters are positive and its ``theta`` holds their logarithms; a native
parameter is a fixed multiple of one (log w = -2 log ℓ, log c = 2 log σ0, else the same), so each
hyperparameter's ``bounds`` become log-space bounds of the native parameter, and a ``"fixed"`` one is
no parameter at all (:class:`~gpmodels.kernels.composite.Constrained`).  Learners keep the
parameters inside these bounds (``Kernel.param_bounds``).

:class:`SklearnKernel` calls the object: ``k(X)`` for the Gram matrix of one set of points,
``k(X1, X2)`` for a cross block, ``k.diag``; its parameters are ``theta`` with ``bounds``, and the
gradient contraction uses ``k(Z, eval_gradient=True)`` (analytic, in ``theta``), on Z = [X1; X2] when
the two sets differ (scikit-learn gives gradients only for one set of points).  A kernel whose value
depends on whether it is called with one set or two (``WhiteKernel``) is exact only when mapped.
"""

from __future__ import annotations

import sys

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.errors import InputError, shown
from gpmodels.kernels.base import Kernel, same_points
from gpmodels.kernels.composite import Constrained, KernelProduct, KernelSum
from gpmodels.kernels.constant import Constant, White
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.matern import MATERN_NUS, Matern, MaternARD
from gpmodels.kernels.rational_quadratic import RationalQuadratic
from gpmodels.kernels.rbf import ARD, RBF

__all__ = ["from_sklearn", "is_sklearn_kernel", "as_kernel", "SklearnKernel", "KERNEL_OBJECTS"]

#: what a prior's ``kernel`` may be, for messages
KERNEL_OBJECTS = "a gpmodels kernel (gpmodels.kernels.Kernel) or a scikit-learn kernel object"


def _sk():
    import sklearn.gaussian_process.kernels as sk

    return sk


def is_sklearn_kernel(obj) -> bool:
    """Whether ``obj`` is a scikit-learn kernel (``sklearn.gaussian_process.kernels.Kernel``).  Such an
    object exists only once its module is imported, so asking never imports scikit-learn (about a
    second, which a spec's ``kernel: {type: rbf}`` would otherwise pay inside its timed build)."""
    sk = sys.modules.get("sklearn.gaussian_process.kernels")
    return sk is not None and isinstance(obj, sk.Kernel)


def as_kernel(value):
    """attrs converter of a prior's kernel: a scikit-learn kernel object becomes its gpmodels kernel
    (:func:`from_sklearn`); anything else is passed on for the field's validator to judge."""
    return from_sklearn(value) if not isinstance(value, Kernel) and is_sklearn_kernel(value) else value


def from_sklearn(kernel, *, native: bool = True) -> Kernel:
    """The gpmodels kernel of the scikit-learn kernel object ``kernel`` (module docstring): native
    kernels where they exist (``native=False``: the whole object wrapped by :class:`SklearnKernel`).

    Raises InputError for an object that is not a scikit-learn kernel, and for a ``CompoundKernel``
    (several kernels at once; give one per model)."""
    if not is_sklearn_kernel(kernel):
        raise InputError(
            f"expected a scikit-learn kernel (an instance of sklearn.gaussian_process.kernels.Kernel, "
            f"e.g. ConstantKernel(2.0) * RBF(1.5)); got {type(kernel).__name__} {kernel!r}"
        )
    sk = _sk()
    if isinstance(kernel, sk.CompoundKernel):
        raise InputError(
            "a scikit-learn CompoundKernel stacks several kernels; pass one kernel (the classes' "
            "kernels are set by the prior's sharing)"
        )
    check_hyperparameters(kernel)
    if not native:
        return SklearnKernel(kernel)
    mapped = _map(kernel, sk)
    return SklearnKernel(kernel) if mapped is None else mapped


#: hyperparameters whose native value is another number: (what it becomes, the map)
MAPPED_VALUES = {"length_scale": ("1/length_scale^2", lambda v: 1.0 / v**2), "sigma_0": ("sigma_0^2", lambda v: v**2)}


def _kernel_of(kernel, name: str):
    """The (sub-)kernel object that owns the hyperparameter ``name`` (``k1__k2__length_scale``)."""
    for part in name.split("__")[:-1]:
        kernel = getattr(kernel, part)
    return kernel


def check_hyperparameters(kernel) -> None:
    """Refuse a scikit-learn kernel whose hyperparameters are not positive finite numbers, whose bounds
    are not 0 < low <= high, or whose value lies outside its bounds; the message names the parameter as
    the user wrote it (``RBF's length_scale``, ``length_scale_bounds``), never the native one it maps to."""
    params = kernel.get_params(deep=True)
    for h in kernel.hyperparameters:
        owner, key = type(_kernel_of(kernel, h.name)).__name__, h.name.split("__")[-1]
        where = f"the scikit-learn {owner} kernel's {key}"
        value = np.asarray(params[h.name], dtype=float)
        if value.size == 0 or not np.all(np.isfinite(value)) or not np.all(value > 0):
            raise InputError(
                f"{where} must be a positive finite number (or one per feature); got {shown(params[h.name])}"
            )
        if key in MAPPED_VALUES:
            text, to_native = MAPPED_VALUES[key]
            with np.errstate(all="ignore"):
                native = to_native(value)
            if not (np.all(np.isfinite(native)) and np.all(native > 0)):
                raise InputError(
                    f"{where} = {shown(params[h.name])} is out of range: {text} is 0 or infinite in floating point"
                )
        if h.fixed:
            continue
        bounds = np.asarray(h.bounds, dtype=float).reshape(-1, 2)
        text, given = f"{key}_bounds", shown(tuple(bounds[0].tolist()) if bounds.shape[0] == 1 else bounds.tolist())
        if not (np.all(np.isfinite(bounds)) and np.all(bounds[:, 0] > 0) and np.all(bounds[:, 0] <= bounds[:, 1])):
            raise InputError(
                f"the scikit-learn {owner} kernel's {text} must be (low, high) with 0 < low <= high, "
                f"or 'fixed'; got {given}"
            )
        low, high = np.broadcast_to(bounds, (value.size, 2)).T
        if np.any(value.ravel() < low) or np.any(value.ravel() > high):
            raise InputError(
                f"{where} = {shown(params[h.name])} lies outside its {text} {given}: widen "
                f"the bounds, or give {text}='fixed' to keep it as it is"
            )


def _map(k, sk) -> Kernel | None:
    """The native kernel of ``k``, or None when it has none (then the caller wraps it)."""
    if isinstance(k, (sk.Sum, sk.Product)):
        a, b = _map(k.k1, sk), _map(k.k2, sk)
        a = SklearnKernel(k.k1) if a is None else a
        b = SklearnKernel(k.k2) if b is None else b
        return KernelSum((a, b)) if isinstance(k, sk.Sum) else KernelProduct((a, b))
    if type(k) is sk.ConstantKernel:
        return _constrained(Constant(k.constant_value), k, [("constant_value", 1.0)])
    if type(k) is sk.WhiteKernel:
        return _constrained(White(k.noise_level), k, [("noise_level", 1.0)])
    if type(k) is sk.DotProduct:
        return KernelSum((_constrained(Constant(k.sigma_0**2), k, [("sigma_0", 2.0)]), Linear()))
    if type(k) is sk.RationalQuadratic:
        return _constrained(
            RationalQuadratic(w=_w(k.length_scale), alpha=k.alpha), k, [("length_scale", -2.0), ("alpha", 1.0)]
        )
    if type(k) is sk.RBF or (type(k) is sk.Matern and (k.nu in MATERN_NUS or np.isinf(k.nu))):
        w = _w(k.length_scale)
        if type(k) is sk.RBF or np.isinf(k.nu):
            native = RBF(w) if np.ndim(w) == 0 else ARD(w)
        else:
            native = Matern(w=w, nu=k.nu) if np.ndim(w) == 0 else MaternARD(w=w, nu=k.nu)
        return _constrained(native, k, [("length_scale", -2.0)])
    return None


def _w(length_scale):
    """w = 1/ℓ²: a number for a scalar (or one-entry) ℓ, else one per feature."""
    ell = np.asarray(length_scale, dtype=float)
    if ell.size == 1:
        return float(1.0 / ell.reshape(-1)[0] ** 2)
    return 1.0 / ell**2


def _constrained(native: Kernel, k, factors: list[tuple[str, float]]) -> Constrained:
    """``native`` with the bounds of k's hyperparameters: native parameters (in order) are
    factor x log of the named hyperparameter's entries; "fixed" ones are held."""
    hypers = {h.name: h for h in k.hyperparameters}
    free, lows, highs = [], [], []
    for name, factor in factors:
        h = hypers[name]
        n = int(np.size(getattr(k, name))) if np.ndim(getattr(k, name)) else 1
        if h.fixed:
            free += [False] * n
            continue
        b = np.log(np.broadcast_to(np.asarray(h.bounds, dtype=float).reshape(-1, 2), (n, 2))) * factor
        free += [True] * n
        lows += list(b.min(axis=1))
        highs += list(b.max(axis=1))
    bounds = np.column_stack([lows, highs]) if lows else np.zeros((0, 2))
    return Constrained(native, bounds, np.array(free, dtype=bool))


def _identity(k) -> tuple:
    """The kernel's structure and every parameter value, exactly (a key for equal Gram matrices)."""
    items = []
    for name, v in sorted(k.get_params(deep=True).items()):
        if is_sklearn_kernel(v):
            items.append((name, type(v).__name__))
        elif isinstance(v, np.ndarray):
            items.append((name, v.shape, v.tobytes()))
        else:
            items.append((name, repr(v)))
    return (type(k).__name__, tuple(items))


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


@attrs.frozen(eq=False, repr=False)
class SklearnKernel(Kernel):
    """Any scikit-learn kernel object, called as it is (module docstring); parameters ``theta``
    (logarithms of its free hyperparameters) with its ``bounds``."""

    kernel: object = attrs.field()
    supports_sparse = False

    def __attrs_post_init__(self):
        if not is_sklearn_kernel(self.kernel):
            raise InputError(f"SklearnKernel wraps a scikit-learn kernel object; got {type(self.kernel).__name__}")

    @property
    def params(self) -> np.ndarray:
        return np.array(self.kernel.theta, dtype=float).ravel()

    @property
    def param_names(self) -> tuple[str, ...]:
        names = []
        for h in self.kernel.hyperparameters:
            if not h.fixed:
                names += [f"log_{h.name}"] if h.n_elements == 1 else [f"log_{h.name}{j}" for j in range(h.n_elements)]
        return tuple(names)

    @property
    def param_bounds(self) -> np.ndarray:
        return np.asarray(self.kernel.bounds, dtype=float).reshape(-1, 2)

    def with_params(self, theta) -> SklearnKernel:
        theta = np.asarray(theta, dtype=float).ravel()
        if theta.size != self.params.size:
            raise InputError(f"{self!r} has {self.params.size} parameters {self.param_names}; got {theta.size} values")
        return SklearnKernel(self.kernel.clone_with_theta(theta))

    def gram(self, X1, X2):
        if same_points(X1, X2):
            return np.asarray(self.kernel(_dense(X1)), dtype=float)
        return np.asarray(self.kernel(_dense(X1), _dense(X2)), dtype=float)

    def diag(self, X):
        return np.asarray(self.kernel.diag(_dense(X)), dtype=float)

    def grad_contract(self, X1, X2, G, gram=None):
        if self.params.size == 0:
            return np.zeros(0)
        if same_points(X1, X2):
            _, dK = self.kernel(_dense(X1), eval_gradient=True)
            return np.einsum("abp,ab->p", dK, G)
        n1 = X1.shape[0]
        _, dK = self.kernel(np.vstack([_dense(X1), _dense(X2)]), eval_gradient=True)
        return np.einsum("abp,ab->p", dK[:n1, n1:], G)

    def key(self) -> tuple:
        return ("SklearnKernel", _identity(self.kernel))

    def __repr__(self) -> str:
        return f"SklearnKernel({self.kernel!r})"
