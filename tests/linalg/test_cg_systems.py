"""One CG over a batch of systems (:func:`gpmodels.linalg.cg.cg` with :class:`~gpmodels.linalg.cg.Systems`): each
row block, each column and each column of a row block is CG on that system alone, with its own steps and
stopping test; the recorded coefficients give the Lanczos quadrature; the same on the host and on the device
namespaces (numpy through array-api-compat, array-api-strict, PyTorch's CPU tensors), with F = 1 and F = 3."""

import numpy as np
import pytest
import scipy.linalg as sla

from gpmodels.linalg.cg import Systems, cg
from gpmodels.linalg.slq import slq_logdet

C = 2
SIZES = (7, 4, 9)


def _blocks(rng, k: int | None = None):
    """Block-diagonal SPD A (sizes x C rows per block) of different conditioning, b and x0 ((N, C) or, with
    ``k``, (N, C, k) of k right-hand sides)."""
    mats = []
    for j, n in enumerate(SIZES):
        Q = np.linalg.qr(rng.normal(size=(n * C, n * C)))[0]
        mats.append((Q * np.geomspace(1.0, 5.0 ** (j + 1), n * C)) @ Q.T)
    shape = (sum(SIZES), C) if k is None else (sum(SIZES), C, k)
    return sla.block_diag(*mats), mats, rng.normal(size=shape), rng.normal(size=shape)


def _apply(A):
    """v -> A v on (n, C) or (n, C, k) arrays; with row blocks called as (v, on) (all blocks computed here)."""

    def apply(v, on=None):
        return (A @ v.reshape(A.shape[0], -1)).reshape(v.shape)

    return apply


def _rows(k):
    off = np.cumsum([0, *SIZES])
    return slice(off[k], off[k + 1])


OFFSETS = tuple(np.cumsum([0, *SIZES]))


@pytest.mark.parametrize("forcing", [0.0, 0.3])
@pytest.mark.parametrize("start", [False, True])
def test_each_row_block_is_its_own_cg(rng, forcing, start):
    A, mats, b, x0 = _blocks(rng)
    inv_diag = (1.0 / np.diag(A)).reshape(b.shape)
    x0 = x0 if start else None
    settings = dict(inv_diag=inv_diag, tol=1e-9, forcing=forcing, max_iter=12)
    res = cg(_apply(A), b, systems=Systems(OFFSETS), x0=x0, **settings)
    for k, M in enumerate(mats):
        r = _rows(k)
        own = cg(_apply(M), b[r], x0=None if x0 is None else x0[r], **{**settings, "inv_diag": inv_diag[r]})
        assert res.iterations[k] == own.iterations[0]
        assert res.converged[k] == own.converged[0]
        np.testing.assert_allclose(res.x[r], own.x, rtol=1e-6, atol=1e-9)  # CG amplifies the sums' round-off
        assert res.residual[k] == pytest.approx(own.residual[0], rel=1e-6, abs=1e-9)
    assert res.matvecs == max(res.iterations) + (1 if start else 0)


def test_converged_blocks_solve_their_systems(rng):
    A, _, b, x0 = _blocks(rng)
    res = cg(_apply(A), b, systems=Systems(OFFSETS), x0=x0, tol=1e-12, max_iter=200)
    assert res.converged.all()
    np.testing.assert_allclose(res.x.reshape(-1), np.linalg.solve(A, b.reshape(-1)), rtol=1e-8, atol=1e-10)


def test_inactive_blocks_keep_their_start_and_a_zero_right_hand_side_gives_zero(rng):
    A, _, b, x0 = _blocks(rng)
    b[_rows(2)] = 0.0
    res = cg(_apply(A), b, systems=Systems(OFFSETS), x0=x0, active=np.array([True, False, True]), tol=1e-10)
    np.testing.assert_array_equal(res.x[_rows(1)], x0[_rows(1)])
    np.testing.assert_array_equal(res.x[_rows(2)], 0.0)  # the exact solution, no step
    assert list(res.iterations[1:]) == [0, 0] and res.iterations[0] > 0 and res.converged[0] and res.converged[2]
    one = cg(_apply(A), np.zeros_like(b), x0=x0)
    assert one.iterations[0] == 0 and one.matvecs == 0 and one.converged[0] and not one.x.any()


def test_a_forcing_map_measures_each_blocks_own_test(rng):
    A, mats, b, _ = _blocks(rng)
    D = rng.random(size=b.shape) + 0.5
    res = cg(_apply(A), b, systems=Systems(OFFSETS), tol=1e-12, forcing=0.2, forcing_map=lambda r: D * r)
    for k, M in enumerate(mats):
        r = _rows(k)
        own = cg(_apply(M), b[r], tol=1e-12, forcing=0.2, forcing_map=lambda v, d=D[r]: d * v)
        assert res.iterations[k] == own.iterations[0]


@pytest.mark.parametrize("row_blocks", [False, True])
def test_each_column_is_its_own_cg(rng, row_blocks):
    """k right-hand sides of one A (columns) and, with row blocks, k per block: F = 3 k systems."""
    k = 4
    A, mats, B, _ = _blocks(rng, k)
    systems = Systems(OFFSETS if row_blocks else None, columns=True)
    res = cg(_apply(A), B, systems=systems, tol=1e-9, max_iter=6)
    assert res.iterations.shape == (systems.count(B),)
    for j in range(k):
        if not row_blocks:
            own = cg(_apply(A), B[..., j], tol=1e-9, max_iter=6)
            assert res.iterations[j] == own.iterations[0]
            np.testing.assert_allclose(res.x[..., j], own.x, rtol=1e-9, atol=1e-11)
            continue
        for blk, M in enumerate(mats):
            r = _rows(blk)
            own = cg(_apply(M), B[r, :, j], tol=1e-9, max_iter=6)
            assert res.iterations[blk * k + j] == own.iterations[0]
            np.testing.assert_allclose(res.x[r, :, j], own.x, rtol=1e-9, atol=1e-11)


def test_the_recorded_coefficients_give_the_lanczos_quadrature(rng):
    """With every step taken (a Krylov space of full dimension) the Gauss quadrature of z^T log(A) z from the
    recorded α, β is exact (Ubaru, Chen & Saad 2017), and T's eigenvalues are A's."""
    n = 10
    Q = np.linalg.qr(rng.normal(size=(n, n)))[0]
    lam = np.geomspace(0.5, 4.0, n)
    A = (Q * lam) @ Q.T
    Z = rng.choice([-1.0, 1.0], size=(n, 1, 3))
    res = cg(_apply(A), Z, systems=Systems(columns=True), tol=1e-14, max_iter=n, record=True)
    assert all(len(a) == n and len(b) == n - 1 for a, b in zip(res.alphas, res.betas))
    np.testing.assert_allclose(sla.eigh_tridiagonal(*res.lanczos(0))[0], lam, rtol=1e-8)
    logA = (Q * np.log(lam)) @ Q.T
    exact = np.mean([Z[:, 0, j] @ logA @ Z[:, 0, j] for j in range(3)])
    assert slq_logdet(res, Z) == pytest.approx(exact, rel=1e-8)


def test_a_block_that_loses_positive_definiteness_stops_and_the_others_go_on(rng):
    A, mats, b, _ = _blocks(rng)
    r = _rows(1)
    flat = slice(r.start * C, r.stop * C)
    A[flat, flat] = -A[flat, flat]  # p^T A p < 0 at the first step of block 1
    res = cg(_apply(A), b, systems=Systems(OFFSETS), tol=1e-10, max_iter=200)
    assert res.iterations[1] == 0 and not res.converged[1]
    np.testing.assert_array_equal(res.x[r], 0.0)
    assert res.converged[0] and res.converged[2]


pytest.importorskip("array_api_compat")
from device_backends import CountingBackend, device_backends  # noqa: E402

BACKENDS, BACKEND_PARAMS = device_backends()


def _device_apply(be, A):
    Ad, xp = be.from_host(A), be.xp

    def apply(v, on=None):
        return xp.reshape(Ad @ xp.reshape(v, (A.shape[0], -1)), v.shape)

    return apply


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_on_a_device_each_of_three_blocks_equals_its_one_system_run_and_the_host(rng, backend):
    """F = 3 row blocks and F = 1 (each block alone) on the device namespace give the same per-block results,
    and those of the host within 1e-10."""
    be = BACKENDS[backend]()
    A, mats, b, x0 = _blocks(rng)
    D = rng.random(size=b.shape) + 0.5
    inv_diag = (1.0 / np.diag(A)).reshape(b.shape)
    settings = dict(tol=1e-9, forcing=0.1, max_iter=15)
    host = cg(_apply(A), b, systems=Systems(OFFSETS), x0=x0, inv_diag=inv_diag, forcing_map=lambda r: D * r, **settings)
    Dd = be.from_host(D)
    dev = cg(
        _device_apply(be, A),
        be.from_host(b),
        systems=Systems(OFFSETS),
        x0=be.from_host(x0),
        inv_diag=be.from_host(inv_diag),
        forcing_map=lambda r: Dd * r,
        vectors=be.vectors,
        **settings,
    )
    np.testing.assert_array_equal(dev.iterations, host.iterations)
    np.testing.assert_array_equal(dev.converged, host.converged)
    np.testing.assert_allclose(be.to_host(dev.x), host.x, rtol=1e-10, atol=1e-12)
    for k, M in enumerate(mats):
        r = _rows(k)
        Dk = be.from_host(D[r])
        one = cg(
            _device_apply(be, M),
            be.from_host(b[r]),
            x0=be.from_host(x0[r]),
            inv_diag=be.from_host(inv_diag[r]),
            forcing_map=lambda v, d=Dk: d * v,
            vectors=be.vectors,
            **settings,
        )
        assert one.iterations[0] == dev.iterations[k]
        np.testing.assert_allclose(be.to_host(one.x), be.to_host(dev.x)[r], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_columns_on_a_device_equal_the_host(rng, backend):
    be = BACKENDS[backend]()
    A, _, B, _ = _blocks(rng, 3)
    host = cg(_apply(A), B, systems=Systems(columns=True), tol=1e-9, max_iter=8, record=True)
    dev = cg(
        _device_apply(be, A),
        be.from_host(B),
        systems=Systems(columns=True),
        tol=1e-9,
        max_iter=8,
        record=True,
        vectors=be.vectors,
    )
    np.testing.assert_array_equal(dev.iterations, host.iterations)
    np.testing.assert_allclose(be.to_host(dev.x), host.x, rtol=1e-10, atol=1e-12)
    for j in range(3):
        np.testing.assert_allclose(dev.alphas[j], host.alphas[j], rtol=1e-10)


@pytest.mark.parametrize("row_blocks", [None, OFFSETS])
def test_a_device_run_transfers_a_fixed_number_of_arrays_whatever_its_steps(rng, row_blocks):
    """No array crosses inside a CG step: a step's one synchronisation is a scalar (the flags of the systems
    still solving as one integer); the start (which x0 are nonzero) and the end (residuals, flags, steps) move
    one array each."""
    be = CountingBackend()
    A, _, b, x0 = _blocks(rng)
    args = (_device_apply(be, A), be.from_host(b))
    counts = []
    for max_iter in (3, 12):
        be.downloads = 0
        res = cg(
            *args, systems=Systems(row_blocks), x0=be.from_host(x0), tol=0.0, max_iter=max_iter, vectors=be.vectors
        )
        assert res.iterations.max() == max_iter
        counts.append(be.downloads)
    assert counts[0] == counts[1] == 2


@pytest.mark.parametrize("start", [False, True])
def test_cg_keeps_the_image_of_its_iterate_under_a_map_its_product_computes(rng, start):
    """A = I + M with the product computing M p on the way (the Newton system's K̃ V β): with ``image`` CG returns
    w = M x beside x, from w0 = M x0, over row blocks with some inactive, and again from a restart at (x, w)
    with the run's residual."""
    Mfull, _, b, x0 = _blocks(rng)
    Mfull = Mfull / np.abs(Mfull).max()
    n = Mfull.shape[0]
    latest = {}

    def apply(v, on=None):
        latest["Mv"] = (Mfull @ v.reshape(n, -1)).reshape(v.shape)
        return v + latest["Mv"]

    def M(v):
        return (Mfull @ v.reshape(n, -1)).reshape(v.shape)

    x0 = x0 if start else None
    w0 = None if x0 is None else M(x0)
    active = np.array([True, False, True])
    settings = dict(systems=Systems(OFFSETS), active=active, tol=1e-12, max_iter=6)
    res = cg(apply, b, x0=x0, image=(w0, lambda: latest["Mv"]), **settings)
    np.testing.assert_allclose(res.image, M(res.x), rtol=1e-10, atol=1e-12)
    plain = cg(apply, b, x0=x0, **settings)
    np.testing.assert_array_equal(res.x, plain.x)  # the image changes nothing else
    again = cg(apply, b, x0=res.x, r0=res.r, image=(res.image, lambda: latest["Mv"]), **settings)
    np.testing.assert_allclose(again.image, M(again.x), rtol=1e-10, atol=1e-12)
    assert again.matvecs == max(again.iterations)  # the restart's residual and image cost no product
