"""From a validated spec to the model's objects: kernels, representation, prior, operator, likelihood,
engine configuration, Newton and learning options, the CV partition; and the check that every file a
spec names exists.  The data, class tree and pseudo-targets are built in :mod:`gpmodels.driver.build_data`.

Priors are built through the registry of :mod:`gpmodels.priors.registry`; the four
built-in priors are the registry's own table (builders next to the priors).
"""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np

from gpmodels.data.datasets import DATASET_SUBSETS, read_npy
from gpmodels.data.files import file_format
from gpmodels.data.scaling import auto_rbf_w
from gpmodels.data.splits import kfold_partition
from gpmodels.driver.build_data import data_root, hierarchy_path, missing_tree_error, resolve_path, tree_needed_by
from gpmodels.driver.sections.engine import EngineSpec
from gpmodels.driver.sections.model import KernelSpec, ModelSpec
from gpmodels.driver.sections.objective import ObjectiveSpec
from gpmodels.driver.sections.spec import Spec
from gpmodels.engine.base import Engine, EngineConfig
from gpmodels.errors import DataError, InputError, NumericalError, SpecError
from gpmodels.hierarchy import ClassTree
from gpmodels.inference.cv.learn import LearnOptions
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.map.newton_cg import NewtonOptions
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.factory import KERNEL_PARAMS, STATIONARY_KERNELS, make_kernel
from gpmodels.kernels.representation_base import RepresentationBuilder
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.likelihoods.gaussian import Gaussian
from gpmodels.likelihoods.hinge import SmoothedHinge
from gpmodels.likelihoods.logistic import Logistic
from gpmodels.likelihoods.robust import Laplace, StudentT
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.operators.base import Operator
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.sum import Sum
from gpmodels.priors.registry import PriorContext, import_path_of, resolve_prior

__all__ = [
    "check_files",
    "build_kernel",
    "build_prior",
    "build_representation",
    "build_engine_config",
    "representation_choices",
    "prior_operator",
    "build_likelihood",
    "build_newton_options",
    "model_kernels",
    "resolve_model",
    "n_latent",
    "build_operator",
    "build_binary_operator",
    "build_learn_options",
    "cv_partition",
]


def check_files(spec: Spec, base_dir: Path | None) -> None:
    """Every file the spec names is what it must be (without loading the data), resolved as ``run`` resolves
    it (:func:`~gpmodels.driver.build_data.resolve_path`): the data files, the data root, hierarchy,
    pseudo-target and Gram files.  The report folder is checked by ``output_dir`` / ``study_folder``."""
    d = spec.data
    if d.dataset is not None:
        try:
            root = data_root(spec, base_dir)
        except Exception as exc:  # DataError: say which key
            raise SpecError(str(exc), "data.root" if d.root else "data.dataset") from None
        folder = root / "funcat" / d.dataset if d.dataset.endswith("_FUN") else root / d.dataset
        if not folder.is_dir():
            raise SpecError(f"data set folder {folder} not found", "data.dataset")
        allowed = DATASET_SUBSETS.get(d.dataset, ())
        if d.subset is not None and d.subset not in allowed:
            raise SpecError(
                f"`subset: {d.subset}` is not defined for data set {d.dataset!r}; "
                + (
                    f"its subsets: {', '.join(allowed)}"
                    if allowed
                    else f"only {', '.join(DATASET_SUBSETS)} have subsets"
                ),
                "data.subset",
            )
    else:
        for key, value in (("data.path", d.path), ("data.test_path", d.test_path)):
            if value is not None:
                try:
                    file_format(resolve_path(value, base_dir, key), key)
                except DataError as exc:
                    raise SpecError(str(exc), key) from None
    for key, k in model_kernels(spec.model):
        if k.gram is not None:
            resolve_path(k.gram, base_dir, f"{key}.gram")
    pt = spec.data.pseudo_targets
    if pt is not None and pt.file is not None:
        resolve_path(pt.file, base_dir, "data.pseudo_targets.file")
    if hierarchy_path(spec, base_dir) is None and tree_needed_by(spec) is not None:
        raise missing_tree_error(spec)
    # a user prior by import path: importable and callable, imported only when the user allowed its module
    resolve_prior(spec.model.prior, allow_import=spec.model.allow_import)


def resolve_kernel(k: KernelSpec, X_train) -> KernelSpec:
    """Replace ``w: auto`` by its value on the training inputs (in every term of a sum or product)."""
    if k.terms is not None:
        return attrs.evolve(k, terms=tuple(resolve_kernel(t, X_train) for t in k.terms))
    if k.w == "auto":
        w = auto_rbf_w(X_train)
        return attrs.evolve(k, w=w if k.type in STATIONARY_KERNELS else tuple([w] * X_train.shape[1]))
    return k


def build_kernel(k: KernelSpec, X_train, base_dir: Path | None, key: str = "model.kernel") -> Kernel:
    """The kernel of a ``kernel`` section by :func:`gpmodels.kernels.make_kernel` (``w: auto`` resolved
    on the training inputs, ``gram`` loaded from its .npy file, the ``terms`` of a sum or product built
    the same way); its errors name the key path."""
    k = resolve_kernel(k, X_train)
    if k.terms is not None:
        terms = [build_kernel(t, X_train, base_dir, f"{key}.terms[{i}]") for i, t in enumerate(k.terms)]
        return make_kernel(k.type, terms=terms)
    params = {name: getattr(k, name) for name in KERNEL_PARAMS[k.type] if name != "gram"}
    if k.type == "precomputed":
        params["gram"] = _load_gram(resolve_path(k.gram, base_dir, f"{key}.gram"), f"{key}.gram")
    try:
        kernel = make_kernel(k.type, X=X_train, **params)
    except InputError as exc:
        raise SpecError(str(exc), f"{key}.w" if "w" in params else key) from None
    check_kernel_scale(kernel, X_train, key)
    return kernel


#: the largest kernel diagonal accepted: beyond it products K v overflow float64 for coefficients of order 1e150
MAX_KERNEL_DIAG = 1e150


def check_kernel_scale(kernel: Kernel, X, key: str = "model.kernel") -> None:
    """Refuse a kernel whose matrix overflows on ``X``: K(x, x) non-finite or beyond ``MAX_KERNEL_DIAG``
    (|K(x, x')| <= sqrt(K(x, x) K(x', x')) bounds every entry).  O(n d) on the inputs; the operator is
    not touched, so nothing it caches changes."""
    if X is None or getattr(X, "shape", (0,))[0] == 0:
        return
    if type(kernel).diag is Kernel.diag:  # the generic per-point default: its first point only (O(d))
        X = X[:1]
    with np.errstate(over="ignore", invalid="ignore"):
        d = np.asarray(kernel.diag(X), dtype=np.float64)
    if d.size and not (np.all(np.isfinite(d)) and np.max(np.abs(d)) <= MAX_KERNEL_DIAG):
        raise NumericalError(
            f"{key}: the kernel matrix overflows on the training inputs (K(x, x) is "
            f"{'not finite' if not np.all(np.isfinite(d)) else f'up to {np.max(np.abs(d)):.3g}'} for "
            f"{int(np.sum(~np.isfinite(d) | (np.abs(d) > MAX_KERNEL_DIAG)))} points): scale the inputs (data.scaling: "
            "standard) or choose smaller kernel parameters; a fit on it would be chance-level"
        )


def _load_gram(path: Path, key: str) -> np.ndarray:
    """A precomputed Gram matrix from a .npy file (no pickles, no archives; the shape its header declares
    bounded by the file's size before anything is allocated); errors name ``key``."""
    try:
        return read_npy(path, "Gram matrix")
    except DataError as exc:
        raise SpecError(str(exc), key) from None


def build_representation(m: ModelSpec, engine: Engine | None = None) -> RepresentationBuilder:
    """The kernel-matrix representation of the spec's ``model.representation``; an ``engine`` that
    holds kernel matrices on its workers wraps it (``engine.representation``)."""
    # the section's fields are the config's, one for one
    config = RepresentationConfig(**attrs.asdict(m.representation, recurse=False))
    return config if engine is None else engine.representation(config)


def build_engine_config(e: EngineSpec, scheduler: str | None = None) -> EngineConfig:
    """The ``EngineConfig`` of the spec's ``engine`` section; ``scheduler`` (CLI ``--scheduler``)
    overrides its address and implies ``type: dask``."""
    if scheduler is not None:
        e = attrs.evolve(e, type="dask", scheduler=scheduler)
    return EngineConfig(**attrs.asdict(e, recurse=False))  # the section's fields are the config's, one for one


def build_prior(
    m: ModelSpec, X_train, base_dir: Path | None = None, *, tree: ClassTree | None = None, engine: Engine | None = None
):
    """The prior factory of ``model``: the builder registered under ``model.prior`` (or imported from
    ``package.module:builder``) applied to a :class:`PriorContext`; ``engine`` builds the
    representation when it holds kernel matrices on its workers."""
    builder = resolve_prior(m.prior, allow_import=m.allow_import)
    ctx = PriorContext(
        name=m.prior,
        options=dict(m.prior_options or {}),
        model=m,
        kernel=build_kernel(m.kernel, X_train, base_dir),
        representation=build_representation(m, engine),
        X_train=X_train,
        tree=tree,
        base_dir=base_dir,
    )
    prior = builder(ctx)
    if not callable(getattr(prior, "operator", None)):
        raise SpecError(
            f"the builder of prior {m.prior!r} returned a {type(prior).__name__}; a builder returns a "
            "prior factory, an object with a method operator(X, n_classes) -> Operator",
            "model.prior",
        )
    return prior


def prior_operator(prior, m: ModelSpec, X_train, n_classes: int) -> Operator:
    """``prior.operator(X_train, n_classes)``, checked to be an Operator of the right size."""
    op = prior.operator(X_train, n_classes)
    if not isinstance(op, Operator):
        raise SpecError(
            f"prior {m.prior!r}: operator() returned a {type(op).__name__}, not a gpmodels.operators.Operator",
            "model.prior",
        )
    n = X_train.shape[0]
    if (op.n_points, op.n_classes) != (n, n_classes):
        raise SpecError(
            f"prior {m.prior!r}: operator() returned an operator over {op.n_points} points and "
            f"{op.n_classes} classes; the data need {n} and {n_classes}",
            "model.prior",
        )
    return op


def model_kernels(m: ModelSpec) -> list[tuple[str, KernelSpec]]:
    """(key path, kernel spec) of ``kernel`` or of every entry of ``kernels``."""
    if m.kernels is not None:
        return [(f"model.kernels[{i}]", k) for i, k in enumerate(m.kernels)]
    return [("model.kernel", m.kernel)]


def resolve_model(m: ModelSpec, X_train) -> ModelSpec:
    """``w: auto`` resolved in ``kernel`` or in every entry of ``kernels``; a registered user prior
    replaced by its builder's import path when it has one, so that ``spec.resolved.yaml`` rebuilds
    the model in a process that never registered the name."""
    if not m.builtin_prior and ":" not in m.prior:
        path = import_path_of(resolve_prior(m.prior))
        if path is not None:
            m = attrs.evolve(m, prior=path)
    if m.kernels is not None:
        return attrs.evolve(m, kernels=tuple(resolve_kernel(k, X_train) for k in m.kernels))
    return attrs.evolve(m, kernel=resolve_kernel(m.kernel, X_train))


def n_latent(m: ModelSpec, n_classes: int) -> int:
    """Latent functions the likelihood sees: C for the softmax, 1 otherwise."""
    return n_classes if m.likelihood == "softmax" else 1


def build_operator(
    m: ModelSpec,
    X_train,
    n_classes: int,
    base_dir: Path | None = None,
    tree: ClassTree | None = None,
    engine: Engine | None = None,
    *,
    learn_sigma2: bool = False,
):
    """The prior's operator; with ``kernels`` the Sum K_θ = Σ θ_m K_m of variance-1 components.
    ``learn_sigma2``: the intercept variance σ² is among the operator's hyperparameters."""
    C = n_latent(m, n_classes)
    if m.kernels is None:
        prior = build_prior(m, X_train, base_dir, tree=tree, engine=engine)
        return prior_operator(_learning_sigma2(prior, m) if learn_sigma2 else prior, m, X_train, C)
    rep = build_representation(m, engine)
    ops = [
        BlockDiagonal.from_sharing(X_train, build_kernel(k, X_train, base_dir, key), C, "tied", 1.0, rep)
        for key, k in model_kernels(m)
    ]
    return Sum(ops, m.weights if m.weights is not None else np.ones(len(ops)))


def representation_choices(op) -> list[dict]:
    """What each kernel matrix of ``op`` is held as and why (:class:`RepresentationChoice` dicts),
    walking wrappers (``inner``) and sums (``ops``) down to the block-diagonal operators."""
    found, stack = [], [op]
    while stack:
        o = stack.pop()
        stack.extend(reversed(getattr(o, "ops", ())))
        if getattr(o, "inner", None) is not None:
            stack.append(o.inner)
        for rep in getattr(o, "_rep_list", ()):
            if rep.choice is not None:
                found.append(rep.choice.as_dict() | {"nbytes": int(rep.nbytes)})
    return found


def build_binary_operator(spec: Spec, X_train, base_dir: Path | None = None, engine: Engine | None = None):
    """The operator of every binary task of `objective.type: one_vs_rest` (two classes: c and the
    rest) at the spec's hyperparameters; σ² among them when CV learns it (`objective.cv.learn_sigma2`)."""
    prior = build_prior(spec.model, X_train, base_dir, engine=engine)
    if spec.objective.learn and spec.objective.cv.learn_sigma2:
        prior = _learning_sigma2(prior, spec.model)
    return prior_operator(prior, spec.model, X_train, 2)


def _learning_sigma2(prior, m: ModelSpec):
    """``prior`` with σ² among its hyperparameters (``objective.cv.learn_sigma2``); SpecError for a prior
    without that setting."""
    if not getattr(prior, "can_learn_sigma2", False):  # optional in the prior protocol
        raise SpecError(
            f"prior {m.prior!r} has no `learn_sigma2` setting; learn σ² inside the prior "
            "(e.g. Intercept(op, σ², learn=True)) and drop this key",
            "objective.cv.learn_sigma2",
        )
    return prior.learning_sigma2()


def build_likelihood(m: ModelSpec):
    if m.likelihood == "softmax":
        return Softmax(kappa=m.kappa)
    if m.likelihood == "logistic":
        return Logistic()
    if m.likelihood == "hinge":
        return SmoothedHinge(eps=m.hinge_eps)
    if m.likelihood == "gaussian":
        return Gaussian(noise=m.noise)
    if m.likelihood == "laplace":
        return Laplace(scale=m.scale)
    return StudentT(df=m.df, scale=m.scale, learn_df=m.learn_df)


def build_newton_options(o: ObjectiveSpec) -> NewtonOptions:
    """The MAP fit's ``NewtonOptions`` from ``objective.newton``."""
    return o.newton.options()


def build_learn_options(o: ObjectiveSpec) -> LearnOptions:
    """LearnOptions from the objective section: one Ψ evaluation from ``o.cv`` (its refits from
    ``o.cv.newton``), the outer optimiser from ``o.cv.outer``, the final fit from ``o.newton``; the
    inner solver of both is ``o.solver``."""
    c = o.cv
    cv = c.options(CVOptions, solver=o.solver)
    return LearnOptions(
        cv=cv,
        outer=c.outer.options(),
        final=build_newton_options(o),
        final_solver=o.solver,
        lower=c.lower,
        upper=c.upper,
        inner_tolerances=c.inner_tolerances,
    )


def cv_partition(spec: Spec, y) -> list[np.ndarray]:
    """The fixed, seeded, stratified q-partition of the training set (``objective.cv.folds``)."""
    c = spec.objective.cv
    return kfold_partition(len(y), c.folds, spec.seed if c.partition_seed is None else c.partition_seed, y=y)
