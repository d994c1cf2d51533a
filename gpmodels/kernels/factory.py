"""Kernels by name: the one factory behind spec files (``model.kernel``) and the estimators (``kernel='rbf'``).

``make_kernel(name, X=..., **params)`` checks the name and the parameters once, with one error
shape, and builds the covariance shape M(x, x'):

* ``rbf``: exp(-(w/2) ||x - x'||²); ``w`` a positive number or ``'auto'`` = 1 / Σ_j Var[x_j] of ``X``
  (Seeger 2008, Sec. 6.2);
* ``ard``: exp(-(1/2) Σ_j w_j (x_j - x'_j)²); ``w`` one per feature, a number (broadcast over the
  features of ``X``) or ``'auto'`` (the rbf value for every feature);
* ``linear``: xᵀx';
* ``polynomial``: (scale xᵀx' + offset)^degree (defaults 2, 1, 1);
* ``precomputed``: ``gram``, the Gram matrix over all points; inputs are point indices.
"""

from __future__ import annotations

import difflib

import numpy as np

from gpmodels.data.scaling import auto_rbf_w
from gpmodels.errors import InputError
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.linear import Linear, Polynomial
from gpmodels.kernels.precomputed import Precomputed
from gpmodels.kernels.rbf import ARD, RBF

__all__ = ["KERNEL_NAMES", "KERNEL_PARAMS", "make_kernel"]

#: the kernel names, and the parameters each takes
KERNEL_PARAMS = {
    "rbf": ("w",),
    "ard": ("w",),
    "linear": (),
    "polynomial": ("degree", "scale", "offset"),
    "precomputed": ("gram",),
}
KERNEL_NAMES = tuple(KERNEL_PARAMS)


def _auto_w(X) -> float:
    if X is None:
        raise InputError("w='auto' needs the training inputs X (w = 1 / Σ_j Var[x_j])")
    return auto_rbf_w(X)


def make_kernel(name: str, *, X=None, **params) -> Kernel:
    """The kernel ``name`` with ``params`` (module docstring); ``X``: the training inputs, needed by
    ``w='auto'`` and by ``ard`` with one number.  Parameters given as None take their defaults.

    Raises InputError for an unknown name ("unknown kernel 'rbff'; allowed: 'rbf', ..."), a
    parameter the kernel does not take, or a value its class refuses.
    """
    if not isinstance(name, str) or name not in KERNEL_PARAMS:
        near = difflib.get_close_matches(str(name), KERNEL_NAMES, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise InputError(f"unknown kernel {name!r}; allowed: {', '.join(map(repr, KERNEL_NAMES))}{hint}")
    takes = KERNEL_PARAMS[name]
    for key in params:
        if key not in takes:
            raise InputError(f"kernel {name!r} takes no parameter {key!r}; its parameters: "
                             f"{', '.join(map(repr, takes)) or 'none'}")
    p = {k: v for k, v in params.items() if v is not None}
    if name == "linear":
        return Linear()
    if name == "polynomial":
        return Polynomial(**p)
    if name == "precomputed":
        if "gram" not in p:
            raise InputError("kernel 'precomputed' needs `gram` (the Gram matrix over all points)")
        return Precomputed(p["gram"])
    if "w" not in p:
        raise InputError(f"kernel {name!r} needs `w` (a positive number, {'one per feature, ' if name == 'ard' else ''}"
                         f"or 'auto')")
    w = p["w"]
    if isinstance(w, str):
        if w != "auto":
            raise InputError(f"w of kernel {name!r} must be 'auto' or a positive number; got {w!r}")
        w = _auto_w(X)
    if name == "rbf":
        if np.ndim(w) != 0:
            raise InputError("rbf takes one w; use kernel 'ard' for one per feature")
        return RBF(w)
    w = np.asarray(w, dtype=np.float64)
    if w.ndim == 0 or w.size == 1:
        if X is None:
            raise InputError("ard with one w needs the training inputs X to broadcast it over the features")
        w = np.full(X.shape[1], float(w.reshape(-1)[0]))
    if w.ndim != 1 or (X is not None and w.size != X.shape[1]):
        raise InputError(f"Dimension mismatch: w of the 'ard' kernel must be a number or have shape "
                         f"({X.shape[1] if X is not None else 'd'},) (one per feature); got {w.shape}")
    return ARD(w)
