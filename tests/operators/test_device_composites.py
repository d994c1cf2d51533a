"""Composite operators over kernel matrices held on one device (block-diagonal, its cross blocks, the
ANOVA prior's merged GEMMs, the intercept) run their algebra there: each product crosses to the device once
and back once, whatever the number of kernel groups, and gives the host composite's numbers to rounding;
with the softmax factor there too, so does the Newton system's product β + V^T K̃ V β.

Runs on the CI namespaces (numpy through array-api-compat, array-api-strict); the same code runs on
PyTorch on a GPU."""

import numpy as np
import pytest
from minimal_operator import DenseTestOperator

from gpmodels.errors import InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.inference.map.newton_cg import newton_system
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax, SoftmaxFactor, log_softmax
from gpmodels.linalg.arrays import HOST
from gpmodels.linalg.counting import MVMCounter
from gpmodels.operators.anova import ANOVA
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.intercept import Intercept

pytest.importorskip("array_api_compat")
from device_backends import CountingBackend  # noqa: E402

from gpmodels.kernels.device.backend import cuda_backend, cuda_status, strict_backend  # noqa: E402
from gpmodels.kernels.device.config import DeviceRepresentationConfig  # noqa: E402
from gpmodels.kernels.device.fused import FUSED_MIN_ENTRIES  # noqa: E402

TREE = ClassTree([("root", "a"), ("root", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2"), ("b", "b3")])


BACKENDS = {"numpy": CountingBackend, "strict": strict_backend}
BACKEND_PARAMS = sorted(BACKENDS)
if cuda_status() is None:  # a usable GPU: the same checks on PyTorch's CUDA device
    BACKENDS["cuda"] = cuda_backend
    BACKEND_PARAMS.append(pytest.param("cuda", marks=pytest.mark.gpu))
#: (class -> kernel group, kernels): separate, tied, and groups of classes that are not contiguous
LAYOUTS = {
    "separate": ([0, 1, 2, 3], [RBF(0.3), RBF(0.5), RBF(0.8), RBF(1.1)]),
    "tied": ([0, 0, 0, 0], [RBF(0.4)]),
    "interleaved": ([0, 1, 0, 1], [RBF(0.3), RBF(0.9)]),
}


def _pair(layout, backend, dtype="float64"):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(41, 3))
    class_kernel, kernels = LAYOUTS[layout]
    variances = [1.0, 2.0, 0.5, 3.0]
    args = (X, kernels, class_kernel, variances, [0, 1, 2, 3])
    config = DeviceRepresentationConfig(backend, kind="stored", dtype=dtype)
    return BlockDiagonal(*args), BlockDiagonal(*args, representation=config)


def _close(a, b, rtol=1e-12):
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * np.abs(b).max())


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_block_diagonal_products_on_one_device_match_the_host(backend, layout, k):
    host, dev = _pair(layout, BACKENDS[backend]())
    rng = np.random.default_rng(4)
    V = rng.normal(size=(41, 4, k)) if k > 1 else rng.normal(size=(41, 4))
    _close(dev.mvm(V), host.mvm(V))
    I, J = np.arange(0, 41, 3), np.setdiff1d(np.arange(41), np.arange(0, 41, 3))
    for cross_dev, cross_host in [(dev.cross(I, J), host.cross(I, J)), (dev.restrict(J), host.restrict(J))]:
        _close(cross_dev.mvm(V[J]), cross_host.mvm(V[J]))
    _close(dev.cross(I, J).rmvm(V[I]), host.cross(I, J).rmvm(V[I]))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_block_diagonal_product_crosses_to_the_device_once_each_way(layout):
    backend = CountingBackend()
    _, dev = _pair(layout, backend, dtype="float32")
    V = np.random.default_rng(5).normal(size=(41, 4))
    dev.mvm(V)  # the first product also uploads the class layout (indices, variances)
    cross = dev.cross(np.arange(10), np.arange(10, 41))
    cross.mvm(V[10:])
    backend.uploads = backend.downloads = 0
    dev.mvm(V)
    cross.mvm(V[10:])
    cross.rmvm(V[:10])
    assert (backend.uploads, backend.downloads) == (3, 3)


def _anova_pair(backend):
    X = np.random.default_rng(6).normal(size=(29, 2))
    P = TREE.n_nodes
    args = (X, [RBF(0.6)], np.zeros(P, dtype=int), np.linspace(0.5, 2.0, P), np.arange(P))
    config = DeviceRepresentationConfig(backend, kind="stored")
    return ANOVA(BlockDiagonal(*args), TREE), ANOVA(BlockDiagonal(*args, representation=config), TREE)


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_anova_merged_gemms_on_one_device_match_the_host_and_cross_once(backend, k):
    be = BACKENDS[backend]()
    host, dev = _anova_pair(be)
    assert dev.device_backend is be and host.device_backend is None
    V = np.random.default_rng(7).normal(size=(29, TREE.n_classes, k))
    _close(dev.mvm(V), host.mvm(V))
    if isinstance(be, CountingBackend):
        be.uploads = be.downloads = 0
        dev.mvm(V)
        assert (be.uploads, be.downloads) == (1, 1)


def test_the_fused_products_leave_small_blocks_to_the_array_api_code():
    fused = pytest.importorskip("gpmodels.kernels.device.fused")
    if not fused.AVAILABLE:
        pytest.skip("Triton is not installed")
    import torch

    products = fused.FusedProducts(torch, tune=False)
    assert not products.covers(2, FUSED_MIN_ENTRIES // 2 - 1) and products.covers(2, FUSED_MIN_ENTRIES // 2)
    assert fused.FusedProducts(torch, tune=False, min_entries=0).covers(1, 1)


def _with_intercept(op):
    return Intercept(op, 4.0)


@pytest.mark.parametrize("wrap", [lambda op: op, _with_intercept], ids=["bare", "intercept"])
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_device_operators_multiply_device_arrays_as_their_host_products(backend, wrap):
    be = BACKENDS[backend]()
    V = np.random.default_rng(8).normal(size=(41, 4))
    for host, dev in [_pair("interleaved", be), _pair("separate", be, dtype="float32")]:
        host, dev = wrap(host), wrap(dev)
        assert dev.device_backend is be and host.device_backend is None
        _close(be.to_host(dev.device_mvm(be.from_host(V))), host.mvm(V), rtol=1e-6)
    anova_host, anova_dev = (wrap(op) for op in _anova_pair(be))
    W = np.random.default_rng(9).normal(size=(29, TREE.n_classes))
    _close(be.to_host(anova_dev.device_mvm(be.from_host(W))), anova_host.mvm(W))
    _close(host.device_mvm(V), host.mvm(V))  # a host operator's own arrays are the host's
    assert host.arrays is HOST
    with pytest.raises(InputError, match="defines no _product"):  # an operator that multiplies by mvm alone
        DenseTestOperator.random(np.random.default_rng(0), 41, 4).device_mvm(V)


@pytest.mark.parametrize("kappa", [-np.inf, np.log(0.05)], ids=["all-free", "app-b-fixed"])
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_the_newton_system_product_runs_on_the_operators_device(backend, kappa):
    """β + V^T K̃ V β with K̃ and the softmax factor on one device equals the host product to rounding,
    counts one MVM, and crosses to the device once each way (App. B fixed components too)."""
    be = BACKENDS[backend]()
    host, dev = (_with_intercept(op) for op in _pair("separate", be))
    rng = np.random.default_rng(10)
    U, Y = 2.0 * rng.normal(size=(41, 4)), np.eye(4)[rng.integers(0, 4, 41)]
    hf = SoftmaxFactor(log_softmax(U), Y, kappa)
    assert hf.all_free == (kappa == -np.inf)  # the second case fixes components (App. B)
    counter = MVMCounter(dev)
    product = newton_system(hf, counter, U, Softmax().gradient(U, Y)).matvec
    x = rng.normal(size=(41, 4))
    start = counter.count  # the right-hand side's MVM with the App. B fixed part, where there is one
    _close(product(x), x + hf.Vt(host.mvm(hf.V(x))))  # the first product also uploads the class layout
    assert counter.count == start + 1
    if isinstance(be, CountingBackend):
        be.uploads = be.downloads = 0
        product(x)
        assert (be.uploads, be.downloads) == (1, 1)
