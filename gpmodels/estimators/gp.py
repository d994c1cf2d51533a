"""``GPClassifier``: a prior and a likelihood, hyperparameters learned by an objective, α̂ by a MAP solver."""

from __future__ import annotations

import os
import warnings

import attrs
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from gpmodels.data.splits import kfold_partition
from gpmodels.engine.auto import engine_for_jobs
from gpmodels.errors import HierarchyError, InputError
from gpmodels.estimators._common import (
    ConvergenceWarning,
    NestedParamsRouting,
    check_fitted,
    check_X,
    classifier_tags,
    encode_targets,
    prior_with_kernel,
    record_features,
    seed_from,
    store_params,
    warn_unconverged,
)
from gpmodels.estimators.learners import learner_of
from gpmodels.estimators.saving import save_classifier
from gpmodels.hyperparameters import natural_values
from gpmodels.inference.map.model import fit_map
from gpmodels.inference.map.predictive import PREDICTIVE_METHODS, latent_predictive, predictive_proba
from gpmodels.inference.map.solvers import SOLVERS as MAP_SOLVERS
from gpmodels.kernels.device.backend import device_in_use
from gpmodels.kernels.representations import DEVICES
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.linalg.blas_threads import limit_blas_threads
from gpmodels.optimize.checkpoint import Checkpointing, caller_identity
from gpmodels.optimize.outcome import LearningOutcome, assess_learning
from gpmodels.priors.independent import IndependentGP
from gpmodels.priors.kernel_slot import default_kernel
from gpmodels.priors.learned import LearnedPrior
from gpmodels.validation import MAX_SIZE, check_features, integer, labels_to_targets, one_of

__all__ = ["GPClassifier", "LaplacePredictive", "SOLVERS", "DEFAULT_PRIOR"]

#: inner MAP solver names -> solver classes (:mod:`gpmodels.inference.map.solvers`)
SOLVERS = MAP_SOLVERS


#: the key under which a fit records its seed in the checkpoint's identity
_SEED_KEY = "estimator_seed"


def _with_seed(checkpoint: Checkpointing | None, seed: int) -> Checkpointing | None:
    """``checkpoint`` with the fit's seed in its identity (a refit with ``random_state=None`` reads it back)."""
    if checkpoint is None:
        return None
    return attrs.evolve(checkpoint, identity={**checkpoint.identity, _SEED_KEY: seed})


@attrs.frozen
class LaplacePredictive:
    """Class probabilities averaged over the Laplace latent predictive N(μ_*, Σ_*) (Rasmussen & Williams
    2006, eq. 3.40 / 3.43; :func:`gpmodels.inference.map.predictive.latent_predictive`): Σ_* by ``latent``
    (``'exact'`` batched CG, ``'lanczos'`` a rank-256 LOVE basis), the average by ``n_samples`` Monte
    Carlo draws seeded once at ``fit``."""

    n_samples: int = attrs.field(default=2000, validator=integer(1, MAX_SIZE))
    latent: str = attrs.field(default="exact", validator=one_of(PREDICTIVE_METHODS))


def prior_device(prior) -> str:
    """Where ``prior`` puts its kernel matrices (its ``device``; ``cpu`` for a prior that does not say)."""
    return getattr(prior, "device", "cpu")  # optional: declared by priors that own a representation


#: ``GPClassifier``'s prior when none is given, before it meets the data: independent GPs per class with
#: separate kernels (the estimator's ``kernel=``, else RBF of width 'auto'), variance 1, intercept variance 1
DEFAULT_PRIOR = IndependentGP(None, "separate", 1.0, 1.0)


class GPClassifier(NestedParamsRouting, ClassifierMixin, BaseEstimator):
    """Multi-class GP classifier: a prior and a likelihood; hyperparameters learned by an objective,
    the MAP dual vector α̂ by a solver (Seeger 2008).

    ``prior``: an object with ``operator(X, n_classes)``: :class:`~gpmodels.priors.IndependentGP`,
    :class:`~gpmodels.priors.ANOVAPrior` (a class tree: the labels must be its leaves, by name),
    :class:`~gpmodels.priors.CoupledPrior`, a learned one (``kernel_`` of a fitted classifier) or a
    user prior.  The representation is the prior's.  None: :data:`DEFAULT_PRIOR` (independent GPs per class,
    ``sharing='separate'``: one kernel shape and one variance per class, variance 1, intercept variance 1).

    ``kernel``: the covariance shape M(x, x') of the classes' GPs: a gpmodels kernel (``gp.RBF()``,
    ``gp.Matern(length_scale=2.0)``, ``gp.RBF(length_scale=1.0) + gp.Linear()``, ...) or a scikit-learn
    kernel object (``Matern()``, ``1.0 * RBF(1.0)``: mapped by :func:`~gpmodels.kernels.from_sklearn`,
    bounds and fixed values kept).  ``kernel=K`` with ``prior=None`` is the default prior with K: independent
    GPs, each class its own copy of K (separate hyperparameters, learned), variance 1, intercept variance 1;
    with a prior it fills that prior's kernel, so ``prior=`` keeps the structure (class tree, coupling,
    sharing): the prior's kernel must then be None (``IndependentGP(sharing='semi')``), else the two
    kernels conflict and ``fit`` raises an InputError naming both.  None: the prior's kernel, else RBF with
    the width ``'auto'`` (w = 1 / Σ_j Var[x_j] of the training inputs, Seeger 2008, Sec. 6.2).  A width
    left ``'auto'`` (``gp.RBF()``) is set from the training inputs at ``fit``; ``kernel_`` records it.

    Nested parameters: ``get_params(deep=True)`` lists the prior's and the kernel's values as
    ``prior__variance``, ``prior__kernel__length_scale``, ``kernel__length_scale`` (``kernel__w``, ...), and
    ``set_params`` / ``GridSearchCV`` set them; the prior and gpmodels kernels are frozen, so the estimator
    stores the new object (``nested_defaults``: on ``prior=None`` or ``kernel=None`` they start from
    :data:`DEFAULT_PRIOR` or RBF of width ``'auto'``).

    ``likelihood``: default :class:`~gpmodels.likelihoods.softmax.Softmax`.

    ``objective``: how the hyperparameters (the operator's ``params``, from the prior's values) are
    learned: ``'cv'`` (default) minimises the cross-validation criterion Ψ over the folds of ``cv``;
    ``'laplace'`` maximises the Laplace approximation of the marginal likelihood; ``'map'`` keeps them;
    or a learner object with settings (:mod:`gpmodels.estimators.learners`).

    ``solver``: the inner MAP fit of α̂ at the learned hyperparameters: ``'newton-cg'`` (Alg. 1) or
    ``'exact'`` (exact Newton, App. C), with the default :class:`NewtonOptions`; or a solver object with
    its options, ``NewtonCG(NewtonOptions(...))`` or ``ExactNewton(...)``.

    ``cv``: the folds of ``objective='cv'``: an int q (stratified folds seeded from ``random_state``,
    :func:`gpmodels.data.splits.kfold_partition`) or a scikit-learn splitter (its test sets must
    partition the samples, as ``KFold`` / ``StratifiedKFold`` do).

    ``predictive``: how ``predict_proba`` makes probabilities: ``'plugin'`` p(y | μ_*) at the latent mean
    μ_* = K̃_{*,.} α̂, or ``'laplace'`` / a :class:`LaplacePredictive` (averaged over the Laplace latent
    predictive).

    ``n_jobs``: CV folds evaluated at once, as an engine (:func:`gpmodels.engine.engine_for_jobs`;
    None: sized from the usable cores and memory; 1: one after the other; the result is the same).  With
    the kernel matrices on a device the folds are refitted together in lockstep, one job
    (the execution plan, :mod:`gpmodels.inference.execution_plan`), so there ``n_jobs`` starts no workers.
    Under joblib's parallelism (``cross_val_score(est, X, y, n_jobs=k)``, ``GridSearchCV(n_jobs=k)``) the
    engine takes what joblib leaves it (:mod:`gpmodels.engine.outer`: in a worker, the BLAS limit joblib set
    there, cpu_count // k), never more workers than cores in all.
    ``random_state``: seeds the folds, the Laplace probes and the predictive draws (scikit-learn's
    convention).  ``checkpoint``: a path (or a :class:`~gpmodels.optimize.checkpoint.Checkpointing`)
    where learning checkpoints after every outer iteration, and from which a later fit with the same
    data and settings resumes; with ``random_state=None`` a refit takes the seed recorded there, so it
    resumes that fit (same folds) rather than meet a checkpoint of other folds.

    ``device``: where the kernel matrices live (the prior's ``representation.device``, set through its
    ``on_device``): ``'cpu'``; ``'cuda'`` (a GPU through PyTorch, the ``gpmodels[cuda]`` extra; without a
    usable GPU a :class:`~gpmodels.errors.DeviceError` naming what is missing, never a CPU run; kernels
    without a device form are refused by name); ``'auto'`` (the GPU when there is one, else the CPU);
    None: the prior's own setting (``cpu`` unless the prior says otherwise).  ``device_`` records where
    the fit ran.

    Fitted attributes: ``classes_``, ``n_features_in_`` (``feature_names_in_`` for a DataFrame),
    ``X_train_``, ``alpha_`` (α̂ (n, C), columns in the prior's class order ``model_class_order_``),
    ``kernel_`` (the prior at the learned hyperparameters, a :class:`~gpmodels.priors.learned.LearnedPrior`),
    ``model_`` (the :class:`~gpmodels.inference.map.model.MAPModel`), ``diagnostics_``, ``n_iter_``,
    ``learned_hyperparameters_`` (name -> natural value), ``learning_result_`` (the learner's result;
    None for ``'map'``), ``folds_`` (the CV partition; None unless ``'cv'``), ``device_``, ``predictive_`` (the
    fitted predictive: None for plug-in, else its :class:`LaplacePredictive`), ``predictive_seed_`` and ``plan_``
    (the :class:`~gpmodels.inference.execution_plan.ExecutionPlan` of the final fit, with the CV learning's
    decisions: ``plan_.describe()`` says where and how the work ran, and why).
    Predictions use only fitted attributes: ``set_params`` after ``fit`` takes effect at the next ``fit``.
    """

    def __init__(
        self,
        prior=None,
        likelihood=None,
        objective="cv",
        solver="newton-cg",
        cv=5,
        predictive="plugin",
        n_jobs=None,
        random_state=None,
        checkpoint=None,
        device=None,
        kernel=None,
    ):
        store_params(self, locals())

    nested_defaults = {"prior": lambda: DEFAULT_PRIOR, "kernel": default_kernel}

    def __sklearn_tags__(self):
        return classifier_tags()

    # ------------------------------------------------------------------ settings
    def _solver(self):
        if isinstance(self.solver, str) and self.solver in SOLVERS:
            return SOLVERS[self.solver]()
        if isinstance(self.solver, tuple(SOLVERS.values())):
            return self.solver
        raise InputError(
            f"The 'solver' parameter of {type(self).__name__} must be 'newton-cg', 'exact' or a "
            f"solver object (NewtonCG(options), ExactNewton(options)); got {self.solver!r} instead"
        )

    def _predictive(self) -> LaplacePredictive | None:
        if isinstance(self.predictive, LaplacePredictive):
            return self.predictive
        if isinstance(self.predictive, str) and self.predictive in ("plugin", "laplace"):
            return None if self.predictive == "plugin" else LaplacePredictive()
        raise InputError(
            f"The 'predictive' parameter of {type(self).__name__} must be 'plugin', 'laplace' or a "
            f"LaplacePredictive; got {self.predictive!r} instead"
        )

    def _folds(self, X, codes, seed: int) -> list[np.ndarray]:
        """The CV partition: stratified seeded folds for an int ``cv``, a splitter's test sets otherwise."""
        owner, n, cv = type(self).__name__, codes.size, self.cv
        if isinstance(cv, (int, np.integer)) and not isinstance(cv, bool):
            if not 2 <= cv <= n:
                raise InputError(
                    f"The 'cv' parameter of {owner} must be an int number of folds in 2..n_samples "
                    f"= {n} or a scikit-learn splitter; got {cv!r} instead"
                )
            return kfold_partition(n, int(cv), seed, y=codes)
        if not (callable(getattr(cv, "split", None)) and callable(getattr(cv, "get_n_splits", None))):
            raise InputError(
                f"The 'cv' parameter of {owner} must be an int number of folds or a scikit-learn "
                f"splitter (with split and get_n_splits); got {cv!r} instead"
            )
        folds = [np.sort(np.asarray(test, dtype=np.intp)) for _, test in cv.split(X, codes)]
        covered = np.concatenate(folds) if folds else np.zeros(0, dtype=np.intp)
        if len(folds) < 2 or covered.size != n or np.unique(covered).size != n:
            raise InputError(
                f"the splitter {cv!r} of {owner} must give at least 2 test sets that partition the "
                f"{n} samples (each sample in exactly one); Ψ sums the held-out terms of every sample"
            )
        return folds

    def _prior(self, X):
        """The prior with ``kernel`` and its widths set from X (:func:`prior_with_kernel`), on ``device`` when
        one is given (the prior's ``on_device``)."""
        prior = DEFAULT_PRIOR if self.prior is None else self.prior
        prior = prior_with_kernel(type(self).__name__, prior, self.kernel, X)
        if self.device is None:
            return prior
        move = getattr(prior, "on_device", None)  # optional: declared by priors that own a representation
        if move is None:
            raise InputError(
                f"The 'device' parameter of {type(self).__name__} needs a prior that declares on_device "
                f"(IndependentGP, ANOVAPrior, CoupledPrior or a learned one); {type(prior).__name__} does "
                "not: leave device=None and place its kernel matrices in the prior itself"
            )
        return move(self.device)

    def _device(self) -> str:
        """Where the kernel matrices go (:func:`~gpmodels.kernels.device.backend.device_in_use`): ``cuda``
        without a usable GPU raises a DeviceError naming what is missing, before any work."""
        if self.device is not None and (not isinstance(self.device, str) or self.device not in DEVICES):
            raise InputError(
                f"The 'device' parameter of {type(self).__name__} must be None (the prior's own), "
                f"'cpu', 'cuda' or 'auto'; got {self.device!r} instead"
            )
        return device_in_use(self.device or "cpu")

    def _class_order(self, prior, classes) -> np.ndarray:
        """perm: class k of ``classes_`` is column perm[k] of the operator.  A prior that orders the classes
        (a class tree's leaves, ``class_names``) needs the labels to be those names."""
        names = getattr(prior, "class_names", None)  # optional: declared by priors that order the classes
        if names is None:
            return np.arange(classes.size)
        labels = [str(c) for c in classes]
        index = {name: j for j, name in enumerate(names)}
        unknown = [c for c in labels if c not in index]
        missing = [name for name in names if name not in set(labels)]
        if unknown or missing:
            parts = []
            if unknown:
                parts.append(f"label(s) {', '.join(map(repr, unknown[:5]))} are not leaves of the tree")
            if missing:
                parts.append(f"leaf/leaves {', '.join(map(repr, missing[:5]))} have no training label")
            raise HierarchyError(
                f"the prior's class tree does not fit the labels of y: {'; '.join(parts)}. The "
                f"leaves must be the classes by name: leaves {list(names)[:8]}, labels "
                f"{labels[:8]}"
            )
        return np.array([index[c] for c in labels], dtype=np.intp)

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y):
        """Learn the hyperparameters by ``objective``, then fit α̂ by ``solver`` (class docstring)."""
        owner = type(self).__name__
        X_raw, X = X, check_features("X", X)
        classes, codes = encode_targets(y)
        if codes.size != X.shape[0]:
            raise InputError(f"X has {X.shape[0]} samples but y has {codes.size}")
        device = self._device()
        learner = learner_of(owner, self.objective)
        solver = self._solver()
        predictive = self._predictive()
        checkpoint = self._checkpointing()
        seed = self._seed(checkpoint)
        prior = self._prior(X)
        if self.device is None and prior_device(prior) != "cpu":
            device = device_in_use(prior_device(prior))
        perm = self._class_order(prior, classes)
        C = classes.size
        op = prior.operator(X, C)
        lik = self.likelihood if self.likelihood is not None else Softmax()
        Y = labels_to_targets(perm[codes], C)
        folds = self._folds(X, codes, seed) if learner is not None and learner.uses_folds else None
        engine = engine_for_jobs(self.n_jobs, type(self).__name__)  # checks n_jobs; starts no worker yet
        learned, start_op, start_lik = None, op, lik
        if learner is not None:
            with engine:
                learned = learner.learn(
                    op, lik, Y, folds=folds, seed=seed, checkpoint=_with_seed(checkpoint, seed), engine=engine
                )
            op, lik = learned.operator, learned.likelihood
            warn_unconverged(
                learned.result,
                f"{owner} learning (objective={learner.name!r})",
                "raise the outer iteration limit of the learner object",
            )
        with limit_blas_threads(1):  # short BLAS calls: idle OpenBLAS threads would spin between them
            model = fit_map(op, lik, Y, solver)
        if learned is None:
            warn_unconverged(model.result, f"{owner}'s Newton fit of alpha", "raise max_iter of the solver's options")
            self.learning_outcome_ = None
        else:
            self.learning_outcome_ = self._assess_learning(learned, model, Y, start_op, start_lik, solver)
        self.classes_ = classes
        record_features(self, X_raw, X)
        self.model_class_order_ = perm
        self.X_train_ = X
        self.model_ = model
        self.alpha_ = model.alpha
        self.diagnostics_ = model.result.diagnostics
        self.n_iter_ = model.result.diagnostics.iterations
        base = prior.prior if isinstance(prior, LearnedPrior) else prior
        self.kernel_ = LearnedPrior(base, op.params, op.param_names)
        names, theta = (learned.names, learned.theta) if learned is not None else (op.param_names, op.params)
        self.learned_hyperparameters_ = natural_values(names, np.asarray(theta, dtype=float))
        self.learning_result_ = None if learned is None else learned.result
        self.plan_ = model.plan.with_learning(None if learned is None else learned.plan)
        self.folds_ = folds
        self.predictive_ = predictive
        self.device_ = device
        self.predictive_seed_ = seed if predictive is not None else None
        self._fit_state = (learner, Y, seed)
        return self

    def _assess_learning(self, learned, model, Y, start_op, start_lik, solver) -> LearningOutcome:
        """The learned model's problems (:func:`~gpmodels.optimize.outcome.assess_learning`), each named in one
        ConvergenceWarning; the fit at the starting hyperparameters is compared with only when the final fit
        did not converge (it costs one more fit)."""
        start = None
        if not model.result.diagnostics.converged:
            with limit_blas_threads(1):
                start = fit_map(start_op, start_lik, Y, solver)
        bounds = getattr(learned.result, "bounds", None)
        if bounds is None:
            bounds = np.tile([-np.inf, np.inf], (np.size(learned.theta), 1))
        outcome = assess_learning(learned.names, learned.theta, bounds, model, Y, start=start)
        if not outcome.ok:
            warnings.warn(
                f"{type(self).__name__}: the learned model may be broken: {'; '.join(outcome.problems)}",
                ConvergenceWarning,
                stacklevel=3,
            )
        return outcome

    def _seed(self, checkpoint) -> int:
        """The seed of this fit: from ``random_state``; with ``random_state=None`` and a checkpoint to resume
        from, the seed that checkpoint's fit drew (so that a refit resumes it instead of meeting other folds)."""
        if self.random_state is None and checkpoint is not None and checkpoint.resume:
            recorded = (caller_identity(checkpoint.path) or {}).get(_SEED_KEY)
            if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded >= 0:
                return recorded
        return seed_from(type(self).__name__, self.random_state)

    def _checkpointing(self):
        if self.checkpoint is None or isinstance(self.checkpoint, Checkpointing):
            return self.checkpoint
        if not isinstance(self.checkpoint, (str, os.PathLike)):
            raise InputError(
                f"The 'checkpoint' parameter of {type(self).__name__} must be None, a path or a "
                f"gpmodels.optimize.checkpoint.Checkpointing; got {self.checkpoint!r} instead"
            )
        return Checkpointing(self.checkpoint)

    # ------------------------------------------------------------------ the learning criterion
    def learning_criterion(self, theta=None, eval_gradient: bool = False):
        """The criterion the objective minimises, at the log-space hyperparameters ``theta`` (default: the
        learned ones; names in ``learned_hyperparameters_`` order): Ψ(θ) for ``'cv'`` (on ``folds_``),
        -log q(y | θ) for ``'laplace'``.  Returns the value, or (value, gradient) with ``eval_gradient``,
        as scikit-learn's ``log_marginal_likelihood`` does."""
        check_fitted(self)
        learner, Y, seed = self._fit_state
        if learner is None:
            raise InputError(
                f"{type(self).__name__}(objective='map') learns no hyperparameters and has no learning "
                "criterion; fit with objective='cv' or 'laplace'"
            )
        model = self.model_
        if theta is None:
            theta = (
                np.concatenate([model.operator.params, model.likelihood.params])
                if learner.name == "laplace"
                else model.operator.params
            )
        value, grad = learner.criterion(
            model.operator,
            model.likelihood,
            Y,
            theta,
            folds=self.folds_,
            seed=seed,
            eval_gradient=eval_gradient,
            start=self.learning_result_,
        )
        return (value, grad) if eval_gradient else value

    # ------------------------------------------------------------------ prediction
    def predict_latent(self, X, return_cov: bool = False):
        """The latent mean μ_* = K̃_{*,.} α̂ (m, C) at X, columns in ``classes_`` order, and with
        ``return_cov`` the Laplace latent covariance Σ_* (m, C, C) of every point (Rasmussen & Williams
        2006, eq. 3.43; :func:`gpmodels.inference.map.predictive.latent_predictive`)."""
        check_fitted(self)
        X = check_X(self, X)
        perm = self.model_class_order_
        if not return_cov:
            return self.model_.latent(X)[:, perm]
        predictive = self.predictive_ or LaplacePredictive()
        pred = latent_predictive(self.model_, X, method=predictive.latent, random_state=self.predictive_seed_ or 0)
        return pred.mean[:, perm], pred.cov[:, perm][:, :, perm]

    def decision_function(self, X):
        """Latent values μ_* (m, C); for two classes μ_1 - μ_0 (m,), as scikit-learn expects.  With a
        Laplace predictive the log predictive probabilities instead, so that the argmax is ``predict``'s."""
        check_fitted(self)
        U = self.predict_latent(X) if self.predictive_seed_ is None else self.predict_log_proba(X)
        return U[:, 1] - U[:, 0] if U.shape[1] == 2 else U

    def predict_proba(self, X):
        """Class probabilities (m, C) in ``classes_`` order, by ``predictive`` (class docstring)."""
        check_fitted(self)
        X = check_X(self, X)
        if self.predictive_seed_ is None:
            P = self.model_.likelihood.predict(self.model_.latent(X))
        else:
            predictive = self.predictive_
            pred = latent_predictive(self.model_, X, method=predictive.latent, random_state=self.predictive_seed_)
            P = predictive_proba(
                pred, self.model_.likelihood, n_samples=predictive.n_samples, random_state=self.predictive_seed_
            )
        return P[:, self.model_class_order_]

    def predict_log_proba(self, X):
        return np.log(np.maximum(self.predict_proba(X), 1e-300))

    def predict(self, X):
        P = self.predict_proba(X)
        return self.classes_[np.argmax(P, axis=1)]

    # ------------------------------------------------------------------ model folders
    def save(self, path):
        """Write a model folder (``model.npz`` + ``spec.resolved.yaml``) that ``gpmodels predict`` reads and
        :func:`gpmodels.estimators.load_classifier` loads back (:mod:`gpmodels.estimators.saving`)."""
        return save_classifier(self, path)
