"""What the estimators share: label and feature checks, seeds, kernels by name and the warning classes.

The estimators derive from scikit-learn's ``ClassifierMixin`` and ``BaseEstimator`` and keep their
protocol as it is (``get_params`` / ``set_params`` / ``clone`` / repr); the functions here do the
input checks every estimator does in ``fit`` and ``predict``.  The warning and error classes derive
from both :mod:`gpmodels.errors` and scikit-learn's, so a filter on either class sees them.
"""

from __future__ import annotations

import inspect
import math
import re
import warnings
from typing import ClassVar

import attrs
import numpy as np
from sklearn.exceptions import ConvergenceWarning as _SkConvergenceWarning
from sklearn.exceptions import DataConversionWarning as _SkDataConversionWarning
from sklearn.exceptions import NotFittedError as _SkNotFittedError
from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

from gpmodels import errors
from gpmodels.errors import InputError
from gpmodels.kernels.auto_width import resolve_widths
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.factory import KERNEL_PARAMS, make_kernel
from gpmodels.kernels.sklearn_adapter import from_sklearn, is_sklearn_kernel
from gpmodels.nested_params import NestedParams
from gpmodels.priors.kernel_slot import KernelSlot
from gpmodels.priors.learned import LearnedPrior
from gpmodels.validation import check_features

__all__ = [
    "ConvergenceWarning",
    "DataConversionWarning",
    "NotFittedError",
    "store_params",
    "forward_params",
    "NestedParamsRouting",
    "prior_with_kernel",
    "classifier_tags",
    "check_fitted",
    "record_features",
    "check_X",
    "check_label_types",
    "encode_targets",
    "seed_from",
    "check_positive",
    "kernel_by_name",
    "warn_unconverged",
]


class ConvergenceWarning(errors.ConvergenceWarning, _SkConvergenceWarning):
    """An estimator's fit or learning stopped unconverged (gpmodels' and scikit-learn's warning class)."""


class DataConversionWarning(errors.DataConversionWarning, _SkDataConversionWarning):
    """An estimator converted its input (gpmodels' and scikit-learn's warning class, so that scikit-learn's
    filters, e.g. in ``check_supervised_y_2d``, see it)."""


class NotFittedError(errors.NotFittedError, _SkNotFittedError):
    """An estimator was used before ``fit`` (gpmodels' and scikit-learn's error class)."""


def store_params(est, arguments: dict) -> None:
    """Keep the constructor's arguments (its ``locals()``) unchanged as attributes of the same names, as
    scikit-learn asks (no check or conversion in ``__init__``; ``get_params`` reads them back): one call
    instead of an assignment per parameter."""
    for name in inspect.signature(type(est).__init__).parameters:
        if name != "self":
            setattr(est, name, arguments[name])


def forward_params(est, target, **given):
    """``target(...)`` built from the estimator's parameters that ``target`` takes by the same name (the
    settings an estimator hands on unchanged: solver options, an inner estimator), with ``given`` (values
    the estimator checked, converted or derived) in place of or beside them."""
    takes = inspect.signature(target).parameters
    handed_on = {name: value for name, value in est.get_params(deep=False).items() if name in takes}
    return target(**{**handed_on, **given})


class NestedParamsRouting:
    """Mixin of an estimator (before ``BaseEstimator``): ``set_params`` of nested names (``prior__variance``,
    ``kernel__length_scale``, ``gpclassifier__prior__variance`` from a Pipeline) under a frozen parameter
    object (:class:`~gpmodels.nested_params.NestedParams`) stores the new object that object's
    ``set_params`` returns, since it cannot change in place; a parameter that is None starts from the
    default object of ``nested_defaults``.  Other names go to scikit-learn's ``set_params`` (a scikit-learn
    kernel is set in place, as scikit-learn does), which also refuses unknown names."""

    #: parameter -> factory of the object that nested names under a None value start from
    nested_defaults: ClassVar[dict] = {}

    def set_params(self, **params):
        direct = {k: v for k, v in params.items() if "__" not in k}
        if direct:
            super().set_params(**direct)
        nested: dict[str, dict] = {}
        for key, value in params.items():
            head, sep, rest = key.partition("__")
            if sep:
                nested.setdefault(head, {})[rest] = value
        for head, inner in nested.items():
            value = getattr(self, head, None) if head in self.get_params(deep=False) else None
            if value is None and head in self.nested_defaults:
                value = self.nested_defaults[head]()
            if isinstance(value, NestedParams):
                setattr(self, head, value.set_params(**inner))
            else:
                super().set_params(**{f"{head}__{k}": v for k, v in inner.items()})
        return self


def _estimator_kernel(owner: str, kernel):
    """The ``kernel`` parameter as a gpmodels kernel: a Kernel as is, a scikit-learn kernel mapped."""
    if isinstance(kernel, Kernel):
        return kernel
    if is_sklearn_kernel(kernel):
        return from_sklearn(kernel)
    raise InputError(
        f"The 'kernel' parameter of {owner} must be None (the prior's kernel, else RBF of width 'auto'), a "
        f"gpmodels kernel (gpmodels.RBF(), gpmodels.Matern(length_scale=2.0), ...) or a scikit-learn kernel "
        f"object (sklearn.gaussian_process.kernels.Matern(), 1.0 * RBF(1.0), ...); got {kernel!r} instead"
    )


def prior_with_kernel(owner: str, prior, kernel, X):
    """The prior an estimator fits: ``prior`` with ``kernel`` (its ``kernel=``) in its kernel field, the
    default RBF where neither gives one, and its ``'auto'`` widths set from the training inputs X
    (:mod:`gpmodels.priors.kernel_slot`).  A prior that carries its own kernel and a ``kernel=`` both is a
    conflict, refused with an error naming both."""
    inner = prior.prior if isinstance(prior, LearnedPrior) else prior
    if kernel is not None:
        kernel = _estimator_kernel(owner, kernel)
        if not isinstance(inner, KernelSlot):
            raise InputError(
                f"The 'kernel' parameter of {owner} fills the kernel field of its prior (IndependentGP, "
                f"ANOVAPrior, CoupledPrior); the prior {type(inner).__name__} has none: leave kernel=None "
                "and give that prior its kernel"
            )
        if inner.kernel is not None:
            raise InputError(
                f"{owner} got kernel={kernel!r} and a prior={type(prior).__name__} that carries its own kernel "
                f"{inner.kernel!r}; give the kernel once: kernel= with a prior whose kernel is None (e.g. "
                "IndependentGP(kernel=None, sharing='semi')), or the prior's kernel with kernel=None"
            )
        inner = attrs.evolve(inner, kernel=kernel)
    if isinstance(inner, KernelSlot):
        inner = inner.with_kernel_for(X)
    return attrs.evolve(prior, prior=inner) if isinstance(prior, LearnedPrior) else inner


def classifier_tags(*, multi_label: bool = False, poor_score: bool = False) -> Tags:
    """scikit-learn's tags of our classifiers: sparse and dense 2-D inputs; single-label multi-class,
    or multilabel (indicator matrices, ``multi_label=True``)."""
    return Tags(
        estimator_type="classifier",
        target_tags=TargetTags(required=True, multi_output=multi_label, single_output=not multi_label),
        classifier_tags=ClassifierTags(multi_class=not multi_label, multi_label=multi_label, poor_score=poor_score),
        input_tags=InputTags(sparse=True, two_d_array=True),
    )


def check_fitted(est) -> None:
    if not hasattr(est, "classes_"):
        raise NotFittedError(f"this {type(est).__name__} is not fitted yet; call fit(X, y) first")


def _feature_names(X):
    """The column names of a DataFrame-like X when they are all strings (scikit-learn's rule), else None."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    names = np.asarray(list(columns), dtype=object)
    return names if names.size and all(isinstance(c, str) for c in names) else None


def record_features(est, X_raw, X) -> None:
    """Set ``n_features_in_``, and ``feature_names_in_`` when X (a DataFrame) has string column names."""
    est.n_features_in_ = X.shape[1]
    names = _feature_names(X_raw)
    if names is not None:
        est.feature_names_in_ = names
    else:
        est.__dict__.pop("feature_names_in_", None)


def check_X(est, X):
    """X of ``predict``: checked as in ``fit``, with the width and the feature names seen in ``fit``."""
    names = _feature_names(X)
    fitted = getattr(est, "feature_names_in_", None)
    owner = type(est).__name__
    if fitted is not None and names is not None and not np.array_equal(names, fitted):
        raise InputError(
            f"The feature names of X ({list(names)[:10]}) differ from those seen in fit "
            f"({list(fitted)[:10]}); pass the columns in the order of fit"
        )
    if (fitted is None) != (names is None):
        has, had = ("has", "without") if fitted is None else ("does not have", "with")
        warnings.warn(
            f"X {has} valid feature names, but {owner} was fitted {had} feature names", UserWarning, stacklevel=3
        )
    X = check_features("X", X)
    if X.shape[1] != est.n_features_in_:
        raise InputError(
            f"X has {X.shape[1]} features, but {owner} is expecting {est.n_features_in_} features as input"
        )
    return X


def check_label_types(y) -> None:
    """Refuse labels that are None or that mix strings and numbers (scikit-learn: "Unknown label
    type"), before numpy sorts them (which raises a bare TypeError) or turns the numbers into strings."""
    if isinstance(y, np.ndarray) and y.dtype.kind != "O":
        return
    try:
        flat = np.asarray(y, dtype=object).ravel()
    except (TypeError, ValueError):
        return  # ragged input: the shape checks name it
    kinds = set()
    for j, v in enumerate(flat):
        if v is None:
            raise InputError(f"y contains None (entry {j}); every sample needs a class label")
        if isinstance(v, (str, np.str_)):
            kinds.add("string")
        elif isinstance(v, (bytes, np.bytes_)):
            kinds.add("bytes")
        elif isinstance(v, (bool, np.bool_, int, float, np.integer, np.floating)):
            kinds.add("number")
        elif isinstance(v, (list, tuple, np.ndarray)):
            raise InputError(
                f"Unknown label type: entry {j} of y is a {type(v).__name__} (ragged or nested y); y "
                "must be a rectangular array of numbers or strings"
            )
        else:
            raise InputError(
                f"Unknown label type: label {j} of y is a {type(v).__name__}; class labels must be numbers or strings"
            )
    if len(kinds) > 1:
        mix = " and ".join(sorted(kinds))
        raise InputError(
            f"Unknown label type: y mixes {mix} labels (Mix of label input types ({mix})); use one type of class label"
        )


def encode_targets(y) -> tuple[np.ndarray, np.ndarray]:
    """(classes, codes): the sorted distinct labels of a 1-D y and each sample's index into them."""
    if y is None:
        raise InputError("this estimator requires y to be passed, but the target y is None")
    check_label_types(y)
    try:
        y = np.asarray(y)
    except (TypeError, ValueError) as exc:
        raise InputError(f"y must be a 1-D array of class labels; it cannot be converted to an array ({exc})") from None
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change the shape of y "
            "to (n_samples,), for example using ravel().",
            DataConversionWarning,
            stacklevel=3,
        )
        y = y.ravel()
    if y.ndim != 1:
        raise InputError(f"y must be a 1-D array of class labels; got shape {y.shape}")
    if y.dtype.kind == "O" and y.size and not isinstance(y.flat[0], (str, np.str_, bytes)):
        y = np.asarray(y.tolist())  # numbers only (checked above): a numeric dtype, checked as such below
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            raise InputError("y must not contain NaN or infinity")
        if not np.all(y == np.round(y)):
            raise InputError(
                "Unknown label type: continuous. A classifier needs class labels; y has non-integral "
                "float values (a regression target?)"
            )
    classes, codes = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise InputError(f"a classifier needs at least 2 classes in y; got only one class ({classes[0]!r})")
    return classes, codes.ravel()


def seed_from(owner: str, random_state) -> int:
    """An int seed from ``random_state`` (scikit-learn's convention): an int as is, a numpy Generator or
    RandomState draws one, None draws one from numpy's global generator."""
    if random_state is None:
        return int(np.random.randint(2**31 - 1))
    if isinstance(random_state, (bool, np.bool_)):
        pass
    elif isinstance(random_state, (int, np.integer)) and random_state >= 0:
        return int(random_state)
    elif isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**31 - 1))
    elif isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31 - 1))
    raise InputError(
        f"The 'random_state' parameter of {owner} must be None, a non-negative int, a "
        f"numpy.random.Generator or a numpy.random.RandomState; got {random_state!r} instead"
    )


def check_positive(owner: str, name: str, value) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise InputError(f"The {name!r} parameter of {owner} must be a positive number; got {value!r} instead")
    return float(value)


def kernel_by_name(owner: str, kernel, w, degree, offset, X) -> Kernel:
    """The x-kernel of a max-margin estimator: a :class:`Kernel` passed as is, or built by name through
    :func:`gpmodels.kernels.make_kernel` with the parameters that kernel takes.

    ``'rbf'``: exp(-(w/2)||x - x'||²) (scikit-learn's gamma is w/2), ``w='auto'`` = 1 / Σ_j Var[x_j]
    of the training inputs (Seeger 2008, Sec. 6.2); ``'ard'``: one w per input dimension (a number is
    broadcast); ``'linear'``: xᵀx'; ``'polynomial'``: (xᵀx' + offset)^degree.
    """
    if isinstance(kernel, Kernel):
        return kernel if X is None else resolve_widths(kernel, X)  # a width left 'auto' (gp.RBF()) set from X
    if isinstance(w, str) and w != "auto":
        raise InputError(f"The 'w' parameter of {owner} must be 'auto' or a positive number; got {w!r} instead")
    given = {"w": w, "degree": degree, "offset": offset}
    try:
        takes = KERNEL_PARAMS.get(kernel, ()) if isinstance(kernel, str) else ()
        return make_kernel(kernel, X=X, **{k: v for k, v in given.items() if k in takes})
    except InputError as exc:
        # a kernel class's field error ("RBF.w must be ...") is the estimator's parameter of that name
        field = re.match(r"^\w+\.(\w+) (must .*)$", str(exc), re.S)
        if field and field.group(1) in given:
            raise InputError(
                f"The '{field.group(1)}' parameter of {owner} (for kernel={kernel!r}) {field.group(2)}"
            ) from None
        what = "'kernel'" if not (isinstance(kernel, str) and kernel in KERNEL_PARAMS) else repr(kernel) + " kernel's"
        raise InputError(f"The {what} parameter of {owner}: {exc} (or pass a gpmodels.kernels.Kernel)") from None


def warn_unconverged(result, what: str, hint: str) -> None:
    """A :class:`ConvergenceWarning` when ``result`` (a Newton or an optimiser result) did not converge."""
    if result is None or result.converged:
        return
    message = getattr(result, "message", None) or getattr(getattr(result, "diagnostics", None), "message", "")
    warnings.warn(f"{what} stopped unconverged ({message}); {hint}", ConvergenceWarning, stacklevel=3)
