"""``GPClassifier`` and the driver's model folders: ``save`` writes one (:func:`save_classifier`),
:func:`~gpmodels.estimators.loading.load_classifier` reads one.

A model folder (:mod:`gpmodels.persistence`) holds ``model.npz`` (the training inputs, α̂, the class
names, the learned hyperparameters θ and the class tree of an ANOVA prior) and ``spec.resolved.yaml``,
whose ``model`` section says how to rebuild the operator; ``gpmodels predict`` and
:func:`gpmodels.driver.saved.load_model` read it, and so does
:func:`~gpmodels.estimators.loading.load_classifier`.  A prior is written as a spec ``model`` section
when the spec language names it: the independent and ANOVA priors with the softmax likelihood, over
any kernel that declares its section (``Kernel.spec_section``: rbf, ard, matern(_ard),
rational_quadratic(_ard), constant, white, linear, polynomial, and sums and products of them).  A
scikit-learn kernel is saved as its native kernel at its values; the spec has no bounds, so
parameters the scikit-learn kernel held "fixed" are stored as values of the rebuilt kernel
(:func:`folder_theta`), and the loaded estimator's kernel has every parameter free.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import yaml

from gpmodels.data.labels import InputFormat
from gpmodels.driver.build import build_prior
from gpmodels.driver.loader import spec_from_dict
from gpmodels.driver.output import folder_lock
from gpmodels.errors import InputError
from gpmodels.estimators._common import check_fitted
from gpmodels.kernels.factory import make_kernel
from gpmodels.persistence import SPEC_FILE, save_map_model
from gpmodels.priors.anova import SPEC_SHARING, ANOVAPrior
from gpmodels.priors.independent import IndependentGP
from gpmodels.safe_write import write_new

__all__ = ["save_classifier", "model_section", "folder_theta", "spec_name", "label_values"]

#: (node variance sharing, node kernel sharing) of an ANOVA prior -> the spec's model.sharing
_ANOVA_SHARING = {value: key for key, value in SPEC_SHARING.items()}
#: the kernel names a model folder's spec may hold (with `sum` and `product` of them)
SPEC_KERNELS = (
    "rbf",
    "ard",
    "matern",
    "matern_ard",
    "rational_quadratic",
    "rational_quadratic_ard",
    "constant",
    "white",
    "linear",
    "polynomial",
)
_REPRESENTATION_KEYS = ("kind", "memory_mb", "memory_gb", "dtype", "allow_lowrank", "blocked_max_n", "rank", "tol")


def _kernel_section(kernel) -> dict:
    section = kernel.spec_section()
    if section is None:
        raise InputError(
            f"a model folder names its kernel in the spec language ({', '.join(SPEC_KERNELS)}, and "
            f"sums and products of them); {kernel!r} has no spec name: pickle the estimator instead"
        )
    return section


def _variance(value):
    return float(value) if np.ndim(value) == 0 else [float(v) for v in np.ravel(value)]


def model_section(prior, likelihood) -> tuple[dict, object]:
    """(the spec's ``model`` section, the class tree or None) of a prior and likelihood, or an InputError
    naming what a model folder cannot express."""
    if likelihood.spec_name != "softmax":
        raise InputError(f"a GPClassifier model folder holds a softmax model; the likelihood is {likelihood!r}")
    if getattr(prior, "learn_sigma2", False):
        raise InputError(
            "a model folder's spec has no learned intercept variance (learn_sigma2); pickle the estimator instead"
        )
    section = {"likelihood": "softmax", "kappa": float(likelihood.kappa)}
    if isinstance(prior, IndependentGP) and prior.sharing is not None:
        section.update(prior="independent", sharing=prior.sharing)
        tree = None
    elif isinstance(prior, ANOVAPrior):
        key = (
            prior.sharing,
            None
            if prior.kernel_sharing in (None, prior.sharing) and prior.sharing in ("level", "subtree")
            else (prior.kernel_sharing or prior.sharing),
        )
        if key not in _ANOVA_SHARING:
            raise InputError(
                f"an ANOVA prior with sharing {prior.sharing!r} and kernel_sharing "
                f"{prior.kernel_sharing!r} has no spec form (model.sharing: {sorted(SPEC_SHARING)})"
            )
        section.update(prior="anova", sharing=_ANOVA_SHARING[key])
        tree = prior.tree
    else:
        raise InputError(
            f"a model folder's spec names the independent (with a sharing mode) and ANOVA priors; "
            f"{type(prior).__name__} has no spec form: pickle the estimator instead"
        )
    rep = prior.representation
    section.update(
        kernel=_kernel_section(prior.kernel),
        variance=_variance(prior.variance),
        sigma2=float(prior.sigma2),
        representation={k: getattr(rep, k) for k in _REPRESENTATION_KEYS if getattr(rep, k) is not None},
    )
    return section, tree


def folder_theta(spec: dict, learned, X, n_classes: int, tree=None) -> np.ndarray:
    """θ for the operator that the folder's ``spec`` (a plain dict) rebuilds on X: the learned θ of ``learned`` (a
    LearnedPrior) when the section's kernel has the same parameters as the prior's kernel; else (a kernel
    holding some parameters fixed, as a scikit-learn kernel's "fixed" bounds do) the rebuilt operator's θ,
    whose fixed entries are the values the section records, with the learned values put in by name."""
    kernel = learned.prior.kernel
    section = dict(kernel.spec_section())
    if make_kernel(section.pop("type"), X=X, **section).param_names == kernel.param_names:
        return np.asarray(learned.theta)
    op = build_prior(spec_from_dict(spec).model, X, tree=tree).operator(X, n_classes)
    names = list(op.param_names)
    missing = [n for n in learned.names if n not in names]
    if missing:
        raise InputError(
            f"the model folder's kernel has no hyperparameters {missing[:4]} of {kernel!r}: pickle the "
            "estimator instead"
        )
    theta = np.array(op.params, dtype=float)
    theta[[names.index(n) for n in learned.names]] = learned.theta
    return theta


def spec_name(folder_name: str) -> str:
    """The spec's ``name`` for a model folder of any name the file system allows (``my model``,
    ``v1.0+gpu``, ``ünï``): the folder name with every character outside the spec's name rule
    (:data:`~gpmodels.driver.sections.spec.NAME_RULE`) replaced by ``_``; the folder keeps its own name."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", folder_name).lstrip(".").replace("..", "_")[:100]
    return name or "gpclassifier"


def label_values(labels) -> np.ndarray:
    """The classes as an array of their own type, so a model folder gives them back exactly: integers of
    any width (uint64, beyond 2^53), floats, bools and text ("01" and "1" distinct); labels numpy holds
    only as Python objects (mixed types, integers beyond 64 bits) are refused."""
    labels = np.asarray(labels)
    if labels.dtype.kind == "O":
        if all(isinstance(v, str) for v in labels):
            return labels.astype(str)
        raise InputError(
            "a model folder stores the classes as one array of integers, floats, bools or text; the classes "
            f"are Python objects of the types {sorted({type(v).__name__ for v in labels})}: pickle the "
            "estimator instead"
        )
    if labels.dtype.kind not in "iufbU":
        raise InputError(f"a model folder cannot store classes of dtype {labels.dtype}: pickle the estimator instead")
    return labels


def save_classifier(est, path) -> Path:
    """Write the model folder ``path`` of a fitted GPClassifier (module docstring); returns the folder."""
    check_fitted(est)
    learned = est.kernel_
    model, tree = model_section(learned.prior, est.model_.likelihood)
    order = np.argsort(est.model_class_order_)  # operator column j holds class classes_[order[j]]
    names = [str(c) for c in est.classes_[order]]
    if len(set(names)) != len(names):
        raise InputError(f"a model folder names the classes as text, and {list(est.classes_)} are not distinct as text")
    folder = Path(path)
    spec = {
        "name": spec_name(folder.name),
        "data": {"path": "(fitted by GPClassifier)", "test": "split"},
        "model": model,
        "objective": {"type": "map"},
    }
    theta = folder_theta(spec, learned, est.X_train_, len(names), tree)
    labels = label_values(est.classes_[order])
    with folder_lock(folder, "the model folder"):
        save_map_model(
            folder,
            est.X_train_,
            est.alpha_,
            names,
            None,
            theta=theta,
            likelihood_theta=est.model_.likelihood.params if est.model_.likelihood.params.size else None,
            tree=tree,
            labels=labels,
            inputs=InputFormat(label_kind="number" if labels.dtype.kind in "iuf" else "text"),
        )
        write_new(folder, SPEC_FILE, yaml.safe_dump(spec, sort_keys=False))
    return folder
