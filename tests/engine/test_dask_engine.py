"""The Dask engine (issue 13): DaskGram against dense oracles and the in-process StoredGram, the fit,
Ψ and ∇Ψ through it, worker processes, a lost worker, the spec section, the CLI and checkpoints."""

import os
import signal
import time
import types

import numpy as np
import pytest
import yaml
from conftest import three_model_study, toy_classification, toy_data_section
from oracles import block_diagonal_cross, block_diagonal_dense, naive_gram

pytest.importorskip("distributed")

from gpmodels.cli import main  # noqa: E402
from gpmodels.data.splits import kfold_partition  # noqa: E402
from gpmodels.driver.sections import Spec  # noqa: E402
from gpmodels.engine import EngineConfig, LocalEngine, open_engine  # noqa: E402
from gpmodels.engine.auto import AutoEngine  # noqa: E402
from gpmodels.engine.dask_gram import DaskGram  # noqa: E402
from gpmodels.errors import EngineError, SpecError  # noqa: E402
from gpmodels.inference.cv.criterion import cv_criterion  # noqa: E402
from gpmodels.inference.cv.options import CVOptions  # noqa: E402
from gpmodels.inference.map.model import fit_map  # noqa: E402
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions  # noqa: E402
from gpmodels.inference.marginal.laplace import laplace_mlm  # noqa: E402
from gpmodels.kernels import ARD, RBF, Matern, Polynomial, RationalQuadratic, RepresentationConfig  # noqa: E402
from gpmodels.likelihoods.softmax import Softmax  # noqa: E402
from gpmodels.operators.blockdiag import BlockDiagonal  # noqa: E402
from gpmodels.testing import check_grad_trace, check_operator  # noqa: E402
from gpmodels.validation import labels_to_targets  # noqa: E402


def rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


@pytest.fixture(scope="module")
def threads():
    """A LocalCluster of two threaded workers (processes=False), small blocks so that every
    operation spans several of them."""
    with open_engine(EngineConfig(type="dask", processes=False, n_workers=2, block_rows=12)) as eng:
        yield eng


@pytest.mark.parametrize(
    "mode, kernel",
    [
        ("tied", RBF(w=0.7)),
        ("semi", ARD(w=[0.5, 2.0, 1.0])),
        ("separate", Polynomial(degree=2, scale=0.5, offset=1.0)),
        ("semi", Matern(w=0.6, nu=1.5) + RBF(2.0)),  # sums and products of kernels
        ("tied", 2.0 * RationalQuadratic(w=0.4, alpha=1.5) * Matern(w=1.0, nu=0.5)),
    ],
)
def test_operator_conformance_on_dask(threads, mode, kernel):
    """The operator conformance suite (gpmodels.testing) on a BlockDiagonal over DaskGram."""
    r = np.random.default_rng(3)
    C, X, X_new = 3, r.normal(size=(17, 3)), r.normal(size=(4, 3))
    v = 2.0 if mode == "tied" else [0.5, 1.0, 3.0]
    op = BlockDiagonal.from_sharing(X, kernel, C, mode, v, threads.representation(RepresentationConfig(kind="stored")))
    assert all(isinstance(rep, DaskGram) for rep, _ in op.rep_groups)
    assert op._rep_list[0].n_blocks == 2
    grams = [naive_gram(kernel, X, X)] * C
    cross = [naive_gram(kernel, X_new, X)] * C
    check_operator(
        op,
        r,
        dense=block_diagonal_dense(grams, op.class_variances),
        X_new=X_new,
        cross_dense=block_diagonal_cross(cross, op.class_variances),
        rtol=1e-9,
    )
    check_grad_trace(op, r)


def _problem(n=60, C=3):
    X, y = toy_classification(n, C, d=4, seed=1)
    return X, y, labels_to_targets(y, C)


def test_mvm_fit_psi_and_gradient_equal_in_process(threads):
    """MVM, the Newton–CG fit (diagonal and low-rank preconditioners), the Laplace log marginal
    likelihood, Ψ and ∇Ψ through Dask equal the in-process StoredGram to 1e-10.

    The MVMs agree to rounding (1e-16); a CG stopped at tolerance tol moves by rounding-level
    perturbations of its MVMs up to ~tol times the condition, so ∇Ψ (an accumulation solve per fold)
    is compared with tight inner tolerances (at the defaults, 1e-6, it agreed to 6e-9)."""
    X, y, Y = _problem(36)
    C, lik = 3, Softmax()
    local = BlockDiagonal.from_sharing(X, RBF(w=0.3), C, "semi", [1.0, 2.0, 3.0], RepresentationConfig(kind="stored"))
    dist = BlockDiagonal.from_sharing(
        X, RBF(w=0.3), C, "semi", [1.0, 2.0, 3.0], threads.representation(RepresentationConfig(kind="stored"))
    )
    V = np.random.default_rng(0).normal(size=(36, C, 2))
    assert rel(dist.mvm(V), local.mvm(V)) <= 1e-10
    a, b = fit_map(local, lik, Y), fit_map(dist, lik, Y)
    assert abs(b.result.phi - a.result.phi) <= 1e-10 * abs(a.result.phi)
    assert rel(b.alpha, a.alpha) <= 1e-8
    Xt = toy_classification(20, C, d=4, seed=2)[0]
    assert np.array_equal(a.predict(Xt), b.predict(Xt))
    lowrank = NewtonOptions(preconditioner="lowrank_block", precond_rank=4)  # preconditioners through the protocol
    pa, pb = fit_map(local, lik, Y, NewtonCG(lowrank)), fit_map(dist, lik, Y, NewtonCG(lowrank))
    assert abs(pb.result.phi - pa.result.phi) <= 1e-10 * abs(pa.result.phi)
    la, lb = laplace_mlm(local, lik, Y), laplace_mlm(dist, lik, Y)  # the exact path: op.dense() gathered
    assert abs(lb.log_marginal - la.log_marginal) <= 1e-10 * abs(la.log_marginal)
    folds = kfold_partition(36, 3, 0, y=y)
    opts = CVOptions(newton=NewtonOptions(max_iter=30, cg_max_iter=100, grad_tol=1e-11), k3=200, accumulation_tol=1e-13)
    ea, eb = cv_criterion(local, lik, Y, folds, opts), cv_criterion(dist, lik, Y, folds, opts)
    assert ea.ok and eb.ok
    assert abs(eb.psi - ea.psi) <= 1e-10 * abs(ea.psi)
    assert rel(eb.gradient, ea.gradient) <= 1e-10


def test_worker_processes_and_a_lost_worker():
    """Two worker processes: the MVM equals the in-process one; after a worker process is killed
    mid-run its blocks are rebuilt by Dask from the broadcast X, and the MVM is unchanged."""
    X, _, _ = _problem(40)
    cfg = EngineConfig(type="dask", processes=True, n_workers=2, threads_per_worker=1, block_rows=10)
    rep_local = RepresentationConfig(kind="stored").build(X, RBF(w=0.5))
    B = np.random.default_rng(1).normal(size=(40, 3))
    with open_engine(cfg) as eng:
        rep = eng.representation(RepresentationConfig(kind="blocked")).build(X, RBF(w=0.5))
        assert rel(rep.mvm(B), rep_local.mvm(B)) <= 1e-10
        victim, pid = next(iter(eng.client.run(os.getpid).items()))
        os.kill(pid, signal.SIGKILL)  # a hard kill: its held blocks are gone
        deadline = time.monotonic() + 30
        while victim in eng.client.scheduler_info()["workers"] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert victim not in eng.client.scheduler_info()["workers"]
        assert rel(rep.mvm(B), rep_local.mvm(B)) <= 1e-10, f"after losing worker {victim}"
    assert eng.client is None and eng.cluster is None  # closed by the context manager


#: calls of the patched block-gradient task (module-level: tasks pickle this module's functions by reference)
GRAD_CALLS = {"n": 0, "fail_after": 2}


def _flaky_block_grad(*args):
    """The block-gradient task that 'loses its worker' after ``fail_after`` calls (the second Ψ evaluation)."""
    import distributed

    import gpmodels.engine.dask_gram as dist

    GRAD_CALLS["n"] += 1
    if GRAD_CALLS["n"] > GRAD_CALLS["fail_after"]:
        raise distributed.KilledWorker("block-grad", types.SimpleNamespace(address="tcp://127.0.0.1:1"), 3)
    return dist._REAL_BLOCK_GRAD(*args)


def test_failure_is_a_clear_error_and_the_cv_checkpoint_resumes(tmp_path, monkeypatch, capsys):
    """A worker lost beyond Dask's retries in the second Ψ evaluation stops the run with an EngineError
    (exit 1, the worker named); the checkpoint of the first outer iteration is kept and the next run
    resumes from it."""
    spec = {
        "name": "toy",
        "data": toy_data_section(tmp_path, n=30, n_train=20, d=4, seed=0, label_offset=1),
        "model": {"kernel": {"type": "rbf", "w": 0.3}, "variance": 5.0, "sharing": "tied"},
        "objective": {"type": "cv", "cv": {"folds": 2, "outer": {"max_iter": 2}, "newton": {"max_iter": 4}}},
        "engine": {"type": "dask", "processes": False, "n_workers": 2, "block_rows": 10},
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    import gpmodels.engine.dask_gram as dist

    monkeypatch.setattr(dist, "_REAL_BLOCK_GRAD", dist._block_grad, raising=False)
    monkeypatch.setattr(dist, "_block_grad", _flaky_block_grad)
    monkeypatch.setitem(GRAD_CALLS, "n", 0)
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "spec.yaml"), "--out", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "tcp://127.0.0.1:1" in err and "lost" in err, err
    assert GRAD_CALLS["n"] > 2 and (out / "checkpoint.npz").exists()
    monkeypatch.setattr(dist, "_block_grad", dist._REAL_BLOCK_GRAD)
    assert main(["run", str(tmp_path / "spec.yaml"), "--out", str(out)]) == 0
    assert "resumed from the checkpoint" in capsys.readouterr().out


def test_engine_spec_section_and_cli(tmp_path, capsys):
    base = {"name": "t", "data": {"path": "train.npz", "test": "split"}, "model": {"kernel": {"type": "rbf", "w": 1.0}}}
    assert Spec.from_dict(base).engine.type == "auto"
    with pytest.raises(SpecError, match="engine.type"):
        Spec.from_dict({**base, "engine": {"scheduler": "tcp://h:8786"}})
    with pytest.raises(SpecError, match="engine.scheduler"):
        Spec.from_dict({**base, "engine": {"type": "dask", "scheduler": "h 8786"}})
    with pytest.raises(SpecError, match="engine.n_workers"):
        Spec.from_dict({**base, "engine": {"type": "dask", "n_workers": 0}})
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(base))
    assert main(["run", str(tmp_path / "s.yaml"), "--scheduler", "not an address"]) == 2
    assert "engine.scheduler" in capsys.readouterr().err


def test_local_engine_and_missing_dask(monkeypatch):
    assert isinstance(open_engine(), AutoEngine) and isinstance(open_engine(EngineConfig(type="local")), LocalEngine)
    assert open_engine(EngineConfig(type="local")).map(lambda x: x * 2, [1, 2]) == [2, 4]
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)
    with pytest.raises(EngineError, match=r"pip install gpmodels\[dask\]"):
        open_engine(EngineConfig(type="dask"))


def test_a_dask_gram_is_not_shipped_to_workers(threads):
    import pickle

    rep = threads.representation(RepresentationConfig(kind="stored")).build(np.eye(3), RBF(w=1.0))
    with pytest.raises(EngineError, match="cannot be sent"):
        pickle.dumps(rep)


@pytest.fixture(scope="module")
def tasks():
    """A threaded LocalCluster that runs independent work as tasks (distribute: tasks)."""
    with open_engine(EngineConfig(type="dask", processes=False, n_workers=2, distribute="tasks")) as eng:
        yield eng


def test_folds_and_one_vs_rest_tasks_equal_the_sequential_loop(tasks):
    from gpmodels.inference.cv.one_vs_rest import fit_one_vs_rest

    X, y, Y = _problem(45)
    op = BlockDiagonal.from_sharing(X, RBF(w=0.3), 3, "tied", 2.0, RepresentationConfig(kind="stored"))
    folds = kfold_partition(45, 3, 0, y=y)
    seq, par = cv_criterion(op, Softmax(), Y, folds), cv_criterion(op, Softmax(), Y, folds, engine=tasks)
    assert seq.ok and par.ok and len(par.folds) == 3
    assert par.psi == pytest.approx(seq.psi, rel=1e-12)
    assert rel(par.gradient, seq.gradient) <= 1e-12
    op2 = BlockDiagonal.from_sharing(X, RBF(w=0.3), 2, "tied", 2.0, RepresentationConfig(kind="stored"))
    a = fit_one_vs_rest(op2, Softmax(), np.eye(3)[y])
    b = fit_one_vs_rest(op2, Softmax(), np.eye(3)[y], engine=tasks)
    assert [m.result.phi for m in a.models] == pytest.approx([m.result.phi for m in b.models], rel=1e-12)
    assert np.array_equal(a.predict(X), b.predict(X))


@pytest.mark.slow  # ~25 s: the study twice, the second on two fresh worker processes
def test_study_rows_as_tasks(tmp_path):
    from gpmodels.driver.study import StudySpec, run_study

    d = three_model_study(tmp_path)
    local = run_study(StudySpec.from_dict(d), out=tmp_path / "local", quiet=True)
    d["engine"] = {"type": "dask", "processes": False, "distribute": "tasks"}
    with pytest.raises(SpecError, match="engine.processes"):  # runs in one process share plots and log
        StudySpec.from_dict(d)
    d["engine"] = {"type": "dask", "processes": True, "n_workers": 2, "distribute": "tasks"}
    par = run_study(StudySpec.from_dict(d), out=tmp_path / "par", quiet=True)
    assert [r["status"] for r in par] == ["ok"] * 3
    assert [r["test_error"] for r in par] == [r["test_error"] for r in local]
    assert [r["phi"] for r in par] == pytest.approx([r["phi"] for r in local], rel=1e-12)


def test_connect_to_a_running_scheduler_and_leave_it_running():
    """``scheduler: ADDRESS`` connects to a cluster someone else started and does not close it."""
    import distributed

    X, _, _ = _problem(20)
    B = np.random.default_rng(2).normal(size=(20, 2))
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster:
        with open_engine(EngineConfig(type="dask", scheduler=cluster.scheduler_address, block_rows=8)) as eng:
            assert eng.cluster is None and eng.n_threads >= 1
            rep = eng.representation(RepresentationConfig(kind="stored")).build(X, RBF(w=0.4))
            assert rel(rep.mvm(B), RepresentationConfig(kind="stored").build(X, RBF(w=0.4)).mvm(B)) <= 1e-10
        assert cluster.status.name == "running"
