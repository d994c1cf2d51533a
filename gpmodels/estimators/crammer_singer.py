"""The multiclass kernel SVM of Crammer & Singer (JMLR 2001) as a scikit-learn classifier."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from gpmodels.baselines.crammer_singer.solver import CSOptions, fit_crammer_singer
from gpmodels.errors import InputError
from gpmodels.estimators._common import (
    ConvergenceWarning,
    check_fitted,
    check_positive,
    check_X,
    classifier_tags,
    encode_targets,
    forward_params,
    kernel_by_name,
    record_features,
    store_params,
)
from gpmodels.validation import check_features

__all__ = ["CrammerSingerSVC"]


class CrammerSingerSVC(ClassifierMixin, BaseEstimator):
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

    def __init__(
        self,
        kernel="rbf",
        C=1.0,
        w="auto",
        degree=2,
        offset=1.0,
        epsilon=1e-3,
        cooling="logarithmic",
        active_set=True,
        reduced_solver="fixed_point",
        cache_mb=200.0,
        engine="auto",
        max_updates=10_000_000,
    ):
        store_params(self, locals())

    def __sklearn_tags__(self):
        return classifier_tags()

    def fit(self, X, y):
        owner = type(self).__name__
        C = check_positive(owner, "C", self.C)
        opts = forward_params(self, CSOptions, beta=1.0 / C)
        X_raw, X = X, check_features("X", X)
        classes, codes = encode_targets(y)
        if codes.size != X.shape[0]:
            raise InputError(f"X has {X.shape[0]} samples but y has {codes.size}")
        k, m = classes.size, X.shape[0]
        kernel = kernel_by_name(owner, self.kernel, self.w, self.degree, self.offset, X)
        keep = np.flatnonzero(kernel.diag(X) > 0)  # φ(x_i) = 0 leaves M unchanged (class docstring)
        if keep.size == 0:
            raise InputError(
                f"every training example has K(x, x) = 0 under {kernel!r} (all-zero rows?); "
                "there is nothing to learn from"
            )
        model = fit_crammer_singer(kernel, X if keep.size == m else X[keep], codes[keep], opts, n_classes=k)
        result = model.result
        if not result.converged:
            hint = "raise max_updates" + (" or try reduced_solver='exact'" if self.reduced_solver != "exact" else "")
            warnings.warn(
                f"{owner} stopped before max ψ < βε ({result.message}; max ψ/β = {result.max_psi:.3g}, "
                f"epsilon = {self.epsilon:g}); {hint}",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.classes_ = classes
        record_features(self, X_raw, X)
        self.kernel_ = kernel
        self.model_ = model
        self.support_ = keep[model.support_]
        self.support_vectors_ = model.X_support_
        self.n_support_ = np.bincount(codes[self.support_], minlength=k)
        self.dual_coef_ = model.tau_support_ / model.beta  # shape: (n_SV, k)
        self.tau_ = np.zeros((m, k))
        self.tau_[keep] = result.tau
        self.n_iter_ = result.updates
        return self

    def _scores(self, X) -> np.ndarray:
        check_fitted(self)
        return self.model_.decision_function(check_X(self, X))

    def decision_function(self, X):
        """Class scores f_r(x) (eq. 12), shape (n, k); for two classes f_1 − f_0, shape (n,), as scikit-learn
        expects."""
        F = self._scores(X)
        return F[:, 1] - F[:, 0] if F.shape[1] == 2 else F

    def predict(self, X):
        """argmax_r f_r(x) (eq. 16), as class labels."""
        F = self._scores(X)
        return self.classes_[np.argmax(F, axis=1)]
