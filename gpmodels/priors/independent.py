"""Independent GP prior per class with shared kernels (Seeger 2008, Sec. 2, 6.2; App. D.1).

A prior is a factory: given training inputs X and the number of classes C it builds the operator
K̃ = K + σ² (I ⊗ 1 1^T) with K = diag(v_c M^(l_c)) (:class:`BlockDiagonal` inside
:class:`Intercept`).  Sharing of kernels and variances is a mode (``tied``, ``semi``,
``separate``) or explicit groups.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from gpmodels.errors import InputError, SpecError
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.representation_base import RepresentationBuilder
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.operators.base import Operator
from gpmodels.operators.blockdiag import SHARING_MODES, BlockDiagonal, variance_bounds_field
from gpmodels.priors.intercept import InterceptPolicy
from gpmodels.priors.kernel_slot import KernelSlot, kernel_field, prior_kernel
from gpmodels.priors.placement import DevicePlacement
from gpmodels.validation import (
    boolean,
    instance_of,
    nonnegative_int,
    nonnegative_number,
    one_of,
    optional,
    positive_or_list,
    sequence_of,
)

__all__ = ["IndependentGP", "build_independent"]

#: class groups: a list of lists of class indices.
_GROUPS = sequence_of(sequence_of(nonnegative_int()))


@attrs.frozen
class IndependentGP(KernelSlot, InterceptPolicy, DevicePlacement):
    """Independent GPs u_c = f_c + b_c with K^(c) = v_c M^(l_c), intercept variance σ².

    ``sharing``: ``tied`` | ``semi`` | ``separate``, or None with ``kernel_groups`` and
    ``variance_groups`` (lists of class lists).  ``variance`` is a number or one value per variance
    group.  ``sigma2 = 0`` drops the intercept.  ``kernel``: None takes the estimator's ``kernel=``, else
    the RBF of width ``'auto'`` (:mod:`gpmodels.priors.kernel_slot`).
    """

    kernel: Kernel | None = kernel_field()  # None: the estimator's kernel= or RBF(w='auto')
    sharing: str | None = attrs.field(default="separate", validator=optional(one_of(SHARING_MODES)))
    variance: float | Sequence[float] = attrs.field(default=1.0, validator=positive_or_list())  # or one per group
    sigma2: float = attrs.field(default=0.0, validator=nonnegative_number())
    kernel_groups: Sequence[Sequence[int]] | None = attrs.field(default=None, validator=optional(_GROUPS))
    variance_groups: Sequence[Sequence[int]] | None = attrs.field(default=None, validator=optional(_GROUPS))
    representation: RepresentationBuilder = attrs.field(
        factory=RepresentationConfig, validator=instance_of(RepresentationBuilder, what="a RepresentationConfig")
    )
    learn_sigma2: bool = attrs.field(default=False, validator=boolean())
    variance_bounds: tuple[float, float] = variance_bounds_field()

    @property
    def class_names(self) -> None:
        """The class order this prior imposes: none (any labels, in any order)."""
        return None

    def operator(self, X, n_classes: int) -> Operator:
        """The operator K̃ over the training inputs X for ``n_classes`` classes."""
        kernel = prior_kernel(self.kernel, X)
        if self.sharing is not None:
            if self.kernel_groups is not None or self.variance_groups is not None:
                raise InputError("give either a sharing mode or kernel_groups/variance_groups, not both")
            inner = BlockDiagonal.from_sharing(
                X,
                kernel,
                n_classes,
                self.sharing,
                self.variance,
                self.representation,
                variance_bounds=self.variance_bounds,
            )
        else:
            if self.kernel_groups is None or self.variance_groups is None:
                raise InputError(
                    f"without a sharing mode ({SHARING_MODES}) both kernel_groups and variance_groups are needed"
                )
            n_var = len(self.variance_groups)
            v = (
                np.full(n_var, float(self.variance))
                if np.ndim(self.variance) == 0
                else np.asarray(self.variance, dtype=float)
            )
            inner = BlockDiagonal(
                X,
                [kernel] * len(self.kernel_groups),
                list(map(list, self.kernel_groups)),
                v,
                list(map(list, self.variance_groups)),
                self.representation,
                variance_bounds=self.variance_bounds,
            )
            if inner.n_classes != n_classes:
                raise InputError(f"the groups cover {inner.n_classes} classes but the data have {n_classes}")
        if self.sigma2 < 0:
            raise InputError(f"sigma2 (intercept variance) must be >= 0; got {self.sigma2}")
        return self.with_intercept(inner)


def build_independent(ctx) -> IndependentGP:
    """Spec builder of ``model.prior: independent`` from a :class:`~gpmodels.priors.registry.PriorContext`.

    ``model.sharing`` ``level`` / ``subtree`` groups the classes by the class tree (F2 of Seeger
    2008, Sec. 6.1); the kernels follow the variance groups or are tied (``kernel_sharing``).
    """
    m = ctx.model
    if m.sharing in ("level", "subtree"):
        tree = ctx.tree
        if tree is None:
            raise SpecError("needs a class hierarchy (`data.hierarchy`)", "model.sharing")
        g = tree.class_groups(m.sharing)
        vgroups = [np.flatnonzero(g == j).tolist() for j in range(int(g.max()) + 1)]
        kgroups = vgroups if m.kernel_sharing == "follow" else [list(range(tree.n_classes))]
        return IndependentGP(
            ctx.kernel,
            None,
            ctx.variance(),
            m.sigma2,
            kernel_groups=kgroups,
            variance_groups=vgroups,
            representation=ctx.representation,
            variance_bounds=m.variance_bounds,
        )
    return IndependentGP(
        ctx.kernel,
        m.sharing,
        ctx.variance(),
        m.sigma2,
        representation=ctx.representation,
        variance_bounds=m.variance_bounds,
    )
