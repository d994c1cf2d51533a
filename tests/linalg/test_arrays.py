"""The array primitives (``gpmodels.linalg.arrays``): a device backend offers every primitive of ``HOST``, and the
preconditioners' primitives give the host's numbers on each CI namespace."""

import numpy as np
import pytest

from gpmodels.likelihoods.softmax import Softmax
from gpmodels.linalg.arrays import HOST, HostArrays

pytest.importorskip("array_api_compat")
from device_backends import device_backends  # noqa: E402

from gpmodels.kernels.device.backend import ArrayBackend  # noqa: E402

BACKENDS, BACKEND_PARAMS = device_backends()


def test_a_device_backend_offers_every_primitive_of_the_host():
    host = {name for name, value in vars(HostArrays).items() if callable(value) and not name.startswith("_")}
    assert host - set(dir(ArrayBackend)) == set()


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_the_preconditioners_primitives_equal_the_host(backend):
    be, rng = BACKENDS[backend](), np.random.default_rng(3)
    sizes = (3, 1, 4)
    blocks = [(lambda G: G @ G.T + np.eye(k))(rng.normal(size=(k, k))) for k in sizes]
    b = rng.normal(size=sum(sizes))
    expect = np.concatenate([np.linalg.solve(H, part) for H, part in zip(blocks, np.split(b, np.cumsum(sizes)[:-1]))])
    for ops in (HOST, be):
        np.testing.assert_allclose(ops.to_host(ops.spd_solver(blocks)(ops.from_host(b))), expect, rtol=1e-12)
    F, X, Z = rng.normal(size=(5, 3, 2)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    for ops in (HOST, be):
        np.testing.assert_allclose(
            ops.to_host(ops.stack_tmv(ops.from_host(F), ops.from_host(X))), [f.T @ x for f, x in zip(F, X)]
        )
        np.testing.assert_allclose(
            ops.to_host(ops.stack_mv(ops.from_host(F), ops.from_host(Z))), [f @ z for f, z in zip(F, Z)]
        )
    hf = Softmax().hessian_factor(rng.normal(size=(6, 3)), np.eye(3)[rng.integers(0, 3, 6)])
    x = rng.normal(size=(6, 3))
    V = HOST.factor_V(hf, x.shape)
    first = V(x)
    np.testing.assert_array_equal(first, hf.V(x))
    assert V(2 * x) is first  # one buffer, every call
    np.testing.assert_allclose(be.to_host(be.factor_V(hf.on(be), x.shape)(be.from_host(x))), hf.V(x), rtol=1e-12)
