"""CG's in-place vector updates (through one scratch array) give exactly the plain CG iterates, on any
memory layout."""

import numpy as np
import pytest

from gpmodels.linalg.cg import cg


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
    assert res.iterations[0] == 12
    np.testing.assert_array_equal(res.x, x)  # the same operations in the same order: the same numbers
    assert res.residual[0] == rel
