"""Device representations (gpmodels.kernels.device) on the CI namespaces: numpy (through
array-api-compat) and array-api-strict, which refuses numpy-only habits (fancy indexing, implicit
conversions, numpy functions on its arrays).  The same code runs on PyTorch on a GPU (the ``gpu``
tests at the end, skipped without one).

Tolerances: float64 on the device computes the same sums in another order (distances by the
|a|^2 + |b|^2 - 2 a·b expansion in tiles), so products and contractions agree with the host's to
1e-12 relative to their scale; float32 storage rounds each entry once (2^-24 ≈ 6e-8) and may round
the other way where the float64 entries differ in the last bit, so 1e-6.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import attrs
import numpy as np
import pytest
from conftest import toy_classification
from sklearn.gaussian_process import kernels as sk

from gpmodels.data.splits import kfold_partition
from gpmodels.errors import DeviceError
from gpmodels.inference.cv.criterion import cv_criterion
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.map.model import fit_map
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions
from gpmodels.kernels.blocked_gram import BlockedGram
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.matern import Matern, MaternARD
from gpmodels.kernels.rational_quadratic import RationalQuadratic, RationalQuadraticARD
from gpmodels.kernels.rbf import ARD, RBF
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.kernels.sklearn_adapter import from_sklearn
from gpmodels.kernels.stored_gram import StoredGram
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.priors.independent import IndependentGP

pytest.importorskip("array_api_compat")
from device_backends import device_backends  # noqa: E402

from gpmodels.kernels.device import fused as fused_products  # noqa: E402
from gpmodels.kernels.device.backend import (  # noqa: E402
    cuda_backend,
    cuda_status,
    numpy_backend,
    strict_backend,
    torch_backend,
)
from gpmodels.kernels.device.config import DeviceRepresentationConfig, choose_device_representation  # noqa: E402
from gpmodels.kernels.device.gram import DeviceRecomputedGram, DeviceStoredGram  # noqa: E402

#: the backends each test runs on; on a machine with a usable GPU also CUDA (marked gpu)
BACKENDS, BACKEND_PARAMS = device_backends()
KERNELS = {
    "rbf": lambda: RBF(0.7),
    "ard": lambda: ARD([0.5, 1.3, 2.0]),
    "matern12": lambda: Matern(0.7, nu=0.5),
    "matern32": lambda: Matern(0.7, nu=1.5),
    "matern52_ard": lambda: MaternARD([0.5, 1.3, 2.0], nu=2.5),
    "matern12_ard": lambda: MaternARD([0.5, 1.3, 2.0], nu=0.5),
    "rq": lambda: RationalQuadratic(0.7, alpha=0.8),
    "rq_ard": lambda: RationalQuadraticARD([0.5, 1.3, 2.0], alpha=2.5),
    "sklearn_rbf": lambda: from_sklearn(sk.RBF(1.3)),
}
#: small tiles, so that every loop over row tiles takes several
TILE_MB = 0.004
FORMS = {
    "stored64": lambda X, k, be: DeviceStoredGram(X, k, be, "float64", TILE_MB),
    "stored32": lambda X, k, be: DeviceStoredGram(X, k, be, "float32", TILE_MB),
    "recomputed": lambda X, k, be: DeviceRecomputedGram(X, k, be, TILE_MB),
}
HOST = {"stored": lambda X, k: StoredGram(X, k), "blocked": lambda X, k: BlockedGram(X, k, memory_mb=TILE_MB)}


def _data(n=37, d=3, seed=0):
    r = np.random.default_rng(seed)
    return r.normal(size=(n, d)), r.normal(size=(n, 4)), r.normal(size=(n, 4)), r.normal(size=(9, d))


def _close(a, b, form):
    tol = 1e-6 if form == "stored32" else 1e-12
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * max(1.0, np.abs(b).max()))


def _host_ref(host, X, k, form):
    if form == "stored32":
        return StoredGram(X, k, dtype="float32")
    return HOST[host](X, k)


@pytest.mark.parametrize("host", sorted(HOST))
@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_device_representation_matches_the_host_one(backend, form, kernel, host):
    X, B, E, X_new = _data()
    k = KERNELS[kernel]()
    dev, ref = FORMS[form](X, k, BACKENDS[backend]()), _host_ref(host, X, k, form)
    _close(dev.mvm(B), ref.mvm(B), form)
    _close(dev.rmvm(B), ref.mvm(B), form)
    np.testing.assert_array_equal(dev.diag(), ref.diag())
    J, I = np.array([3, 0, 17, 8, 30, 22, 5]), np.array([1, 9, 36, 2])
    _close(dev.restrict(J).mvm(B[J]), ref.restrict(J).mvm(B[J]), form)
    _close(dev.restrict(J).grad_contract(E[J], B[J]), ref.restrict(J).grad_contract(E[J], B[J]), form)
    cross, cref = dev.cross(I, J), ref.cross(I, J)
    _close(cross.mvm(B[J]), cref.mvm(B[J]), form)
    _close(cross.rmvm(B[I]), cref.rmvm(B[I]), form)
    test, tref = dev.cross_test(X_new), ref.cross_test(X_new)
    _close(test.mvm(B), tref.mvm(B), form)
    _close(test.rmvm(B[:9]), tref.rmvm(B[:9]), form)
    _close(dev.grad_contract(E, B), ref.grad_contract(E, B), form)
    w = np.array([0.5, 2.0, 1.0, 3.0])
    for a, b in zip(dev.contractions(E, B, w), ref.contractions(E, B, w)):
        _close(a, b, form)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_with_kernel_rebuilds_on_the_device_inputs(form):
    X, B, E, _ = _data()
    dev = FORMS[form](X, RBF(0.7), strict_backend())
    assert dev.with_kernel(RBF(0.7)) is dev
    other = dev.with_kernel(RBF(2.5))
    assert other.inputs.X is dev.inputs.X  # no second upload
    _close(other.mvm(B), StoredGram(X, RBF(2.5), dtype="float32" if form == "stored32" else "float64").mvm(B), form)
    _close(other.grad_contract(E, B), StoredGram(X, RBF(2.5)).grad_contract(E, B), form)


def test_restriction_and_fold_blocks_stay_on_the_device():
    X, *_ = _data()
    be = strict_backend()
    dev = DeviceStoredGram(X, RBF(0.7), be)
    J = np.arange(5, 20)
    for block in (
        dev.restrict(J).M,
        dev.cross(np.arange(3), J).M,
        DeviceRecomputedGram(X, RBF(0.7), be).restrict(J).inputs.Z,
    ):
        assert type(block).__module__.startswith("array_api_strict")


def _prior(rep, kernel=None):
    return IndependentGP(kernel or RBF(0.6), "separate", [1.5, 3.0, 0.8], 1.0, representation=rep)


TIGHT = NewtonOptions(max_iter=100, cg_max_iter=600, cg_tol=1e-14, cg_forcing=0.0, grad_tol=1e-12, phi_rtol=0.0)


@pytest.mark.parametrize("kind", ["stored", "recomputed"])
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_map_fit_through_the_device_equals_the_cpu_fit(backend, kind):
    X, y = toy_classification(40, 3, d=2, seed=4)
    Y = np.eye(3)[y]
    host = fit_map(_prior(RepresentationConfig(kind="stored")).operator(X, 3), Softmax(), Y, NewtonCG(TIGHT))
    config = DeviceRepresentationConfig(BACKENDS[backend](), kind=kind, memory_mb=TILE_MB)
    dev = fit_map(_prior(config).operator(X, 3), Softmax(), Y, NewtonCG(TIGHT))
    assert dev.result.phi == pytest.approx(host.result.phi, rel=1e-12)
    np.testing.assert_allclose(dev.alpha, host.alpha, rtol=0, atol=1e-9 * np.abs(host.alpha).max())
    X_new = X[:7] + 0.1
    np.testing.assert_allclose(dev.predict_proba(X_new), host.predict_proba(X_new), rtol=0, atol=1e-10)


@pytest.mark.parametrize("kind", ["stored", "recomputed"])
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_cv_criterion_and_gradient_through_the_device_equal_the_cpu_ones(backend, kind):
    X, y = toy_classification(30, 3, d=3, seed=0)
    Y, folds = np.eye(3)[y], kfold_partition(30, 3, seed=1, y=y)
    opts = CVOptions(newton=TIGHT, k3=600, accumulation_tol=1e-13, fail_tol=1e-8)
    kernel = ARD([0.5, 1.0, 2.0])
    host = cv_criterion(_prior(RepresentationConfig(kind="stored"), kernel).operator(X, 3), Softmax(), Y, folds, opts)
    config = DeviceRepresentationConfig(BACKENDS[backend](), kind=kind, memory_mb=TILE_MB)
    dev = cv_criterion(_prior(config, kernel).operator(X, 3), Softmax(), Y, folds, opts)
    assert host.ok and dev.ok, (host.message, dev.message)
    assert dev.psi == pytest.approx(host.psi, rel=1e-10)
    np.testing.assert_allclose(dev.gradient, host.gradient, rtol=0, atol=1e-9 * np.abs(host.gradient).max())


def test_auto_chooses_stored_float64_then_float32_then_recomputed():
    n, gib = 10_000, 2**30
    assert choose_device_representation(n, 1, budget_bytes=gib, dtype=None, device="d").label() == "stored-float64"
    assert choose_device_representation(n, 2, budget_bytes=gib, dtype=None, device="d").label() == "stored-float32"
    c = choose_device_representation(n, 4, budget_bytes=gib, dtype=None, device="d")
    assert (c.kind, c.device) == ("recomputed", "d")
    assert choose_device_representation(n, 1, budget_bytes=gib, dtype="float32", device="d").dtype == "float32"
    config = DeviceRepresentationConfig(numpy_backend(), memory_gb=8 * n * n / gib)
    X = np.random.default_rng(0).normal(size=(n // 100, 2))
    rep = config.build(X, RBF(1.0), 1)
    assert isinstance(rep, DeviceStoredGram) and rep.choice.device == "cpu (numpy)"
    assert config.build(X, RBF(2.0), like=rep).inputs.X is rep.inputs.X


@pytest.mark.parametrize("kind", ["stored", "recomputed"])
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
@pytest.mark.parametrize("kernel", ["matern12_ard", "rq_ard"])
def test_cv_learning_of_the_newer_kernels_through_the_device_equals_the_cpu(backend, kind, kernel):
    """Ψ and its gradient over the length-scales and α of the Matérn and rational quadratic kernels."""
    X, y = toy_classification(24, 3, d=3, seed=5)
    Y, folds = np.eye(3)[y], kfold_partition(24, 3, seed=1, y=y)
    opts = CVOptions(newton=TIGHT, k3=600, accumulation_tol=1e-13, fail_tol=1e-8)
    k = KERNELS[kernel]()
    host = cv_criterion(_prior(RepresentationConfig(kind="stored"), k).operator(X, 3), Softmax(), Y, folds, opts)
    config = DeviceRepresentationConfig(BACKENDS[backend](), kind=kind, memory_mb=TILE_MB)
    dev = cv_criterion(_prior(config, k).operator(X, 3), Softmax(), Y, folds, opts)
    assert host.ok and dev.ok, (host.message, dev.message)
    assert dev.psi == pytest.approx(host.psi, rel=1e-10)
    np.testing.assert_allclose(dev.gradient, host.gradient, rtol=0, atol=1e-8 * np.abs(host.gradient).max())


@pytest.mark.parametrize(
    "kernel",
    [
        RBF(1.0) + Matern(0.5),
        RBF(1.0) * RationalQuadratic(1.0),
        from_sklearn(sk.RationalQuadratic(1.0, alpha=2.0, alpha_bounds="fixed")),
    ],
    ids=["sum", "product", "partly-fixed"],
)
def test_sums_products_and_other_kernels_are_refused_naming_the_supported_ones(kernel):
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(
        DeviceError,
        match="allowed there: rbf, ard, matern, matern_ard, rational_quadratic, "
        "rational_quadratic_ard, one kernel per matrix",
    ):
        DeviceRepresentationConfig(numpy_backend()).build(X, kernel)
    rep = RepresentationConfig(kind="stored", device="auto").build(X, kernel)  # auto: the CPU, saying why
    assert isinstance(rep, StoredGram) and "has no device form" in rep.choice.device


def test_a_kernel_without_a_device_form_or_sparse_inputs_is_refused_by_name():
    X = np.random.default_rng(0).normal(size=(10, 2))
    import scipy.sparse as sp

    with pytest.raises(DeviceError, match="sparse CSR tensors; .* is not a PyTorch backend"):
        DeviceRepresentationConfig(numpy_backend(), kind="features").build(sp.csr_matrix(X), Linear())

    with pytest.raises(DeviceError, match="dense inputs"):
        DeviceRepresentationConfig(numpy_backend(), kind="stored").build(sp.csr_matrix(X), RBF(1.0))


@pytest.mark.skipif(cuda_status() is None, reason="a GPU is usable here")
def test_cuda_without_a_usable_gpu_is_an_error_naming_what_is_missing():
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(
        DeviceError, match="device 'cuda' was asked for but cannot be used: .*(not installed|no usable GPU|CPU-only)"
    ):
        RepresentationConfig(device="cuda").build(X, RBF(1.0))


@pytest.mark.skipif(cuda_status() is None, reason="a GPU is usable here")
def test_auto_without_a_gpu_runs_on_the_cpu_and_says_why():
    X = np.random.default_rng(0).normal(size=(10, 2))
    rep = RepresentationConfig(device="auto").build(X, RBF(1.0))
    assert isinstance(rep, StoredGram)
    assert rep.choice.device.startswith("cpu (device auto: ") and cuda_status() in rep.choice.device
    lin = RepresentationConfig(device="auto").build(X, Linear())
    assert lin.choice.device.startswith("cpu (device auto: ") and cuda_status() in lin.choice.device
    assert RepresentationConfig().build(X, RBF(1.0)).choice.device == "cpu"


def test_the_cpu_configuration_is_unchanged_by_the_device_field():
    X, B, *_ = _data()
    a, b = RepresentationConfig(kind="stored").build(X, RBF(0.7)), RepresentationConfig().build(X, RBF(0.7))
    assert type(a) is StoredGram and attrs.evolve(a.choice, reason="") is not None
    np.testing.assert_array_equal(a.mvm(B), b.mvm(B))


def test_the_torch_path_on_the_cpu_matches_the_host_where_torch_imports():
    pytest.importorskip("torch")
    X, B, E, X_new = _data()
    for k in (RBF(0.7), ARD([0.5, 1.3, 2.0])):
        for rep in (DeviceStoredGram(X, k, torch_backend("cpu")), DeviceRecomputedGram(X, k, torch_backend("cpu"))):
            ref = StoredGram(X, k)
            _close(rep.mvm(B), ref.mvm(B), "stored64")
            _close(rep.grad_contract(E, B), ref.grad_contract(E, B), "stored64")
            _close(rep.cross_test(X_new).mvm(B), ref.cross_test(X_new).mvm(B), "stored64")


def test_the_fused_triton_products_match_the_host_under_the_interpreter():
    """The fused kernels of :mod:`gpmodels.kernels.device.fused` through Triton's interpreter on PyTorch
    CPU tensors: every backend-parametrised test above and test_device_stack.py's, on the ``torch-fused``
    backend (needs PyTorch and Triton; the interpreter must be switched on before Triton compiles, hence
    the fresh interpreter)."""
    pytest.importorskip("torch")
    if not fused_products.AVAILABLE:
        pytest.skip("Triton is not installed")
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("already under the interpreter: the torch-fused cases run in this session")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    here = Path(__file__).resolve()
    files = [str(here), str(here.with_name("test_device_stack.py"))]  # the stack's batched fused product too
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *files, "-k", "torch-fused"]
    done = subprocess.run(cmd, cwd=here.parents[2], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"\b[1-9][0-9]* passed", done.stdout), done.stdout[-3000:]


@pytest.mark.gpu
@pytest.mark.skipif(cuda_status() is not None, reason=f"no usable GPU: {cuda_status()}")
@pytest.mark.parametrize("form", sorted(FORMS))
def test_cuda_representation_matches_the_host_one(form):
    X, B, E, X_new = _data(n=500, d=5)
    k = ARD([0.5, 1.3, 2.0, 0.7, 1.1])
    dev, ref = FORMS[form](X, k, cuda_backend()), _host_ref("stored", X, k, form)
    _close(dev.mvm(B), ref.mvm(B), form)
    J = np.arange(100, 400)
    _close(dev.restrict(J).mvm(B[J]), ref.restrict(J).mvm(B[J]), form)
    _close(dev.cross_test(X_new).mvm(B), ref.cross_test(X_new).mvm(B), form)
    _close(dev.grad_contract(E, B), ref.grad_contract(E, B), form)
    assert RepresentationConfig(device="cuda").build(X, k).choice.device.startswith("cuda")


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_a_backends_take_is_the_array_apis(backend):
    """``ArrayBackend.take`` (PyTorch: one index_select) gives numpy's ``take`` along either axis."""
    be = BACKENDS[backend]()
    A = np.arange(24.0).reshape(4, 6)
    for axis, idx in ((0, [3, 0, 3]), (1, [5, 1])):
        np.testing.assert_array_equal(be.to_host(be.take(be.from_host(A), be.indices(idx), axis)), A.take(idx, axis))
