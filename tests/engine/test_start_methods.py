"""How worker processes start (gpmodels.engine.state, ProcessEngine's start_method): fork by default,
spawn where the shared state declares it (device backends), an EngineError for a fork that the state
cannot survive; and CV folds with kernel matrices on a device backend through spawned workers, each
rebuilding the matrices from their recipe, giving the local engine's Ψ and ∇Ψ bit for bit."""

import numpy as np
import pytest
from conftest import toy_classification

from gpmodels.data.splits import kfold_partition
from gpmodels.driver.build import build_engine_config
from gpmodels.engine import AutoEngine, EngineConfig, LocalEngine, ProcessEngine, Workload, open_engine
from gpmodels.engine.auto import MIN_POINTS_DEVICE
from gpmodels.engine.state import worker_start_method
from gpmodels.errors import EngineError, InputError, SpecError
from gpmodels.inference.cv.criterion import cv_criterion
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.map.newton_cg import NewtonOptions
from gpmodels.kernels.rbf import ARD
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.linalg.blas_threads import limit_blas_threads
from gpmodels.priors.independent import IndependentGP

GIB = 2**30


class _OnADevice:
    """Stands in for a device array backend: state a forked worker cannot use, on a card with 3 GiB free."""

    worker_start_method = "spawn"

    def free_bytes(self):
        return 3 * GIB


def _never_called(shared, job):
    raise AssertionError("no worker may run")


def test_the_start_method_is_fork_unless_the_shared_state_declares_a_fresh_one():
    device_state = {"op": [(_OnADevice(), np.zeros(3))]}
    assert worker_start_method(device_state) == "spawn" and worker_start_method({"op": [np.zeros(3)]}) is None
    assert ProcessEngine(2).start_method_for({"a": 1}) == "fork"
    assert ProcessEngine(2).start_method_for(device_state) == "spawn"
    assert ProcessEngine(2, start_method="forkserver").start_method_for(device_state) == "forkserver"
    assert ProcessEngine(2, start_method="spawn").start_method_for({"a": 1}) == "spawn"
    with ProcessEngine(2, start_method="fork") as engine:  # refused before any worker starts
        with pytest.raises(EngineError, match="forked worker cannot use.*allowed: ProcessEngine\\(start_method=None"):
            engine.map_shared(_never_called, device_state, range(3))
        assert engine._pool is None
    with pytest.raises(InputError, match="'start_method' parameter of ProcessEngine"):
        ProcessEngine(2, start_method="vfork")


def test_auto_sizes_workers_with_device_state_by_the_device_memory():
    """Each worker builds its matrices on the card: 80 % of its 3 GiB free holds two workers of 1 GiB,
    where the host's 64 GiB would hold five."""
    engine, workload = AutoEngine(cores=16, memory_gb=64), Workload(5, worker_bytes=GIB, points=5000)
    assert engine.plan(workload, {"x": np.zeros(3)}).workers == 5
    assert (engine.plan(workload, [_OnADevice()]).workers, engine.plan(workload, [_OnADevice()]).blas_threads) == (2, 8)
    # below MIN_POINTS_DEVICE (measured: spawned workers' start-up and contention for the card) in this process
    small = Workload(5, worker_bytes=GIB // 8, points=MIN_POINTS_DEVICE - 1)
    assert engine.plan(small, {"x": 1}).workers == 5 and engine.plan(small, [_OnADevice()]).workers == 1
    assert AutoEngine(cores=16, min_points_device=100).plan(small, [_OnADevice()]).workers == 5


def test_the_spec_and_the_engine_config_carry_the_start_method():
    from gpmodels.driver.sections import Spec

    base = {"name": "t", "data": {"path": "train.npz", "test": "split"}, "model": {"kernel": {"type": "rbf", "w": 1.0}}}
    spec = Spec.from_dict({**base, "engine": {"type": "processes", "n_workers": 2, "start_method": "spawn"}})
    assert build_engine_config(spec.engine) == EngineConfig(type="processes", n_workers=2, start_method="spawn")
    assert open_engine(build_engine_config(spec.engine)).start_method == "spawn"
    assert open_engine(EngineConfig(start_method="forkserver")).start_method == "forkserver"  # auto's workers
    with pytest.raises(SpecError, match="engine.start_method"):
        Spec.from_dict({**base, "engine": {"start_method": "vfork"}})


def _same_evaluation(a, b):
    assert a.ok and b.ok and a.psi == b.psi
    assert np.array_equal(a.gradient, b.gradient)
    for x, y in zip(a.state.alphas + a.state.betas, b.state.alphas + b.state.betas, strict=True):
        assert np.array_equal(x, y)


def test_cv_folds_on_device_matrices_through_spawned_workers_equal_the_local_run():
    """Bit for bit: each spawned worker rebuilds the full stored matrix from the host X by the same tiles
    (under the same one BLAS thread), restricts it to its folds by the same takes, and runs the same
    fold code; Ψ, ∇Ψ and the inner state are then the same arrays.  Two evaluations: the first at the
    state shipped with the workers, the second at new hyperparameters built in each worker."""
    pytest.importorskip("array_api_compat")
    from gpmodels.kernels.device.backend import numpy_backend
    from gpmodels.kernels.device.config import DeviceRepresentationConfig

    X, y = toy_classification(36, 3, d=3, seed=0)
    Y, folds = np.eye(3)[y], kfold_partition(36, 3, seed=1, y=y)
    config = DeviceRepresentationConfig(numpy_backend(), kind="stored", memory_mb=0.004)
    op = IndependentGP(ARD([0.5, 1.0, 2.0]), "separate", [1.5, 3.0, 0.8], 1.0, representation=config).operator(X, 3)
    opts = CVOptions(newton=NewtonOptions(max_iter=20, cg_max_iter=30), k3=20, folds_per_fit=1)  # a job per fold
    theta = op.params + 0.2
    with limit_blas_threads(1):
        seq = cv_criterion(op, Softmax(), Y, folds, opts, engine=LocalEngine())
        seq2 = cv_criterion(op.with_params(theta), Softmax(), Y, folds, opts, state=seq.state, engine=LocalEngine())
        with ProcessEngine(2, blas_threads=1, start_method="spawn") as engine:
            par = cv_criterion(op, Softmax(), Y, folds, opts, engine=engine)
            par2 = cv_criterion(op.with_params(theta), Softmax(), Y, folds, opts, state=par.state, engine=engine)
            assert engine.started_with == "spawn" and engine.start_seconds > 0
    _same_evaluation(seq, par)
    _same_evaluation(seq2, par2)


def test_a_device_run_keeps_worker_processes_refusing_fork_and_dask():
    """The driver's engine beside a GPU (what `gpmodels run` does once `device_in_use` names one)."""
    from gpmodels.driver.run import _engine_beside_device
    from gpmodels.driver.sections import Spec

    base = {"name": "t", "data": {"path": "train.npz", "test": "split"}, "model": {"kernel": {"type": "rbf", "w": 1.0}}}
    said = []
    for engine in ({"type": "processes"}, {"type": "auto"}, {"type": "processes", "start_method": "spawn"}):
        spec = Spec.from_dict({**base, "engine": engine})
        assert _engine_beside_device(spec, "cuda:0 (a GPU)", said.append) is spec
    assert (
        said[0] == "engine: processes (kernel matrices on cuda:0 (a GPU); worker processes, if any, rebuild them there)"
    )
    for engine, where in (({"type": "dask"}, "engine.type"), ({"start_method": "fork"}, "engine.start_method")):
        with pytest.raises(SpecError, match=where.replace(".", "\\.")):
            _engine_beside_device(Spec.from_dict({**base, "engine": engine}), "cuda:0 (a GPU)", said.append)
