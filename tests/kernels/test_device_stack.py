"""A block-diagonal operator's distinct stored matrices on a device as one stack
(:mod:`gpmodels.kernels.device.stack`): one batched product per MVM and one take per CV restriction, with
the numbers of the same matrices held one by one on the device and of the host's stored matrices.

Runs on the CI namespaces (numpy through array-api-compat, array-api-strict), on PyTorch's CPU tensors
where PyTorch imports, under Triton's interpreter (``torch-fused``, run by test_device.py's interpreter
test) and on CUDA where there is a GPU."""

import pickle

import numpy as np
import pytest

from gpmodels.inference.cv.criterion import cv_criterion
from gpmodels.kernels.rbf import RBF
from gpmodels.kernels.representation_base import RepresentationBuilder
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.operators.blockdiag import BlockDiagonal

pytest.importorskip("array_api_compat")
from device_backends import device_backends  # noqa: E402

from gpmodels.kernels.device.config import DeviceRepresentationConfig  # noqa: E402

BACKENDS, BACKEND_PARAMS = device_backends()
#: (class -> kernel group, kernels): one kernel per class, and two kernels of two classes each, interleaved
LAYOUTS = {
    "separate": ([0, 1, 2, 3], [RBF(0.3), RBF(0.5), RBF(0.8), RBF(1.1)]),
    "interleaved": ([0, 1, 0, 1], [RBF(0.3), RBF(0.9)]),
}
#: small tiles, so that the float32 stack's product takes several row tiles
TILE_MB = 0.004
N = 41


class OneByOne(RepresentationBuilder):
    """The device configuration's matrices built one by one (the default ``build_group``): no stack."""

    def __init__(self, config: DeviceRepresentationConfig):
        self.config, self.memory_mb = config, config.memory_mb

    def build(self, X, kernel, n_matrices=1, *, log=False, like=None):
        return self.config.build(X, kernel, n_matrices, log=log, like=like)


def _ops(backend: str, layout: str, dtype: str):
    """(stacked, one by one on the device, host) block-diagonal operators of the same prior."""
    X = np.random.default_rng(3).normal(size=(N, 3))
    class_kernel, kernels = LAYOUTS[layout]
    args = (X, kernels, class_kernel, [1.0, 2.0, 0.5, 3.0], [0, 1, 2, 3])
    config = DeviceRepresentationConfig(BACKENDS[backend](), kind="stored", dtype=dtype, memory_mb=TILE_MB)
    host = RepresentationConfig(kind="stored", dtype=dtype)
    return (
        BlockDiagonal(*args, representation=config),
        BlockDiagonal(*args, representation=OneByOne(config)),
        BlockDiagonal(*args, representation=host),
    )


def _close(a, b, rtol):
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * np.abs(b).max())


def _rhs(k: int, n: int = N, seed: int = 4):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 4, k)) if k > 1 else rng.normal(size=(n, 4))


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_distinct_kernels_are_one_stack_multiplied_as_the_matrices_one_by_one(backend, layout, dtype, k):
    stacked, single, host = _ops(backend, layout, dtype)
    assert stacked._layout.stack is not None and single._layout.stack is None
    host_tol = 1e-6 if dtype == "float32" else 1e-12  # the host rounds its own float32 matrices
    V = _rhs(k)
    _close(stacked.mvm(V), single.mvm(V), 1e-12)
    _close(stacked.mvm(V), host.mvm(V), host_tol)
    J = np.setdiff1d(np.arange(N), np.arange(0, N, 3))
    restricted = stacked.restrict(J)
    assert restricted._layout.stack is not None and restricted._layout.stack.n == J.size
    _close(restricted.mvm(V[J]), single.restrict(J).mvm(V[J]), 1e-12)
    _close(restricted.mvm(V[J]), host.restrict(J).mvm(V[J]), host_tol)
    I = np.arange(0, N, 3)
    _close(stacked.cross(I, J).mvm(V[J]), host.cross(I, J).mvm(V[J]), host_tol)
    _close(stacked.cross(I, J).rmvm(V[I]), host.cross(I, J).rmvm(V[I]), host_tol)
    theta = stacked.params + np.linspace(-0.3, 0.2, stacked.params.size)
    moved = stacked.with_params(theta)
    assert moved._layout.stack is not None
    _close(moved.mvm(V), host.with_params(theta).mvm(V), host_tol)


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_a_variance_step_keeps_the_stack_and_a_change_of_one_kernel_multiplies_group_by_group(backend):
    stacked, _, host = _ops(backend, "separate", "float64")
    theta = stacked.params.copy()
    theta[-1] += 0.4  # the last class's log variance: every matrix is kept
    same = stacked.with_params(theta)
    assert all(a is b for a, b in zip(same._rep_list, stacked._rep_list)) and same._layout.stack is not None
    theta[0] += 0.2  # the first kernel's log w: one new matrix beside three of the stack
    mixed = stacked.with_params(theta)
    assert mixed._layout.stack is None
    V = _rhs(1)
    _close(mixed.mvm(V), host.with_params(theta).mvm(V), 1e-12)
    _close(same.mvm(V), host.with_params(same.params).mvm(V), 1e-12)


@pytest.mark.parametrize("backend", ["numpy", "strict"])
def test_a_pickled_stacked_operator_holds_its_matrices_one_by_one_with_the_same_numbers(backend):
    stacked, _, host = _ops(backend, "interleaved", "float64")
    back = pickle.loads(pickle.dumps(stacked))
    assert back._layout.stack is None  # each matrix travels as its recipe
    V = _rhs(2)
    _close(back.mvm(V), host.mvm(V), 1e-12)
    assert back.with_params(back.params + 0.1)._layout.stack is not None


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_the_cv_criterion_and_gradient_through_a_stack_equal_the_host_ones(backend):
    stacked, _, host = _ops(backend, "separate", "float64")
    Y = np.eye(4)[np.random.default_rng(5).integers(0, 4, N)]
    folds = [np.arange(k, N, 4) for k in range(4)]
    a, b = (cv_criterion(op, Softmax(), Y, folds) for op in (stacked, host))
    assert a.ok and b.ok
    np.testing.assert_allclose(a.psi, b.psi, rtol=1e-10)
    _close(a.gradient, b.gradient, 1e-8)


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_recomputed_matrices_are_not_stacked_and_multiply_as_the_host(backend):
    X = np.random.default_rng(3).normal(size=(N, 3))
    class_kernel, kernels = LAYOUTS["separate"]
    args = (X, kernels, class_kernel, [1.0, 2.0, 0.5, 3.0], [0, 1, 2, 3])
    config = DeviceRepresentationConfig(BACKENDS[backend](), kind="recomputed", memory_mb=TILE_MB)
    dev, host = BlockDiagonal(*args, representation=config), BlockDiagonal(*args)
    assert dev._layout.stack is None and all(rep.stack is None for rep in dev._rep_list)
    V = _rhs(1)
    _close(dev.mvm(V), host.mvm(V), 1e-12)
    _close(dev.with_params(dev.params + 0.1).mvm(V), host.with_params(host.params + 0.1).mvm(V), 1e-12)
