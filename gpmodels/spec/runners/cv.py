"""The `cv` runner: learn hyperparameters by the CV criterion Ψ, then the final fit (Seeger 2008, Sec. 4, 6.2).

Settings come from ``objective.cv`` (learning: the partition, k3 and tolerances, the refits'
Newton–CG in ``objective.cv.newton``, the outer optimiser in ``objective.cv.outer``),
``objective.newton`` (the final fit) and ``objective.solver`` (``newton-cg`` or ``exact``).  The model is the joint
softmax over all classes (the sharing mode
``model.sharing`` gives mc-tied / mc-semi / mc-sep); one-vs-rest is its own objective
(``run_one_vs_rest.py``), which shares the helpers here.

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

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.data.datasets import Dataset
from gpmodels.data.splits import kfold_partition
from gpmodels.engine.base import LocalEngine
from gpmodels.errors import SpecError
from gpmodels.inference.cv.criterion import CVOptions
from gpmodels.inference.cv.learn import Checkpointing, LearnOptions, fit_learned, learn_hyperparameters
from gpmodels.optimize.checkpoint import digest_array
from gpmodels.reports import class_scopes, hyperparameter_classes
from gpmodels.spec.build import (
    build_likelihood,
    build_newton_options,
    build_prior,
    build_tree,
    prior_operator,
    resolve_model,
)
from gpmodels.spec.outcome import RunOutcome, map_saver
from gpmodels.spec.runners.predictive import predict_test_set
from gpmodels.spec.sections import ObjectiveSpec, Spec
from gpmodels.validation import labels_to_targets

__all__ = ["run_cv", "build_learn_options", "cv_partition", "checkpoint_identity", "iteration_reporter",
           "learning_metrics"]


def build_learn_options(o: ObjectiveSpec) -> LearnOptions:
    """LearnOptions from the objective section: one Ψ evaluation from ``o.cv`` (its refits from
    ``o.cv.newton``), the outer optimiser from ``o.cv.outer``, the final fit from ``o.newton``; the
    inner solver of both is ``o.solver``."""
    c = o.cv
    cv = c.options(CVOptions, solver=o.solver)
    return LearnOptions(cv=cv, outer=c.outer.options(), final=build_newton_options(o), final_solver=o.solver,
                        lower=c.lower, upper=c.upper, inner_tolerances=c.inner_tolerances)


def cv_partition(spec: Spec, y) -> list[np.ndarray]:
    """The fixed, seeded, stratified q-partition of the training set."""
    c = spec.objective.cv
    return kfold_partition(len(y), c.folds, spec.seed if c.partition_seed is None else c.partition_seed, y=y)


def _data_digest(X, y) -> dict:
    if sp.issparse(X):
        x = [digest_array(X.data), digest_array(X.indices), digest_array(X.indptr)]
    else:
        x = digest_array(np.asarray(X))
    return {"X": x, "y": digest_array(np.asarray(y))}


def checkpoint_identity(resolved: Spec, data: Dataset) -> dict:
    """What a checkpoint must match: the learning-relevant spec and the training data."""
    d = resolved.to_dict()
    cv = {k: v for k, v in d["objective"]["cv"].items() if k not in ("checkpoint", "resume")}
    return {"seed": d["seed"], "data": d["data"], "model": d["model"], "solver": d["objective"]["solver"], "cv": cv,
            "train": _data_digest(data.X_train, data.y_train)}


def iteration_reporter(say, bar, prefix=""):
    """``on_iteration`` of the learner: a message per outer iteration and the bar moved to it."""

    def report(rec):
        bar.outer(rec)
        say(
            f"{prefix}iteration {rec.iteration}: Ψ = {rec.value:.6g}, max|∇Ψ| = {rec.grad_norm:.3g}, "
            f"{rec.evaluations} evaluation{'s' if rec.evaluations != 1 else ''} ({rec.failed} failed), "
            f"{rec.seconds:.1f} s"
        )

    return report


def learning_metrics(results, prefix="") -> dict:
    """Outer iterations, evaluations, failures and learning time summed over ``results``."""
    out = {}
    for r in results:
        st = r.outer
        for key, value in (("outer_iterations", st.iteration), ("evaluations", st.evaluations),
                           ("failed_evaluations", st.failed), ("learning_seconds", st.elapsed)):
            out[f"{prefix}{key}"] = out.get(f"{prefix}{key}", 0) + value
    evals = [e for r in results for e in r.evaluations]
    out[f"{prefix}psi_evaluation_seconds"] = float(np.mean([e.seconds for e in evals])) if evals else None
    out[f"{prefix}learning_converged"] = all(r.converged for r in results)
    return out


def run_cv(spec: Spec, data: Dataset, base_dir: Path | None, say, *, engine=None) -> RunOutcome:
    """Learn by the CV criterion, fit at the learned hyperparameters, predict the test set."""
    c = spec.objective.cv
    C = data.n_classes
    resolved = attrs.evolve(spec, model=resolve_model(spec.model, data.X_train))
    tree = build_tree(spec, data, base_dir)
    prior = build_prior(resolved.model, data.X_train, base_dir, tree=tree, engine=engine)
    if c.learn_sigma2:
        if not getattr(prior, "can_learn_sigma2", False):  # optional in the prior protocol
            raise SpecError(
                f"prior {spec.model.prior!r} has no `learn_sigma2` setting; learn σ² inside the prior "
                "(e.g. Intercept(op, σ², learn=True)) and drop this key",
                "objective.cv.learn_sigma2",
            )
        prior = prior.learning_sigma2()
    likelihood = build_likelihood(resolved.model)
    options = build_learn_options(resolved.objective)
    folds = cv_partition(resolved, data.y_train)
    checkpoint = None
    if c.checkpoint:
        checkpoint = Checkpointing(Path(spec.output.dir) / "checkpoint.npz", resume=c.resume == "auto",
                                   identity=checkpoint_identity(resolved, data))
    metrics: dict = {}
    t = time.perf_counter()
    Y = labels_to_targets(data.y_train, C)
    op = prior_operator(prior, resolved.model, data.X_train, C)
    say(f"learning {op.params.size} hyperparameters by {c.folds}-fold CV ({', '.join(op.param_names)})")
    with say.bar(None, "CV outer iterations") as bar:
        res = learn_hyperparameters(op, likelihood, Y, folds, options, checkpoint=checkpoint,
                                    on_iteration=iteration_reporter(say, bar), engine=engine or LocalEngine())
    if res.resumed_from is not None:
        say(f"resumed from the checkpoint of outer iteration {res.resumed_from}")
    learn_s = time.perf_counter() - t
    say(
        f"learned in {res.outer.iteration} iterations, {res.outer.evaluations} evaluations "
        f"({res.outer.failed} failed): Ψ {res.history[0].value:.6g} -> {res.psi:.6g} ({res.message})"
    )
    t = time.perf_counter()
    with say.bar(None, "final fit: Newton") as bar:
        model = fit_learned(res, likelihood, Y, options, on_iteration=bar.newton)
    fit_s = time.perf_counter() - t
    diag = model.result.diagnostics
    say(f"final fit: {diag.iterations} Newton iterations, {diag.mvm_count} MVMs, {fit_s:.2f} s ({diag.message})")
    P, predictive = predict_test_set(spec, model, data.X_test, data.y_test, say)
    metrics.update(predictive)
    metrics.update({f"hyper.{k}": v for k, v in res.hyperparameters().items()})
    metrics.update({f"hyper_scope.{k}": v for k, v in hyperparameter_classes(
        res.hyperparameters(), model.operator.param_classes(), data.classes).items()})
    metrics.update(
        {"psi_start": res.history[0].value, "psi_learned": res.psi, "final_newton_iterations": diag.iterations,
         "final_mvm_count": diag.mvm_count, "final_converged": bool(diag.converged),
         "final_phi": float(model.result.phi)}
    )
    diagnostics = {"learning": [r.as_dict() for r in res.history], "learning_message": res.message,
                   "final_fit": diag.as_dict()}
    if spec.evaluation.train_scores:
        from gpmodels.scoring import metrics as M

        tr = M.classification_report(likelihood.predict(model.result.u), data.y_train)
        metrics.update({f"train_{k}": v for k, v in tr.items()})
    metrics.update(learning_metrics([res]))
    metrics.update(
        {"learning_wall_seconds": learn_s, "final_fit_seconds": fit_s, "resumed_from_iteration": res.resumed_from,
         "folds": c.folds}
    )
    return RunOutcome(metrics, P, diagnostics, resolved,
                      save=map_saver(data, model.operator, likelihood, model.alpha, tree=tree),
                      traces={"Psi": [r.value for r in res.history]}, trace_units={"Psi": "outer iteration"},
                      trace_gradients={"Psi": ("max |∇Ψ| (projected)", [r.grad_norm for r in res.history])},
                      paths=(tuple(class_scopes(res.names, model.operator.param_classes(), data.classes)),
                             np.array([r.x for r in res.history])))
