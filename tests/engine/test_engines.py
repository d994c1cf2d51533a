"""Engines (gpmodels/engine): every engine gives the serial run's Ψ, ∇Ψ, inner state and fits bit for
bit; the auto engine's sizing for injected cores and memory; the process engine calls the map's own
function on shared state shipped once; the spec's `engine` section."""

import multiprocessing
import os
import time

import numpy as np
import pytest
from conftest import three_model_study, toy_classification

from gpmodels.data.splits import kfold_partition
from gpmodels.engine import AutoEngine, EngineConfig, LocalEngine, ProcessEngine, Workload, open_engine, plan_workers
from gpmodels.errors import EngineError, InputError, SpecError
from gpmodels.inference.cv.criterion import cv_criterion
from gpmodels.inference.cv.learn import LearnOptions, fit_learned, learn_hyperparameters
from gpmodels.inference.cv.one_vs_rest import fit_one_vs_rest, learn_one_vs_rest
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.map.newton_cg import NewtonOptions
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.linalg.blas_threads import limit_blas_threads
from gpmodels.optimize.lbfgs import OuterOptions
from gpmodels.priors.independent import IndependentGP

NEWTON = NewtonOptions(max_iter=20, cg_max_iter=30)
GIB = 2**30


def _problem(n=48, C=3, q=4):
    X, y = toy_classification(n, C, d=2, seed=4)
    op = IndependentGP(RBF(0.7), "separate", [1.5, 3.0, 0.8][:C], 1.0).operator(X, C)
    return op, np.eye(C)[y], kfold_partition(n, q, seed=5, y=y), y, X


def _same_evaluation(a, b):
    assert a.ok and b.ok and a.psi == b.psi
    assert np.array_equal(a.gradient, b.gradient)
    for x, y in zip(a.state.alphas + a.state.betas, b.state.alphas + b.state.betas, strict=True):
        assert np.array_equal(x, y)
    assert [(f.newton_iterations, f.fit_mvms, f.accumulation_iterations, f.start) for f in a.folds] == [
        (f.newton_iterations, f.fit_mvms, f.accumulation_iterations, f.start) for f in b.folds
    ]


def _engines():
    """Every in-process and process engine, with one BLAS thread per job (the auto engine told that
    the jobs are worth worker processes: its default skips them below 500 points)."""
    return {
        "threads": LocalEngine(threads=3),
        "processes": ProcessEngine(2, blas_threads=1),
        "auto": AutoEngine(cores=2, min_points=0),
    }


# ---------------------------------------------------------------------------- bit for bit
def test_every_engine_gives_the_serial_evaluations_and_learning_bit_for_bit():
    """Ψ, ∇Ψ, the inner state and the per-fold work of two evaluations (the second warm-started), a
    learning run and its final fit: the same arrays on threads, processes and the auto engine."""
    op, Y, folds, _, X = _problem()
    opts = CVOptions(newton=NEWTON, k3=20)
    theta = op.params + np.array([0.2, -0.1, 0.3, 0.1, -0.2, 0.4])
    learn = LearnOptions(cv=opts, outer=OuterOptions(max_iter=3))
    with limit_blas_threads(1):
        seq = cv_criterion(op.with_params(theta), Softmax(), Y, folds, opts)
        seq2 = cv_criterion(op.with_params(theta + 0.3), Softmax(), Y, folds, opts, state=seq.state)
        seq_learn = learn_hyperparameters(op, Softmax(), Y, folds, learn, engine=LocalEngine())
        seq_fit = fit_learned(seq_learn, Softmax(), Y, learn)
        for name, engine in _engines().items():
            with engine:
                par = cv_criterion(op.with_params(theta), Softmax(), Y, folds, opts, engine=engine)
                par2 = cv_criterion(
                    op.with_params(theta + 0.3), Softmax(), Y, folds, opts, state=par.state, engine=engine
                )
                res = learn_hyperparameters(op, Softmax(), Y, folds, learn, engine=engine)
            _same_evaluation(seq, par)
            _same_evaluation(seq2, par2)
            assert np.array_equal(seq_learn.theta, res.theta) and seq_learn.psi == res.psi, name
            assert [e.psi for e in seq_learn.evaluations] == [e.psi for e in res.evaluations], name
            fit = fit_learned(res, Softmax(), Y, learn)
            assert np.array_equal(seq_fit.alpha, fit.alpha) and seq_fit.result.phi == fit.result.phi, name
            assert np.array_equal(seq_fit.predict_proba(X), fit.predict_proba(X)), name


def test_one_vs_rest_on_every_engine_equals_the_serial_run():
    """The binary tasks as an engine's jobs (learnt, and fitted at given hyperparameters)."""
    op, _, folds, y, X = _problem(n=36)
    op2 = IndependentGP(RBF(0.7), "tied", 2.0, 1.0).operator(X, 2)
    learn = LearnOptions(cv=CVOptions(newton=NEWTON, k3=20), outer=OuterOptions(max_iter=2))
    with limit_blas_threads(1):
        seq = learn_one_vs_rest(op2, Softmax(), np.eye(3)[y], folds, learn, engine=LocalEngine())
        seq_fit = fit_one_vs_rest(op2, Softmax(), np.eye(3)[y])
        for name, engine in _engines().items():
            with engine:
                assert engine.workers_for(Workload(3)) > 1, name
                par = learn_one_vs_rest(op2, Softmax(), np.eye(3)[y], folds, learn, engine=engine)
                par_fit = fit_one_vs_rest(op2, Softmax(), np.eye(3)[y], engine=engine)
            assert [r.psi for r in seq.learned] == [r.psi for r in par.learned], name
            assert all(np.array_equal(a.theta, b.theta) for a, b in zip(seq.learned, par.learned)), name
            assert np.array_equal(seq.predict_scores(X), par.predict_scores(X)), name
            assert [m.result.phi for m in seq_fit.models] == [m.result.phi for m in par_fit.models], name


def test_the_dask_engine_gives_the_serial_evaluation_bit_for_bit():
    """Folds as tasks on a small threaded LocalCluster, the context scattered once."""
    pytest.importorskip("distributed")
    op, Y, folds, _, _ = _problem(n=30, q=3)
    opts = CVOptions(newton=NEWTON, k3=20)
    with limit_blas_threads(1):
        seq = cv_criterion(op, Softmax(), Y, folds, opts)
        seq2 = cv_criterion(op.with_params(op.params + 0.3), Softmax(), Y, folds, opts, state=seq.state)
        cfg = EngineConfig(type="dask", processes=False, n_workers=2, distribute="tasks")
        with open_engine(cfg) as engine:
            par = cv_criterion(op, Softmax(), Y, folds, opts, engine=engine)
            par2 = cv_criterion(
                op.with_params(op.params + 0.3), Softmax(), Y, folds, opts, state=par.state, engine=engine
            )
    _same_evaluation(seq, par)
    _same_evaluation(seq2, par2)


def test_a_failing_evaluation_stops_alike_and_the_workers_stay_usable():
    op, Y, folds, _, _ = _problem()
    short = CVOptions(newton=NewtonOptions(max_iter=1, cg_max_iter=2), fail_tol=1e-6)
    with ProcessEngine(2, blas_threads=1) as engine:
        ev = cv_criterion(op, Softmax(), Y, folds, short, engine=engine)
        again = cv_criterion(op, Softmax(), Y, folds, CVOptions(newton=NEWTON), engine=engine)
    assert not ev.ok and ev.gradient is None and ev.state is None and "did not converge" in ev.message
    assert again.ok


# ---------------------------------------------------------------------------- the process engine
def _tag(shared, job):
    return shared["tag"], job * shared["scale"], os.getpid()


def _other(shared, job):
    return -job


def _pid(shared, job):
    time.sleep(0.05)  # long enough that both workers take jobs
    return os.getpid()


def test_the_process_engine_calls_the_maps_function_on_shared_state_shipped_once():
    shared = {"tag": "a", "scale": 3}
    with ProcessEngine(2, blas_threads=1) as engine:
        first = engine.map_shared(_tag, shared, range(6))
        assert [r[:2] for r in first] == [("a", 3 * j) for j in range(6)]
        assert engine.map_shared(_other, shared, [1, 2]) == [-1, -2]  # its own fn, not a fixed one
        pids = set(engine.map_shared(_pid, shared, range(6))) | set(engine.map_shared(_pid, shared, range(6)))
        assert len(pids) == 2 and os.getpid() not in pids  # the same two workers: the state was not re-sent
        new = engine.map_shared(_tag, {"tag": "b", "scale": 1}, range(3))
        assert [r[:2] for r in new] == [("b", j) for j in range(3)]
        assert pids.isdisjoint(engine.map_shared(_pid, {"tag": "b"}, range(4)))  # new state: new workers
        assert engine.map(abs, [-1, 2, -3]) == [1, 2, 3]
    assert engine.map_shared(_tag, shared, [5]) == [("a", 15, os.getpid())]  # one job: no worker needed
    with pytest.raises(InputError, match="workers >= 1"):
        ProcessEngine(0)


def _start_process_engine(_):
    with ProcessEngine(2) as engine:
        try:
            engine.map_shared(_other, None, [1, 2])
        except EngineError as exc:
            return str(exc), AutoEngine(cores=4, min_points=0).workers_for(Workload(5))
    return "", 0


def test_inside_a_daemonic_process_the_process_engine_refuses_and_auto_stays_serial():
    with multiprocessing.get_context("fork").Pool(1) as pool:
        message, workers = pool.map(_start_process_engine, [0])[0]
    assert "daemonic" in message and workers == 1


# ---------------------------------------------------------------------------- the auto engine's sizing
@pytest.mark.parametrize(
    "cores, tasks, worker_gib, available_gib, workers, blas",
    [
        (2, 5, 0.5, 16, 2, 1),  # the reference machine: both cores as fold workers
        (16, 5, 0.5, 64, 5, 3),  # workers <= tasks; BLAS threads take the rest of the cores
        (16, 32, 0.5, 64, 16, 1),
        (16, 10, 8.0, 20, 2, 8),  # memory for two workers only
        (16, 10, 40.0, 20, 1, 16),  # not even one fits: one, in this process, with all the cores' BLAS threads
        (1, 5, 0.1, 8, 1, 1),
        (64, 6, 0.1, None, 6, 10),  # unknown memory is no limit
    ],
)
def test_auto_plans_workers_and_blas_threads_from_cores_tasks_and_memory(
    cores, tasks, worker_gib, available_gib, workers, blas
):
    available = None if available_gib is None else int(available_gib * GIB)
    plan = plan_workers(cores, Workload(tasks, int(worker_gib * GIB), points=5000), available)
    assert (plan.workers, plan.blas_threads) == (workers, blas), plan.reason
    assert plan.workers <= tasks and plan.workers * plan.blas_threads <= cores
    assert plan.workers * (plan.blas_threads + 1) > cores  # no whole BLAS thread per worker left over


def test_auto_keeps_small_problems_and_daemonic_processes_serial():
    small = plan_workers(16, Workload(5, 1000, points=200), 64 * GIB)
    assert (small.workers, small.blas_threads) == (1, 16) and "200 points" in small.reason
    assert plan_workers(16, Workload(5, points=5000), None, can_fork=False).workers == 1
    engine = AutoEngine(cores=3, memory_gb=1.0)
    assert engine.plan(Workload(5, worker_bytes=GIB // 2, points=5000)).workers == 2
    assert engine.plan(Workload(5, worker_bytes=GIB // 2, points=100)).workers == 1


def test_auto_sizes_from_the_affinity_mask_by_default():
    assert AutoEngine().cores == len(os.sched_getaffinity(0))
    assert open_engine(EngineConfig(type="auto", cores=3)).cores == 3
    assert open_engine(EngineConfig(type="processes", cores=4)).workers == 4
    procs = open_engine(EngineConfig(type="processes", n_workers=2, cores=4))
    assert (procs.workers, procs.blas_threads) == (2, 2)


# ---------------------------------------------------------------------------- the spec
def test_the_spec_chooses_the_engine_and_fold_workers_is_gone():
    from gpmodels.driver.build import build_engine_config
    from gpmodels.driver.sections import Spec

    base = {"name": "t", "data": {"path": "train.npz", "test": "split"}, "model": {"kernel": {"type": "rbf", "w": 1.0}}}
    assert build_engine_config(Spec.from_dict(base).engine) == EngineConfig(type="auto")
    spec = Spec.from_dict({**base, "engine": {"type": "processes", "n_workers": 3, "blas_threads": 2, "cores": 6}})
    assert build_engine_config(spec.engine) == EngineConfig(type="processes", n_workers=3, blas_threads=2, cores=6)
    with pytest.raises(SpecError, match="engine.type"):
        Spec.from_dict({**base, "engine": {"type": "threads"}})
    with pytest.raises(SpecError, match="objective.cv.fold_workers: unknown key 'fold_workers'"):
        Spec.from_dict({**base, "objective": {"type": "cv", "cv": {"fold_workers": 2}}})


def test_n_jobs_as_an_engine():
    from gpmodels.engine import engine_for_jobs

    assert isinstance(engine_for_jobs(None), AutoEngine)
    assert isinstance(engine_for_jobs(1), LocalEngine)
    assert engine_for_jobs(3).workers == 3
    assert engine_for_jobs(-1).workers == len(os.sched_getaffinity(0)) or isinstance(engine_for_jobs(-1), LocalEngine)
    for bad in (0, 1.5, True, "2"):
        with pytest.raises(InputError, match="'n_jobs' parameter of GPClassifier"):
            engine_for_jobs(bad, "GPClassifier")


def test_study_rows_on_worker_processes_equal_the_rows_one_after_the_other(tmp_path):
    from gpmodels.driver.study import StudySpec, run_study

    d = three_model_study(tmp_path)
    local = run_study(StudySpec.from_dict(d), out=tmp_path / "local", quiet=True)
    d["engine"] = {"type": "processes", "n_workers": 2}
    study = StudySpec.from_dict(d)
    assert study.rows_as_tasks and study.entry_spec(study.models[0], tmp_path).engine.type == "local"
    par = run_study(study, out=tmp_path / "par", quiet=True)
    assert [r["status"] for r in par] == ["ok"] * 3
    assert [r["test_error"] for r in par] == [r["test_error"] for r in local]
    assert [r["phi"] for r in par] == [r["phi"] for r in local]
