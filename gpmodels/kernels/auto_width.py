"""Setting the ``'auto'`` widths of a kernel from the training inputs: w = 1 / Σ_j Var[x_j] (Seeger 2008,
Sec. 6.2), in the kernel itself, the terms of a sum or product and a constrained kernel
(:mod:`gpmodels.kernels.width`)."""

from __future__ import annotations

import attrs

from gpmodels.kernels.base import Kernel
from gpmodels.kernels.composite import Constrained, KernelProduct, KernelSum
from gpmodels.kernels.width import Width

__all__ = ["resolve_widths"]


def resolve_widths(kernel: Kernel, X) -> Kernel:
    """``kernel`` with every ``'auto'`` width (its own, its terms', a constrained kernel's) set from the
    training inputs X: w = 1 / Σ_j Var[x_j] (:mod:`gpmodels.kernels.width`)."""
    if isinstance(kernel, Width):
        return kernel.at_width_of(X)
    if isinstance(kernel, (KernelSum, KernelProduct)):
        terms = tuple(resolve_widths(t, X) for t in kernel.terms)
        return kernel if all(a is b for a, b in zip(terms, kernel.terms)) else type(kernel)(terms)
    if isinstance(kernel, Constrained):
        inner = resolve_widths(kernel.kernel, X)
        return kernel if inner is kernel.kernel else attrs.evolve(kernel, kernel=inner)
    return kernel
