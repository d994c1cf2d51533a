"""Newton–CG's linear solves on the operator's device: where K̃ and the Hessian factor go to a device and the
vectors have at least ``DEVICE_CG_MIN_ENTRIES`` entries, CG's iterates, products and preconditioner stay there
(:func:`gpmodels.inference.map.newton_cg.device_cg`), so a fit crosses to the host a few times per Newton
iteration instead of twice per CG step, with the numbers of the host's solves.  The problems here are small:
the tests that solve on the device lower the threshold (``on_device``).

Runs on the CI namespaces (numpy through array-api-compat, array-api-strict); the same code runs on
PyTorch on a GPU."""

import importlib

import numpy as np
import pytest

from gpmodels.inference import execution_plan
from gpmodels.inference.execution_plan import PlanRules
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions, solve_weighted_system
from gpmodels.inference.map.preconditioners import PRECONDITIONERS, make_preconditioner
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax, SoftmaxFactor, log_softmax
from gpmodels.linalg.arrays import HOST
from gpmodels.linalg.blas_threads import blas_threads, limit_blas_threads
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.intercept import Intercept

pytest.importorskip("array_api_compat")
from device_backends import CountingBackend, device_backends  # noqa: E402

from gpmodels.kernels.device.config import DeviceRepresentationConfig  # noqa: E402

BACKENDS, BACKEND_PARAMS = device_backends()
#: the module (the package exports its function of the same name)
newton_cg = importlib.import_module("gpmodels.inference.map.newton_cg")
N, C = 60, 3
#: every preconditioner but ``auto`` (the diagonal or lowrank by size)
NAMES = sorted(set(PRECONDITIONERS) - {"auto"})


@pytest.fixture
def on_device(monkeypatch):
    """CG on the device whatever the size of the problem."""
    monkeypatch.setattr(execution_plan, "DEFAULT_RULES", PlanRules(device_cg_min_entries=0))


def _problem(backend=None):
    """A separate-kernel prior with an intercept (a Kronecker form: lowrank deflates it), on the host
    or, with ``backend``, its matrices on that device; targets and latent values."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 2))
    config = None if backend is None else DeviceRepresentationConfig(backend, kind="stored")
    kernels = [RBF(0.4), RBF(0.9), RBF(1.6)]
    op = Intercept(BlockDiagonal(X, kernels, [0, 1, 2], [2.0, 1.0, 3.0], [0, 1, 2], representation=config), 4.0)
    Y = np.eye(C)[rng.integers(0, C, N)]
    return op, Y, 1.5 * rng.normal(size=(N, C))


def _options(name):
    return NewtonOptions(preconditioner=name, precond_rank=4, cg_forcing=1e-3, cg_tol=1e-12, grad_tol=1e-9)


def _beyond_cg(res) -> int:
    """A fit's products other than its CG steps' (starts, line searches)."""
    return res.diagnostics.mvm_count - int(np.sum(res.diagnostics.cg_iterations))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_a_fit_with_its_solves_on_the_device_equals_the_host_fit(backend, name, on_device):
    host, Y, _ = _problem()
    dev, _, _ = _problem(BACKENDS[backend]())
    a, b = (NewtonCG(_options(name)).fit(op, Softmax(), Y) for op in (host, dev))
    assert a.diagnostics.converged and b.diagnostics.converged
    assert b.phi == pytest.approx(a.phi, rel=1e-12)
    np.testing.assert_allclose(b.alpha, a.alpha, rtol=0, atol=1e-8 * np.abs(a.alpha).max())
    assert _beyond_cg(b) == _beyond_cg(a)  # the device's CG keeps K̃ V β and starts from its residual as the host's


@pytest.mark.parametrize("name", NAMES)
def test_a_device_fit_crosses_to_the_host_per_newton_iteration_not_per_cg_step(name, on_device):
    be = CountingBackend()
    dev, Y, _ = _problem(be)
    be.uploads = be.downloads = 0
    res = NewtonCG(_options(name)).fit(dev, Softmax(), Y)
    steps = int(np.sum(res.diagnostics.cg_iterations))
    assert steps > 3 * res.diagnostics.iterations  # several CG steps per Newton iteration
    assert be.downloads < steps, (be.downloads, steps)  # the host path downloads at least once per step


def test_a_small_problem_solves_on_the_host_with_its_product_on_the_device():
    be = CountingBackend()
    dev, Y, _ = _problem(be)
    assert N * C < execution_plan.DEFAULT_RULES.device_cg_min_entries
    be.uploads = be.downloads = 0
    res = NewtonCG(_options("diagonal")).fit(dev, Softmax(), Y)
    steps = int(np.sum(res.diagnostics.cg_iterations))
    assert steps <= be.downloads <= steps + 3 * res.diagnostics.iterations + 3
    host = NewtonCG(_options("diagonal")).fit(_problem()[0], Softmax(), Y)
    assert _beyond_cg(res) == _beyond_cg(host)  # K̃ V β comes back with each product: no line-search product


@pytest.mark.parametrize("rank", [4, 8], ids=["pairs", "rows"])
@pytest.mark.parametrize("kappa", [-np.inf, np.log(0.05)], ids=["all-free", "app-b-fixed"])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_each_preconditioner_applies_on_the_device_as_on_the_host(backend, name, kappa, rank):
    """With ``rank`` 8 the deflated ones build their small system from L's rows (on the device), with 4
    from the pairs of eigenvectors (on the host)."""
    be = BACKENDS[backend]()
    dev, Y, U = _problem(be)
    hf = SoftmaxFactor(log_softmax(U), Y, kappa)
    pc = make_preconditioner(name, dev, rank=rank, seed=1)
    if name.startswith("lowrank"):
        assert (pc.L_rows is not None) == (rank == 8)
    r = np.random.default_rng(2).normal(size=(N, C))
    expected = pc.inverse(hf).on(HOST, hf)(r)
    tol = 1e-12 * np.abs(expected).max()
    for setup in (HOST, be):  # H's products on the host or on the device
        np.testing.assert_allclose(pc.inverse(hf, setup).on(HOST, hf)(r), expected, rtol=0, atol=tol)
        device_apply = pc.inverse(hf, setup).on(be, hf.on(be))
        np.testing.assert_allclose(be.to_host(device_apply(be.from_host(r))), expected, rtol=0, atol=tol)


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_the_cv_accumulation_solve_on_the_device_equals_the_host_one(backend, on_device):
    host, Y, U = _problem()
    dev, _, _ = _problem(BACKENDS[backend]())
    hf = Softmax().exact_hessian_factor(U, Y)
    plan = execution_plan.plan_for(dev)
    assert plan.cg_on_device and not execution_plan.plan_for(host).cg_on_device
    assert plan.place(dev, hf).solve is dev.device_backend and plan.place(host, hf).solve is HOST
    b = np.random.default_rng(3).normal(size=(N, C))
    x0 = np.random.default_rng(4).normal(size=(N, C))
    a, d = (solve_weighted_system(op, hf, b, x0=x0, tol=1e-10, max_iter=200) for op in (host, dev))
    assert d.iterations == a.iterations and d.mvms == a.mvms
    np.testing.assert_allclose(d.z, a.z, rtol=0, atol=1e-9 * np.abs(a.z).max())


def _blas_threads_seen_by_cg(op, Y, monkeypatch) -> set:
    """The BLAS thread counts that CG's steps of a fit on ``op`` ran with (BLAS limited to 2 around it)."""
    seen = set()
    real_cg = newton_cg.cg

    def watching(matvec, *args, **kw):
        seen.add(blas_threads())
        return real_cg(matvec, *args, **kw)

    monkeypatch.setattr(newton_cg, "cg", watching)
    with limit_blas_threads(2):
        if blas_threads() < 2:
            pytest.skip("this BLAS cannot run 2 threads here")
        NewtonCG(_options("lowrank")).fit(op, Softmax(), Y)
    return seen


def test_host_cg_beside_a_device_product_runs_on_one_blas_thread(monkeypatch):
    dev, Y, _ = _problem(BACKENDS["numpy"]())
    assert N * C < execution_plan.DEFAULT_RULES.device_cg_min_entries  # CG on the host, the product on the device
    assert _blas_threads_seen_by_cg(dev, Y, monkeypatch) == {1}


def test_a_host_product_keeps_its_blas_threads(monkeypatch):
    host, Y, _ = _problem()
    assert _blas_threads_seen_by_cg(host, Y, monkeypatch) == {2}


def test_the_plan_gives_one_blas_thread_beside_a_small_device_operator_only():
    dev, _, _ = _problem(BACKENDS["numpy"]())
    host, _, _ = _problem()
    with limit_blas_threads(2):
        if blas_threads() < 2:
            pytest.skip("this BLAS cannot run 2 threads here")
        with execution_plan.plan_for(dev).blas_context():
            assert blas_threads() == 1
        with execution_plan.plan_for(host).blas_context():
            assert blas_threads() == 2
        assert blas_threads() == 2
