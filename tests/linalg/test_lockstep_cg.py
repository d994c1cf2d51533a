"""F CG solves in lockstep (:func:`gpmodels.linalg.lockstep_cg.lockstep_cg`): each block's iterates are those of
:func:`gpmodels.linalg.cg.cg` on that block alone, with its own steps and stopping test, on the host and on the
CI's device namespaces."""

import numpy as np
import pytest
import scipy.linalg as sla

from gpmodels.linalg.cg import cg
from gpmodels.linalg.lockstep_cg import BlockVectors, lockstep_cg

C = 2
SIZES = (7, 4, 9)


def _blocks(rng):
    """Block-diagonal SPD A (sizes x C rows per block) of different conditioning, b and x0."""
    mats = []
    for k, n in enumerate(SIZES):
        Q = np.linalg.qr(rng.normal(size=(n * C, n * C)))[0]
        mats.append((Q * np.geomspace(1.0, 5.0 ** (k + 1), n * C)) @ Q.T)
    A = sla.block_diag(*mats)
    N = sum(SIZES)
    return A, mats, rng.normal(size=(N, C)), rng.normal(size=(N, C))


def _apply(A):
    """v -> A v (cg's form), and (v, on) -> A v (lockstep_cg's, on the blocks still solving: all here)."""
    return lambda v, on=None: (A @ v.reshape(-1)).reshape(v.shape)


def _offsets():
    return np.cumsum([0, *SIZES])


@pytest.mark.parametrize("forcing", [0.0, 0.3])
@pytest.mark.parametrize("start", [False, True])
def test_each_block_is_its_own_cg(rng, forcing, start):
    A, mats, b, x0 = _blocks(rng)
    off = _offsets()
    inv_diag = (1.0 / np.diag(A)).reshape(b.shape)
    res = lockstep_cg(
        _apply(A),
        b,
        BlockVectors(off),
        x0=x0 if start else None,
        inv_diag=inv_diag,
        tol=1e-9,
        forcing=forcing,
        max_iter=12,
    )
    for k, M in enumerate(mats):
        r = slice(off[k], off[k + 1])
        own = cg(
            _apply(M), b[r], x0=x0[r] if start else None, inv_diag=inv_diag[r], tol=1e-9, forcing=forcing, max_iter=12
        )
        assert res.iterations[k] == own.iterations
        assert res.converged[k] == own.converged
        np.testing.assert_allclose(res.x[r], own.x, rtol=1e-6, atol=1e-9)  # CG amplifies the sums' round-off
        assert res.residual[k] == pytest.approx(own.residual, rel=1e-6, abs=1e-9)  # round-off below tol
    assert res.matvecs == max(res.iterations) + (1 if start else 0)


def test_inactive_and_zero_blocks_keep_their_start(rng):
    A, _, b, x0 = _blocks(rng)
    off = _offsets()
    b[off[2] :] = 0.0  # a block with b = 0 is solved at once (x = x0 there, no step)
    res = lockstep_cg(_apply(A), b, BlockVectors(off), x0=x0, active=np.array([True, False, True]), tol=1e-10)
    np.testing.assert_array_equal(res.x[off[1] : off[2]], x0[off[1] : off[2]])
    np.testing.assert_array_equal(res.x[off[2] :], x0[off[2] :])
    assert list(res.iterations[1:]) == [0, 0] and res.iterations[0] > 0 and res.converged[0] and res.converged[2]


def test_a_forcing_map_measures_each_blocks_own_test(rng):
    A, mats, b, _ = _blocks(rng)
    off = _offsets()
    D = rng.random(size=b.shape) + 0.5
    res = lockstep_cg(_apply(A), b, BlockVectors(off), tol=1e-12, forcing=0.2, forcing_map=lambda r: D * r)
    for k, M in enumerate(mats):
        r = slice(off[k], off[k + 1])
        own = cg(_apply(M), b[r], tol=1e-12, forcing=0.2, forcing_map=lambda v, d=D[r]: d * v)
        assert res.iterations[k] == own.iterations


pytest.importorskip("array_api_compat")
from device_backends import device_backends  # noqa: E402

BACKENDS, BACKEND_PARAMS = device_backends()


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_lockstep_on_a_device_equals_the_host(rng, backend):
    be = BACKENDS[backend]()
    A, _, b, x0 = _blocks(rng)
    off = _offsets()
    inv_diag = (1.0 / np.diag(A)).reshape(b.shape)
    host = lockstep_cg(_apply(A), b, BlockVectors(off), x0=x0, inv_diag=inv_diag, tol=1e-9, forcing=0.1, max_iter=15)
    Ad, xp = be.from_host(A), be.xp
    dev = lockstep_cg(
        lambda v, on: xp.reshape(Ad @ xp.reshape(v, (-1,)), v.shape),
        be.from_host(b),
        BlockVectors(off, be),
        x0=be.from_host(x0),
        inv_diag=be.from_host(inv_diag),
        tol=1e-9,
        forcing=0.1,
        max_iter=15,
    )
    np.testing.assert_array_equal(dev.iterations, host.iterations)
    np.testing.assert_allclose(be.to_host(dev.x), host.x, rtol=1e-9, atol=1e-11)
