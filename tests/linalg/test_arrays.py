"""The array primitives (``gpmodels.linalg.arrays``): a device backend offers every primitive of ``HOST``, and
the solver, stack and buffer primitives give the numpy formulas on the host and each CI namespace."""

import pickle

import numpy as np
import pytest

from gpmodels.linalg.arrays import HOST, HostArrays, Made

pytest.importorskip("array_api_compat")
from device_backends import device_backends  # noqa: E402

from gpmodels.kernels.device.backend import ArrayBackend  # noqa: E402

BACKENDS, BACKEND_PARAMS = device_backends()


def test_a_device_backend_offers_every_primitive_of_the_host():
    host = {name for name, value in vars(HostArrays).items() if callable(value) and not name.startswith("_")}
    assert host - set(dir(ArrayBackend)) == set()


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_the_solver_stack_and_buffer_primitives_give_the_numpy_formulas(backend):
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
    a, mask = rng.normal(size=(4, 3)), rng.random((4, 3)) < 0.5
    for ops in (HOST, be):
        got = ops.fill_where(
            ops.multiply(ops.from_host(a), 2.0, ops.buffer(a.shape)), ops.from_host(mask, dtype="bool"), -1.0
        )
        np.testing.assert_array_equal(ops.to_host(got), np.where(mask, -1.0, 2 * a))


def test_made_values_are_made_once_and_not_pickled():
    made, calls = Made(), []
    assert made.get("k", lambda: calls.append(1) or "v") == "v" and made.get("k", lambda: calls.append(1)) == "v"
    assert calls == [1]
    copy = pickle.loads(pickle.dumps(made))
    assert copy.get("k", lambda: "again") == "again"  # a copy makes its values where it is used
