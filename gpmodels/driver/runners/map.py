"""The MAP runners of the spec driver: ``map`` (Newton–CG / exact Newton at given hyperparameters)
and ``em`` (uncertain targets on the class tree, Seeger 2008, Sec. 7.4.2)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from gpmodels.data.datasets import Dataset
from gpmodels.driver.build import build_newton_options, representation_choices
from gpmodels.driver.outcome import RunOutcome, map_saver
from gpmodels.driver.runners.common import evaluate, predict_test_set, prepare
from gpmodels.driver.sections.spec import Spec
from gpmodels.inference.map.em import fit_em
from gpmodels.inference.map.model import fit_map
from gpmodels.inference.map.solvers import make_solver
from gpmodels.kernels.memory_budget import format_bytes
from gpmodels.scoring import metrics as M

__all__ = ["run_map", "run_em"]


def run_map(spec: Spec, data: Dataset, base_dir: Path | None, say, *, engine=None) -> RunOutcome:
    """MAP fit at the given hyperparameters by Newton–CG or exact Newton."""
    problem = prepare(spec, data, base_dir, engine=engine)
    resolved, op, likelihood = problem.resolved, problem.operator, problem.likelihood
    reps = representation_choices(op)
    for r in reps:
        size = f", {format_bytes(r['nbytes'])} each" if r["nbytes"] > 0 else ""
        where = "" if r["device"] == "cpu" else f" on {r['device']}"
        say(f"kernel matrix: {r['label']}{where}{size}: {r['reason']}")
    t = time.perf_counter()
    newton = build_newton_options(resolved.objective)
    with say.newton_bar(newton.max_iter, "Newton") as bar:
        model = fit_map(
            op,
            likelihood,
            problem.targets,
            make_solver(resolved.objective.solver, newton),
            on_iteration=bar.newton,
        )
    fit_seconds = time.perf_counter() - t
    diag = model.result.diagnostics
    say(
        f"fit: {diag.iterations} Newton iterations, {diag.mvm_count} MVMs, {fit_seconds:.2f} s, "
        f"Φ = {model.result.phi:.6g} ({diag.message})"
    )
    t = time.perf_counter()
    scores, P = evaluate(likelihood, model.latent(data.X_test), data)
    if P is not None:
        P, predictive = predict_test_set(spec, model, data.X_test, data.y_test, say)
        scores.update(predictive)
    metrics = {
        **scores,
        "fit_seconds": fit_seconds,
        "kernel_build_seconds": problem.build_seconds,
        "predict_seconds": time.perf_counter() - t,
        "newton_iterations": diag.iterations,
        "cg_iterations": int(sum(diag.cg_iterations)),
        "mvm_count": diag.mvm_count,
        "phi": float(model.result.phi),
        "gradient_rms": float(diag.grad_norm[-1]),
        "converged": bool(diag.converged),
    }
    if spec.evaluation.train_scores and spec.data.task == "classification":
        tr = M.classification_report(likelihood.predict(model.result.u), data.y_train)
        metrics.update({f"train_{k}": v for k, v in tr.items()})
    return RunOutcome(
        metrics,
        P,
        diag.as_dict() | {"representations": reps},
        resolved,
        save=map_saver(data, op, likelihood, model.alpha, tree=problem.tree),
        traces={"Phi": list(diag.phi)},
        trace_units={"Phi": "Newton iteration"},
        trace_gradients={"Phi": ("gradient RMS of Φ", list(diag.grad_norm))},
        plan=model.plan,
    )


def run_em(spec: Spec, data: Dataset, base_dir: Path | None, say, *, engine=None) -> RunOutcome:
    """MAP fit with uncertain targets (pseudo-targets on the class tree) by EM, Seeger 2008, Sec. 7.4.2."""
    problem = prepare(spec, data, base_dir, engine=engine)
    resolved, op, likelihood, pseudo = problem.resolved, problem.operator, problem.likelihood, problem.targets
    o = resolved.objective
    em_options = o.em.options(newton=build_newton_options(o))
    with say.bar(em_options.max_iter, "EM iterations") as bar:
        res = fit_em(
            op, pseudo, em_options, likelihood=likelihood, on_iteration=lambda it, value: bar.goto(it, L=value)
        )
    n_unc = int(np.sum(~pseudo.certain))
    say(
        f"EM: {res.iterations} iterations, {n_unc} of {pseudo.n_points} targets uncertain, "
        f"{sum(d.mvm_count for d in res.m_steps)} MVMs, {res.seconds:.2f} s, L = {res.trace[-1]:.6g} ({res.message})"
    )
    t = time.perf_counter()
    P = res.model.predict_proba(data.X_test)
    metrics = {
        "fit_seconds": res.seconds,
        "kernel_build_seconds": problem.build_seconds,
        "predict_seconds": time.perf_counter() - t,
        "em_iterations": res.iterations,
        "em_converged": bool(res.converged),
        "uncertain_targets": n_unc,
        "pseudo_target_log_likelihood": float(res.trace[-1]),
        "newton_iterations": int(sum(d.iterations for d in res.m_steps)),
        "cg_iterations": int(sum(sum(d.cg_iterations) for d in res.m_steps)),
        "mvm_count": int(sum(d.mvm_count for d in res.m_steps)),
        "train_acc_on_certain": float(np.mean((res.model.result.u.argmax(axis=1) == data.y_train)[pseudo.certain]))
        if pseudo.certain.any()
        else float("nan"),
    }

    return RunOutcome(
        metrics,
        P,
        res.as_dict(),
        resolved,
        save=map_saver(data, op, likelihood, res.alpha, tree=problem.tree),
        traces={"L": list(res.trace)},
        trace_units={"L": "EM iteration"},
        plan=res.model.plan,
    )
