"""The kernel of a prior: its own, or none (``kernel=None``), in which case the estimator's ``kernel=``
fills it, or the default: the RBF of width ``'auto'`` (w = 1 / Σ_j Var[x_j] of the training inputs,
Seeger 2008, Sec. 6.2).  A prior builds its operator with :func:`prior_kernel`, which also sets the
``'auto'`` widths of the kernel it is given (:func:`~gpmodels.kernels.auto_width.resolve_widths`).

:class:`KernelSlot` gives the priors scikit-learn's nested parameters
(:class:`~gpmodels.nested_params.NestedParams`): ``prior__kernel__length_scale`` on a prior without a
kernel of its own starts from the default RBF.
"""

from __future__ import annotations

import attrs

from gpmodels.kernels.auto_width import resolve_widths
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.rbf import RBF
from gpmodels.kernels.sklearn_adapter import KERNEL_OBJECTS, as_kernel
from gpmodels.nested_params import NestedParams
from gpmodels.validation import instance_of, optional

__all__ = ["KernelSlot", "kernel_field", "prior_kernel", "default_kernel"]


def default_kernel() -> Kernel:
    """The kernel of a prior that has none: RBF with w = ``'auto'``."""
    return RBF()


def kernel_field():
    """A prior's ``kernel`` field: a gpmodels or scikit-learn kernel (converted to gpmodels), or None."""
    return attrs.field(default=None, converter=as_kernel, validator=optional(instance_of(Kernel, what=KERNEL_OBJECTS)))


def prior_kernel(kernel: Kernel | None, X) -> Kernel:
    """The kernel a prior builds its operator with over the training inputs X (module docstring)."""
    return resolve_widths(default_kernel() if kernel is None else kernel, X)


class KernelSlot(NestedParams):
    """Mixin of a prior with a ``kernel`` field (:func:`kernel_field`): nested parameters, and the prior
    with its kernel filled in (module docstring)."""

    __slots__ = ()
    nested_defaults = {"kernel": default_kernel}

    def with_kernel_for(self, X):
        """This prior with the kernel it builds with over X (the default for None, ``'auto'`` widths set)."""
        kernel = prior_kernel(self.kernel, X)
        return self if kernel is self.kernel else attrs.evolve(self, kernel=kernel)
