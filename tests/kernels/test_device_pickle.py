"""Device backends and representations cross process boundaries as their recipe (pickle): a backend as
its namespace and device, a representation as (host X, kernel, backend, dtype, tile size), its arrays
rebuilt in the receiving process.  Products after a round trip equal the original's bit for bit: the
same code builds the same matrix from the same host inputs (a restriction rebuilds its own block from
its X[J] rather than taking it from the full matrix, so there to rounding)."""

import pickle

import numpy as np
import pytest

from gpmodels.engine.state import resident_bytes, worker_start_method
from gpmodels.kernels.rbf import ARD, RBF
from gpmodels.priors.independent import IndependentGP

pytest.importorskip("array_api_compat")
from gpmodels.kernels.device.backend import numpy_backend, strict_backend, torch_backend  # noqa: E402
from gpmodels.kernels.device.config import DeviceRepresentationConfig  # noqa: E402
from gpmodels.kernels.device.gram import DeviceRecomputedGram, DeviceStoredGram  # noqa: E402

BACKENDS = {"numpy": numpy_backend, "strict": strict_backend, "torch-cpu": lambda: torch_backend("cpu", fused=False)}
FORMS = {
    "stored64": lambda X, k, be: DeviceStoredGram(X, k, be, "float64", 0.004),
    "stored32": lambda X, k, be: DeviceStoredGram(X, k, be, "float32", 0.004),
    "recomputed": lambda X, k, be: DeviceRecomputedGram(X, k, be, 0.004),
}


def _backend(name):
    if name == "torch-cpu":
        pytest.importorskip("torch")
    return BACKENDS[name]()


def _round_trip(obj):
    return pickle.loads(pickle.dumps(obj))


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_backend_pickles_as_its_recipe_and_is_rebuilt(name):
    be = _backend(name)
    again = _round_trip(be)
    assert type(again) is type(be) and again is not be
    assert (again.label, str(again.device), again.fused is None) == (be.label, str(be.device), be.fused is None)
    np.testing.assert_array_equal(again.to_host(again.from_host(np.arange(3.0))), np.arange(3.0))
    assert len(pickle.dumps(be)) < 200  # the recipe, not a namespace module or device handles


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_device_representation_pickles_as_its_recipe_and_gives_the_same_products(name, form):
    r = np.random.default_rng(0)
    X, B, E = r.normal(size=(23, 3)), r.normal(size=(23, 4)), r.normal(size=(23, 4))
    rep = FORMS[form](X, ARD([0.5, 1.3, 2.0]), _backend(name))
    rep.choice = "recorded"
    data = pickle.dumps(rep)
    assert len(data) < X.nbytes + 4000  # host X and the recipe, not M
    again = pickle.loads(data)
    assert type(again) is type(rep) and again.choice == "recorded" and again.dtype == rep.dtype
    assert type(again.backend) is type(rep.backend) and again.backend is not rep.backend
    np.testing.assert_array_equal(again.mvm(B), rep.mvm(B))
    np.testing.assert_array_equal(again.grad_contract(E, B), rep.grad_contract(E, B))
    J = np.array([3, 0, 17, 8, 22, 5])
    sub = _round_trip(rep.restrict(J))
    np.testing.assert_array_equal(sub.X, X[J])
    ref = rep.restrict(J).mvm(B[J])
    np.testing.assert_allclose(sub.mvm(B[J]), ref, rtol=0, atol=1e-13 * np.abs(ref).max())


def test_an_operator_on_a_device_pickles_whole_and_shares_its_host_inputs():
    X = np.random.default_rng(1).normal(size=(20, 2))
    config = DeviceRepresentationConfig(strict_backend(), kind="stored", memory_mb=0.004)
    op = IndependentGP(RBF(0.7), "separate", [1.5, 3.0], 1.0, representation=config).operator(X, 2)
    again = _round_trip(op)
    V = np.random.default_rng(2).normal(size=(20, 2))
    np.testing.assert_array_equal(again.mvm(V), op.mvm(V))
    # one stream: the representations' host X is the operator's, their backend the configuration's
    inner = again.inner  # the block-diagonal operator under the intercept
    assert all(rep.X is inner.X and rep.backend is inner.representation.backend for rep in inner._rep_list)
    theta = op.params + 0.2
    np.testing.assert_array_equal(again.with_params(theta).mvm(V), op.with_params(theta).mvm(V))


def test_what_the_shared_state_declares_for_a_worker_process():
    """Host backends need no particular start method, PyTorch's declares spawn; device matrices count
    in the bytes a worker rebuilds."""
    X = np.random.default_rng(1).normal(size=(20, 2))
    op = IndependentGP(RBF(0.7), "tied", 1.5, 1.0, representation=DeviceRepresentationConfig(numpy_backend()))
    op = op.operator(X, 2)
    assert worker_start_method(op) is None and worker_start_method((op, [np.zeros(3)])) is None
    assert resident_bytes(op) >= 20 * 20 * 8
    pytest.importorskip("torch")
    cfg = DeviceRepresentationConfig(torch_backend("cpu", fused=False), kind="recomputed")
    op = IndependentGP(RBF(0.7), "tied", 1.5, 1.0, representation=cfg).operator(X, 2)
    assert worker_start_method({"context": (op,)}) == "spawn"


def test_a_received_torch_backend_is_the_receiving_processs_one_backend_for_its_device():
    """So that every matrix a worker holds or rebuilds is on one backend object (composites run their
    algebra on it; a rebuilt representation reuses the uploaded inputs)."""
    pytest.importorskip("torch")
    from gpmodels.kernels.device.backend import process_torch_backend

    own = process_torch_backend("cpu", fused=False)
    assert process_torch_backend("cpu", False) is own
    assert _round_trip(torch_backend("cpu", fused=False)) is own
    X = np.random.default_rng(1).normal(size=(20, 2))
    cfg = DeviceRepresentationConfig(torch_backend("cpu", fused=False), kind="stored")
    op = _round_trip(IndependentGP(RBF(0.7), "separate", [1.5, 3.0], 1.0, representation=cfg).operator(X, 2))
    assert op.inner.representation.backend is own and all(r.backend is own for r in op.inner._rep_list)
