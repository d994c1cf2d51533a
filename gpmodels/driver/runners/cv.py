"""The `cv` runner: learn hyperparameters by the CV criterion Ψ, then the final fit (Seeger 2008, Sec. 4, 6.2).

Settings come from ``objective.cv`` (learning: the partition, k3 and tolerances, the refits'
Newton–CG in ``objective.cv.newton``, the outer optimiser in ``objective.cv.outer``),
``objective.newton`` (the final fit) and ``objective.solver`` (``newton-cg`` or ``exact``).  The model is the joint
softmax over all classes (the sharing mode
``model.sharing`` gives mc-tied / mc-semi / mc-sep); one-vs-rest is its own objective
(``one_vs_rest.py``); both share the helpers of ``common.py``.

With ``objective.cv.checkpoint`` the learning state goes to ``<report folder>/checkpoint.npz``
after every successful outer iteration; a rerun of the same spec resumes from it
(``resume: auto``).  A checkpoint of another spec or other data, or a corrupt one, stops the run
with a CheckpointError.

Progress: a bar over the outer iterations (Ψ, max |∇Ψ| and the evaluations in its postfix), then
one over the final fit's Newton iterations, when the console shows bars.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from gpmodels.data.datasets import Dataset
from gpmodels.driver.build import build_learn_options, cv_partition
from gpmodels.driver.outcome import RunOutcome, map_saver
from gpmodels.driver.runners.common import (
    iteration_reporter,
    learning_checkpoint,
    learning_metrics,
    predict_test_set,
    prepare,
)
from gpmodels.driver.sections.spec import Spec
from gpmodels.engine.base import LocalEngine
from gpmodels.hyperparameters import with_length_scales
from gpmodels.inference.cv.learn import fit_learned, learn_hyperparameters
from gpmodels.inference.map.model import fit_map
from gpmodels.inference.map.solvers import make_solver
from gpmodels.optimize.outcome import assess_learning
from gpmodels.reports import class_scopes, hyperparameter_classes
from gpmodels.scoring import metrics as M

__all__ = ["run_cv"]


def _learn(problem, folds, options, checkpoint, say, engine):
    """Ψ learning (Sec. 4) with a bar over the outer iterations and its messages; (result, seconds)."""
    op = problem.operator
    t = time.perf_counter()
    with say.bar(options.outer.max_iter, "CV outer iterations") as bar:
        res = learn_hyperparameters(
            op,
            problem.likelihood,
            problem.targets,
            folds,
            options,
            checkpoint=checkpoint,
            on_iteration=iteration_reporter(say, bar),
            engine=engine or LocalEngine(),
        )
    if res.resumed_from is not None:
        say(f"resumed from the checkpoint of outer iteration {res.resumed_from}")
    learn_s = time.perf_counter() - t
    say(
        f"learned in {res.outer.iteration} iterations, {res.outer.evaluations} evaluations "
        f"({res.outer.failed} failed): Ψ {res.history[0].value:.6g} -> {res.psi:.6g} ({res.message})"
    )
    return res, learn_s


def _metrics(spec: Spec, data: Dataset, res, model, likelihood, predictive: dict, learn_s: float, fit_s: float):
    """metrics.json of a CV run: test scores, learned hyperparameters (by name and by class scope),
    Ψ before and after, the final fit, train scores when asked, learning counts and times."""
    diag = model.result.diagnostics
    metrics = dict(predictive)
    metrics.update({f"hyper.{k}": v for k, v in with_length_scales(res.hyperparameters()).items()})
    scopes = hyperparameter_classes(res.hyperparameters(), model.operator.param_classes(), data.classes)
    metrics.update({f"hyper_scope.{k}": v for k, v in scopes.items()})
    metrics.update(
        {
            "psi_start": res.history[0].value,
            "psi_learned": res.psi,
            "final_newton_iterations": diag.iterations,
            "final_mvm_count": diag.mvm_count,
            "final_converged": bool(diag.converged),
            "final_phi": float(model.result.phi),
        }
    )
    if spec.evaluation.train_scores:
        tr = M.classification_report(likelihood.predict(model.result.u), data.y_train)
        metrics.update({f"train_{k}": v for k, v in tr.items()})
    metrics.update(learning_metrics([res]))
    metrics.update(
        {
            "learning_wall_seconds": learn_s,
            "final_fit_seconds": fit_s,
            "resumed_from_iteration": res.resumed_from,
            "folds": spec.objective.cv.folds,
        }
    )
    return metrics


def _assess(res, model, problem, options, say):
    """The learned model's problems (:func:`~gpmodels.optimize.outcome.assess_learning`), printed as warnings;
    the fit at the starting hyperparameters is compared with only when the final fit did not converge."""
    start = None
    if not model.result.diagnostics.converged:
        start = fit_map(
            problem.operator, problem.likelihood, problem.targets, make_solver(options.final_solver, options.final)
        )
    outcome = assess_learning(res.names, res.theta, res.bounds, model, problem.targets, start=start)
    for problem_text in outcome.problems:
        say(f"warning: the learned model may be broken: {problem_text}")
    return outcome


def run_cv(spec: Spec, data: Dataset, base_dir: Path | None, say, *, engine=None) -> RunOutcome:
    """Learn by the CV criterion, fit at the learned hyperparameters, predict the test set."""
    c = spec.objective.cv
    problem = prepare(spec, data, base_dir, engine=engine)
    resolved, op, likelihood, Y = problem.resolved, problem.operator, problem.likelihood, problem.targets
    options = build_learn_options(resolved.objective)
    folds = cv_partition(resolved, data.y_train)
    checkpoint = learning_checkpoint(resolved, data)
    say(f"learning {op.params.size} hyperparameters by {c.folds}-fold CV ({', '.join(op.param_names)})")
    res, learn_s = _learn(problem, folds, options, checkpoint, say, engine)
    t = time.perf_counter()
    with say.newton_bar(options.final.max_iter, "final fit: Newton") as bar:
        model = fit_learned(res, likelihood, Y, options, on_iteration=bar.newton)
    fit_s = time.perf_counter() - t
    diag = model.result.diagnostics
    say(f"final fit: {diag.iterations} Newton iterations, {diag.mvm_count} MVMs, {fit_s:.2f} s ({diag.message})")
    outcome = _assess(res, model, problem, options, say)
    P, predictive = predict_test_set(spec, model, data.X_test, data.y_test, say)
    metrics = _metrics(spec, data, res, model, likelihood, predictive, learn_s, fit_s)
    metrics.update(outcome.as_dict())
    diagnostics = {
        "learning": [r.as_dict() for r in res.history],
        "learning_message": res.message,
        "final_fit": diag.as_dict(),
    }
    return RunOutcome(
        metrics,
        P,
        diagnostics,
        resolved,
        save=map_saver(data, model.operator, likelihood, model.alpha, tree=problem.tree),
        traces={"Psi": [r.value for r in res.history]},
        trace_units={"Psi": "outer iteration"},
        trace_gradients={"Psi": ("max |∇Ψ| (projected)", [r.grad_norm for r in res.history])},
        paths=(
            tuple(class_scopes(res.names, model.operator.param_classes(), data.classes)),
            np.array([r.x for r in res.history]),
        ),
        plan=model.plan.with_learning(res.plan),
    )
