"""How ``GPClassifier`` learns its hyperparameters: one object per objective.

``objective="cv"`` is :class:`CV` (the cross-validation criterion Ψ, Seeger 2008, Sec. 4, eq. (3)-(4))
and ``objective="laplace"`` is :class:`Laplace` (the Laplace approximation of the marginal likelihood,
Rasmussen & Williams 2006, Sec. 3.4-3.5, 5.5.1); ``objective="map"`` learns nothing (the
hyperparameters stay as the prior gives them).  Pass an object to change a learner's settings,
e.g. ``CV(LearnOptions(outer=OuterOptions(max_iter=50)))``.

A learner ``learn``\\ s from an operator at its start hyperparameters and evaluates its ``criterion``
(the value the learning minimises, and its gradient on request) at any θ.  ``uses_folds`` declares
whether it needs the CV partition.
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.inference.cv.criterion import cv_criterion
from gpmodels.inference.cv.learn import LearnOptions, learn_hyperparameters
from gpmodels.inference.execution_plan import ExecutionPlan
from gpmodels.inference.marginal.laplace import LaplaceOptions, laplace_mlm, learn_laplace
from gpmodels.optimize.lbfgs import OuterOptions
from gpmodels.optimize.objective import JointParams
from gpmodels.validation import instance_of

__all__ = ["CV", "Laplace", "Learned", "OBJECTIVES", "learner_of"]


@attrs.frozen(eq=False)
class Learned:
    """What a learner returns: the operator and likelihood at the learned hyperparameters, the
    learned log-space vector (``names``: the operator's, then the likelihood's), the learner's result and the
    execution plan of its last criterion evaluation (None where the criterion has none of its own)."""

    operator: object
    likelihood: object
    names: tuple
    theta: np.ndarray
    result: object
    plan: ExecutionPlan | None = None


def _cv_options() -> LearnOptions:
    options = LearnOptions()
    return attrs.evolve(options, outer=attrs.evolve(options.outer, max_iter=20))


@attrs.frozen
class CV:
    """Minimise Ψ(θ) = -Σ_k Σ_{i ∈ I_k} log P(y_i | û_{\\I_k}(x_i)) over the folds I_k (Seeger 2008,
    eq. (3)) by :func:`gpmodels.inference.cv.learn.learn_hyperparameters` with ``options`` (default:
    ``LearnOptions`` with at most 20 outer quasi-Newton iterations)."""

    options: LearnOptions = attrs.field(factory=_cv_options, validator=instance_of(LearnOptions))

    name = "cv"
    uses_folds = True

    def learn(self, op, lik, Y, *, folds, seed: int, checkpoint, engine) -> Learned:
        res = learn_hyperparameters(op, lik, Y, folds, self.options, checkpoint=checkpoint, engine=engine)
        return Learned(res.operator, lik, tuple(res.names), np.asarray(res.theta, dtype=float), res, res.plan)

    def criterion(self, op, lik, Y, theta, *, folds, seed: int, eval_gradient: bool, start=None):
        """Ψ at θ (the operator's log-space vector) and ∇Ψ (Sec. 5.2) when ``eval_gradient``; the folds' refits
        warm-started from the inner state the learning ``start`` (a :class:`LearnResult`) ended in, as the
        learning's own evaluations were (cold, they may not converge in the refits' iteration limits at
        hyperparameters the learning reached step by step)."""
        inner = getattr(getattr(start, "outer", None), "inner", None)
        ev = cv_criterion(
            op.with_params(_vector(theta, op.params.size, op.param_names)),
            lik,
            Y,
            folds,
            self.options.cv,
            state=inner,
            gradient=eval_gradient,
        )
        if not ev.ok:
            raise InputError(f"the inner fits of Ψ did not converge at this θ ({ev.message}); Ψ is not defined there")
        return ev.psi, (np.asarray(ev.gradient, dtype=float) if eval_gradient else None)


@attrs.frozen
class Laplace:
    """Minimise -log q(y | θ), the Laplace approximation of the marginal likelihood (Rasmussen &
    Williams 2006, eq. 3.32; gradient eq. 5.22-5.24), over the operator's and the likelihood's
    hyperparameters by :func:`gpmodels.inference.marginal.laplace.learn_laplace` with ``options``
    (its ``seed`` is replaced by the estimator's ``random_state``) and the outer optimiser ``outer``
    (default: at most 20 iterations, stopping when an iteration raises log q by less than 1e-4 of it:
    on digits-500 that is 0.03 nats, and the ten iterations it saves raised log q by 0.11 nats in all
    and left the test error unchanged)."""

    options: LaplaceOptions = attrs.field(factory=LaplaceOptions, validator=instance_of(LaplaceOptions))
    outer: OuterOptions = attrs.field(
        factory=lambda: OuterOptions(max_iter=20, ftol=1e-4), validator=instance_of(OuterOptions)
    )

    name = "laplace"
    uses_folds = False

    def learn(self, op, lik, Y, *, folds, seed: int, checkpoint, engine) -> Learned:
        res, op, lik = learn_laplace(
            op, lik, Y, attrs.evolve(self.options, seed=seed), outer=self.outer, checkpoint=checkpoint
        )
        return Learned(op, lik, tuple(res.names), np.asarray(res.x, dtype=float), res)

    def criterion(self, op, lik, Y, theta, *, folds, seed: int, eval_gradient: bool, start=None):
        """-log q(y | θ) at the joint vector θ (operator, then likelihood) and its gradient (``start``: unused,
        the Laplace mode is found from α = 0)."""
        joint = JointParams(op, lik)
        op_t, lik_t = joint.build(_vector(theta, joint.x0.size, joint.names))
        res = laplace_mlm(op_t, lik_t, Y, attrs.evolve(self.options, seed=seed), gradient=eval_gradient)
        return -res.log_marginal, (-np.asarray(res.gradient, dtype=float) if eval_gradient else None)


def _vector(theta, size: int, names) -> np.ndarray:
    theta = np.asarray(theta, dtype=np.float64).ravel()
    if theta.size != size or not np.all(np.isfinite(theta)):
        raise InputError(
            f"theta must be {size} finite log-space values, one per hyperparameter {tuple(names)}; "
            f"got {theta.size} values"
        )
    return theta


#: objective names and their learners (None: no learning)
OBJECTIVES = {"cv": CV, "laplace": Laplace, "map": None}


def learner_of(owner: str, objective):
    """The learner of ``objective`` (a name in :data:`OBJECTIVES` or a learner object); None for ``map``."""
    if isinstance(objective, (CV, Laplace)):
        return objective
    if isinstance(objective, str) and objective in OBJECTIVES:
        make = OBJECTIVES[objective]
        return None if make is None else make()
    raise InputError(
        f"The 'objective' parameter of {owner} must be 'cv', 'laplace', 'map' or a learner object "
        f"(gpmodels.estimators.CV or Laplace); got {objective!r} instead"
    )
