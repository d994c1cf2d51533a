"""The sections of a model spec.  ``docs/specs.md`` is generated from these declarations."""

from __future__ import annotations

import re

import attrs

from gpmodels.data.datasets import NAMED_DATASETS
from gpmodels.data.multilabel_sets import MULTILABEL_DATASETS
from gpmodels.data.scaling import FEATURE_SCALINGS
from gpmodels.engine.base import DISTRIBUTE_MODES, ENGINE_TYPES
from gpmodels.errors import SpecError, shown
from gpmodels.inference.cv.criterion import CVOptions
from gpmodels.inference.cv.learn import LearnOptions
from gpmodels.inference.map.em import EMOptions
from gpmodels.inference.map.newton_cg import NewtonOptions
from gpmodels.inference.map.predictive import PREDICTIVE_METHODS, PREDICTIVES
from gpmodels.inference.map.solvers import SOLVER_NAMES
from gpmodels.inference.marginal.laplace import LaplaceOptions
from gpmodels.inference.marginal.vb import VBOptions
from gpmodels.inference.mkl.algorithms import MKLOptions
from gpmodels.kernels.factory import KERNEL_NAMES, KERNEL_PARAMS
from gpmodels.kernels.mixed_precision import STORAGE_DTYPES
from gpmodels.kernels.representations import DEVICES, REPRESENTATION_KINDS
from gpmodels.operators.blockdiag import SHARING_MODES
from gpmodels.optimize.lbfgs import OuterOptions
from gpmodels.priors.coupled import COUPLING_INITS
from gpmodels.priors.registry import BUILTIN_PRIORS, is_import_path, is_known_prior, unknown_prior_message
from gpmodels.spec.baseline_sections import CrammerSingerSpec, HM3Spec
from gpmodels.spec.derive import Part, options_section
from gpmodels.spec.schema import Node, option
from gpmodels.validation import MAX_SIZE

__all__ = ["TASKS", "LIKELIHOODS", "OBJECTIVES", "SOLVERS", "check_unifying", "Spec", "DataSpec", "ModelSpec",
           "KernelSpec", "RepresentationSpec", "ObjectiveSpec", "EvaluationSpec", "OutputSpec", "KERNEL_TYPES",
           "KERNEL_KEYS", "PseudoTargetsSpec", "CouplingSpec", "PRIORS", "MODEL_SHARING", "DECISIONS", "CVSpec",
           "check_one_vs_rest", "NewtonSpec", "CVNewtonSpec", "OuterSpec", "EMSpec", "LaplaceSpec", "VBSpec", "MKLSpec",
           "OBJECTIVE_MOVED_KEYS", "SECTION_TYPES", "check_name", "NAME_PATTERN",
           "check_predictive", "EngineSpec", "SCHEDULER_PATTERN"]

#: built-in priors: flat independent GPs, the ANOVA class tree (Sec. 3), square coupling B and C x p loadings
#: (Sec. 7.4.1); more are registered by gpmodels.priors.register_prior or named by import path
PRIORS = BUILTIN_PRIORS
#: sharing of kernels and variances over the prior's units (classes, tree nodes or factors);
#: ``level`` / ``subtree`` group them by the class tree (Sec. 6.1: H1, F2/H2)
MODEL_SHARING = SHARING_MODES + ("level", "subtree")
#: decision rules scored on a class tree (Sec. 6.1): argmax, each score's Bayes rule, or both
DECISIONS = ("argmax", "expected_loss", "both")

#: a run's, study's or study model's name: it becomes a folder name, so it is a name, never a path
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,99}$")
NAME_RULE = ("letters, digits, '-', '_' and '.' (not first), at most 100 characters: a folder name, "
             "without '/' or '..'")

TASKS = ("classification", "regression")
LIKELIHOODS = ("softmax", "logistic", "hinge", "gaussian", "laplace", "student_t")
REGRESSION_LIKELIHOODS = ("gaussian", "laplace", "student_t")
OBJECTIVES = ("map", "em", "cv", "one_vs_rest", "laplace", "vb", "mlm", "mkl", "joint_map", "crammer_singer", "hm3")
SOLVERS = ("algorithm1", "alternating", "lbfgs")
#: the kernels of :func:`gpmodels.kernels.make_kernel`, and the keys each uses (besides ``type``)
KERNEL_TYPES = KERNEL_NAMES
KERNEL_KEYS = KERNEL_PARAMS


@attrs.frozen
class PseudoTargetsSpec(Node):
    """Uncertain training targets (Seeger 2008, Sec. 7.4.2): tree nodes instead of leaves, fitted by EM."""

    file: str | None = option(None, kind="str",
                              doc="text file with one node name per training point (the data set's order; the "
                                  "root's name = unlabelled); needs `test: given` and no `max_train`")
    fraction: float | None = option(None, kind="float", minimum=0.0, maximum=1.0,
                                    doc="instead of `file`: replace this seeded fraction of the training labels by "
                                        "an ancestor")
    levels_up: int = option(1, kind="int", minimum=1, maximum=1000,
                            doc="with `fraction`: how many levels up (never above a child of the root)")

    def check(self, path):
        if (self.file is None) == (self.fraction is None):
            raise SpecError("give exactly one of `file` (node names) or `fraction` (coarsened labels)", f"{path}.file")


@attrs.frozen
class DataSpec(Node):
    """Where the data come from, how the test set is formed and how inputs are scaled."""

    dataset: str | None = option(None, kind="str", choices=NAMED_DATASETS + MULTILABEL_DATASETS,
                                 doc="a named data set under the data root (give this or `path`); "
                                     "enron_corr and *_FUN are hierarchical multilabel sets")
    path: str | None = option(
        None,
        kind="str",
        doc="a data file: .npz with arrays X, y; .arff (numeric features, nominal class "
        "attribute `class` or the last one); .csv (a header line, numeric features, the labels in "
        "`label_column`); or svmlight/libsvm text (.svm, .svmlight, .libsvm, .txt)",
    )
    label_column: str = option("label", kind="str",
                               doc=".csv files: the column holding the labels (every other column is a feature; "
                                   "optional in the inputs of `gpmodels predict`)")
    test_path: str | None = option(None, kind="str", doc="test file for `path` (same format) when `test` is `given`")
    root: str | None = option(None, kind="str",
                              doc="data root for `dataset` (default: $GPMODELS_DATA, ./data, ../shared/data of the "
                                  "working directory, then data/ and ../shared/data beside the spec's folder "
                                  "and each of its parents)")
    subset: str | None = option(None, kind="str", choices=("small",),
                                doc="news20 only: `small` uses subset_small.npz (2000 train / 1000 test)")
    test: str = option("given", kind="str", choices=("given", "split"),
                       doc="`given`: the data set's test set; `split`: a seeded split of the training data")
    test_fraction: float = option(0.3, kind="float", exclusive_minimum=0.0, maximum=0.95,
                                  doc="fraction held out when `test` is `split`")
    scaling: str = option("none", kind="str", choices=FEATURE_SCALINGS,
                          doc="feature scaling fitted on the training inputs")
    zero_based: bool | None = option(
        None,
        kind="bool",
        doc="svmlight files: feature indices start at 0 (true) or 1 (false); null decides "
        "once for the training and test files (0-based when the training file uses index 0; a test file that "
        "alone uses it is refused); "
        "saved with the model for `gpmodels predict`",
    )
    max_train: int | None = option(None, kind="int", minimum=2,
                                   doc="keep a seeded stratified subsample of this many training points")
    max_test: int | None = option(None, kind="int", minimum=1,
                                  doc="keep a seeded stratified subsample of this many test points")
    task: str = option("classification", kind="str", choices=TASKS,
                       doc="`regression`: real-valued targets from `path` files (scored by RMSE)")
    positive_class: str | None = option(
        None, kind="str", doc="binary task one-vs-rest: this label (as in the data) is y = +1, all others -1"
    )
    validation: str = option("merge", kind="str", choices=("merge", "drop"),
                             doc="FunCat sets: train on train + valid (`merge`, Vens et al. 2008) or drop valid")
    hierarchy: str | None = option(
        None,
        kind="str",
        doc="class tree as `parent<TAB>child` lines (classes = leaves); default: the "
        "named data set's hierarchy.tsv (news20, imclef07a)",
    )
    prune_hierarchy: bool = option(
        False, kind="bool", doc="remove inner nodes with a single child (Sec. 3, footnote 5)"
    )
    pseudo_targets: PseudoTargetsSpec | None = option(None, kind="node", node=PseudoTargetsSpec,
                                                      doc="uncertain training targets for `objective.type: em`")

    def check(self, path):
        if (self.dataset is None) == (self.path is None):
            raise SpecError("give exactly one of `dataset` (a named set) or `path` (a file)", f"{path}.dataset")
        if self.task == "regression" and self.dataset is not None:
            raise SpecError(
                "the named data sets are classification sets; regression needs `path` (an .npz with real-valued y)",
                f"{path}.task",
            )
        if self.task == "regression" and self.positive_class is not None:
            raise SpecError("`positive_class` makes a binary classification task; not for regression",
                            f"{path}.positive_class")
        if self.path is not None and self.test == "given" and self.test_path is None:
            raise SpecError("`test: given` with a `path` needs `test_path`; or use `test: split`", f"{path}.test_path")
        if self.test_path is not None and self.path is None:
            raise SpecError("`test_path` goes with `path`", f"{path}.test_path")
        pt = self.pseudo_targets
        if pt is not None and pt.file is not None and (self.test == "split" or self.max_train is not None):
            raise SpecError(
                "a pseudo-target file lists the training points as stored: it needs `test: given` and no `max_train`",
                f"{path}.pseudo_targets.file",
            )


@attrs.frozen
class KernelSpec(Node):
    """The covariance shape M(x, x'); the variance v belongs to the model (K = v M)."""

    type: str = option(kind="str", choices=KERNEL_TYPES, doc="covariance function")
    w: object = option(None, kind="float|auto|list[float]", exclusive_minimum=0.0,
                       doc="rbf/ard: inverse squared length-scale(s); `auto` = 1 / Σ_j Var[x_j] of the training inputs")
    degree: int | None = option(None, kind="int", minimum=1, maximum=100,
                                doc="polynomial: degree d of (scale x·x' + offset)^d")
    scale: float | None = option(None, kind="float", exclusive_minimum=0.0, doc="polynomial: scale (default 1)")
    offset: float | None = option(None, kind="float", minimum=0.0, doc="polynomial: offset (default 1)")
    gram: str | None = option(None, kind="str",
                              doc="precomputed: .npy Gram matrix over all points; the data's X holds point indices")

    def check(self, path):
        used = KERNEL_KEYS[self.type]
        for key in ("w", "degree", "scale", "offset", "gram"):
            if getattr(self, key) is not None and key not in used:
                allowed = ", ".join(("type",) + used)
                raise SpecError(f"not used by kernel type {self.type!r} (its keys: {allowed})", f"{path}.{key}")
        if self.type in ("rbf", "ard") and self.w is None:
            raise SpecError(f"kernel type {self.type!r} needs `w` (a number, a list for ard, or 'auto')", f"{path}.w")
        if self.type == "rbf" and isinstance(self.w, tuple):
            raise SpecError("rbf takes one w; use type 'ard' for one per feature", f"{path}.w")
        if self.type == "precomputed" and self.gram is None:
            raise SpecError("kernel type 'precomputed' needs `gram` (a .npy file)", f"{path}.gram")


@attrs.frozen
class RepresentationSpec(Node):
    """How each kernel matrix is held (Seeger 2008, App. D.1, Sec. 7.4.3)."""

    REMOVED_KEYS = {"stored_max_mb": "representation.memory_gb (the budget `auto` chooses stored / blocked / "
                                     "low-rank by)"}

    kind: str = option(
        "auto",
        kind="str",
        choices=REPRESENTATION_KINDS,
        doc="`stored` n x n in memory; `blocked` on the fly; `features` linear X X^T; `lowrank` ICF; `auto` chooses",
    )
    memory_mb: float = option(256.0, kind="float", exclusive_minimum=0.0, maximum=1_048_576.0,
                              doc="memory bound of one on-the-fly block")
    memory_gb: float | None = option(None, kind="float", exclusive_minimum=0.0, maximum=1_048_576.0,
                                     doc="`auto`: memory budget of all kernel matrices (null: 0.7 x available memory)")
    dtype: str | None = option(None, kind="str", choices=STORAGE_DTYPES,
                               doc="storage of `stored` matrices, float64 accumulation (null: float64; `auto`: "
                                   "first that fits)")
    allow_lowrank: bool = option(False, kind="bool",
                                 doc="`auto` may approximate by `lowrank` when no stored matrix fits the budget")
    blocked_max_n: int = option(50_000, kind="int", minimum=1, maximum=100_000_000,
                                doc="`auto` recomputes (`blocked`) only up to this n, else low-rank or an error")
    rank: int = option(200, kind="int", minimum=1, maximum=100_000,
                       doc="lowrank: maximal rank of the incomplete Cholesky")
    tol: float = option(1e-8, kind="float", minimum=0.0,
                        doc="lowrank: stop when the residual diagonal is below tol x max")
    device: str = option("cpu", kind="str", choices=DEVICES,
                         doc="where kernel matrices live: `cuda` (a GPU through PyTorch, gpmodels[cuda]; an error "
                             "without one), `auto` (the GPU when there is one), `cpu`; rbf and ard kernels")


@attrs.frozen
class CouplingSpec(Node):
    """The matrix B of the `coupled` (C x C) and `loadings` (C x p) priors, Seeger 2008, Sec. 7.4.1."""

    factors: int | None = option(None, kind="int", minimum=1, maximum=100_000,
                                 doc="loadings: the number p < C of latent factors")
    init: str = option(
        "auto",
        kind="str",
        choices=COUPLING_INITS,
        doc="initial B: `identity` (square), `tree` (from the class tree), `random` (seeded "
        "contrasts); `auto`: identity for coupling, tree (else random) for loadings",
    )
    matrix: object = option(None, kind="any", doc="an explicit B as a list of C rows (overrides `init`)")
    learn: bool = option(True, kind="bool", doc="B's entries are hyperparameters (for hyperparameter learning)")
    seed: int = option(0, kind="int", minimum=0, doc="seed of the `random` initialisation")

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
        kind="str",
        allowed=", ".join(f"`{p}`" for p in PRIORS) + ", a registered name, `module:builder`",
        doc="`independent` GPs per class; `anova` class tree (needs a hierarchy); `coupled` "
        "K(B) with C x C B; `loadings` with C x p B; or a user prior: a name registered by "
        "`gpmodels.priors.register_prior`, or `package.module:builder` imported by path "
        "(docs/extending.md)",
    )
    prior_options: dict | None = option(
        None, kind="dict", doc="user priors: free-form settings passed to the builder (`PriorContext.options`)"
    )
    kernel: KernelSpec | None = option(None, kind="node", node=KernelSpec,
                                       doc="the covariance shape (or give `kernels`)")
    sharing: str = option(
        "separate",
        kind="str",
        choices=MODEL_SHARING,
        doc="over the prior's units (classes; nodes for `anova`; factors for `coupled`/`loadings`): "
        "`tied` one M, one v; `semi` one M, v per unit; `separate` M and v per unit; `level` "
        "/ `subtree` per tree level / per subtree at a root child (needs a hierarchy)",
    )
    kernel_sharing: str = option(
        "follow",
        kind="str",
        choices=("follow", "tied"),
        doc="with `level` / `subtree`: kernel shapes grouped like the variances (`follow`) or one shared M (`tied`)",
    )
    coupling: CouplingSpec = option(CouplingSpec, kind="node", node=CouplingSpec, doc="B of `coupled` / `loadings`")
    variance: object = option(1.0, kind="float|list[float]", exclusive_minimum=0.0,
                              doc="v: one value, or one per variance group")
    sigma2: float = option(0.0, kind="float", minimum=0.0, doc="intercept variance σ² (0: no intercept)")
    likelihood: str = option(
        "softmax",
        kind="str",
        choices=LIKELIHOODS,
        doc="`softmax` (C classes); single latent function: `logistic` (binary, y = ±1), "
        "`hinge` (smoothed SVM loss), `gaussian`, `laplace`, `student_t` (regression)",
    )
    kappa: float = option(-20.0, kind="float", maximum=-1e-12, doc="softmax: App. B threshold κ on log π")
    noise: float = option(1.0, kind="float", exclusive_minimum=0.0, doc="gaussian: noise variance σ²")
    scale: float = option(1.0, kind="float", exclusive_minimum=0.0, doc="laplace: scale τ; student_t: scale σ")
    df: float = option(4.0, kind="float", exclusive_minimum=0.0, doc="student_t: degrees of freedom ν")
    learn_df: bool = option(False, kind="bool", doc="student_t: learn ν with the other hyperparameters")
    hinge_eps: float = option(1e-3, kind="float", exclusive_minimum=0.0, doc="hinge: smoothing width ε")
    kernels: tuple | None = option(
        None,
        kind="list[node]",
        node=KernelSpec,
        doc="a kernel combination K_θ = Σ_m θ_m K_m (Sum; each with variance 1) instead of `kernel`",
    )
    weights: tuple | None = option(None, kind="list[float]", exclusive_minimum=0.0,
                                   doc="initial kernel weights θ of `kernels` (default all 1)")
    representation: RepresentationSpec = option(RepresentationSpec, kind="node", node=RepresentationSpec,
                                                doc="kernel matrix representation")
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
                raise SpecError(f"{self.prior!r} is not an import path of the form 'package.module:builder'",
                                f"{path}.prior")
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
                raise SpecError(f"one weight per kernel: {len(self.kernels)} kernels, {len(self.weights)} weights",
                                f"{path}.weights")
            if self.sigma2 != 0:
                raise SpecError(
                    "a kernel combination has no separate intercept; set sigma2: 0 (add a "
                    "constant-offset kernel such as `polynomial` to the list instead)",
                    f"{path}.sigma2",
                )
        elif self.weights is not None:
            raise SpecError("`weights` go with `kernels`", f"{path}.weights")
        if self.prior in ("coupled", "loadings") and self.sharing in ("level", "subtree"):
            raise SpecError(f"prior {self.prior!r} shares over its latent factors: use tied, semi or separate",
                            f"{path}.sharing")
        if self.prior == "loadings" and self.coupling.factors is None and self.coupling.matrix is None:
            raise SpecError("prior 'loadings' needs `coupling.factors` (p < C) or `coupling.matrix`",
                            f"{path}.coupling.factors")
        if self.prior == "coupled" and self.coupling.factors is not None:
            raise SpecError("prior 'coupled' has a square B; use prior 'loadings' for p factors",
                            f"{path}.coupling.factors")
        if self.prior not in ("coupled", "loadings") and self.coupling != CouplingSpec():
            raise SpecError(f"`coupling` is for the coupled / loadings priors; the prior is {self.prior!r}",
                            f"{path}.coupling")


# ---------------------------------------------------------------------------- objective settings
# One sub-section per options class; its keys, defaults and bounds are derived from the class
# (gpmodels/spec/derive.py), so the spec cannot disagree with it.  The docs below are the spec's
# lines for fields whose class gives none.

_NEWTON_DOCS = {
    "max_iter": "k1: maximal Newton iterations",
    "cg_max_iter": "k2: maximal CG steps per Newton direction",
    "cg_tol": "CG: relative residual tolerance",
    "cg_forcing": "CG: stop once the residual fell by this factor from its start (truncated Newton)",
    "grad_tol": "stop when the per-point RMS of ∇_u Φ is below",
    "phi_rtol": "stop when the relative decrease of Φ is below",
    "max_stall_restarts": "restarts from a cold CG start when a Newton step makes no progress",
    "stall_step": "a line-search step below this counts as a stall (CG is restarted without the forcing term)",
    "armijo": "line search: sufficient-decrease constant",
    "line_search_evals": "line search: maximal evaluations of Φ",
    "preconditioner": "CG preconditioner: App. B `diagonal`; per-point `block`s; `lowrank` deflation of the leading "
    "kernel eigen-directions with the diagonal (`lowrank`) or the per-point blocks "
    "(`lowrank_block`) for the rest; `auto`: `lowrank` from 1500 points on, else `diagonal`",
    "precond_rank": "`lowrank*`: number of kernel eigenpairs deflated",
    "precond_seed": "`lowrank*`: seed of the randomized eigensolver",
}
_NEWTON_REMOVED = {
    "warm_start": "CG always starts at β = D^{-1/2} α, the current α (drop the key)",
    "cg_forcing_norm": "the preconditioner sets where CG's forcing test is measured (drop the key)",
}

NewtonSpec = options_section(
    "NewtonSpec",
    "Newton–CG (Alg. 1; k1, k2 and tolerances of Seeger 2008, Sec. 2, 6) of the MAP fit: `map`, the "
    "M-step of `em`, the final fit of `cv` and `one_vs_rest` (and `one_vs_rest` with `learn: false`).  Keys, "
    "defaults and bounds: `NewtonOptions`.",
    [Part(NewtonOptions)],
    docs=_NEWTON_DOCS,
    removed=_NEWTON_REMOVED,
)

CVNewtonSpec = options_section(
    "CVNewtonSpec",
    "Newton–CG of the refits inside every Ψ evaluation (Sec. 4, 6.2: k1, k2 during learning).  Keys "
    "and bounds: `NewtonOptions`; defaults: `CVOptions().newton`.",
    [Part(NewtonOptions, defaults=CVOptions().newton)],
    docs=_NEWTON_DOCS,
    removed=_NEWTON_REMOVED,
)

OuterSpec = options_section(
    "OuterSpec",
    "The outer quasi-Newton optimiser of Ψ (projected L-BFGS in log space).  Keys and bounds: "
    "`OuterOptions`; defaults: `LearnOptions().outer`.",
    [Part(OuterOptions, defaults=LearnOptions().outer)],
    docs={"max_iter": "maximal outer (quasi-Newton) iterations", "max_evaluations": "maximal Ψ evaluations",
          "memory": "L-BFGS memory (pairs)",
          "ftol": "stop when Ψ decreases (or the quasi-Newton model predicts a decrease) by less than this fraction",
          "gtol": "stop when max |projected ∇Ψ| <= gtol · max(1, |Ψ|)",
          "initial_step": "max-norm of the first step (log space)",
          "max_step": "max-norm cap of every trial step (log space)",
          "armijo": "line search: sufficient-decrease constant", "wolfe": "line search: curvature constant",
          "line_search_evals": "line search: maximal Ψ evaluations per iteration",
          "extrapolation": "line search: growth factor of an extrapolated step",
          "max_extrapolations": "line search: maximal extrapolations",
          "score_patience": "stop when the held-out misclassifications of Ψ's folds have not improved for this "
                            "many iterations (0: off)",
          "score_rtol": "`score_patience`: a smaller gain than this fraction of the best count is no improvement"},
)

_CV_OUTER = ("max_iter", "max_evaluations", "ftol", "gtol", "initial_step", "max_step", "memory")


def _check_cv(self, path):
    if not self.lower < self.upper:
        raise SpecError(f"must be below `upper` ({self.upper}); got {self.lower}", f"{path}.lower")


CVSpec = options_section(
    "CVSpec",
    "Hyperparameter learning by the CV criterion Ψ (`objective.type: cv` and `one_vs_rest`; Seeger 2008, "
    "Sec. 4, 5.2, 6.2).  Keys, defaults and bounds: `CVOptions` (one Ψ evaluation) and `LearnOptions` (`lower`, "
    "`upper`); the refits in `newton`, the outer optimiser in `outer`.",
    [Part(CVOptions, skip=("solver", "warm_start")), Part(LearnOptions, only=("lower", "upper", "inner_tolerances"))],
    nested=(("newton", CVNewtonSpec, "Newton–CG of the refits inside Ψ"), ("outer", OuterSpec, "the outer optimiser")),
    extra=(
        ("folds", option(5, kind="int", minimum=2, doc="q: folds of the fixed random partition of the training set")),
        (
            "partition_seed",
            option(None, kind="int", minimum=0, doc="seed of the partition (default: the spec's `seed`)"),
        ),
        ("learn_sigma2",
         option(False, kind="bool", doc="also learn the intercept variance σ² (needs `model.sigma2` > 0)")),
        (
            "checkpoint",
            option(True, kind="bool",
                   doc="write `checkpoint.npz` in the report folder after every successful outer iteration"),
        ),
        (
            "resume",
            option(
                "auto",
                kind="str",
                choices=("auto", "never"),
                doc="`auto`: continue from an existing checkpoint (a corrupt or foreign one is an "
                "error); `never`: start afresh",
            ),
        ),
    ),
    docs={"k3": "k3: maximal CG steps of a fold's gradient accumulation solve",
          "accumulation_tol": "relative residual of the accumulation solve",
          "fail_tol": "an evaluation fails when the mean over folds of the refits' gradient RMS is above",
          "abort_on_failure": "stop an evaluation at the first fold that makes its failure certain",
          "retry_cold": "retry a failed warm refit from a cold start",
          "lower": "lower bound of every log-space hyperparameter",
          "upper": "upper bound of every log-space hyperparameter",
          "inner_tolerances": "`adaptive`: refit and accumulation tolerances loosened far from the optimum "
                              "(`gpmodels.inference.cv.tolerances`); `fixed`: the configured ones throughout"},
    check=_check_cv,
    removed={
        "warm_start": "refits start from the best rescaled previous α[J] (`gpmodels.inference.cv.criterion`); "
        "drop the key",
        "multiclass": "one-vs-rest is its own objective: write `objective.type: one_vs_rest` (it takes these "
        "`objective.cv` settings); the joint softmax model is `objective.type: cv`",
        "fold_workers": "where the folds run is the engine's choice: drop the key (the default `engine: {type: "
        "auto}` sizes the workers from the cores) or write `engine: {type: processes, n_workers: N}`",
        "fold_parallelism": "where the folds run is the engine's choice: `engine: {type: processes}` or "
        "`{type: local, n_workers: N}` (threads)",
    },
    moved={"k1": "newton.max_iter", "k2": "newton.cg_max_iter", "grad_tol": "newton.grad_tol",
           **{k: f"outer.{k}" for k in _CV_OUTER}},
)

EMSpec = options_section(
    "EMSpec",
    "EM over uncertain targets (`objective.type: em`, Seeger 2008, Sec. 7.4.2); the M-step runs "
    "`objective.newton`.  Keys, defaults and bounds: `EMOptions`.",
    [Part(EMOptions, skip=("newton",))],
    docs={"max_iter": "maximal EM iterations",
          "rtol": "stop when the relative change of the pseudo-target log-likelihood is below"},
)

_LEARN = (
    ("learn_max_iter",
     option(100, kind="int", minimum=1,
            doc="iterations of the outer projected L-BFGS (gpmodels.optimize) learning the hyperparameters")),
    ("learn_tol",
     option(1e-8, kind="float", minimum=0.0, doc="outer tolerance of the learning (relative criterion decrease)")),
)

LaplaceSpec = options_section(
    "LaplaceSpec",
    "Laplace marginal likelihood (`objective.type: laplace`; R&W Alg. 3.1-3.4, 5.1).  Keys, defaults "
    "and bounds: `LaplaceOptions` (its probe seed is the spec's `seed`), and the learning's `learn_*`.",
    [Part(LaplaceOptions, skip=("seed", "newton"))],
    extra=_LEARN,
    docs={"path": "`exact` (Cholesky) or `mvm` (CG, Lanczos log-determinant, Hutchinson traces)",
          "n_probes": "mvm: Hutchinson / Lanczos probes (seeded by the spec's `seed`)",
          "cg_max_iter": "mvm: maximal CG steps", "cg_tol": "mvm: CG relative residual tolerance"},
)

VBSpec = options_section(
    "VBSpec",
    "Variational bound φ_VB (`objective.type: vb` and `mlm`, without `model.kernels`; Nickisch & Seeger "
    "2009).  Keys, defaults and bounds: `VBOptions`, and the learning's `learn_*`.",
    [Part(VBOptions, skip=("newton",))],
    extra=_LEARN,
    docs={"max_outer": "maximal double-loop iterations", "tol": "double loop: relative tolerance on φ"},
)

MKLSpec = options_section(
    "MKLSpec",
    "Kernel-weight learning (`objective.type: mkl`, `joint_map`, and `vb` / `mlm` with `model.kernels`; "
    "Nickisch & Seeger 2011); the criterion is the objective type.  Keys, defaults and bounds: `MKLOptions`.",
    [Part(MKLOptions, skip=("criterion",))],
    extra=(
        (
            "solver",
            option(
                None,
                kind="str",
                choices=SOLVERS,
                doc="`algorithm1` (Nickisch & Seeger, the default), `alternating`; `lbfgs` (the outer projected L-BFGS "
                    "of gpmodels.optimize on the criterion)",
            ),
        ),
    ),
    docs={"lam": "weight λ of the penalty λ ||θ||_p^p", "p": "the norm p >= 1", "jitter": "jitter added to K_θ",
          "max_iter": "maximal outer iterations", "tol": "stop when the relative decrease of the criterion is below",
          "grad_tol": "... and the gradient is below", "inner_newton": "Algorithm 1: Newton steps in u per iteration",
          "inner_max": "alternating: Newton steps per block", "max_log_step": "cap on |Δ log θ| per step",
          "time_limit": "time limit in seconds (`.inf`: none)"},
)


def _moved_learning_key(key: str):
    def where(data) -> tuple:
        t = data.get("type", "map")
        if t == "laplace":
            return (f"laplace.learn_{key}",)
        if t in ("vb", "mlm"):
            return f"vb.learn_{key}", f"mkl.{key}"
        if t in ("mkl", "joint_map"):
            return (f"mkl.{key}",)
        return f"laplace.learn_{key}", f"vb.learn_{key}", f"mkl.{key}"

    return where


#: objective keys that moved into the sub-sections (old key -> new path under `objective`)
OBJECTIVE_MOVED_KEYS = {
    "k1": "newton.max_iter",
    "k2": "newton.cg_max_iter",
    **{
        k: f"newton.{k}"
        for k in ("grad_tol", "phi_rtol", "cg_tol", "cg_forcing", "preconditioner", "precond_rank")
    },
    "method": "solver",
    "em_max_iter": "em.max_iter",
    "em_rtol": "em.rtol",
    "path": "laplace.path",
    "n_probes": "laplace.n_probes",
    "lam": "mkl.lam",
    "p": "mkl.p",
    "max_iter": _moved_learning_key("max_iter"),
    "tol": _moved_learning_key("tol"),
}


@attrs.frozen
class ObjectiveSpec(Node):
    """What is optimised, and the settings of each objective in its own sub-section, derived from its
    options class: `newton` (MAP fits), `em`, `cv` (with `cv.newton`, `cv.outer`), `laplace`, `vb`, `mkl`,
    `crammer_singer`, `hm3`."""

    MOVED_KEYS = OBJECTIVE_MOVED_KEYS

    type: str = option(
        "map",
        kind="str",
        choices=OBJECTIVES,
        doc="`map`: MAP fit at the given hyperparameters (section `newton`); `laplace`: Laplace MLM "
        "(`laplace`); `vb`: variational bound, `mlm`: Gaussian marginal likelihood (`vb`); `mkl`, "
        "`joint_map`: kernel-weight criteria (Nickisch & Seeger 2011; `mkl`); `crammer_singer`, "
        "`hm3`: max-margin baselines (their sections); `em`: MAP fit with uncertain targets by EM "
        "(`em`, needs `data.pseudo_targets`); `cv`: learn the hyperparameters by the CV criterion "
        "Ψ (`cv`), then the MAP fit (`newton`); `one_vs_rest`: C binary softmax models (class c "
        "against the rest), each with its own hyperparameters learned by Ψ (`cv`; with `learn: "
        "false` fitted at the given ones), combined by the largest P_c(+1|x) (Sec. 6.2)",
    )
    solver: str = option(
        "newton-cg",
        kind="str",
        choices=SOLVER_NAMES,
        doc="the inner MAP solver of the fits (and the CV refits): `newton-cg` (Alg. 1) or `exact` Newton (App. C, "
        "flat prior, O(n^3 C))",
    )
    learn: bool = option(
        True,
        kind="bool",
        doc="laplace/vb/mlm/mkl/joint_map/one_vs_rest: learn the hyperparameters "
        "(false: evaluate the criterion, or fit, at the given ones)",
    )
    newton: NewtonSpec = option(NewtonSpec, kind="node", node=NewtonSpec, doc="Newton–CG of the MAP fit")
    em: EMSpec = option(EMSpec, kind="node", node=EMSpec, doc="settings of `type: em`")
    cv: CVSpec = option(CVSpec, kind="node", node=CVSpec, doc="settings of `type: cv` and `type: one_vs_rest`")
    laplace: LaplaceSpec = option(LaplaceSpec, kind="node", node=LaplaceSpec, doc="settings of `type: laplace`")
    vb: VBSpec = option(VBSpec, kind="node", node=VBSpec, doc="settings of `type: vb` and `type: mlm`")
    mkl: MKLSpec = option(MKLSpec, kind="node", node=MKLSpec,
                          doc="settings of `type: mkl`, `joint_map` (and `vb` / `mlm` with `model.kernels`)")
    crammer_singer: CrammerSingerSpec = option(CrammerSingerSpec, kind="node", node=CrammerSingerSpec,
                                               doc="settings of `type: crammer_singer`")
    hm3: HM3Spec = option(HM3Spec, kind="node", node=HM3Spec, doc="settings of `type: hm3`")

    def check(self, path):
        for name, types in SECTION_TYPES.items():
            section = getattr(self, name)
            if self.type not in types and section != type(section)():
                raise SpecError(
                    f"holds settings of `type: {' / '.join(types)}`; this objective is {self.type!r} "
                    f"(drop the section or change `type`)",
                    f"{path}.{name}" if path else name,
                )


#: the objective types that use each sub-section of `objective` (giving another type's settings is an error)
SECTION_TYPES = {"newton": ("map", "em", "cv", "one_vs_rest"), "em": ("em",), "cv": ("cv", "one_vs_rest"),
                 "laplace": ("laplace",), "vb": ("vb", "mlm"), "mkl": ("mkl", "joint_map", "vb", "mlm"),
                 "crammer_singer": ("crammer_singer",), "hm3": ("hm3",)}


@attrs.frozen
class EvaluationSpec(Node):
    """Scores computed on the test set."""

    error_reject: tuple = option((0.0, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35), kind="list[float]", minimum=0.0,
                                 maximum=0.99, doc="rejection fractions of the error-reject curve")
    train_scores: bool = option(False, kind="bool", doc="also score the training set")
    decision: str = option(
        "both",
        kind="str",
        choices=DECISIONS,
        doc="with a class tree: score pacc / taxo-loss with the `argmax` rule, with each score's "
        "Bayes rule (`expected_loss`, Sec. 6.1), or `both`",
    )
    predictive: str = option(
        "plugin",
        kind="str",
        choices=PREDICTIVES,
        doc="test probabilities: `plugin` = the likelihood at the latent mean u_* = K̃_{*,.} α̂; `laplace` = "
        "averaged over the Laplace latent predictive N(μ_*, Σ_*) (R&W eq. 3.40, 3.43) by seeded Monte Carlo "
        "(objectives `map` and `cv`, likelihoods softmax and logistic)",
    )
    predictive_latent: str = option(
        "exact",
        kind="str",
        choices=PREDICTIVE_METHODS,
        doc="`laplace` predictive: Σ_* by batched CG (`exact`) or a rank-`predictive_rank` Lanczos "
        "basis (`lanczos`, LOVE; over-estimates Σ_*, cheaper for many test points)",
    )
    predictive_rank: int = option(256, kind="int", minimum=1, maximum=MAX_SIZE,
                                  doc="`laplace` predictive with `lanczos`: the Lanczos rank")
    predictive_samples: int = option(2000, kind="int", minimum=1, maximum=MAX_SIZE,
                                     doc="`laplace` predictive: Monte Carlo samples per test point (seeded by `seed`)")


@attrs.frozen
class OutputSpec(Node):
    """Where reports go."""

    dir: str = option("runs/{name}", kind="str", doc="report folder; `{name}` is replaced by the spec's name")


#: a Dask scheduler address: ``tcp://host:8786`` (or tls://, ucx://, inproc://)
SCHEDULER_PATTERN = re.compile(r"^(tcp|tls|ucx|inproc)://[^\s/]+$")


@attrs.frozen
class EngineSpec(Node):
    """Where independent work (CV folds, one-vs-rest models, study rows) runs: sized from the cores
    (`auto`), in this process, on worker processes, or on a Dask cluster (`pip install gpmodels[dask]`)."""

    type: str = option("auto", kind="str", choices=ENGINE_TYPES,
                       doc="`auto`: workers and BLAS threads sized from the usable cores and the memory; `local`: "
                       "this process (`n_workers` threads); `processes`: worker processes; `dask`: a "
                       "dask.distributed cluster (CLI `--scheduler` implies it)")
    n_workers: int | None = option(None, kind="int", minimum=1, maximum=1024,
                                   doc="workers: threads (`local`), processes (`processes`), LocalCluster workers "
                                   "(`dask`); null: 1 for `local`, else the cores")
    blas_threads: int | None = option(None, kind="int", minimum=1, maximum=1024,
                                      doc="BLAS threads of each worker (null: the cores over the workers)")
    cores: int | None = option(None, kind="int", minimum=1, maximum=65536,
                               doc="cores to use (null: those this process may run on, `os.sched_getaffinity`)")
    memory_gb: float | None = option(None, kind="float", exclusive_minimum=0.0, maximum=1_048_576.0,
                                     doc="`auto`: memory the workers may take together (null: 80 % of the "
                                     "available memory)")
    scheduler: str | None = option(None, kind="str", allowed="null or tcp://host:port",
                                   doc="address of a running `dask scheduler`; null starts a LocalCluster for the run")
    threads_per_worker: int = option(1, kind="int", minimum=1, maximum=1024, doc="LocalCluster: threads per worker")
    memory_limit: str = option("auto", kind="str", doc="LocalCluster: memory per worker (`4GiB`, `auto`)")
    processes: bool = option(True, kind="bool", doc="LocalCluster: workers are processes (false: threads)")
    distribute: str = option("gram", kind="str", choices=DISTRIBUTE_MODES,
                             doc="`gram`: kernel matrices held in row blocks on the workers; `tasks`: CV folds, "
                             "one-vs-rest models and study rows as parallel tasks")
    block_rows: int | None = option(None, kind="int", minimum=1,
                                    doc="rows of one held kernel-matrix block (null: n over the worker threads)")

    def check(self, path):
        if self.scheduler is not None and not SCHEDULER_PATTERN.match(self.scheduler):
            raise SpecError(f"must be a scheduler address like tcp://host:8786; got {shown(self.scheduler)}",
                            f"{path}.scheduler" if path else "scheduler")
        if self.scheduler is not None and self.type != "dask":
            raise SpecError("a scheduler address needs `type: dask`", f"{path}.type" if path else "type")


@attrs.frozen
class Spec(Node):
    """A model spec: data, model, objective, evaluation and output."""

    name: str = option(kind="str", doc="the run's name")
    description: str | None = option(None, kind="str", doc="free text")
    seed: int = option(0, kind="int", minimum=0, doc="seed of every random choice (splits, subsamples)")
    data: DataSpec = option(kind="node", node=DataSpec, doc="data")
    model: ModelSpec = option(kind="node", node=ModelSpec, doc="model")
    objective: ObjectiveSpec = option(ObjectiveSpec, kind="node", node=ObjectiveSpec, doc="objective")
    evaluation: EvaluationSpec = option(EvaluationSpec, kind="node", node=EvaluationSpec, doc="evaluation")
    output: OutputSpec = option(OutputSpec, kind="node", node=OutputSpec, doc="output")
    engine: EngineSpec = option(EngineSpec, kind="node", node=EngineSpec, doc="where the work runs (issue 13)")

    def check(self, path):
        check_name(self.name, "name")
        if self.objective.solver == "exact" and self.model.builtin_prior and self.model.prior != "independent":
            raise SpecError("exact Newton needs the independent (flat) prior", "objective.solver")
        if self.objective.type == "em" and self.data.pseudo_targets is None:
            raise SpecError("objective type 'em' needs `data.pseudo_targets`", "objective.type")
        if self.data.pseudo_targets is not None and self.objective.type != "em":
            raise SpecError(f"pseudo-targets are fitted by `objective.type: em`; got {self.objective.type!r}",
                            "data.pseudo_targets")
        if self.objective.type == "em" and self.objective.solver != "newton-cg":
            raise SpecError("the EM M-step runs Newton-CG", "objective.solver")
        if self.objective.type in ("cv", "one_vs_rest") and self.objective.cv.learn_sigma2 and self.model.sigma2 <= 0:
            raise SpecError("learning σ² needs a starting `model.sigma2` > 0", "objective.cv.learn_sigma2")
        if self.objective.type == "one_vs_rest":
            check_one_vs_rest(self)
        check_unifying(self)
        check_predictive(self)


def check_predictive(spec: Spec) -> None:
    """`evaluation.predictive: laplace` needs a MAP model whose likelihood has a latent predictive here."""
    if spec.evaluation.predictive != "laplace":
        return
    if spec.objective.type not in ("map", "cv"):
        raise SpecError(f"the Laplace predictive is computed for objectives map and cv; got objective "
                        f"{spec.objective.type!r} (use `predictive: plugin`)", "evaluation.predictive")
    if spec.data.task != "classification" or spec.model.likelihood not in ("softmax", "logistic"):
        raise SpecError(f"the Laplace predictive averages the softmax or logistic likelihood; got likelihood "
                        f"{spec.model.likelihood!r} (use `predictive: plugin`)", "evaluation.predictive")


def check_name(name: str, key: str) -> None:
    """``name`` is a safe folder name (``NAME_RULE``), else SpecError naming ``key``."""
    if not NAME_PATTERN.match(name) or ".." in name:
        raise SpecError(f"must be a name of {NAME_RULE}; got {shown(name)}", key)


def check_one_vs_rest(spec: Spec) -> None:
    """Cross-key rules of `objective.type: one_vs_rest`: binary softmax models of the flat prior."""
    m, d = spec.model, spec.data
    if m.prior != "independent":
        raise SpecError(f"one-vs-rest builds binary models of the independent prior; got {m.prior!r}", "model.prior")
    if m.likelihood != "softmax":
        raise SpecError(f"one-vs-rest fits binary softmax models (C = 2); got likelihood {m.likelihood!r}",
                        "model.likelihood")
    if m.kernels is not None:
        raise SpecError("one-vs-rest takes one `kernel`, not a kernel combination", "model.kernels")
    if m.sharing in ("level", "subtree"):
        raise SpecError(f"a binary task has no class tree to share over: use tied, semi or separate; got {m.sharing!r}",
                        "model.sharing")
    groups = 1 if m.sharing == "tied" else 2
    if isinstance(m.variance, tuple) and len(m.variance) != groups:
        raise SpecError(
            f"a one-vs-rest model has 2 classes (c and the rest), so {groups} variance group(s) with "
            f"sharing {m.sharing!r}: give one number or a list of {groups}; got {len(m.variance)} values",
            "model.variance",
        )
    if d.task != "classification" or d.positive_class is not None:
        raise SpecError(
            "one-vs-rest is for multiclass classification; drop `positive_class` (it makes one binary task)",
            "data.positive_class" if d.positive_class is not None else "data.task",
        )


def check_unifying(spec: Spec) -> None:
    """Cross-key rules of the unifying-paper objectives and the single-latent likelihoods."""
    m, o, d = spec.model, spec.objective, spec.data
    lik = m.likelihood
    if d.task == "regression" and lik not in REGRESSION_LIKELIHOODS:
        raise SpecError(f"a regression task needs one of {REGRESSION_LIKELIHOODS}; got {lik!r}", "model.likelihood")
    if d.task == "classification" and lik in REGRESSION_LIKELIHOODS:
        raise SpecError(f"likelihood {lik!r} is for regression; set data.task: regression", "model.likelihood")
    if m.kernels is not None and m.prior != "independent":
        raise SpecError(f"kernel combinations build independent GPs; prior {m.prior!r} takes one `kernel`",
                        "model.kernels")
    if m.builtin_prior and m.prior != "independent" and lik != "softmax":
        raise SpecError(f"prior {m.prior!r} couples the C class functions of the softmax; got likelihood {lik!r}",
                        "model.prior")
    if m.kernels is not None and lik == "softmax":
        raise SpecError(
            "kernel combinations are for a single latent function (logistic, hinge, gaussian, laplace, student_t)",
            "model.kernels",
        )
    t = o.type
    if t == "laplace" and lik in ("hinge", "laplace"):
        raise SpecError(f"the Laplace approximation needs a smooth, normalised likelihood; got {lik!r} (use vb)",
                        "model.likelihood")
    if t in ("vb",) and lik in ("softmax", "hinge"):
        raise SpecError(f"VB needs a super-Gaussian likelihood (logistic, gaussian, laplace, student_t); got {lik!r}",
                        "model.likelihood")
    if t == "mlm" and lik != "gaussian":
        raise SpecError(f"`mlm` is the Gaussian marginal likelihood; got likelihood {lik!r} (use vb or laplace)",
                        "model.likelihood")
    if t in ("mkl", "joint_map") and m.kernels is None:
        raise SpecError(f"objective {t!r} learns kernel weights: give model.kernels", "model.kernels")
    if o.mkl.solver in ("algorithm1", "alternating") and (m.kernels is None or t in ("map", "laplace")):
        raise SpecError(f"solver {o.mkl.solver!r} learns the weights of model.kernels with mkl, joint_map, mlm or vb",
                        "objective.mkl.solver")
