"""scikit-learn style estimators over the composed models.

``GPClassifier`` composes a prior, a likelihood and an objective and follows scikit-learn's
estimator conventions: ``__init__`` only stores its arguments, ``fit`` validates and fits, fitted
state ends in ``_``, and ``predict`` / ``predict_proba`` / ``decision_function`` / ``score`` /
``get_params`` / ``set_params`` behave as scikit-learn's do, so the estimators drop into
pipelines and grid searches.  scikit-learn itself is not a dependency: the protocol is implemented
here, and ``__sklearn_tags__`` imports scikit-learn only when scikit-learn asks for the tags.
"""

from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np
import scipy.sparse as sp

from .data.scaling import auto_rbf_w
from .errors import DataConversionWarning, InputError, NotFittedError
from .inference.map import fit_map
from .inference.newton_cg import NewtonOptions
from .kernels.linear import Linear, Polynomial
from .kernels.rbf import ARD, RBF
from .kernels.representations import RepresentationConfig
from .likelihoods.softmax import Softmax
from .priors.independent import IndependentGP
from .validation import check_features, labels_to_targets

__all__ = ["GPClassifier", "EstimatorMixin"]


class EstimatorMixin:
    """get_params / set_params / repr / tags following scikit-learn's protocol, without importing it."""

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
                getattr(self, name).set_params(**{sub: value})
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

    def _check_X(self, X):
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
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape of y "
                      "to (n_samples,), for example using ravel().", DataConversionWarning, stacklevel=3)
        y = y.ravel()
    if y.ndim != 1:
        raise InputError(f"y must be a 1-D array of class labels; got shape {y.shape}")
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


class GPClassifier(EstimatorMixin):
    """Multi-class GP classifier: a prior and a likelihood fitted by an objective.

    ``prior``: an object with ``operator(X, n_classes)`` (e.g. :class:`IndependentGP`); when None it
    is built from ``kernel`` (``'rbf'``, ``'ard'``, ``'linear'``, ``'polynomial'``), ``w`` (a number,
    or ``'auto'`` = 1 / Σ_j Var[x_j]), ``variance``, ``sharing`` and ``sigma2``.  ``likelihood``
    defaults to :class:`Softmax`.  ``objective``: ``'map'`` (Newton–CG at fixed hyperparameters)
    or ``'exact'`` (exact Newton, App. C).
    """

    def __init__(self, prior=None, likelihood=None, objective="map", kernel="rbf", w="auto", variance=1.0,
                 sharing="separate", sigma2=1.0, representation="auto", max_iter=30, cg_max_iter=50, grad_tol=1e-6):
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

    def _build_prior(self, X):
        if self.prior is not None:
            return self.prior
        w = auto_rbf_w(X) if isinstance(self.w, str) and self.w == "auto" else self.w
        kernels = {"rbf": lambda: RBF(w), "ard": lambda: ARD(np.broadcast_to(np.asarray(w, float), (X.shape[1],))),
                   "linear": Linear, "polynomial": Polynomial}
        if self.kernel not in kernels:
            raise InputError(f"kernel must be one of {sorted(kernels)} (or pass a prior); got {self.kernel!r}")
        return IndependentGP(kernels[self.kernel](), self.sharing, self.variance, self.sigma2,
                             representation=RepresentationConfig(kind=self.representation))

    def fit(self, X, y):
        if self.objective not in ("map", "exact"):
            raise InputError(f"objective must be 'map' or 'exact'; got {self.objective!r}")
        X = check_features("X", X)
        classes, codes = _encode_targets(y)
        if codes.size != X.shape[0]:
            raise InputError(f"X has {X.shape[0]} samples but y has {codes.size}")
        C = classes.size
        op = self._build_prior(X).operator(X, C)
        lik = self.likelihood if self.likelihood is not None else Softmax()
        opts = NewtonOptions(max_iter=self.max_iter, cg_max_iter=self.cg_max_iter, grad_tol=self.grad_tol)
        model = fit_map(op, lik, labels_to_targets(codes, C), opts,
                        method="exact" if self.objective == "exact" else "newton_cg")
        self.classes_ = classes
        self.n_features_in_ = X.shape[1]
        self.model_ = model
        self.alpha_ = model.alpha
        self.diagnostics_ = model.result.diagnostics
        self.n_iter_ = model.result.diagnostics.iterations
        return self

    def decision_function(self, X):
        """Latent values u_* (m, C); for two classes u_1 - u_0 (m,), as scikit-learn expects."""
        self._check_fitted()
        U = self.model_.latent(self._check_X(X))
        return U[:, 1] - U[:, 0] if U.shape[1] == 2 else U

    def predict_proba(self, X):
        self._check_fitted()
        return self.model_.likelihood.predict(self.model_.latent(self._check_X(X)))

    def predict_log_proba(self, X):
        return np.log(np.maximum(self.predict_proba(X), 1e-300))

    def predict(self, X):
        P = self.predict_proba(X)
        return self.classes_[np.argmax(P, axis=1)]
