"""Kernels by name: the one factory behind spec files (``model.kernel``) and the estimators (``kernel='rbf'``).

``make_kernel(name, X=..., **params)`` checks the name and the parameters once, with one error
shape, and builds the covariance shape M(x, x'):

* ``rbf``: exp(-(w/2) ||x - x'||²); ``w`` a positive number or ``'auto'`` = 1 / Σ_j Var[x_j] of ``X``
  (Seeger 2008, Sec. 6.2), or instead of ``w`` the length-scale ``length_scale`` ℓ = 1/√w (one or the
  other; the same for every kernel of ``w``, :mod:`gpmodels.kernels.width`);
* ``ard``: exp(-(1/2) Σ_j w_j (x_j - x'_j)²); ``w`` one per feature, a number (broadcast over the
  features of ``X``) or ``'auto'`` (the rbf value for every feature);
* ``matern`` / ``matern_ard``: Matérn of smoothness ``nu`` (0.5, 1.5 or 2.5; default 1.5) with ``w`` as for
  rbf / ard (w = 1/ℓ²);
* ``rational_quadratic`` / ``rational_quadratic_ard``: (1 + r²/(2 alpha))^(-alpha), ``w`` as for rbf / ard,
  ``alpha`` > 0 (default 1);
* ``constant``: ``value`` (default 1); ``white``: ``noise`` on equal points (default 1);
* ``linear``: xᵀx';
* ``polynomial``: (scale xᵀx' + offset)^degree (defaults 2, 1, 1);
* ``precomputed``: ``gram``, the Gram matrix over all points; inputs are point indices;
* ``sum`` / ``product``: ``terms``, a list of kernels (each a Kernel, a scikit-learn kernel or a mapping
  ``{'type': name, **params}``), added / multiplied (:mod:`gpmodels.kernels.composite`).

``name`` may also be a :class:`Kernel` (returned as it is) or a scikit-learn kernel object (mapped by
:func:`gpmodels.kernels.sklearn_adapter.from_sklearn`).
"""

from __future__ import annotations

import difflib

import numpy as np

from gpmodels.data.scaling import auto_rbf_w
from gpmodels.errors import InputError
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.composite import KernelProduct, KernelSum
from gpmodels.kernels.constant import Constant, White
from gpmodels.kernels.linear import Linear, Polynomial
from gpmodels.kernels.matern import Matern, MaternARD
from gpmodels.kernels.precomputed import Precomputed
from gpmodels.kernels.rational_quadratic import RationalQuadratic, RationalQuadraticARD
from gpmodels.kernels.rbf import ARD, RBF
from gpmodels.kernels.sklearn_adapter import from_sklearn, is_sklearn_kernel

__all__ = ["KERNEL_NAMES", "KERNEL_PARAMS", "STATIONARY_KERNELS", "make_kernel"]

#: the kernel names, and the parameters each takes
KERNEL_PARAMS = {
    "rbf": ("w", "length_scale"),
    "ard": ("w", "length_scale"),
    "matern": ("w", "length_scale", "nu"),
    "matern_ard": ("w", "length_scale", "nu"),
    "rational_quadratic": ("w", "length_scale", "alpha"),
    "rational_quadratic_ard": ("w", "length_scale", "alpha"),
    "constant": ("value",),
    "white": ("noise",),
    "linear": (),
    "polynomial": ("degree", "scale", "offset"),
    "precomputed": ("gram",),
    "sum": ("terms",),
    "product": ("terms",),
}
KERNEL_NAMES = tuple(KERNEL_PARAMS)
#: kernels of the inverse squared length-scale(s) ``w``: isotropic name -> (its ARD name, class, ARD class)
STATIONARY_KERNELS = {
    "rbf": ("ard", RBF, ARD),
    "matern": ("matern_ard", Matern, MaternARD),
    "rational_quadratic": ("rational_quadratic_ard", RationalQuadratic, RationalQuadraticARD),
}
_ARD_OF = {ard: (iso, ard_cls) for iso, (ard, _, ard_cls) in STATIONARY_KERNELS.items()}
#: what ``make_kernel`` accepts, for messages
ACCEPTED = (
    "a kernel name (" + ", ".join(map(repr, KERNEL_NAMES)) + "), a gpmodels.kernels.Kernel, or a "
    "scikit-learn kernel object (sklearn.gaussian_process.kernels.Kernel)"
)


def _auto_w(X) -> float:
    if X is None:
        raise InputError("w='auto' needs the training inputs X (w = 1 / Σ_j Var[x_j])")
    return auto_rbf_w(X)


def make_kernel(name, *, X=None, **params) -> Kernel:
    """The kernel ``name`` with ``params`` (module docstring); ``X``: the training inputs, needed by
    ``w='auto'`` and by the ARD kernels with one number.  Parameters given as None take their defaults.

    Raises InputError for an unknown name or object ("unknown kernel 'rbff'; allowed: 'rbf', ..."), a
    parameter the kernel does not take, or a value its class refuses.
    """
    if isinstance(name, Kernel) or is_sklearn_kernel(name):
        if params:
            raise InputError(f"a kernel object takes no parameters here; got {', '.join(map(repr, params))}")
        return name if isinstance(name, Kernel) else from_sklearn(name)
    if not isinstance(name, str) or name not in KERNEL_PARAMS:
        if not isinstance(name, str):
            raise InputError(f"unknown kernel {type(name).__name__} {name!r}; a kernel is {ACCEPTED}")
        near = difflib.get_close_matches(str(name), KERNEL_NAMES, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise InputError(f"unknown kernel {name!r}; allowed: {', '.join(map(repr, KERNEL_NAMES))}{hint}")
    takes = KERNEL_PARAMS[name]
    for key in params:
        if key not in takes:
            raise InputError(
                f"kernel {name!r} takes no parameter {key!r}; its parameters: {', '.join(map(repr, takes)) or 'none'}"
            )
    p = {k: v for k, v in params.items() if v is not None}
    if name == "linear":
        return Linear()
    if name == "polynomial":
        return Polynomial(**p)
    if name == "constant":
        return Constant(**p)
    if name == "white":
        return White(**p)
    if name == "precomputed":
        if "gram" not in p:
            raise InputError("kernel 'precomputed' needs `gram` (the Gram matrix over all points)")
        return Precomputed(p["gram"])
    if name in ("sum", "product"):
        return _composite(name, p.get("terms"), X)
    return _stationary(name, p, X)


def _composite(name: str, terms, X) -> Kernel:
    """A sum or product of ``terms`` (kernels, scikit-learn kernels or {'type': name, **params} mappings)."""
    if not isinstance(terms, (list, tuple)) or not terms:
        raise InputError(f"kernel {name!r} needs `terms`, a non-empty list of kernels; got {terms!r}")
    built = []
    for i, term in enumerate(terms):
        try:
            if isinstance(term, dict):
                if "type" not in term:
                    raise InputError(f"a mapping needs `type` (one of {', '.join(map(repr, KERNEL_NAMES))})")
                built.append(make_kernel(term["type"], X=X, **{k: v for k, v in term.items() if k != "type"}))
            else:
                built.append(make_kernel(term, X=X))
        except InputError as exc:
            raise InputError(f"term {i} of kernel {name!r}: {exc}") from None
    return KernelSum(tuple(built)) if name == "sum" else KernelProduct(tuple(built))


def _w_of_length_scale(name: str, length_scale):
    """w = 1/ℓ² of a positive ``length_scale`` (a number or one per feature)."""
    try:
        scale = np.asarray(length_scale, dtype=np.float64)
    except (TypeError, ValueError):
        scale = None
    if scale is None or scale.size == 0 or not np.all(np.isfinite(scale) & (scale > 0)):
        raise InputError(
            f"length_scale of kernel {name!r} must be a positive number (or one per feature); got {length_scale!r}"
        )
    w = 1.0 / np.square(scale)
    return float(w) if w.ndim == 0 else w


def _stationary(name: str, p: dict, X) -> Kernel:
    """An isotropic or ARD kernel of inverse squared length-scale(s) ``w`` (rbf, matern, rational_quadratic),
    given as ``w`` or as ``length_scale`` ℓ (w = 1/ℓ²)."""
    if "length_scale" in p:
        if "w" in p:
            raise InputError(f"kernel {name!r} takes `w` or `length_scale` (w = 1/length_scale²), not both")
        p["w"] = _w_of_length_scale(name, p.pop("length_scale"))
    if "w" not in p:
        ard = name in _ARD_OF
        raise InputError(
            f"kernel {name!r} needs `w` (a positive number, {'one per feature, ' if ard else ''}or 'auto') or "
            "`length_scale` (w = 1/length_scale²)"
        )
    w = p.pop("w")
    if isinstance(w, str):
        if w != "auto":
            raise InputError(f"w of kernel {name!r} must be 'auto' or a positive number; got {w!r}")
        w = _auto_w(X)
    if name in STATIONARY_KERNELS:
        if np.ndim(w) != 0:
            raise InputError(f"{name} takes one w; use kernel {STATIONARY_KERNELS[name][0]!r} for one per feature")
        return STATIONARY_KERNELS[name][1](w, **p)
    w = np.asarray(w, dtype=np.float64)
    if w.ndim == 0 or w.size == 1:
        if X is None:
            raise InputError(f"{name} with one w needs the training inputs X to broadcast it over the features")
        w = np.full(X.shape[1], float(w.reshape(-1)[0]))
    if w.ndim != 1 or (X is not None and w.size != X.shape[1]):
        raise InputError(
            f"Dimension mismatch: w of the {name!r} kernel must be a number or have shape "
            f"({X.shape[1] if X is not None else 'd'},) (one per feature); got {w.shape}"
        )
    return _ARD_OF[name][1](w, **p)
