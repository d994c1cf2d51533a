"""Helpers of the CV and MAP benchmarks: a spec's problem, a timing proxy around operators, BLAS thread
limits, one learn+fit, one timed Newton–CG fit.

``Timed(op, clock)`` forwards everything to ``op`` and adds the wall time of kernel MVMs
(``mvm`` of the operator and of every restricted operator and cross block made from it) to
``clock["mvm"]`` and of derivative traces (``grad_trace``) to ``clock["grad_trace"]``.  It is a
measuring device for the benchmarks only (not an Operator subclass of the package).
"""

from __future__ import annotations

import contextlib
import os
import time

import attrs
import numpy as np

from gpmodels import metrics as M
from gpmodels.driver.build import resolve_kernel
from gpmodels.driver.build_data import build_data
from gpmodels.driver.loader import load_spec
from gpmodels.inference.cv.learn import fit_learned, learn_hyperparameters
from gpmodels.inference.cv.one_vs_rest import learn_one_vs_rest
from gpmodels.inference.map.newton_cg import newton_cg
from gpmodels.validation import labels_to_targets


def spec_problem(path, max_train: int | None = None, **model_changes):
    """(spec, its base folder, its data, its model with the kernel resolved on the training inputs and
    ``model_changes`` applied) of the spec at ``path``, the training set cut to ``max_train`` points where
    given (smoke runs)."""
    spec, base = load_spec(path)
    if max_train:
        spec = attrs.evolve(spec, data=attrs.evolve(spec.data, max_train=max_train))
    data = build_data(spec, base)
    model = attrs.evolve(spec.model, kernel=resolve_kernel(spec.model.kernel, data.X_train), **model_changes)
    return spec, base, data, model


class _TimedCross:
    def __init__(self, cross, clock):
        self._c, self._clock = cross, clock

    def __getattr__(self, name):
        return getattr(self._c, name)

    def mvm(self, V):
        t = time.perf_counter()
        out = self._c.mvm(V)
        self._clock["mvm"] += time.perf_counter() - t
        self._clock["mvm_calls"] += 1
        return out


class Timed:
    """Operator proxy that times MVMs and derivative traces (see the module docstring)."""

    def __init__(self, op, clock):
        self._op, self._clock = op, clock

    def __getattr__(self, name):
        if name in ("_op", "_clock"):  # not yet set (unpickling in a spawned fold worker)
            raise AttributeError(name)
        return getattr(self._op, name)

    def mvm(self, V):
        t = time.perf_counter()
        out = self._op.mvm(V)
        self._clock["mvm"] += time.perf_counter() - t
        self._clock["mvm_calls"] += 1
        return out

    def device_mvm(self, Vd):  # Newton–CG's products beside a device operator (on a GPU: time to queue them)
        t = time.perf_counter()
        out = self._op.device_mvm(Vd)
        self._clock["mvm"] += time.perf_counter() - t
        self._clock["mvm_calls"] += 1
        return out

    def grad_trace(self, E, F):
        t = time.perf_counter()
        out = self._op.grad_trace(E, F)
        self._clock["grad_trace"] += time.perf_counter() - t
        return out

    def with_params(self, theta):
        t = time.perf_counter()
        out = Timed(self._op.with_params(theta), self._clock)
        self._clock["kernel_build"] += time.perf_counter() - t
        return out

    def restrict(self, J):
        t = time.perf_counter()
        out = Timed(self._op.restrict(J), self._clock)
        self._clock["restrict"] += time.perf_counter() - t
        return out

    def cross(self, I, J):
        t = time.perf_counter()
        out = _TimedCross(self._op.cross(I, J), self._clock)
        self._clock["restrict"] += time.perf_counter() - t
        return out

    def cross_test(self, X_new):
        return _TimedCross(self._op.cross_test(X_new), self._clock)


def new_clock() -> dict:
    return {"mvm": 0.0, "mvm_calls": 0, "grad_trace": 0.0, "kernel_build": 0.0, "restrict": 0.0}


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the CV fold worker processes, which
    are joined when a learning run ends), user + system."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@contextlib.contextmanager
def blas_threads(n):
    """Limit BLAS threads inside the block (threadpoolctl, installed with scikit-learn); None: no limit."""
    if n is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=int(n), user_api="blas"):
        yield


def learn_and_evaluate(
    prior, likelihood, data, folds, options, *, one_vs_rest=False, say=print, label="", checkpoint=None, engine=None
):
    """CV learning + final fit + test scores for one method; returns a dict of figures.

    ``engine``: where the folds (or the one-vs-rest tasks) run (None: an auto engine per learning run).
    ``checkpoint`` (a :class:`~gpmodels.optimize.checkpoint.Checkpointing`): the learning checkpoints
    there and resumes from it (``resumed_from``; a resumed run's timings count only its own part)."""
    clock = new_clock()
    C = data.n_classes
    t0 = time.perf_counter()
    if not one_vs_rest:
        Y = np.eye(C)[data.y_train]
        op = Timed(prior.operator(data.X_train, C), clock)
        res = learn_hyperparameters(
            op,
            likelihood,
            Y,
            folds,
            options,
            checkpoint=checkpoint,
            engine=engine,
            on_iteration=lambda r: say(
                f"  {label} it {r.iteration}: Ψ = {r.value:.5g}, "
                f"{r.evaluations} eval ({r.failed} failed), {r.seconds:.1f} s"
            ),
        )
        learn_s = time.perf_counter() - t0
        t = time.perf_counter()
        model = fit_learned(res, likelihood, Y, options)
        fit_s = time.perf_counter() - t
        fit_mvms = model.result.diagnostics.mvm_count
        P = model.predict_proba(data.X_test)
        results, hyper = [res], res.hyperparameters()
    else:
        op2 = Timed(prior.operator(data.X_train, 2), clock)
        ovr = learn_one_vs_rest(
            op2,
            likelihood,
            labels_to_targets(data.y_train, C),
            folds,
            options,
            checkpoint=checkpoint,
            engine=engine,
            on_iteration=lambda c, r: say(
                f"  {label} class {c} it {r.iteration}: Ψ = {r.value:.5g}, "
                f"{r.evaluations} eval ({r.failed} failed), {r.seconds:.1f} s"
            ),
        )
        total = time.perf_counter() - t0
        fit_s = sum(m.result.diagnostics.seconds for m in ovr.models)
        fit_mvms = sum(m.result.diagnostics.mvm_count for m in ovr.models)
        learn_s = total - fit_s
        P = ovr.predict_proba(data.X_test)
        results = list(ovr.learned)
        hyper = {f"class{c}.{k}": v for c, r in enumerate(results) for k, v in r.hyperparameters().items()}
    evals = [e for r in results for e in r.evaluations]
    eval_s = sum(e.seconds for e in evals)
    return {
        "test_error": M.error(P, data.y_test),
        "test_log_loss": M.log_loss(P, data.y_test),
        "learning_seconds": learn_s,
        "final_fit_seconds": fit_s,
        "evaluations": len(evals),
        "failed_evaluations": sum(not e.ok for e in evals),
        "outer_iterations": sum(r.outer.iteration for r in results),
        "seconds_per_evaluation": eval_s / max(1, len(evals)),
        # the folds' own work (refits, accumulation, their blocks), summed over folds: on worker processes
        # when the engine runs them there, where the Timed proxy does not see their MVMs
        "fold_work_seconds": sum(
            e.summary.get("fit_seconds", 0.0)
            + e.summary.get("accumulation_seconds", 0.0)
            + e.summary.get("restrict_seconds", 0.0)
            for e in evals
        ),
        # shares of the whole learning + final fit wall time of MVMs etc. in this process (the final
        # fit's MVMs are timed too; with fold worker processes the folds' MVMs are not in it)
        "mvm_share": clock["mvm"] / max(learn_s + fit_s, 1e-12),
        "grad_trace_share": clock["grad_trace"] / max(learn_s + fit_s, 1e-12),
        "restrict_share": clock["restrict"] / max(learn_s + fit_s, 1e-12),
        "kernel_build_share": clock["kernel_build"] / max(learn_s + fit_s, 1e-12),
        "mvms": clock["mvm_calls"],
        # the folds' MVMs as their diagnostics count them (wherever the folds ran, one by one or in lockstep)
        "fold_mvms": sum(e.mvms for e in evals),
        "folds_per_fit": max((e.summary.get("folds_per_fit", 1) for e in evals), default=1),
        "grad_trace_seconds": sum(e.summary.get("grad_trace_seconds", 0.0) for e in evals),
        "final_fit_mvms": int(fit_mvms),
        "psi": [r.psi for r in results],
        "converged": all(r.converged for r in results),
        "resumed_from": [r.resumed_from for r in results],
        "hyperparameters": hyper,
        "history": [rec.value for rec in results[0].history],  # Ψ per outer iteration (the first model)
    }


def timed_newton_cg(op, lik, Y, options):
    """``newton_cg(op, lik, Y, options)`` and its record: wall and CPU seconds, Newton iterations, CG steps,
    MVMs, Φ and convergence."""
    t, c = time.perf_counter(), time.process_time()
    res = newton_cg(op, lik, Y, options)
    dc, dt = time.process_time() - c, time.perf_counter() - t
    d = res.diagnostics
    record = {
        "seconds": dt,
        "cpu_seconds": dc,
        "newton_iterations": d.iterations,
        "cg_steps": int(sum(d.cg_iterations)),
        "mvms": d.mvm_count,
        "phi": res.phi,
        "converged": d.converged,
    }
    return res, record
