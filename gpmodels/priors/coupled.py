"""Coupled classes and factor loadings (Seeger 2008, Sec. 7.4.1) as a factory (X, C) -> operator.

Builds K̃ = (B ⊗ I) K (B^T ⊗ I) + σ² (I ⊗ 1 1^T): a :class:`~gpmodels.operators.Coupled` around a
:class:`~gpmodels.operators.BlockDiagonal` over p latent processes, inside an
:class:`~gpmodels.operators.Intercept` when σ² > 0.  B is C x C ("coupling") or C x p with p < C
("factor loadings"); its entries are hyperparameters (unconstrained, ``B[class,j]``).

Initialisations of B (:func:`coupling_init`).  Every initialisation except ``identity`` is scaled
so that the mean diagonal of B B^T is 1: the factor variance v then keeps its meaning as the
average prior variance of a class function.

- ``identity`` (square only, the default for coupling): K(B) = K, the flat model; learning B
  starts from independent classes.
- ``tree`` (needs a class tree; the default for loadings when one is known): with
  S = Φ_L Φ_L^T (S_cc' = depth of the lowest common ancestor of the leaves, the class covariance
  of the ANOVA prior with unit node variances), square: B = S^{1/2} (so K(B) is the ANOVA prior
  with a tied kernel); loadings: B = U_p Λ_p^{1/2} from the p leading eigenpairs of H S H,
  H = I - 1 1^T / C — the best rank-p approximation of the tree covariance on the contrasts
  (the softmax ignores a shift of u_i along 1, so loadings along 1 would be wasted).
- ``random`` (the default for loadings without a tree): seeded Gaussian columns made orthonormal
  and, for p < C, orthogonal to 1 (random contrasts), so no class is singled out.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.representation_base import RepresentationBuilder
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.operators.base import Operator
from gpmodels.operators.blockdiag import SHARING_MODES, BlockDiagonal, variance_bounds_field
from gpmodels.operators.coupled import Coupled
from gpmodels.priors.intercept import InterceptPolicy
from gpmodels.priors.kernel_slot import KernelSlot, kernel_field, prior_kernel
from gpmodels.priors.placement import DevicePlacement
from gpmodels.validation import (
    array_of,
    boolean,
    instance_of,
    nonnegative_int,
    nonnegative_number,
    number,
    one_of,
    optional,
    positive_int,
    positive_or_list,
    sequence_of,
    to_float_array,
)

__all__ = ["CoupledPrior", "coupling_init", "COUPLING_INITS", "build_coupled"]

COUPLING_INITS = ("auto", "identity", "tree", "random")


def _unit_mean_diag(B: np.ndarray) -> np.ndarray:
    return B / np.sqrt(np.mean(np.sum(B * B, axis=1)))


def coupling_init(
    n_classes: int, n_factors: int | None = None, init: str = "auto", *, tree: ClassTree | None = None, seed: int = 0
) -> np.ndarray:
    """An initial B of shape (C, p) (p = C when ``n_factors`` is None); see the module docstring."""
    C = int(n_classes)
    p = C if n_factors is None else int(n_factors)
    if C < 1 or not 1 <= p <= C:
        raise InputError(f"B needs 1 <= p <= C factors; got C = {C}, p = {p}")
    if init not in COUPLING_INITS:
        raise InputError(f"init must be one of {COUPLING_INITS}; got {init!r}")
    if init == "auto":
        init = "identity" if p == C else ("tree" if tree is not None else "random")
    if init == "identity":
        if p != C:
            raise InputError(
                f"init 'identity' needs a square B (p = C = {C}); got p = {p}. "
                "For factor loadings use 'tree' or 'random'"
            )
        return np.eye(C)
    if init == "tree":
        if tree is None:
            raise InputError("init 'tree' needs a class tree (give `tree`, or a hierarchy in the spec)")
        if tree.n_classes != C:
            raise InputError(f"the tree has {tree.n_classes} leaves but there are {C} classes")
        S = tree.lca_depth_matrix().astype(float)  # Φ_L Φ_L^T
        if p == C:
            lam, U = np.linalg.eigh(S)
            return _unit_mean_diag((U * np.sqrt(np.maximum(lam, 0.0))) @ U.T)
        if p > C - 1:
            raise InputError(f"init 'tree' for loadings needs p <= C - 1 = {C - 1} (the contrasts); got {p}")
        H = np.eye(C) - 1.0 / C
        lam, U = np.linalg.eigh(H @ S @ H)
        top = np.argsort(lam)[::-1][:p]
        return _unit_mean_diag(U[:, top] * np.sqrt(np.maximum(lam[top], 0.0)))
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(C, p))
    if p < C:
        G -= G.mean(axis=0, keepdims=True)  # contrasts: columns orthogonal to 1
    Q, R = np.linalg.qr(G)
    Q *= np.sign(np.diag(R))[None, :]
    return _unit_mean_diag(Q)


@attrs.frozen
class CoupledPrior(KernelSlot, InterceptPolicy, DevicePlacement):
    """u_i = B f_i + b with p independent latent processes f (Seeger 2008, Sec. 7.4.1).

    ``n_factors``: p (None: p = C, square coupling).  ``B``: an explicit (C, p) matrix; else
    ``init`` (see :func:`coupling_init`; ``tree`` needs ``tree``, ``random`` uses ``seed``).
    ``sharing`` of the p factor kernels: ``tied`` (default: one M, one v; the columns of B carry
    the per-factor scale), ``semi`` or ``separate``.  ``learn_B``: whether B's entries are
    hyperparameters.  ``kernel``: None takes the estimator's ``kernel=``, else the RBF of width ``'auto'``
    (:mod:`gpmodels.priors.kernel_slot`).
    """

    kernel: Kernel | None = kernel_field()  # None: the estimator's kernel= or RBF(w='auto')
    n_factors: int | None = attrs.field(default=None, validator=optional(positive_int()))
    init: str = attrs.field(default="auto", validator=one_of(COUPLING_INITS))
    B: np.ndarray | None = attrs.field(
        default=None, eq=False, converter=to_float_array, validator=optional(array_of(number(), ndim=2))
    )  # shape (C, p)
    tree: ClassTree | None = attrs.field(default=None, validator=optional(instance_of(ClassTree)))
    sharing: str = attrs.field(default="tied", validator=one_of(SHARING_MODES))
    variance: float | Sequence[float] = attrs.field(default=1.0, validator=positive_or_list())  # or one per group
    sigma2: float = attrs.field(default=0.0, validator=nonnegative_number())
    representation: RepresentationBuilder = attrs.field(
        factory=RepresentationConfig, validator=instance_of(RepresentationBuilder, what="a RepresentationConfig")
    )
    learn_sigma2: bool = attrs.field(default=False, validator=boolean())
    variance_bounds: tuple[float, float] = variance_bounds_field()

    learn_B: bool = attrs.field(default=True, validator=boolean())
    seed: int = attrs.field(default=0, validator=nonnegative_int())  # of the `random` initialisation
    class_names: Sequence[str] | None = attrs.field(default=None, validator=optional(sequence_of(instance_of(str))))

    def initial_B(self, n_classes: int) -> np.ndarray:
        """The starting B for ``n_classes`` classes."""
        if self.B is not None:
            B = np.asarray(self.B, dtype=float)
            p = B.shape[1] if B.ndim == 2 else -1
            if B.ndim != 2 or B.shape[0] != n_classes or (self.n_factors is not None and p != self.n_factors):
                want = f"({n_classes}, {self.n_factors if self.n_factors is not None else 'p'})"
                raise InputError(f"B must have shape {want}; got {B.shape}")
            return B
        return coupling_init(n_classes, self.n_factors, self.init, tree=self.tree, seed=self.seed)

    def operator(self, X, n_classes: int) -> Operator:
        B = self.initial_B(n_classes)
        kernel = prior_kernel(self.kernel, X)
        inner = BlockDiagonal.from_sharing(
            X,
            kernel,
            B.shape[1],
            self.sharing,
            self.variance,
            self.representation,
            variance_bounds=self.variance_bounds,
        )
        names = self.class_names
        if names is None and self.tree is not None:
            names = self.tree.classes
        op = Coupled(inner, B, learn=self.learn_B, class_names=names)
        return self.with_intercept(op)


def build_coupled(ctx) -> CoupledPrior:
    """Spec builder of ``model.prior: coupled`` (C x C B) and ``loadings`` (C x p B) from ``model.coupling``."""
    m = ctx.model
    c = m.coupling
    B = None if c.matrix is None else np.asarray(c.matrix, dtype=float)
    return CoupledPrior(
        ctx.kernel,
        n_factors=c.factors,
        init=c.init,
        B=B,
        tree=ctx.tree,
        sharing=m.sharing,
        variance=ctx.variance(),
        sigma2=m.sigma2,
        representation=ctx.representation,
        learn_B=c.learn,
        seed=c.seed,
        variance_bounds=m.variance_bounds,
    )
