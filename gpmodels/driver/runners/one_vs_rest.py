"""The `one_vs_rest` runner: C binary models, each with its own hyperparameters (Seeger 2008, Sec. 6.2, "1rest").

Task c is a two-class softmax model of class c against the rest, with the independent prior of
``model`` (its hyperparameters the starting point of every task).  With ``objective.learn`` (the
default) every task learns its hyperparameters by the CV criterion Ψ with the ``objective.cv``
settings on the same fold partition, then the final fit with ``objective.newton``; with ``learn: false`` every task
is fitted at the given hyperparameters.  Prediction:
the largest P̂_c(+1 | x) (``inference/one_vs_rest.py``).

With ``objective.cv.checkpoint`` task c checkpoints to ``<report folder>/checkpoint-class<c>.npz``;
a rerun resumes every task from its own file.  Reports: ``trace_Psi.png`` (learning) or
``trace_Phi.png`` (fits), one line per class; the model is saved as kind ``one_vs_rest``
(:mod:`gpmodels.persistence`), so ``gpmodels predict`` reads it.  Progress: per class a bar over
the outer iterations and one over the final fit's Newton iterations.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from gpmodels.data.datasets import Dataset
from gpmodels.driver.build import build_learn_options, build_newton_options, cv_partition
from gpmodels.driver.outcome import RunOutcome
from gpmodels.driver.runners.common import iteration_reporter, learning_checkpoint, learning_metrics, prepare
from gpmodels.driver.sections.spec import Spec
from gpmodels.engine.base import LocalEngine
from gpmodels.hyperparameters import with_length_scales
from gpmodels.inference.cv.learn import fit_learned, learn_hyperparameters
from gpmodels.inference.cv.one_vs_rest import (
    OneVsRestModel,
    binary_targets,
    learn_one_vs_rest,
    task_checkpoint,
    task_workload,
)
from gpmodels.inference.map.model import fit_map
from gpmodels.inference.map.solvers import make_solver
from gpmodels.persistence import save_one_vs_rest_model
from gpmodels.validation import labels_to_targets

__all__ = ["run_one_vs_rest"]


def _learn_in_order(op2, likelihood, y, names, folds, options, checkpoint, say, engine):
    """The binary tasks one after the other in this process, with progress per class (the folds on ``engine``)."""
    models, learned = [], []
    for k, name in enumerate(names):
        Yk = binary_targets(y, k)
        with say.bar(options.outer.max_iter, f"class {name}: CV outer iterations") as bar:
            res = learn_hyperparameters(
                op2,
                likelihood,
                Yk,
                folds,
                options,
                checkpoint=task_checkpoint(checkpoint, k),
                on_iteration=iteration_reporter(say, bar, f"class {name}: "),
                engine=engine,
            )
        if res.resumed_from is not None:
            say(f"class {name}: resumed from the checkpoint of outer iteration {res.resumed_from}")
        with say.newton_bar(options.final.max_iter, f"class {name}: final fit") as bar:
            model = fit_learned(res, likelihood, Yk, options, on_iteration=bar.newton)
        diag = model.result.diagnostics
        say(
            f"class {name}: Ψ {res.history[0].value:.6g} -> {res.psi:.6g} in {res.outer.iteration} iterations "
            f"({res.message}); final fit {diag.iterations} Newton iterations ({diag.message})"
        )
        models.append(model)
        learned.append(res)
    return models, learned


def _learn(resolved: Spec, data: Dataset, op2, likelihood, y, names, say, engine):
    c = resolved.objective.cv
    options = build_learn_options(resolved.objective)
    folds = cv_partition(resolved, y)
    checkpoint = learning_checkpoint(resolved, data)
    say(
        f"one-vs-rest: {len(names)} binary tasks, {op2.params.size} hyperparameters each "
        f"({', '.join(op2.param_names)}), learned by {c.folds}-fold CV"
    )
    workers = engine.workers_for(task_workload(op2, len(names)))
    if workers > 1:
        say(f"one-vs-rest: the {len(names)} tasks run {workers} at once on {engine!r}")
        ovr = learn_one_vs_rest(
            op2, likelihood, labels_to_targets(y, len(names)), folds, options, checkpoint=checkpoint, engine=engine
        )
        models, learned = list(ovr.models), list(ovr.learned)
    else:
        models, learned = _learn_in_order(op2, likelihood, y, names, folds, options, checkpoint, say, engine)
    metrics = {}
    for k, r in enumerate(learned):
        metrics.update({f"hyper.class{k}.{key}": v for key, v in with_length_scales(r.hyperparameters()).items()})
    metrics.update(
        {
            "psi_start": sum(r.history[0].value for r in learned),
            "psi_learned": sum(r.psi for r in learned),
            **learning_metrics(learned),
            "resumed_from_iteration": learned[0].resumed_from,
            "folds": c.folds,
        }
    )
    diagnostics = {
        "learning": {f"class{k}": [x.as_dict() for x in r.history] for k, r in enumerate(learned)},
        "learning_messages": {f"class{k}": r.message for k, r in enumerate(learned)},
    }
    traces = {"Psi": {f"class {name}": [x.value for x in r.history] for name, r in zip(names, learned)}}
    return OneVsRestModel(tuple(models), tuple(learned)), metrics, diagnostics, traces


def _fit(resolved: Spec, op2, likelihood, y, names, say):
    o = resolved.objective
    say(f"one-vs-rest: {len(names)} binary tasks fitted at the given hyperparameters")
    models = []
    for k, name in enumerate(names):
        with say.newton_bar(build_newton_options(o).max_iter, f"class {name}: Newton") as bar:
            models.append(
                fit_map(
                    op2,
                    likelihood,
                    binary_targets(y, k),
                    make_solver(o.solver, build_newton_options(o)),
                    on_iteration=bar.newton,
                )
            )
    traces = {"Phi": {f"class {name}": list(m.result.diagnostics.phi) for name, m in zip(names, models)}}
    return OneVsRestModel(tuple(models)), {}, {}, traces


def _saver(data: Dataset, ovr: OneVsRestModel):
    """Save the C binary models as one model folder of kind ``one_vs_rest``."""

    def save(folder: Path):
        return save_one_vs_rest_model(
            folder,
            data.X_train,
            np.stack([m.alpha for m in ovr.models]),
            np.stack([np.asarray(m.operator.params, dtype=float) for m in ovr.models]),
            data.classes,
            data.scaler,
            zero_based=data.zero_based,
            inputs=data.input_format,
        )

    return save


def _trace_gradients(ovr: OneVsRestModel, names, *, learned: bool) -> dict:
    """Per class the gradient beside each trace: max |∇Ψ| of learning, or the gradient RMS of the fits' Φ."""
    if learned:
        return {
            "Psi": (
                "max |∇Ψ| (projected)",
                {f"class {name}": [x.grad_norm for x in r.history] for name, r in zip(names, ovr.learned)},
            )
        }
    return {
        "Phi": (
            "gradient RMS of Φ",
            {f"class {name}": list(m.result.diagnostics.grad_norm) for name, m in zip(names, ovr.models)},
        )
    }


def run_one_vs_rest(spec: Spec, data: Dataset, base_dir: Path | None, say, *, engine=None) -> RunOutcome:
    """C binary models, learned by Ψ (or fitted at the given hyperparameters), combined by the largest score."""
    engine = engine or LocalEngine()
    problem = prepare(spec, data, base_dir, engine=engine)
    resolved, op2, likelihood, y = problem.resolved, problem.operator, problem.likelihood, problem.targets
    names = data.classes
    t = time.perf_counter()
    if resolved.objective.learn:
        ovr, metrics, diagnostics, traces = _learn(resolved, data, op2, likelihood, y, names, say, engine)
    else:
        ovr, metrics, diagnostics, traces = _fit(resolved, op2, likelihood, y, names, say)
    wall = time.perf_counter() - t
    t = time.perf_counter()
    P = ovr.predict_proba(data.X_test)
    diags = [m.result.diagnostics for m in ovr.models]
    metrics.update(
        {
            "fit_seconds": wall,
            "predict_seconds": time.perf_counter() - t,
            "final_fit_seconds": float(sum(d.seconds for d in diags)),
            "final_newton_iterations": int(sum(d.iterations for d in diags)),
            "final_mvm_count": int(sum(d.mvm_count for d in diags)),
            "final_converged": all(d.converged for d in diags),
            "final_phi": float(sum(m.result.phi for m in ovr.models)),
        }
    )
    diagnostics["final_fit"] = {f"class{k}": d.as_dict() for k, d in enumerate(diags)}
    return RunOutcome(
        metrics,
        P,
        diagnostics,
        resolved,
        save=_saver(data, ovr),
        traces=traces,
        trace_units={"Psi": "outer iteration", "Phi": "Newton iteration"},
        trace_gradients=_trace_gradients(ovr, names, learned=resolved.objective.learn),
    )
