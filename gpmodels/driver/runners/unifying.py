"""Runners of the unifying-paper objectives (``laplace``, ``vb``, ``mlm``, ``mkl``, ``joint_map``).

Each runner learns the hyperparameters its objective names (``objective.learn``), then predicts the
test set with the learned model's latent mean u_* = K̃_{*,.} α (plug-in predictions; the MAP
runner does the same with the mode): class probabilities for classification, the predictive location
for regression (scored by RMSE and mean absolute error here).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from gpmodels.data.datasets import Dataset
from gpmodels.driver.outcome import RunOutcome, map_saver
from gpmodels.driver.runners.common import evaluate, prepare
from gpmodels.driver.sections.spec import Spec
from gpmodels.hyperparameters import natural_values, with_length_scales
from gpmodels.inference.marginal.laplace import laplace_mlm, learn_laplace
from gpmodels.inference.marginal.vb import learn_vb, vb_criterion
from gpmodels.inference.mkl.algorithms import algorithm1, alternating, criterion_at, learn_weights
from gpmodels.optimize.driver import outer_options
from gpmodels.reports import hyperparameter_classes

__all__ = ["run_laplace", "run_vb", "run_kernel_weights"]


def _hyper_metrics(names, x, op, classes) -> dict:
    """``hyper.<name>`` in natural units for the operator's then the likelihood's hyperparameters, and
    ``hyper_scope.<name>``: the classes each of the operator's acts on
    (:func:`gpmodels.reports.hyperparameter_classes`)."""
    values = natural_values(names, x)
    scopes = tuple(op.param_classes()) + (None,) * (len(values) - op.params.size)
    return {
        **{f"hyper.{k}": v for k, v in with_length_scales(values).items()},
        **{f"hyper_scope.{k}": v for k, v in hyperparameter_classes(values, scopes, classes).items()},
    }


def _reporter(say, name: str, bar=None):
    """``on_iteration`` of the outer optimiser: one message per iteration (criterion, gradient, evaluations),
    and the progress ``bar`` (a :class:`~gpmodels.progress.Bar`) moved to it."""

    def report(rec):
        if bar is not None:
            bar.outer(rec)
        say(
            f"iteration {rec.iteration}: {name} = {rec.value:.6g}, max|∇| = {rec.grad_norm:.3g}, "
            f"{rec.evaluations} evaluation{'s' if rec.evaluations != 1 else ''} ({rec.failed} failed)"
        )

    return report


def _learning_diagnostics(hr) -> dict:
    """What diagnostics.json keeps of the outer L-BFGS (an :class:`~gpmodels.optimize.driver.OptimizeResult`):
    the criterion and the max-norm of its projected gradient after every iteration (the start first), which
    the convergence plot draws in two panels, and the optimiser's message."""
    return {"trace": list(hr.values), "grad_norm": [float(r.grad_norm) for r in hr.trace], "message": hr.message}


def _finish(spec, data, resolved, op, lik, alpha, metrics, diagnostics, say, tree=None):
    t = time.perf_counter()
    latent = op.cross_test(data.X_test).mvm(alpha)
    scores, P = evaluate(lik, latent, data)
    metrics.update(scores)
    metrics["predict_seconds"] = time.perf_counter() - t
    if "test_rmse" in scores:
        say(f"test RMSE {scores['test_rmse']:.4f}, MAE {scores['test_mae']:.4f}")
    if op.is_kernel_sum:
        metrics.update({f"hyper.weight{m}": float(w) for m, w in enumerate(op.weights)})

    traces = {"criterion": list(diagnostics["trace"])} if diagnostics.get("trace") else {}
    gradients = (
        {"criterion": ("max |∇| (projected)", list(diagnostics["grad_norm"]))}
        if traces and diagnostics.get("grad_norm")
        else {}
    )
    return RunOutcome(
        metrics,
        P,
        diagnostics,
        resolved,
        save=map_saver(data, op, lik, alpha, tree=tree),
        traces=traces,
        trace_units={"criterion": "outer iteration"},
        trace_gradients=gradients,
    )


def run_laplace(spec: Spec, data: Dataset, base_dir: Path | None, say, *, engine=None) -> RunOutcome:
    """Laplace MLM (R&W Alg. 3.1-3.4, 5.1): learn the hyperparameters by the outer L-BFGS, or evaluate."""
    o = spec.objective
    p = prepare(spec, data, base_dir, engine=engine)
    resolved, op, lik, Y, tree = p.resolved, p.operator, p.likelihood, p.targets, p.tree
    opts = o.laplace.options(seed=spec.seed)
    t = time.perf_counter()
    diag = {}
    if o.learn:
        with say.bar(o.laplace.learn_max_iter, "Laplace MLM: outer iterations") as bar:
            hr, op, lik = learn_laplace(
                op,
                lik,
                Y,
                opts,
                outer=outer_options(o.laplace.learn_max_iter, o.laplace.learn_tol),
                on_iteration=_reporter(say, "-log q", bar),
            )
        diag = _learning_diagnostics(hr)
        say(f"learned by L-BFGS: {hr.iterations} iterations, {hr.evaluations} evaluations ({hr.message})")
    res = laplace_mlm(op, lik, Y, opts, gradient=False)
    seconds = time.perf_counter() - t
    say(f"Laplace log marginal likelihood {res.log_marginal:.6g} ({opts.path} path), {seconds:.2f} s")
    metrics = {
        "log_marginal": res.log_marginal,
        "fit_seconds": seconds,
        "path": opts.path,
        **_hyper_metrics(res.param_names, np.concatenate([op.params, lik.params]), op, data.classes),
    }
    return _finish(spec, data, resolved, op, lik, res.mode.alpha, metrics, diag, say, tree)


def run_kernel_weights(spec: Spec, data: Dataset, base_dir: Path | None, say, *, engine=None) -> RunOutcome:
    """mkl / joint_map / mlm / vb.  With ``model.kernels``: learn the weights θ by Algorithm 1,
    alternating minimisation or the outer L-BFGS (Nickisch & Seeger 2011).  Without (vb, mlm): learn
    every hyperparameter by the outer L-BFGS on φ_VB (exact for the Gaussian likelihood)."""
    o = spec.objective
    if spec.model.kernels is None:
        return run_vb(spec, data, base_dir, say, engine=engine)
    p = prepare(spec, data, base_dir, engine=engine)
    resolved, op, lik, Y, tree = p.resolved, p.operator, p.likelihood, p.targets, p.tree
    opts = o.mkl.options(criterion=o.type)
    solver = o.mkl.solver or "algorithm1"
    t = time.perf_counter()
    lbfgs = None  # the outer L-BFGS's result, whose trace holds the gradient norms
    if not o.learn:
        _, _, res = criterion_at(op, lik, Y, op.weights, opts, return_fit=True)
    elif solver in ("algorithm1", "alternating"):
        with say.bar(opts.max_iter, f"{o.type} by {solver}: outer iterations") as bar:
            res = (algorithm1 if solver == "algorithm1" else alternating)(
                op, lik, Y, opts, on_iteration=lambda it, value: bar.goto(it, F=value)
            )
    else:
        with say.bar(opts.max_iter, f"{o.type}: outer iterations") as bar:
            lbfgs, res = learn_weights(
                op, lik, Y, opts, outer=outer_options(opts.max_iter, opts.tol), on_iteration=_reporter(say, o.type, bar)
            )
    seconds = time.perf_counter() - t
    op = op.with_weights(res.theta)
    say(
        f"{o.type} by {solver if o.learn else 'evaluation'}: criterion {res.criterion:.8g}, "
        f"θ = {np.array2string(res.theta, precision=4)}, {seconds:.2f} s"
    )
    metrics = {
        "criterion": float(res.criterion),
        "fit_seconds": seconds,
        "solver": solver,
        "outer_iterations": res.iterations,
    }
    diag = {"trace": list(res.trace), "times": list(res.times), "message": res.message}
    if lbfgs is not None:
        diag["grad_norm"] = [float(r.grad_norm) for r in lbfgs.trace]
    return _finish(spec, data, resolved, op, lik, res.alpha, metrics, diag, say, tree)


def run_vb(spec: Spec, data: Dataset, base_dir: Path | None, say, *, engine=None) -> RunOutcome:
    """φ_VB (exact -2 log P for Gaussian noise): learn all hyperparameters by the outer L-BFGS, or evaluate."""
    o = spec.objective
    p = prepare(spec, data, base_dir, engine=engine)
    resolved, op, lik, Y, tree = p.resolved, p.operator, p.likelihood, p.targets, p.tree
    t = time.perf_counter()
    diag = {}
    if o.learn:
        with say.bar(o.vb.learn_max_iter, "VB: outer iterations") as bar:
            hr, op, lik = learn_vb(
                op,
                lik,
                Y,
                o.vb.options(),
                outer=outer_options(o.vb.learn_max_iter, o.vb.learn_tol),
                on_iteration=_reporter(say, "φ_VB", bar),
            )
        diag = _learning_diagnostics(hr)
        say(f"learned by L-BFGS: {hr.iterations} iterations, {hr.evaluations} evaluations ({hr.message})")
    res = vb_criterion(op, lik, Y, o.vb.options(), gradient=False)
    seconds = time.perf_counter() - t
    say(
        f"VB bound φ = {res.phi:.6g} (>= -2 log P(y|θ)), {res.outer_iterations} double-loop iterations, {seconds:.2f} s"
    )
    metrics = {
        "phi_vb": res.phi,
        "fit_seconds": seconds,
        **_hyper_metrics(res.param_names, np.concatenate([op.params, lik.params]), op, data.classes),
    }
    return _finish(spec, data, resolved, op, lik, res.alpha, metrics, diag, say, tree)
