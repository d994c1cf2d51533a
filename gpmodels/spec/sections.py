"""The sections of a model spec.  ``docs/specs.md`` is generated from these declarations."""

from __future__ import annotations

import attrs

from ..data.datasets import NAMED_DATASETS
from ..data.scaling import SCALINGS
from ..errors import SpecError
from ..kernels.representations import REPRESENTATION_KINDS
from ..operators.blockdiag import SHARING_MODES
from .schema import Node, option

__all__ = ["Spec", "DataSpec", "ModelSpec", "KernelSpec", "RepresentationSpec", "ObjectiveSpec", "CVSpec",
           "EvaluationSpec", "OutputSpec", "KERNEL_TYPES", "KERNEL_KEYS"]

KERNEL_TYPES = ("rbf", "ard", "linear", "polynomial", "precomputed")
#: keys each kernel type uses (besides ``type``)
KERNEL_KEYS = {
    "rbf": ("w",),
    "ard": ("w",),
    "linear": (),
    "polynomial": ("degree", "scale", "offset"),
    "precomputed": ("gram",),
}


@attrs.frozen
class DataSpec(Node):
    """Where the data come from, how the test set is formed and how inputs are scaled."""

    dataset: str | None = option(None, kind="str", choices=NAMED_DATASETS,
                                 doc="a named data set under the data root (give this or `path`)")
    path: str | None = option(None, kind="str", doc="a data file: .npz with arrays X, y, or svmlight/libsvm text")
    test_path: str | None = option(None, kind="str", doc="test file for `path` (same format) when `test` is `given`")
    root: str | None = option(None, kind="str",
                              doc="data root for `dataset` (default: $GPMODELS_DATA, ./data, ../shared/data)")
    subset: str | None = option(None, kind="str", choices=("small",),
                                doc="news20 only: `small` uses subset_small.npz (2000 train / 1000 test)")
    test: str = option("given", kind="str", choices=("given", "split"),
                       doc="`given`: the data set's test set; `split`: a seeded split of the training data")
    test_fraction: float = option(0.3, kind="float", exclusive_minimum=0.0, maximum=0.95,
                                  doc="fraction held out when `test` is `split`")
    scaling: str = option("none", kind="str", choices=SCALINGS,
                          doc="feature scaling fitted on the training inputs")
    max_train: int | None = option(None, kind="int", minimum=2,
                                   doc="keep a seeded stratified subsample of this many training points")
    max_test: int | None = option(None, kind="int", minimum=1,
                                  doc="keep a seeded stratified subsample of this many test points")

    def check(self, path):
        if (self.dataset is None) == (self.path is None):
            raise SpecError("give exactly one of `dataset` (a named set) or `path` (a file)", f"{path}.dataset")
        if self.path is not None and self.test == "given" and self.test_path is None:
            raise SpecError("`test: given` with a `path` needs `test_path`; or use `test: split`", f"{path}.test_path")
        if self.test_path is not None and self.path is None:
            raise SpecError("`test_path` goes with `path`", f"{path}.test_path")


@attrs.frozen
class KernelSpec(Node):
    """The covariance shape M(x, x'); the variance v belongs to the model (K = v M)."""

    type: str = option(kind="str", choices=KERNEL_TYPES, doc="covariance function")
    w: object = option(None, kind="float|auto|list[float]", exclusive_minimum=0.0,
                       doc="rbf/ard: inverse squared length-scale(s); `auto` = 1 / Σ_j Var[x_j] of the training inputs")
    degree: int | None = option(None, kind="int", minimum=1, doc="polynomial: degree d of (scale x·x' + offset)^d")
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

    kind: str = option("auto", kind="str", choices=REPRESENTATION_KINDS,
                       doc="`stored` n x n in memory; `blocked` on the fly; `features` linear X X^T; `lowrank` ICF; `auto` chooses")
    memory_mb: float = option(256.0, kind="float", exclusive_minimum=0.0, doc="memory bound of one on-the-fly block")
    stored_max_mb: float = option(4096.0, kind="float", exclusive_minimum=0.0,
                                  doc="`auto` stores a kernel matrix up to this size, else blocks it")
    rank: int = option(200, kind="int", minimum=1, doc="lowrank: maximal rank of the incomplete Cholesky")
    tol: float = option(1e-8, kind="float", minimum=0.0, doc="lowrank: stop when the residual diagonal is below tol x max")


@attrs.frozen
class ModelSpec(Node):
    """Prior, kernel, sharing, likelihood and intercept."""

    prior: str = option("independent", kind="str", choices=("independent",), doc="the prior over the class functions")
    kernel: KernelSpec = option(kind="node", node=KernelSpec, doc="the covariance shape")
    sharing: str = option("separate", kind="str", choices=SHARING_MODES,
                          doc="`tied`: one M, one v; `semi`: one M, v per class; `separate`: M and v per class")
    variance: object = option(1.0, kind="float|list[float]", exclusive_minimum=0.0,
                              doc="v: one value, or one per variance group")
    sigma2: float = option(0.0, kind="float", minimum=0.0, doc="intercept variance σ² (0: no intercept)")
    likelihood: str = option("softmax", kind="str", choices=("softmax",), doc="the likelihood")
    kappa: float = option(-20.0, kind="float", maximum=-1e-12, doc="softmax: App. B threshold κ on log π")
    representation: RepresentationSpec = option(RepresentationSpec, kind="node", node=RepresentationSpec,
                                                doc="kernel matrix representation")


@attrs.frozen
class CVSpec(Node):
    """Hyperparameter learning by the CV criterion Ψ (`objective.type: cv`; Seeger 2008, Sec. 4, 5.2, 6.2)."""

    folds: int = option(5, kind="int", minimum=2, doc="q: folds of the fixed random partition of the training set")
    partition_seed: int | None = option(None, kind="int", minimum=0, doc="seed of the partition (default: the spec's `seed`)")
    k1: int = option(13, kind="int", minimum=1, doc="learning: maximal Newton iterations of a fold's refit")
    k2: int = option(25, kind="int", minimum=1, doc="learning: maximal CG steps per Newton direction")
    k3: int = option(40, kind="int", minimum=1, doc="learning: maximal CG steps of a fold's gradient accumulation solve")
    grad_tol: float = option(1e-4, kind="float", minimum=0.0,
                             doc="learning: a refit stops when the per-point RMS of ∇_u Φ_J is below")
    accumulation_tol: float = option(1e-6, kind="float", minimum=0.0, doc="relative residual of the accumulation solve")
    fail_tol: float = option(1e-3, kind="float", exclusive_minimum=0.0,
                             doc="an evaluation fails when the mean over folds of the refits' gradient RMS is above")
    max_iter: int = option(30, kind="int", minimum=1, doc="maximal outer (quasi-Newton) iterations")
    max_evaluations: int = option(100, kind="int", minimum=1, doc="maximal Ψ evaluations")
    ftol: float = option(1e-4, kind="float", minimum=0.0,
                         doc="stop when Ψ decreases (or the quasi-Newton model predicts a decrease) by less than this fraction")
    gtol: float = option(1e-6, kind="float", minimum=0.0, doc="stop when max |projected ∇Ψ| <= gtol · max(1, |Ψ|)")
    initial_step: float = option(1.0, kind="float", exclusive_minimum=0.0, doc="max-norm of the first step (log space)")
    max_step: float = option(3.0, kind="float", exclusive_minimum=0.0, doc="max-norm cap of every trial step (log space)")
    memory: int = option(10, kind="int", minimum=1, doc="L-BFGS memory (pairs)")
    lower: float = option(-15.0, kind="float", doc="lower bound of every log-space hyperparameter")
    upper: float = option(15.0, kind="float", doc="upper bound of every log-space hyperparameter")
    learn_sigma2: bool = option(False, kind="bool", doc="also learn the intercept variance σ² (needs `model.sigma2` > 0)")
    multiclass: str = option("joint", kind="str", choices=("joint", "one_vs_rest"),
                             doc="`joint` softmax over all classes, or `one_vs_rest`: C binary models (C = 2), each with its own learned hyperparameters, combined by the largest P_c(+1|x)")
    checkpoint: bool = option(True, kind="bool", doc="write `checkpoint.npz` in the report folder after every successful outer iteration")
    resume: str = option("auto", kind="str", choices=("auto", "never"),
                         doc="`auto`: continue from an existing checkpoint (a corrupt or foreign one is an error); `never`: start afresh")

    def check(self, path):
        if not self.lower < self.upper:
            raise SpecError(f"must be below `upper` ({self.upper}); got {self.lower}", f"{path}.lower")


@attrs.frozen
class ObjectiveSpec(Node):
    """What is optimised and its settings."""

    type: str = option("map", kind="str", choices=("map", "cv"),
                       doc="`map`: MAP fit at the given hyperparameters; `cv`: learn them by the CV criterion (section `cv`), then the MAP fit")
    method: str = option("newton_cg", kind="str", choices=("newton_cg", "exact"),
                         doc="`newton_cg` (Alg. 1) or `exact` Newton (App. C, flat prior, O(n^3 C))")
    k1: int = option(30, kind="int", minimum=1, doc="maximal Newton iterations (`cv`: of the final fit)")
    k2: int = option(50, kind="int", minimum=1, doc="maximal CG steps per Newton direction (`cv`: of the final fit)")
    grad_tol: float = option(1e-6, kind="float", minimum=0.0, doc="stop when the per-point RMS of ∇_u Φ is below")
    phi_rtol: float = option(1e-12, kind="float", minimum=0.0, doc="stop when the relative decrease of Φ is below")
    cg_tol: float = option(1e-10, kind="float", minimum=0.0, doc="CG: relative residual tolerance")
    cg_forcing: float = option(0.1, kind="float", minimum=0.0,
                               doc="CG: stop once the residual fell by this factor from its start (truncated Newton)")
    warm_start: str = option("alpha", kind="str", choices=("alpha", "beta"),
                             doc="CG start: β = D^{-1/2} α (`alpha`) or the last β (`beta`)")
    cv: CVSpec = option(CVSpec, kind="node", node=CVSpec, doc="settings of `type: cv`")


@attrs.frozen
class EvaluationSpec(Node):
    """Scores computed on the test set."""

    error_reject: tuple = option((0.0, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35), kind="list[float]", minimum=0.0,
                                 maximum=0.99, doc="rejection fractions of the error-reject curve")
    train_scores: bool = option(False, kind="bool", doc="also score the training set")


@attrs.frozen
class OutputSpec(Node):
    """Where reports go."""

    dir: str = option("runs/{name}", kind="str", doc="report folder; `{name}` is replaced by the spec's name")


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

    def check(self, path):
        if self.objective.method == "exact" and self.model.prior != "independent":
            raise SpecError("exact Newton needs the independent (flat) prior", "objective.method")
        if self.objective.type == "cv" and self.objective.cv.learn_sigma2 and self.model.sigma2 <= 0:
            raise SpecError("learning σ² needs a starting `model.sigma2` > 0", "objective.cv.learn_sigma2")
        if self.objective.type == "cv" and self.objective.cv.multiclass == "one_vs_rest" and self.model.prior != "independent":
            raise SpecError("one-vs-rest builds binary models of the independent prior", "objective.cv.multiclass")
