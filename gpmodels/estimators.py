"""scikit-learn style estimators over the composed models and the max-margin baselines.

``GPClassifier`` composes a prior, a likelihood and an objective; ``CrammerSingerSVC`` wraps the
multiclass SVM of :mod:`gpmodels.baselines.crammer_singer.solver` and ``HM3Classifier`` the hierarchical
multilabel learner of :mod:`gpmodels.baselines.hm3.solver`.  All follow scikit-learn's estimator
conventions: ``__init__`` only stores its arguments, ``fit`` validates and fits, fitted
state ends in ``_``, and ``predict`` / ``predict_proba`` / ``decision_function`` / ``score`` /
``get_params`` / ``set_params`` behave as scikit-learn's do, so the estimators drop into
pipelines and grid searches.  scikit-learn itself is not a dependency: when it is importable the
estimators derive from its ``ClassifierMixin`` and ``BaseEstimator`` (HTML repr, ``set_output``,
metadata routing, ``clone``) and their warnings from its warning classes (``ConvergenceWarning``,
``DataConversionWarning``), so its filters see them; without it the package still imports, the
protocol being implemented here, and the warnings are the plain ones of :mod:`gpmodels.errors`.

Randomness is controlled by ``random_state`` (an int, a numpy Generator or RandomState, or None for
numpy's global generator), as in scikit-learn.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import warnings

import attrs
import numpy as np

from gpmodels.baselines.crammer_singer.solver import CSOptions, fit_crammer_singer
from gpmodels.baselines.hm3.inference import node_max_marginals
from gpmodels.baselines.hm3.solver import HM3Options, fit_hm3
from gpmodels.errors import ConvergenceWarning, DataConversionWarning, InputError, NotFittedError
from gpmodels.hierarchy import ClassTree
from gpmodels.hyperparameters import natural_values
from gpmodels.inference.map.model import MAPModel, fit_map
from gpmodels.inference.map.newton_cg import NewtonOptions
from gpmodels.inference.map.predictive import PREDICTIVE_METHODS, PREDICTIVES, laplace_predict_proba
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.factory import KERNEL_PARAMS, make_kernel
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.priors.independent import IndependentGP
from gpmodels.scoring.multilabel import check_multilabels, micro_prf
from gpmodels.validation import MAX_SIZE, check_features, labels_to_targets

try:  # scikit-learn is optional: its base classes when importable (module docstring)
    from sklearn.base import BaseEstimator as _SkBaseEstimator
    from sklearn.base import ClassifierMixin as _SkClassifierMixin
except ImportError:  # pragma: no cover - exercised by a subprocess test with scikit-learn blocked
    _BASES: tuple = ()
else:
    _BASES = (_SkClassifierMixin, _SkBaseEstimator)

__all__ = ["GPClassifier", "CrammerSingerSVC", "HM3Classifier", "EstimatorMixin", "convergence_warning_class"]


class EstimatorMixin(*_BASES):
    """get_params / set_params / repr / tags following scikit-learn's protocol; on top of scikit-learn's
    ``ClassifierMixin`` and ``BaseEstimator`` when scikit-learn is importable, else standing alone."""

    _estimator_type = "classifier"

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD]

    def get_params(self, deep: bool = True) -> dict:
        out = {}
        for name in self._param_names():
            value = getattr(self, name)
            out[name] = value
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
        return out

    def set_params(self, **params):
        valid = self._param_names()
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in valid:
                raise InputError(f"invalid parameter {name!r} for {type(self).__name__}; valid parameters: {valid}")
            if sub:
                setattr(self, name, _set_nested(type(self).__name__, name, getattr(self, name), sub, value))
            else:
                setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()}
        changed = [f"{k}={v!r}" for k, v in self.get_params(deep=False).items()
                   if not (isinstance(defaults.get(k), type(v)) and defaults.get(k) == v)]
        return f"{type(self).__name__}({', '.join(changed)})"

    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags(multi_class=True, poor_score=False),
                    input_tags=InputTags(sparse=True, two_d_array=True))

    def _check_fitted(self):
        if not hasattr(self, "classes_"):
            raise _not_fitted_error(f"this {type(self).__name__} is not fitted yet; call fit(X, y) first")

    def _set_n_features(self, X_raw, X) -> None:
        """``n_features_in_``, and ``feature_names_in_`` when X (a DataFrame) has string column names."""
        self.n_features_in_ = X.shape[1]
        names = _feature_names(X_raw)
        if names is not None:
            self.feature_names_in_ = names
        else:
            self.__dict__.pop("feature_names_in_", None)

    def _check_X(self, X):
        names = _feature_names(X)
        fitted = getattr(self, "feature_names_in_", None)
        if fitted is not None and names is not None and not np.array_equal(names, fitted):
            raise InputError(f"The feature names of X ({list(names)[:10]}) differ from those seen in fit "
                             f"({list(fitted)[:10]}); pass the columns in the order of fit")
        if (fitted is None) != (names is None):
            has, had = ("has", "without") if fitted is None else ("does not have", "with")
            warnings.warn(f"X {has} valid feature names, but {type(self).__name__} was fitted {had} feature names",
                          UserWarning, stacklevel=3)
        X = check_features("X", X)
        if X.shape[1] != self.n_features_in_:
            raise InputError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        return X

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy of ``predict(X)`` against y (weighted when ``sample_weight`` is given)."""
        y = np.asarray(y)
        correct = (self.predict(X) == y).astype(float)
        return float(np.average(correct, weights=sample_weight))


def _set_nested(owner: str, name: str, obj, sub: str, value):
    """``obj`` with its parameter ``sub`` set (scikit-learn's ``name__sub`` syntax): by the object's
    own ``set_params``, or, for an attrs object (a prior, a kernel), as a copy made by attrs.evolve."""
    if hasattr(obj, "set_params"):
        obj.set_params(**{sub: value})
        return obj
    import attrs

    if obj is None or not attrs.has(type(obj)):
        raise InputError(f"cannot set '{name}__{sub}' of {owner}: the {name!r} parameter is {type(obj).__name__}, "
                         f"which has no parameters to set; set {name!r} itself to a new object instead")
    head, _, rest = sub.partition("__")
    fields = [f.name for f in attrs.fields(type(obj)) if f.init]
    if head not in fields:
        raise InputError(f"invalid parameter '{name}__{head}' for {owner}: {type(obj).__name__} has the "
                         f"parameters {fields}")
    new = _set_nested(owner, f"{name}__{head}", getattr(obj, head), rest, value) if rest else value
    try:
        return attrs.evolve(obj, **{head: new})
    except (TypeError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"cannot set '{name}__{sub}' of {owner} to {value!r}: {exc}") from None


def _feature_names(X):
    """The column names of a DataFrame-like X when they are all strings (scikit-learn's rule), else None."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    names = np.asarray(list(columns), dtype=object)
    return names if names.size and all(isinstance(c, str) for c in names) else None


@functools.lru_cache(maxsize=1)
def convergence_warning_class() -> type:
    """The class of the estimators' convergence warnings: :class:`gpmodels.errors.ConvergenceWarning`,
    also deriving from ``sklearn.exceptions.ConvergenceWarning`` when scikit-learn is importable (so
    filters on either class see it; both derive from UserWarning)."""
    try:
        from sklearn.exceptions import ConvergenceWarning as SkConvergenceWarning
    except ImportError:
        return ConvergenceWarning
    return type("ConvergenceWarning", (ConvergenceWarning, SkConvergenceWarning),
                {"__module__": ConvergenceWarning.__module__})


@functools.lru_cache(maxsize=1)
def _data_conversion_warning_class():
    """Our DataConversionWarning, also deriving from scikit-learn's when scikit-learn is importable
    (so that scikit-learn's warning filters, e.g. in check_supervised_y_2d, see it)."""
    try:
        from sklearn.exceptions import DataConversionWarning as SkDataConversionWarning
    except ImportError:
        return DataConversionWarning
    return type("DataConversionWarning", (DataConversionWarning, SkDataConversionWarning),
                {"__module__": DataConversionWarning.__module__})


def _check_label_types(y) -> None:
    """Refuse labels that are None or that mix strings and numbers (scikit-learn: "Unknown label
    type"), before numpy sorts them (which raises a bare TypeError) or turns the numbers into strings."""
    if isinstance(y, np.ndarray) and y.dtype.kind != "O":
        return
    try:
        flat = np.asarray(y, dtype=object).ravel()
    except (TypeError, ValueError):
        return  # ragged input: the shape checks below name it
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
            raise InputError(f"Unknown label type: entry {j} of y is a {type(v).__name__} (ragged or nested y); y "
                             "must be a rectangular array of numbers or strings")
        else:
            raise InputError(f"Unknown label type: label {j} of y is a {type(v).__name__}; class labels must be "
                             "numbers or strings")
    if len(kinds) > 1:
        mix = " and ".join(sorted(kinds))
        raise InputError(f"Unknown label type: y mixes {mix} labels (Mix of label input types ({mix})); use one "
                         "type of class label")


@functools.lru_cache(maxsize=1)
def _sklearn_not_fitted_class():
    """Our NotFittedError, also deriving from scikit-learn's when scikit-learn is importable."""
    try:
        from sklearn.exceptions import NotFittedError as SkNotFittedError
    except ImportError:
        return NotFittedError
    return type("NotFittedError", (NotFittedError, SkNotFittedError), {"__module__": NotFittedError.__module__})


def _not_fitted_error(message: str) -> NotFittedError:
    return _sklearn_not_fitted_class()(message)


def _encode_targets(y):
    if y is None:
        raise InputError("this estimator requires y to be passed, but the target y is None")
    _check_label_types(y)
    try:
        y = np.asarray(y)
    except (TypeError, ValueError) as exc:
        raise InputError(f"y must be a 1-D array of class labels; it cannot be converted to an array ({exc})") from None
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape of y "
                      "to (n_samples,), for example using ravel().", _data_conversion_warning_class(), stacklevel=3)
        y = y.ravel()
    if y.ndim != 1:
        raise InputError(f"y must be a 1-D array of class labels; got shape {y.shape}")
    if y.dtype.kind == "O" and y.size and not isinstance(y.flat[0], (str, np.str_, bytes)):
        y = np.asarray(y.tolist())  # numbers only (checked above): a numeric dtype, checked as such below
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            raise InputError("y must not contain NaN or infinity")
        if not np.all(y == np.round(y)):
            raise InputError("Unknown label type: continuous. A classifier needs class labels; y has non-integral "
                             "float values (a regression target?)")
    classes, codes = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise InputError(f"a classifier needs at least 2 classes in y; got only one class ({classes[0]!r})")
    return classes, codes


OPTIMIZERS = (None, "cv", "laplace")


def _seed_from(owner: str, random_state) -> int:
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
    raise InputError(f"The 'random_state' parameter of {owner} must be None, a non-negative int, a "
                     f"numpy.random.Generator or a numpy.random.RandomState; got {random_state!r} instead")


def _kernel_w(owner: str, kernel, w, length_scale):
    """The kernel's w from ``w`` or ``length_scale`` ℓ (exclusive): w = 1 / ℓ² (elementwise for ARD)."""
    if length_scale is None:
        return w
    if not (isinstance(w, str) and w == "auto"):
        raise InputError(f"{owner} takes either 'w' or 'length_scale' (w = 1 / length_scale**2), not both; "
                         f"got w={w!r} and length_scale={length_scale!r}")
    if kernel not in ("rbf", "ard"):
        raise InputError(f"The 'length_scale' parameter of {owner} applies to the 'rbf' and 'ard' kernels; "
                         f"got kernel={kernel!r}")
    ls = np.asarray(length_scale, dtype=float) if not isinstance(length_scale, str) else np.array(np.nan)
    if ls.size == 0 or not np.all(np.isfinite(ls)) or np.any(ls <= 0) or (kernel == "rbf" and ls.ndim):
        allowed = "a positive number" + (" or one per feature" if kernel == "ard" else "")
        raise InputError(f"The 'length_scale' parameter of {owner} must be {allowed}; got {length_scale!r} instead")
    w_ls = 1.0 / ls**2
    return float(w_ls) if w_ls.ndim == 0 else w_ls


class GPClassifier(EstimatorMixin):
    """Multi-class GP classifier: a prior and a likelihood fitted by an objective, hyperparameters
    fixed or learned.

    ``prior``: an object with ``operator(X, n_classes)`` (e.g. :class:`IndependentGP`); when None it
    is built from ``kernel`` (``'rbf'``, ``'ard'``, ``'linear'``, ``'polynomial'``), ``w`` (a number,
    or ``'auto'`` = 1 / Σ_j Var[x_j]) or ``length_scale`` ℓ, ``variance``, ``sharing`` and ``sigma2``.
    The RBF kernel is exp(-(w/2)||x - x'||²) = exp(-||x - x'||² / (2ℓ²)), so w = 1 / ℓ² (scikit-learn's
    RBF length_scale; its gamma is w / 2); for ``'ard'`` ℓ may have one entry per feature.  ``w`` and
    ``length_scale`` are exclusive.  ``likelihood`` defaults to :class:`Softmax`.  ``objective``:
    ``'map'`` (Newton–CG, Alg. 1) or ``'exact'`` (exact Newton, App. C) for the fit of α̂ (``max_iter``,
    ``cg_max_iter``, ``grad_tol``).

    ``optimizer``: None keeps the hyperparameters as given (the default: today's behaviour, and
    fast and deterministic in pipelines and grid searches); ``'cv'`` learns them (the operator's
    ``params``, from the given values) by minimising the cross-validation criterion Ψ (Seeger 2008,
    Sec. 4, eq. (4)) over ``cv`` folds drawn by :func:`gpmodels.data.splits.kfold_partition` (stratified,
    seeded from ``random_state``; :func:`gpmodels.inference.cv.learn.learn_hyperparameters`);
    ``'laplace'`` by maximising the Laplace approximation of the marginal likelihood log q(y | θ)
    (Rasmussen & Williams, Sec. 3.4–3.5; :func:`gpmodels.inference.marginal.laplace.learn_laplace`, probe
    seed from ``random_state``).  Either runs at most ``learn_max_iter`` quasi-Newton iterations, then the
    final MAP fit at the learned θ.  ``checkpoint``: a path (or a
    :class:`~gpmodels.optimize.checkpoint.Checkpointing`) where the learning checkpoints after every
    outer iteration and from which a later fit with the same data and settings resumes.

    ``predictive``: how ``predict_proba`` makes probabilities: ``'plugin'`` (default) p(y | u_*) at the
    latent mean u_* = K̃_{*,.} α̂; ``'laplace'`` averages the likelihood over the Laplace latent predictive
    N(μ_*, Σ_*) (Rasmussen & Williams 2006, eq. 3.40 / 3.43;
    :func:`gpmodels.inference.map.predictive.laplace_predict_proba`) with ``predictive_samples`` Monte
    Carlo draws, Σ_* by ``predictive_method`` (``'exact'`` batched CG, ``'lanczos'`` a rank-256 LOVE
    basis).  The draws are seeded once at ``fit`` from ``random_state`` (``predictive_seed_``), so
    repeated calls agree.  For the softmax and logistic likelihoods (whose curvature W depends on û
    alone).  ``predict`` is the argmax of ``predict_proba``.

    ``representation``: a kind name (``auto``, ``stored``, ``blocked``, ``features``, ``lowrank``) or a
    :class:`~gpmodels.kernels.representations.RepresentationConfig` (``memory_gb``, ``dtype``,
    ``allow_lowrank``, ...).

    A :class:`~gpmodels.estimators.convergence_warning_class` warning (scikit-learn's
    ConvergenceWarning when importable) is raised when the final Newton fit or the learning stops
    unconverged.

    Fitted attributes: ``classes_``, ``n_features_in_`` (``feature_names_in_`` for a DataFrame),
    ``X_train_``, ``alpha_`` (α̂, (n, C)), ``model_`` (the :class:`~gpmodels.inference.map.model.MAPModel`),
    ``diagnostics_``, ``n_iter_`` (Newton iterations of the final fit), ``learned_hyperparameters_``
    (name -> natural value, :func:`gpmodels.hyperparameters.natural_values`; the given values when
    ``optimizer`` is None), ``optimizer_result_`` (the learning's result:
    :class:`~gpmodels.inference.cv.learn.LearnResult` for 'cv', the driver's ``OptimizeResult`` for
    'laplace'; None when nothing was learned).

    Pickles carry no n×n matrix: ``__getstate__`` keeps X_train_, α̂, the hyperparameters and the
    likelihood, and the operator is rebuilt from them on first use after unpickling.
    """

    def __init__(self, prior=None, likelihood=None, objective="map", kernel="rbf", w="auto", variance=1.0,
                 sharing="separate", sigma2=1.0, representation="auto", max_iter=30, cg_max_iter=50, grad_tol=1e-6,
                 optimizer=None, cv=5, learn_max_iter=20, checkpoint=None, length_scale=None, random_state=None,
                 predictive="plugin", predictive_samples=2000, predictive_method="exact"):
        self.prior = prior
        self.likelihood = likelihood
        self.objective = objective
        self.kernel = kernel
        self.w = w
        self.variance = variance
        self.sharing = sharing
        self.sigma2 = sigma2
        self.representation = representation
        self.max_iter = max_iter
        self.cg_max_iter = cg_max_iter
        self.grad_tol = grad_tol
        self.optimizer = optimizer
        self.cv = cv
        self.learn_max_iter = learn_max_iter
        self.checkpoint = checkpoint
        self.length_scale = length_scale
        self.random_state = random_state
        self.predictive = predictive
        self.predictive_samples = predictive_samples
        self.predictive_method = predictive_method

    def _build_prior(self, X):
        if self.prior is not None:
            return self.prior
        owner = type(self).__name__
        w = _kernel_w(owner, self.kernel, self.w, self.length_scale)
        kernel = _make_kernel(owner, self.kernel, w, None, None, X)
        rep = self.representation
        if not isinstance(rep, RepresentationConfig):  # a kind name; a RepresentationConfig sets memory_gb, dtype, ...
            rep = RepresentationConfig(kind=rep)
        return IndependentGP(kernel, self.sharing, self.variance, self.sigma2, representation=rep)

    def _check_settings(self, n: int) -> None:
        owner = type(self).__name__
        if self.objective not in ("map", "exact"):
            raise InputError(f"objective must be 'map' or 'exact'; got {self.objective!r}")
        if self.optimizer not in OPTIMIZERS:
            raise InputError(f"The 'optimizer' parameter of {owner} must be None, 'cv' or 'laplace'; "
                             f"got {self.optimizer!r} instead")
        _check_predictive(owner, self.predictive, self.predictive_samples, self.predictive_method)
        if self.optimizer is None:
            return
        learn_iter = self.learn_max_iter
        if isinstance(learn_iter, bool) or not isinstance(learn_iter, (int, np.integer)) or learn_iter < 1:
            raise InputError(f"The 'learn_max_iter' parameter of {owner} must be a positive int; got "
                             f"{learn_iter!r} instead")
        if self.optimizer == "cv" and (isinstance(self.cv, bool) or not isinstance(self.cv, (int, np.integer))
                                       or not 2 <= self.cv <= n):
            raise InputError(f"The 'cv' parameter of {owner} must be an int number of folds in 2..n_samples "
                             f"= {n}; got {self.cv!r} instead")

    def _checkpointing(self):
        from gpmodels.optimize.checkpoint import Checkpointing

        if self.checkpoint is None or isinstance(self.checkpoint, Checkpointing):
            return self.checkpoint
        if not isinstance(self.checkpoint, (str, os.PathLike)):
            raise InputError(f"The 'checkpoint' parameter of {type(self).__name__} must be None, a path or a "
                             f"gpmodels.optimize.checkpoint.Checkpointing; got {self.checkpoint!r} instead")
        return Checkpointing(self.checkpoint)

    def _newton_options(self) -> NewtonOptions:
        return NewtonOptions(max_iter=self.max_iter, cg_max_iter=self.cg_max_iter, grad_tol=self.grad_tol)

    def _learn(self, op, lik, Y, codes):
        """(operator, likelihood, names, θ, optimiser result) after learning by ``self.optimizer``."""
        from gpmodels.optimize.lbfgs import OuterOptions

        owner = type(self).__name__
        seed = _seed_from(owner, self.random_state)
        outer = OuterOptions(max_iter=int(self.learn_max_iter))
        if self.optimizer == "cv":
            from gpmodels.data.splits import kfold_partition
            from gpmodels.inference.cv.learn import LearnOptions, learn_hyperparameters

            folds = kfold_partition(codes.size, int(self.cv), seed, y=codes)
            opts = LearnOptions(outer=attrs.evolve(LearnOptions().outer, max_iter=int(self.learn_max_iter)))
            res = learn_hyperparameters(op, lik, Y, folds, opts, checkpoint=self._checkpointing())
            return res.operator, lik, res.names, res.theta, res
        from gpmodels.inference.marginal.laplace import LaplaceOptions, learn_laplace

        res, op, lik = learn_laplace(op, lik, Y, LaplaceOptions(seed=seed), outer=outer,
                                     checkpoint=self._checkpointing())
        return op, lik, res.names, res.x, res

    def fit(self, X, y):
        """Fit α̂ (after learning the hyperparameters when ``optimizer`` is set; class docstring)."""
        X_raw, X = X, check_features("X", X)
        classes, codes = _encode_targets(y)
        if codes.size != X.shape[0]:
            raise InputError(f"X has {X.shape[0]} samples but y has {codes.size}")
        self._check_settings(codes.size)
        C = classes.size
        op = self._build_prior(X).operator(X, C)
        lik = self.likelihood if self.likelihood is not None else Softmax()
        Y = labels_to_targets(codes, C)
        learned = None
        if self.optimizer is not None:
            op, lik, names, theta, learned = self._learn(op, lik, Y, codes)
            _warn_unconverged(learned, f"{type(self).__name__} learning (optimizer={self.optimizer!r})",
                              "raise learn_max_iter")
        else:
            names, theta = op.param_names, op.params
        model = fit_map(op, lik, Y, self._newton_options(),
                        method="exact" if self.objective == "exact" else "newton_cg")
        _warn_unconverged(model.result, f"{type(self).__name__}'s Newton fit of alpha", "raise max_iter")
        self.classes_ = classes
        self._set_n_features(X_raw, X)
        self.X_train_ = X
        self.model_ = model
        self.alpha_ = model.alpha
        self.diagnostics_ = model.result.diagnostics
        self.n_iter_ = model.result.diagnostics.iterations
        self.learned_hyperparameters_ = natural_values(names, np.asarray(theta, dtype=float))
        self.optimizer_result_ = learned
        self.predictive_seed_ = _seed_from(type(self).__name__, self.random_state) if self.predictive == "laplace" \
            else None
        return self

    def __getstate__(self):
        """The fitted state without the operator (its n×n matrices): the operator is rebuilt on first use."""
        state = super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__.copy()
        state = dict(state)
        model = state.pop("model_", None)
        if model is not None:
            state["_model_parts"] = (np.asarray(model.operator.params, dtype=float), model.likelihood, model.result)
        result = state.get("optimizer_result_")
        if result is not None and hasattr(result, "operator"):
            state["optimizer_result_"] = attrs.evolve(result, operator=None)
        return state

    def __getattr__(self, name):
        # only reached when normal lookup fails: rebuild ``model_`` after unpickling (__getstate__)
        parts = self.__dict__.get("_model_parts") if name == "model_" else None
        if parts is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        theta, lik, result = parts
        op = self._build_prior(self.X_train_).operator(self.X_train_, len(self.classes_))
        if theta.size:
            op = op.with_params(theta)
        self.model_ = MAPModel(op, lik, result)
        del self.__dict__["_model_parts"]
        return self.model_

    def decision_function(self, X):
        """Latent values u_* (m, C); for two classes u_1 - u_0 (m,), as scikit-learn expects.  With
        ``predictive='laplace'`` the log predictive probabilities instead, so that its argmax is
        ``predict``'s (averaging over Σ_* may move a point's most probable class away from argmax u_*)."""
        self._check_fitted()
        if getattr(self, "predictive_seed_", None) is None:
            U = self.model_.latent(self._check_X(X))
        else:
            U = self.predict_log_proba(X)
        return U[:, 1] - U[:, 0] if U.shape[1] == 2 else U

    def predict_proba(self, X):
        """Class probabilities (m, C) by ``predictive`` (class docstring)."""
        self._check_fitted()
        X = self._check_X(X)
        if getattr(self, "predictive_seed_", None) is None:  # plug-in (or fitted before `predictive` existed)
            return self.model_.likelihood.predict(self.model_.latent(X))
        P, _ = laplace_predict_proba(self.model_, X, latent=self.predictive_method, n_samples=self.predictive_samples,
                                     random_state=self.predictive_seed_)
        return P

    def predict_log_proba(self, X):
        return np.log(np.maximum(self.predict_proba(X), 1e-300))

    def predict(self, X):
        P = self.predict_proba(X)
        return self.classes_[np.argmax(P, axis=1)]


def _check_predictive(owner: str, predictive, samples, method) -> None:
    """``predictive`` in PREDICTIVES, ``samples`` a positive int, ``method`` in PREDICTIVE_METHODS."""
    if predictive not in PREDICTIVES:
        raise InputError(f"The 'predictive' parameter of {owner} must be one of {PREDICTIVES}; got {predictive!r} "
                         "instead")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or not 1 <= samples <= MAX_SIZE:
        raise InputError(f"The 'predictive_samples' parameter of {owner} must be an int in 1..{MAX_SIZE}; got "
                         f"{samples!r} instead")
    if method not in PREDICTIVE_METHODS:
        raise InputError(f"The 'predictive_method' parameter of {owner} must be one of {PREDICTIVE_METHODS}; got "
                         f"{method!r} instead")


def _warn_unconverged(result, what: str, hint: str) -> None:
    """A convergence warning when ``result`` (a Newton or an optimiser result) did not converge."""
    if result is None or result.converged:
        return
    message = getattr(result, "message", None) or getattr(getattr(result, "diagnostics", None), "message", "")
    warnings.warn(f"{what} stopped unconverged ({message}); {hint}", convergence_warning_class(), stacklevel=3)


def _make_kernel(owner: str, kernel, w, degree, offset, X) -> Kernel:
    """The x-kernel of an estimator: a :class:`Kernel` passed as is, or built by name through
    :func:`gpmodels.kernels.make_kernel` with the parameters that kernel takes.

    ``'rbf'``: exp(-(w/2)||x - x'||²) (scikit-learn's gamma is w/2), ``w='auto'`` = 1 / Σ_j Var[x_j]
    of the training inputs (Seeger 2008, Sec. 6.2); ``'ard'``: one w per input dimension (a number is
    broadcast); ``'linear'``: xᵀx'; ``'polynomial'``: (xᵀx' + offset)^degree.
    """
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(w, str) and w != "auto":
        raise InputError(f"The 'w' parameter of {owner} must be 'auto' or a positive number; got {w!r} instead")
    given = {"w": w, "degree": degree, "offset": offset}
    try:
        takes = KERNEL_PARAMS.get(kernel, ()) if isinstance(kernel, str) else ()
        return make_kernel(kernel, X=X, **{k: v for k, v in given.items() if k in takes})
    except InputError as exc:
        what = "'kernel'" if not (isinstance(kernel, str) and kernel in KERNEL_PARAMS) else repr(kernel) + " kernel's"
        raise InputError(f"The {what} parameter of {owner}: {exc} (or pass a gpmodels.kernels.Kernel)") from None


# ---------------------------------------------------------------------------------------------------------------
# max-margin baselines


def _check_positive(owner: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value <= 0:
        raise InputError(f"The {name!r} parameter of {owner} must be a positive number; got {value!r} instead")
    return float(value)


class CrammerSingerSVC(EstimatorMixin):
    """Multiclass kernel SVM of Crammer & Singer (JMLR 2001), solved by the fixed-point algorithm.

    Primal (7) in scikit-learn's scaling: min_M ½||M||² + C Σ_i ξ_i subject to
    f_{y_i}(x_i) − f_r(x_i) ≥ 1 − δ_{y_i,r} − ξ_i for all r, with class scores f_r(x) = M_r·φ(x).
    The dual (15) in τ (one row per example, τ_i ≤ 1_{y_i}, Σ_r τ_ir = 0) is solved by Fig. 4 with
    β = 1/C and the improvements of Sec. 7 (KKT example selection, active set, cooling of ε, an LRU
    cache of kernel rows); see :mod:`gpmodels.baselines.crammer_singer.solver`.  Scores (eq. 12):
    f_r(x) = β^{-1} Σ_i τ_ir K(x, x_i) = Σ_{i ∈ SV} K(x, x_i) ``dual_coef_``[i, r]; prediction
    argmax_r f_r(x) (eq. 16).

    Parameters: ``kernel`` ('rbf', 'ard', 'linear', 'polynomial' or a :class:`gpmodels.kernels.Kernel`),
    ``w`` ('auto' = 1 / Σ_j Var[x_j], or a number; RBF/ARD only; exp(-(w/2)||x − x'||²), so
    scikit-learn's gamma is w/2), ``degree`` and ``offset`` (polynomial (xᵀx' + offset)^degree),
    ``C`` (= 1/β), ``epsilon`` (stop at max_i ψ_i < βε), ``cooling`` of ε ('none', 'exponential',
    'linear', 'logarithmic'), ``active_set``, ``reduced_solver`` ('fixed_point' = Fig. 3,
    'exact' = by sorting), ``cache_mb`` (kernel-row cache; 0 disables it), ``engine`` ('auto',
    'compiled', 'numpy'; the same τ bit for bit) and ``max_updates``.  The solver is deterministic
    (it selects examples by their KKT violation, never at random), so there is no seed.

    Training examples with K(x_i, x_i) = 0 (all-zero rows under the linear kernel) are left out of
    the solver: φ(x_i) = 0 makes their constraints independent of M (ξ_i = 1 at any M) and the
    reduced problem (eq. 18) needs K(x_i, x_i) > 0.  Their rows of ``tau_`` are zero.

    No ``predict_proba``: an SVM's scores are margins, not probabilities, and a calibration map
    (Platt scaling) would be a second model fitted on held-out data; use
    ``sklearn.calibration.CalibratedClassifierCV`` over this estimator when probabilities are needed.

    Fitted attributes: ``classes_``, ``n_features_in_``, ``kernel_`` (the kernel used),
    ``support_`` (indices of the training examples with τ_i ≠ 0), ``support_vectors_``,
    ``n_support_`` (support vectors per class), ``dual_coef_`` ((n_SV, k): τ_i / β of the support
    vectors), ``tau_`` ((n_samples, k): the dual solution τ), ``n_iter_`` (example updates of
    Fig. 4), ``model_`` (the :class:`~gpmodels.baselines.crammer_singer.solver.CrammerSingerModel`, whose
    ``result`` holds Q(τ), the duality gap and the trace).
    """

    def __init__(self, kernel="rbf", C=1.0, w="auto", degree=2, offset=1.0, epsilon=1e-3, cooling="logarithmic",
                 active_set=True, reduced_solver="fixed_point", cache_mb=200.0, engine="auto",
                 max_updates=10_000_000):
        self.kernel = kernel
        self.C = C
        self.w = w
        self.degree = degree
        self.offset = offset
        self.epsilon = epsilon
        self.cooling = cooling
        self.active_set = active_set
        self.reduced_solver = reduced_solver
        self.cache_mb = cache_mb
        self.engine = engine
        self.max_updates = max_updates

    def fit(self, X, y):
        owner = type(self).__name__
        C = _check_positive(owner, "C", self.C)
        opts = CSOptions(beta=1.0 / C, epsilon=self.epsilon, cooling=self.cooling, active_set=self.active_set,
                         reduced_solver=self.reduced_solver, cache_mb=self.cache_mb, engine=self.engine,
                         max_updates=self.max_updates)
        X_raw, X = X, check_features("X", X)
        classes, codes = _encode_targets(y)
        if codes.size != X.shape[0]:
            raise InputError(f"X has {X.shape[0]} samples but y has {codes.size}")
        k, m = classes.size, X.shape[0]
        kernel = _make_kernel(owner, self.kernel, self.w, self.degree, self.offset, X)
        keep = np.flatnonzero(kernel.diag(X) > 0)  # φ(x_i) = 0 leaves M unchanged (class docstring)
        if keep.size == 0:
            raise InputError(f"every training example has K(x, x) = 0 under {kernel!r} (all-zero rows?); "
                             "there is nothing to learn from")
        model = fit_crammer_singer(kernel, X if keep.size == m else X[keep], codes[keep], opts, n_classes=k)
        result = model.result
        if not result.converged:
            hint = "raise max_updates" + (" or try reduced_solver='exact'" if self.reduced_solver != "exact" else "")
            warnings.warn(f"{owner} stopped before max ψ < βε ({result.message}; max ψ/β = {result.max_psi:.3g}, "
                          f"epsilon = {self.epsilon:g}); {hint}", convergence_warning_class(), stacklevel=2)
        self.classes_ = classes
        self._set_n_features(X_raw, X)
        self.kernel_ = kernel
        self.model_ = model
        self.support_ = keep[model.support_]
        self.support_vectors_ = model.X_support_
        self.n_support_ = np.bincount(codes[self.support_], minlength=k)
        self.dual_coef_ = model.tau_support_ / model.beta     # shape: (n_SV, k)
        self.tau_ = np.zeros((m, k))
        self.tau_[keep] = result.tau
        self.n_iter_ = result.updates
        return self

    def _scores(self, X) -> np.ndarray:
        self._check_fitted()
        return self.model_.decision_function(self._check_X(X))

    def decision_function(self, X):
        """Class scores f_r(x) (eq. 12), shape (n, k); for two classes f_1 − f_0, shape (n,), as scikit-learn
        expects."""
        F = self._scores(X)
        return F[:, 1] - F[:, 0] if F.shape[1] == 2 else F

    def predict(self, X):
        """argmax_r f_r(x) (eq. 16), as class labels."""
        F = self._scores(X)
        return self.classes_[np.argmax(F, axis=1)]


def _as_tree(hierarchy, owner: str) -> ClassTree:
    """A :class:`ClassTree` from a ClassTree, a networkx DiGraph (parent -> child), an edge list or a
    ``hierarchy.tsv`` path."""
    if isinstance(hierarchy, ClassTree):
        return hierarchy
    if hasattr(hierarchy, "is_directed") and hasattr(hierarchy, "edges"):
        return ClassTree.from_networkx(hierarchy)
    if isinstance(hierarchy, (str, os.PathLike)):
        return ClassTree.from_tsv(hierarchy)
    allowed = (
        "a gpmodels.hierarchy.ClassTree, a networkx DiGraph with edges parent -> child, a list of "
        "(parent, child) pairs or the path of a hierarchy.tsv file"
    )
    if hierarchy is None or not hasattr(hierarchy, "__iter__"):
        raise InputError(f"The 'hierarchy' parameter of {owner} must be {allowed}; got {hierarchy!r} instead")
    edges = list(hierarchy)
    bad = [e for e in edges if isinstance(e, str) or not hasattr(e, "__len__") or len(e) != 2]
    if bad:
        raise InputError(
            f"The 'hierarchy' parameter of {owner} must be {allowed}; entry {bad[0]!r} of the "
            f"edge list is not a (parent, child) pair"
        )
    return ClassTree(edges)


class HM3Classifier(EstimatorMixin):
    """Hierarchical multilabel max-margin classifier H-M^3 (Rousu et al., JMLR 2006).

    Targets are hierarchical multilabels (:mod:`gpmodels.scoring.multilabel`): ``Y`` is an (n, P) 0/1 (or
    bool, or ±1) indicator matrix with one column per non-root node of ``hierarchy``, in the tree's
    breadth-first node order (``ClassTree.nodes``, ``classes_`` after fitting), and every row a
    union of partial paths (a positive node's parent is positive; the root is implicit).  Single-label
    classes become such rows by :func:`gpmodels.scoring.multilabel.paths_to_multilabels`.

    ``hierarchy``: a :class:`~gpmodels.hierarchy.ClassTree`, a networkx DiGraph (edges parent ->
    child), a list of (parent, child) pairs or the path of a ``hierarchy.tsv`` file.  The model
    (Sec. 2.3) scores a labeling y of the tree by Σ_e w_e^{y_e}·φ(x) over the edges e, with edge
    features on the x-kernel ``kernel`` (as :class:`CrammerSingerSVC`: 'rbf', 'ard', 'linear',
    'polynomial' or a Kernel; ``w``, ``degree``, ``offset``); it is trained on the marginal dual (8)
    by Algorithms 1–2 with ``C``, training ``loss`` ('delta' = ℓ_Δ, 'htilde' = ℓ_H̃) and its node
    ``scaling`` ('uniform', 'sibling', 'subtree'), ``working_set`` ('gap_sampling', drawn with the
    random generator seeded by ``random_state``, or 'cyclic'), ``chunk_size``, ``iteration_limit``,
    ``direction`` ('dp' or 'lp', an LP solved by HiGHS), until the relative duality gap is below
    ``gap_tol`` or after ``max_passes`` passes; see :mod:`gpmodels.baselines.hm3.solver`.
    ``random_state`` (default 0, so fits are reproducible as before) seeds gap sampling; ``seed``, its
    old name, is still accepted for one release with a FutureWarning (it overrides ``random_state``).

    ``predict``: the union of partial paths of highest score, by the DP of Sec. 3.4 / 5, as an (n, P)
    0/1 int matrix — hierarchy-consistent by construction.  ``decision_function``: per node j the
    max-marginal margin d_j(x) = max_{y: y_j = 1} F(x, y) − max_{y: y_j = 0} F(x, y) over consistent
    labelings (:func:`~gpmodels.baselines.hm3.inference.node_max_marginals`), so ``predict`` has
    node j on where d_j > 0 and off where d_j < 0; d_child ≤ d_parent, so thresholding d at any
    level also gives consistent labelings.  ``score``: the micro-averaged F1 of the positive
    microlabels (Rousu et al., Table 2; :func:`gpmodels.scoring.multilabel.micro_prf`), higher is better.
    There is no ``predict_proba``: the model is a max-margin one, without probabilities.

    Fitted attributes: ``tree_`` (the ClassTree), ``classes_`` (node names, the columns of Y),
    ``n_features_in_``, ``kernel_``, ``support_`` (training examples with ν_i ≠ 0),
    ``dual_coef_`` ((n_SV, P, 4): ν of the support vectors, edge scores H(x) = Σ_i K(x, x_i) ν_i),
    ``n_iter_`` (passes of Algorithm 1), ``model_`` (the :class:`~gpmodels.baselines.hm3.solver.HM3Model`,
    whose ``result`` holds the objectives, the gap and the trace).
    """

    def __init__(self, hierarchy, kernel="rbf", w="auto", degree=2, offset=1.0, C=1.0, loss="delta", scaling="uniform",
                 working_set="gap_sampling", chunk_size=200, iteration_limit=10, direction="dp", gap_tol=1e-2,
                 max_passes=200, random_state=0, seed="deprecated"):
        self.hierarchy = hierarchy
        self.kernel = kernel
        self.w = w
        self.degree = degree
        self.offset = offset
        self.C = C
        self.loss = loss
        self.scaling = scaling
        self.working_set = working_set
        self.chunk_size = chunk_size
        self.iteration_limit = iteration_limit
        self.direction = direction
        self.gap_tol = gap_tol
        self.max_passes = max_passes
        self.random_state = random_state
        self.seed = seed

    def _seed(self) -> int:
        """The gap-sampling seed from ``random_state``, or from the deprecated ``seed`` (with a FutureWarning)."""
        owner = type(self).__name__
        if isinstance(self.seed, str) and self.seed == "deprecated":
            return _seed_from(owner, self.random_state)
        warnings.warn(f"The 'seed' parameter of {owner} is deprecated and will be removed in the next release; "
                      f"use 'random_state' instead (seed={self.seed!r} is used for now, overriding random_state)",
                      FutureWarning, stacklevel=3)
        return _seed_from(owner, self.seed)

    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        return Tags(estimator_type="classifier",
                    target_tags=TargetTags(required=True, multi_output=True, single_output=False),
                    classifier_tags=ClassifierTags(multi_class=False, multi_label=True, poor_score=True),
                    input_tags=InputTags(sparse=True, two_d_array=True))

    def _check_Y(self, Y, tree: ClassTree, n: int) -> np.ndarray:
        """Y as an (n, P) bool array over ``tree``'s nodes, or a clear error (wrong width, values, closure)."""
        owner = type(self).__name__
        if Y is None:
            raise InputError(
                f"{owner} requires y to be passed, but the target y is None (Y: an (n, P) indicator "
                "matrix over the hierarchy's nodes)"
            )
        _check_label_types(Y)
        Y = np.asarray(Y)
        if Y.dtype.kind == "O":
            Y = np.asarray(Y.tolist())  # numbers or strings only (checked above)
        if Y.dtype.kind == "f" and not np.all(np.isfinite(Y) & (Y == np.round(Y))):
            raise InputError(
                "Unknown label type: continuous. Y must be a 0/1 indicator matrix over the hierarchy's "
                "nodes; it has non-integral or non-finite values (a regression target?)"
            )
        P = tree.n_nodes
        if Y.ndim != 2 or Y.shape[1] != P:
            shown = ", ".join(map(repr, tree.nodes[:6])) + (", ..." if P > 6 else "")
            hint = (
                " (a 1-D array of classes? convert it with gpmodels.scoring.multilabel.paths_to_multilabels)"
                if Y.ndim == 1
                else ""
            )
            raise InputError(
                f"Dimension mismatch: Y must be an (n, {P}) 0/1 indicator matrix with one column per "
                f"non-root node of the hierarchy, in the order {shown}; got shape {Y.shape}{hint}"
            )
        if Y.shape[0] != n:
            raise InputError(f"X has {n} samples but Y has {Y.shape[0]}")
        return check_multilabels(Y, tree, "Y")

    def fit(self, X, y):
        """Fit on inputs X (n, d), dense or CSR, and the indicator matrix y = Y (n, P) (class docstring)."""
        owner = type(self).__name__
        tree = _as_tree(self.hierarchy, owner)
        C = _check_positive(owner, "C", self.C)
        opts = HM3Options(C=C, loss=self.loss, scaling=self.scaling, working_set=self.working_set,
                          chunk_size=self.chunk_size, iteration_limit=self.iteration_limit, direction=self.direction,
                          gap_tol=self.gap_tol, max_passes=self.max_passes, seed=self._seed())
        X_raw, X = X, check_features("X", X)
        Y = self._check_Y(y, tree, X.shape[0])
        kernel = _make_kernel(owner, self.kernel, self.w, self.degree, self.offset, X)
        model = fit_hm3(kernel, X, Y, tree, opts)
        result = model.result
        if not result.converged:
            warnings.warn(
                f"{owner} stopped before the relative duality gap reached gap_tol = {self.gap_tol:g} "
                f"({result.message}; gap {result.gap:.3g}, primal {result.primal:.3g}); raise max_passes",
                convergence_warning_class(),
                stacklevel=2,
            )
        self.tree_ = tree
        self.classes_ = np.array(tree.nodes, dtype=object)
        self._set_n_features(X_raw, X)
        self.kernel_ = kernel
        self.model_ = model
        self.support_ = model.support_
        self.dual_coef_ = model.nu_support_
        self.n_iter_ = result.passes
        return self

    def _edge_scores(self, X) -> np.ndarray:
        self._check_fitted()
        return self.model_.edge_scores(self._check_X(X))  # shape: (n, P, 4)

    def decision_function(self, X):
        """Max-marginal margins d_j(x) (class docstring), shape (n, P)."""
        MM = node_max_marginals(self._edge_scores(X), self.tree_, consistent=True)
        return MM[:, :, 1] - MM[:, :, 0]

    def predict(self, X):
        """The consistent multilabel of highest score, (n, P) 0/1 int over ``classes_``."""
        self._check_fitted()
        return self.model_.predict(self._check_X(X)).astype(np.int64)

    def score(self, X, y) -> float:
        """Micro-averaged F1 of ``predict(X)`` against y = Y (n, P) (Rousu et al. 2006, Table 2); 0 when
        neither has a positive microlabel.  Higher is better, as scikit-learn's scorers expect."""
        self._check_fitted()
        X = self._check_X(X)
        Y = self._check_Y(y, self.tree_, X.shape[0])
        return float(micro_prf(Y, self.model_.predict(X), self.tree_)[2])
