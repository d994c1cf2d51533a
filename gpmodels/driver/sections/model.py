"""The `model` section: prior, kernel (or a kernel combination), sharing, likelihood, intercept and the
representation of the kernel matrices."""

from __future__ import annotations

import attrs

from gpmodels.driver.schema import Node, option
from gpmodels.errors import SpecError
from gpmodels.kernels.factory import KERNEL_NAMES, KERNEL_PARAMS, STATIONARY_KERNELS
from gpmodels.kernels.matern import MATERN_NUS
from gpmodels.kernels.mixed_precision import STORAGE_DTYPES
from gpmodels.kernels.representations import DEVICES, REPRESENTATION_KINDS
from gpmodels.operators.blockdiag import BOUNDS_VALIDATOR, SHARING_MODES, VARIANCE_BOUNDS
from gpmodels.priors.coupled import COUPLING_INITS
from gpmodels.priors.registry import BUILTIN_PRIORS, is_import_path, is_known_prior, unknown_prior_message
from gpmodels.validation import (
    MAX_SIZE,
    any_of,
    boolean,
    gigabytes,
    integer,
    mapping,
    nonnegative_int,
    nonnegative_number,
    number,
    one_of,
    positive_number,
    positive_or_list,
    sequence_of,
    string,
)

__all__ = [
    "ModelSpec",
    "KernelSpec",
    "RepresentationSpec",
    "CouplingSpec",
    "PRIORS",
    "MODEL_SHARING",
    "LIKELIHOODS",
    "REGRESSION_LIKELIHOODS",
    "KERNEL_TYPES",
    "KERNEL_KEYS",
]

#: built-in priors: flat independent GPs, the ANOVA class tree (Sec. 3), square coupling B and C x p loadings
#: (Sec. 7.4.1); more are registered by gpmodels.priors.register_prior or named by import path
PRIORS = BUILTIN_PRIORS
#: sharing of kernels and variances over the prior's units (classes, tree nodes or factors);
#: ``level`` / ``subtree`` group them by the class tree (Sec. 6.1: H1, F2/H2)
MODEL_SHARING = SHARING_MODES + ("level", "subtree")
LIKELIHOODS = ("softmax", "logistic", "hinge", "gaussian", "laplace", "student_t")
REGRESSION_LIKELIHOODS = ("gaussian", "laplace", "student_t")
#: the kernels of :func:`gpmodels.kernels.make_kernel`, and the keys each uses (besides ``type``)
KERNEL_TYPES = KERNEL_NAMES
KERNEL_KEYS = KERNEL_PARAMS
#: kernel types with one w per feature
ARD_TYPES = tuple(ard for ard, _, _ in STATIONARY_KERNELS.values())


@attrs.frozen
class KernelSpec(Node):
    """The covariance shape M(x, x'); the variance v belongs to the model (K = v M).  `sum` and
    `product` compose kernels given as `terms` (each a kernel section, nested as deep as needed)."""

    type: str = option(check=one_of(KERNEL_TYPES), doc="covariance function")
    w: object = option(
        None,
        any_of(one_of(("auto",)), positive_number(), sequence_of(positive_number(), max_len=MAX_SIZE)),
        doc="rbf, matern, rational_quadratic (and their `_ard` forms, and `ard`): inverse squared length-scale(s) "
        "w = 1/ℓ²; `auto` = 1 / Σ_j Var[x_j] of the training inputs",
    )
    length_scale: object = option(
        None,
        positive_or_list(),
        doc="the kernels of `w`: the length-scale(s) ℓ = 1/√w instead of `w` (one or the other)",
    )
    nu: float | None = option(None, one_of(MATERN_NUS), doc="matern, matern_ard: smoothness ν (default 1.5)")
    alpha: float | None = option(
        None, positive_number(), doc="rational_quadratic(_ard): shape α of (1 + r²/(2α))^(-α) (default 1)"
    )
    value: float | None = option(
        None, positive_number(), doc="constant: the value c of M = c (default 1; a scale in a `product`)"
    )
    noise: float | None = option(None, positive_number(), doc="white: σ² of M = σ² [x = x'] (default 1)")
    degree: int | None = option(None, integer(1, 100), doc="polynomial: degree d of (scale x·x' + offset)^d")
    scale: float | None = option(None, positive_number(), doc="polynomial: scale (default 1)")
    offset: float | None = option(None, nonnegative_number(), doc="polynomial: offset (default 1)")
    gram: str | None = option(
        None, string(), doc="precomputed: .npy Gram matrix over all points; the data's X holds point indices"
    )
    terms: tuple | None = option(
        None,
        many=True,
        min_len=0,  # an empty list is refused by `check`, which says what the kernel type needs
        doc="sum, product: the kernels added / multiplied (kernel sections)",
    )

    def check(self, path):
        used = KERNEL_KEYS[self.type]
        for key in ("w", "length_scale", "nu", "alpha", "value", "noise", "degree", "scale", "offset", "gram", "terms"):
            if getattr(self, key) is not None and key not in used:
                allowed = ", ".join(("type",) + used)
                raise SpecError(f"not used by kernel type {self.type!r} (its keys: {allowed})", f"{path}.{key}")
        if "w" in used and self.w is not None and self.length_scale is not None:
            raise SpecError("give `w` or `length_scale` (w = 1/length_scale²), not both", f"{path}.length_scale")
        if "w" in used and self.w is None and self.length_scale is None:
            listed = "a list, " if self.type in ARD_TYPES else ""
            raise SpecError(
                f"kernel type {self.type!r} needs `w` (a number, {listed}or 'auto') or `length_scale`", f"{path}.w"
            )
        for key in ("w", "length_scale"):
            if self.type in STATIONARY_KERNELS and isinstance(getattr(self, key), tuple):
                raise SpecError(
                    f"{self.type} takes one {key}; use type {STATIONARY_KERNELS[self.type][0]!r} for one per feature",
                    f"{path}.{key}",
                )
        if self.type == "precomputed" and self.gram is None:
            raise SpecError("kernel type 'precomputed' needs `gram` (a .npy file)", f"{path}.gram")
        if self.type in ("sum", "product") and not self.terms:
            raise SpecError(
                f"kernel type {self.type!r} needs `terms` (a non-empty list of kernel sections)", f"{path}.terms"
            )


attrs.fields(KernelSpec).terms.metadata["spec"]["node"] = KernelSpec  # terms are kernel sections themselves


@attrs.frozen
class RepresentationSpec(Node):
    """How each kernel matrix is held (Seeger 2008, App. D.1, Sec. 7.4.3)."""

    kind: str = option(
        "auto",
        one_of(REPRESENTATION_KINDS),
        doc="`stored` n x n in memory; `blocked` on the fly; `features` linear X X^T; `lowrank` ICF; `auto` chooses",
    )
    memory_mb: float = option(256.0, gigabytes(), doc="memory bound of one on-the-fly block")
    memory_gb: float | None = option(
        None, gigabytes(), doc="`auto`: memory budget of all kernel matrices (null: 0.7 x available memory)"
    )
    dtype: str | None = option(
        None,
        one_of(STORAGE_DTYPES),
        doc="storage of `stored` matrices, float64 accumulation (null: float64; `auto`: first that fits)",
    )
    allow_lowrank: bool = option(
        False, boolean(), doc="`auto` may approximate by `lowrank` when no stored matrix fits the budget"
    )
    blocked_max_n: int = option(
        50_000,
        integer(1, 100_000_000),
        doc="`auto` recomputes (`blocked`) only up to this n, else low-rank or an error",
    )
    rank: int = option(200, integer(1, 100_000), doc="lowrank: maximal rank of the incomplete Cholesky")
    tol: float = option(1e-8, nonnegative_number(), doc="lowrank: stop when the residual diagonal is below tol x max")
    device: str = option(
        "cpu",
        one_of(DEVICES),
        doc="where kernel matrices live: `cuda` (a GPU through PyTorch, gpmodels[cuda]; an error "
        "without one), `auto` (the GPU when there is one), `cpu`; rbf and ard kernels",
    )


@attrs.frozen
class CouplingSpec(Node):
    """The matrix B of the `coupled` (C x C) and `loadings` (C x p) priors, Seeger 2008, Sec. 7.4.1."""

    factors: int | None = option(None, integer(1, 100_000), doc="loadings: the number p < C of latent factors")
    init: str = option(
        "auto",
        one_of(COUPLING_INITS),
        doc="initial B: `identity` (square), `tree` (from the class tree), `random` (seeded "
        "contrasts); `auto`: identity for coupling, tree (else random) for loadings",
    )
    matrix: object = option(None, doc="an explicit B as a list of C rows (overrides `init`)")
    learn: bool = option(True, boolean(), doc="B's entries are hyperparameters (for hyperparameter learning)")
    seed: int = option(0, nonnegative_int(), doc="seed of the `random` initialisation")

    def check(self, path):
        if self.matrix is not None:
            rows = self.matrix
            ok = (
                isinstance(rows, list)
                and rows
                and all(isinstance(r, list) and r for r in rows)
                and len({len(r) for r in rows}) == 1
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for r in rows for v in r)
            )
            if not ok:
                raise SpecError("must be a list of equally long lists of numbers (the rows of B)", f"{path}.matrix")


@attrs.frozen
class ModelSpec(Node):
    """Prior, kernel, sharing, likelihood and intercept."""

    prior: str = option(
        "independent",
        string(),
        doc="`independent` GPs per class; `anova` class tree (needs a hierarchy); `coupled` "
        "K(B) with C x C B; `loadings` with C x p B; or a user prior: a name registered by "
        "`gpmodels.priors.register_prior`, or `package.module:builder` imported by path "
        "(docs/extending.md)",
        allowed=", ".join(f"`{p}`" for p in PRIORS) + ", a registered name, `module:builder`",
    )
    prior_options: dict | None = option(
        None, mapping(), doc="user priors: free-form settings passed to the builder (`PriorContext.options`)"
    )
    kernel: KernelSpec | None = option(None, node=KernelSpec, doc="the covariance shape (or give `kernels`)")
    sharing: str = option(
        "separate",
        one_of(MODEL_SHARING),
        doc="over the prior's units (classes; nodes for `anova`; factors for `coupled`/`loadings`): "
        "`tied` one M, one v; `semi` one M, v per unit; `separate` M and v per unit; `level` "
        "/ `subtree` per tree level / per subtree at a root child (needs a hierarchy)",
    )
    kernel_sharing: str = option(
        "follow",
        one_of(("follow", "tied")),
        doc="with `level` / `subtree`: kernel shapes grouped like the variances (`follow`) or one shared M (`tied`)",
    )
    coupling: CouplingSpec = option(CouplingSpec, node=CouplingSpec, doc="B of `coupled` / `loadings`")
    variance: object = option(1.0, positive_or_list(), doc="v: one value, or one per variance group")
    variance_bounds: tuple = option(
        VARIANCE_BOUNDS,
        BOUNDS_VALIDATOR,
        doc="declared bounds [low, high] of every signal variance v·m̄ (m̄: mean kernel diagonal M_ii over the "
        "training points), kept by every hyperparameter learner; a variance that ends at one is reported",
    )
    sigma2: float = option(0.0, nonnegative_number(), doc="intercept variance σ² (0: no intercept)")
    likelihood: str = option(
        "softmax",
        one_of(LIKELIHOODS),
        doc="`softmax` (C classes); single latent function: `logistic` (binary, y = ±1), "
        "`hinge` (smoothed SVM loss), `gaussian`, `laplace`, `student_t` (regression)",
    )
    kappa: float = option(-20.0, number(None, -1e-12), doc="softmax: App. B threshold κ on log π")
    noise: float = option(1.0, positive_number(), doc="gaussian: noise variance σ²")
    scale: float = option(1.0, positive_number(), doc="laplace: scale τ; student_t: scale σ")
    df: float = option(4.0, positive_number(), doc="student_t: degrees of freedom ν")
    learn_df: bool = option(False, boolean(), doc="student_t: learn ν with the other hyperparameters")
    hinge_eps: float = option(1e-3, positive_number(), doc="hinge: smoothing width ε")
    kernels: tuple | None = option(
        None,
        node=KernelSpec,
        many=True,
        doc="a kernel combination K_θ = Σ_m θ_m K_m (Sum; each with variance 1) instead of `kernel`",
    )
    weights: tuple | None = option(
        None,
        sequence_of(positive_number(), min_len=1, max_len=1000),
        doc="initial kernel weights θ of `kernels` (default all 1)",
    )
    representation: RepresentationSpec = option(
        RepresentationSpec, node=RepresentationSpec, doc="kernel matrix representation"
    )
    #: modules the user allowed a ``prior: module:builder`` path to import (``--allow-import``; not a spec key:
    #: granted by the caller of load_spec / spec_from_dict / run_spec / load_model, never by a file)
    allow_import: tuple = attrs.field(default=(), kw_only=True, eq=False, repr=False)

    @property
    def builtin_prior(self) -> bool:
        """Whether ``prior`` is one of the built-in priors (else a registered or imported user prior)."""
        return self.prior in BUILTIN_PRIORS

    def check(self, path):
        if not is_known_prior(self.prior):
            if ":" in self.prior and not is_import_path(self.prior):
                raise SpecError(
                    f"{self.prior!r} is not an import path of the form 'package.module:builder'", f"{path}.prior"
                )
            raise SpecError(unknown_prior_message(self.prior), f"{path}.prior")
        if self.prior_options is not None and self.builtin_prior:
            raise SpecError(
                f"`prior_options` are for user priors; the built-in prior {self.prior!r} takes its "
                "settings from the model keys (sharing, variance, coupling, ...)",
                f"{path}.prior_options",
            )
        if (self.kernel is None) == (self.kernels is None):
            raise SpecError("give exactly one of `kernel` or `kernels` (a kernel combination)", f"{path}.kernel")
        if self.kernels is not None:
            if len(self.kernels) == 0:
                raise SpecError("needs at least one kernel", f"{path}.kernels")
            if self.weights is not None and len(self.weights) != len(self.kernels):
                raise SpecError(
                    f"one weight per kernel: {len(self.kernels)} kernels, {len(self.weights)} weights",
                    f"{path}.weights",
                )
            if self.sigma2 != 0:
                raise SpecError(
                    "a kernel combination has no separate intercept; set sigma2: 0 (add a "
                    "constant-offset kernel such as `polynomial` to the list instead)",
                    f"{path}.sigma2",
                )
        elif self.weights is not None:
            raise SpecError("`weights` go with `kernels`", f"{path}.weights")
        if self.prior in ("coupled", "loadings") and self.sharing in ("level", "subtree"):
            raise SpecError(
                f"prior {self.prior!r} shares over its latent factors: use tied, semi or separate", f"{path}.sharing"
            )
        if self.prior == "loadings" and self.coupling.factors is None and self.coupling.matrix is None:
            raise SpecError(
                "prior 'loadings' needs `coupling.factors` (p < C) or `coupling.matrix`", f"{path}.coupling.factors"
            )
        if self.prior == "coupled" and self.coupling.factors is not None:
            raise SpecError(
                "prior 'coupled' has a square B; use prior 'loadings' for p factors", f"{path}.coupling.factors"
            )
        if self.prior not in ("coupled", "loadings") and self.coupling != CouplingSpec():
            raise SpecError(
                f"`coupling` is for the coupled / loadings priors; the prior is {self.prior!r}", f"{path}.coupling"
            )
