"""CG's in-place vector updates (BLAS axpy on contiguous float64 arrays, numpy otherwise) give the plain
CG iterates: the same solution, steps and residuals on any memory layout."""

import numpy as np
import pytest

from gpmodels.linalg.cg import _axpy, cg


def _plain_cg(apply_A, b, inv_diag, max_iter):
    """Preconditioned CG as in Saad 1996, Alg. 9.1, with fresh arrays for every update (the yardstick)."""
    x, r = np.zeros_like(b), b.copy()
    z = r * inv_diag
    p, rz = z.copy(), float(np.vdot(r, z))
    for _ in range(max_iter):
        Ap = apply_A(p)
        step = rz / float(np.vdot(p, Ap))
        x, r = x + step * p, r - step * Ap
        z = r * inv_diag
        rz_new = float(np.vdot(r, z))
        p, rz = z + (rz_new / rz) * p, rz_new
    return x, float(np.linalg.norm(r) / np.linalg.norm(b))


@pytest.mark.parametrize("order", ["C", "F"])
def test_cg_iterates_match_the_plain_updates(order):
    rng = np.random.default_rng(0)
    n, C = 40, 5
    B = rng.normal(size=(n * C, n * C))
    A = B @ B.T / (n * C) + np.eye(n * C)
    b = np.asarray(rng.normal(size=(n, C)), order=order)
    inv_diag = 1.0 / np.diag(A).reshape(n, C)

    def apply_A(x):
        return np.asarray((A @ x.reshape(-1)).reshape(n, C), order=order)

    res = cg(apply_A, b, inv_diag=inv_diag, tol=0.0, max_iter=12)
    x, rel = _plain_cg(apply_A, b, inv_diag, 12)
    assert res.iterations == 12
    np.testing.assert_allclose(res.x, x, rtol=1e-12, atol=1e-14)
    assert res.residual == pytest.approx(rel, rel=1e-9)


def test_axpy_updates_in_place_on_every_layout():
    rng = np.random.default_rng(1)
    for y, x in [
        (rng.normal(size=(30, 4)), rng.normal(size=(30, 4))),  # BLAS
        (np.asfortranarray(rng.normal(size=(30, 4))), rng.normal(size=(30, 4))),  # numpy
        (rng.normal(size=(30, 4)), rng.normal(size=(4, 30)).T),  # numpy: x is a transposed view
        (rng.normal(size=(30, 4)).astype(np.float32), rng.normal(size=(30, 4))),  # numpy: float32 y
    ]:
        expect = y + 0.7 * x
        y_id = id(y)
        _axpy(y, 0.7, x)
        assert id(y) == y_id
        np.testing.assert_allclose(y, expect, rtol=1e-6 if y.dtype == np.float32 else 1e-14, atol=1e-15)
