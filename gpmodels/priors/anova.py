"""The ANOVA class-tree prior (Seeger 2008, Sec. 3, 5.3, 6.1) as a factory (X, C) -> operator.

Builds K̃ = (Φ_L ⊗ I) K̆ (Φ_L^T ⊗ I) + σ² (I ⊗ 1 1^T): an :class:`~gpmodels.operators.ANOVA`
around a :class:`~gpmodels.operators.BlockDiagonal` over the P non-root nodes, inside an
:class:`~gpmodels.operators.Intercept` when σ² > 0 (the intercepts b_c belong to the classes,
u_i = Φ_L ŭ_i + b).  Node p has K̆^(p) = v_{g(p)} M^{(l(p))}: variances and kernel shapes are
shared across node groups given by a tree sharing mode (Sec. 6.1):

==========  ==============================================  ================
mode        groups                                           Seeger's set-up
==========  ==============================================  ================
tied        one group for all nodes                          (H with one v)
level       one group per depth of the tree                  H1
subtree     one group per subtree rooted at a root child     H2
node        one group per node
==========  ==============================================  ================

``sharing`` groups the variances, ``kernel_sharing`` the kernel shapes (default: the same groups
as the variances).  Groups whose kernels are equal share one stored matrix and one GEMM
(:class:`BlockDiagonal`), so a per-group kernel costs what a tied one costs until its
parameters move apart.  Any kernel works as the base, the linear kernel on sparse text included.
The flat counterparts F1 / F2 are :class:`~gpmodels.priors.IndependentGP` with
``variance_groups`` from :meth:`ClassTree.class_groups` (``tied`` / ``subtree``).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from gpmodels.errors import HierarchyError, InputError
from gpmodels.hierarchy import TREE_SHARING, ClassTree
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.representation_base import RepresentationBuilder
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.operators.anova import ANOVA
from gpmodels.operators.base import Operator
from gpmodels.operators.blockdiag import BlockDiagonal, variance_bounds_field
from gpmodels.priors.intercept import InterceptPolicy
from gpmodels.priors.kernel_slot import KernelSlot, kernel_field, prior_kernel
from gpmodels.priors.placement import DevicePlacement
from gpmodels.validation import boolean, instance_of, nonnegative_number, one_of, optional, positive_or_list

__all__ = ["ANOVAPrior", "group_labels", "build_anova", "SPEC_SHARING"]


def group_labels(tree: ClassTree, mode: str) -> list[str]:
    """A readable label per node group of ``tree.node_groups(mode)``, in group order."""
    groups = tree.node_groups(mode)
    labels = []
    for g in range(int(groups.max()) + 1):
        first = int(np.flatnonzero(groups == g)[0])
        if mode == "tied":
            labels.append("all")
        elif mode == "level":
            labels.append(f"level{int(tree.depth[first])}")
        elif mode == "subtree":
            labels.append(f"subtree:{tree.nodes[int(tree.ancestors_at_depth(1)[first])]}")
        else:
            labels.append(f"node:{tree.nodes[first]}")
    return labels


@attrs.frozen
class ANOVAPrior(KernelSlot, InterceptPolicy, DevicePlacement):
    """ANOVA prior over a class tree; see the module docstring.  Default sharing: per level (H1).

    ``variance``: one value for every group, or one per variance group (in group order: levels
    from the top; subtrees and nodes in the tree's breadth-first order).  ``sigma2 = 0`` drops
    the intercept.  ``kernel``: None takes the estimator's ``kernel=``, else the RBF of width ``'auto'``
    (:mod:`gpmodels.priors.kernel_slot`).
    """

    tree: ClassTree = attrs.field(validator=instance_of(ClassTree))
    kernel: Kernel | None = kernel_field()  # None: the estimator's kernel= or RBF(w='auto')
    sharing: str = attrs.field(default="level", validator=one_of(TREE_SHARING))
    variance: float | Sequence[float] = attrs.field(default=1.0, validator=positive_or_list())  # or one per group
    sigma2: float = attrs.field(default=0.0, validator=nonnegative_number())
    kernel_sharing: str | None = attrs.field(default=None, validator=optional(one_of(TREE_SHARING)))  # None: sharing
    representation: RepresentationBuilder = attrs.field(
        factory=RepresentationConfig, validator=instance_of(RepresentationBuilder, what="a RepresentationConfig")
    )
    learn_sigma2: bool = attrs.field(default=False, validator=boolean())
    variance_bounds: tuple[float, float] = variance_bounds_field()

    @property
    def variance_groups(self) -> np.ndarray:
        """(P,) variance group of every node."""
        return self.tree.node_groups(self.sharing)

    @property
    def kernel_groups(self) -> np.ndarray:
        """(P,) kernel-shape group of every node."""
        return self.tree.node_groups(self.kernel_sharing or self.sharing)

    @property
    def class_names(self) -> tuple[str, ...]:
        """The classes in the order of the operator's columns: the tree's leaves (the labels must be these names)."""
        return self.tree.classes

    def operator(self, X, n_classes: int) -> Operator:
        """K̃ over the training inputs X; ``n_classes`` must be the tree's number of leaves."""
        tree = self.tree
        if n_classes != tree.n_classes:
            raise HierarchyError(
                f"the data have {n_classes} classes but the tree has {tree.n_classes} leaves; "
                "the classes must be the leaves"
            )
        vg, kg = self.variance_groups, self.kernel_groups
        n_var, n_ker = int(vg.max()) + 1, int(kg.max()) + 1
        if np.ndim(self.variance) == 0:
            v = np.full(n_var, float(self.variance))
        else:
            v = np.asarray(self.variance, dtype=float).ravel()
            if v.size != n_var:
                raise InputError(
                    f"sharing {self.sharing!r} on this tree has {n_var} variance groups "
                    f"({', '.join(group_labels(tree, self.sharing))}); got {v.size} variances"
                )
        inner = BlockDiagonal(
            X,
            [prior_kernel(self.kernel, X)] * n_ker,
            kg,
            v,
            vg,
            self.representation,
            variance_bounds=self.variance_bounds,
        )
        klabels = group_labels(tree, self.kernel_sharing or self.sharing)
        vlabels = group_labels(tree, self.sharing)
        names = [
            f"kernel[{klabels[l]}].{name}" if n_ker > 1 else f"kernel.{name}"
            for l, k in enumerate(inner.kernels)
            for name in k.param_names
        ]
        names += [f"log_variance[{lab}]" if n_var > 1 else "log_variance" for lab in vlabels]
        op = ANOVA(inner, tree, names)
        return self.with_intercept(op)


#: model.sharing -> (node variance sharing, node kernel sharing) of the spec's ANOVA prior (None: follow)
SPEC_SHARING = {
    "tied": ("tied", "tied"),
    "semi": ("node", "tied"),
    "separate": ("node", "node"),
    "level": ("level", None),
    "subtree": ("subtree", None),
}


def build_anova(ctx) -> ANOVAPrior:
    """Spec builder of ``model.prior: anova`` (needs the class tree); ``model.sharing`` maps to the node
    variance / kernel groups by :data:`SPEC_SHARING`."""
    m = ctx.model
    tree = ctx.require_tree()
    vmode, kmode = SPEC_SHARING[m.sharing]
    if kmode is None:
        kmode = vmode if m.kernel_sharing == "follow" else "tied"
    return ANOVAPrior(
        tree,
        ctx.kernel,
        vmode,
        ctx.variance(),
        m.sigma2,
        kernel_sharing=kmode,
        representation=ctx.representation,
        variance_bounds=m.variance_bounds,
    )
