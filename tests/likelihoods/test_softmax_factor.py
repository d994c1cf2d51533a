"""The host-side products of the softmax Hessian factor (BLAS row sums, no mask when nothing is fixed,
scratch temporaries) against the plain formulas of Seeger 2008, Sec. 5.1.1 and App. B, with and without
fixed components, and against the generic per-point blocks."""

import numpy as np
import pytest

from gpmodels.likelihoods.base import HessianFactor
from gpmodels.likelihoods.gaussian import Gaussian
from gpmodels.likelihoods.softmax import Softmax, log_softmax


def _case(n, C, kappa, seed=0):
    """A factor at U where some log π fall below κ, on one-hot and on soft targets."""
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(n, C))
    U[rng.random((n, C)) < 0.2] -= 40.0  # log π < κ = -20 there: App. B sets I (y > 0) and I0 (y = 0)
    Y = np.eye(C)[rng.integers(0, C, n)]
    Y[: n // 4] = rng.dirichlet(np.ones(C), n // 4)  # soft targets: y > 0 everywhere on these rows
    lik = Softmax(kappa=kappa) if np.isfinite(kappa) else Softmax()
    hf = lik.hessian_factor(U, Y) if np.isfinite(kappa) else lik.exact_hessian_factor(U, Y)  # κ = -∞
    return U, Y, hf, rng


class Plain:
    """The factor's products as plain formulas: np.where masks and np.sum row sums (the module docstring)."""

    def __init__(self, U, Y, kappa):
        self.log_pi = log_softmax(U)
        self.pi, self.sqrt_pi = np.exp(self.log_pi), np.exp(0.5 * self.log_pi)
        small = self.log_pi < kappa
        self.free, self.zero_start = ~(small & (Y > 0)), small & (Y <= 0)
        self.inv_sqrt_pi = np.exp(-0.5 * np.maximum(self.log_pi, -600.0))
        self.Y = Y

    def A(self, x):
        return x - self.pi * np.sum(x, axis=1, keepdims=True)

    def V(self, x):
        return self.A(self.sqrt_pi * np.where(self.free, x, 0.0))

    def Vt(self, y):
        return np.where(self.free, self.sqrt_pi * (y - np.sum(self.pi * y, axis=1, keepdims=True)), 0.0)

    def W(self, x):
        return self.pi * x - self.pi * np.sum(self.pi * x, axis=1, keepdims=True)

    def g_tilde(self, g):
        return np.where(self.free, g * self.inv_sqrt_pi, 0.0)

    def beta_init(self, alpha):
        return np.where(self.free & ~self.zero_start, alpha * self.inv_sqrt_pi, 0.0)

    def precond_diag(self, diag_K, w):
        d = 1.0 + self.pi * (diag_K - 2.0 * w + np.sum(self.pi * w, axis=1, keepdims=True))
        return np.where(self.free, d, 1.0)

    def fixed_alpha(self):
        return self.A(np.where(~self.free, self.Y - self.pi, 0.0))


@pytest.mark.parametrize("kappa", [-20.0, -np.inf])
@pytest.mark.parametrize("shape", [(40, 6), (25, 13)])
def test_products_match_the_plain_formulas(kappa, shape):
    U, Y, hf, rng = _case(*shape, kappa)
    plain = Plain(U, Y, kappa)
    assert hf.all_free == (kappa == -np.inf) and hf.all_free == bool(np.all(plain.free))
    np.testing.assert_array_equal(hf.free, plain.free)
    x = rng.normal(size=shape)
    x_strided = np.asfortranarray(rng.normal(size=shape))  # any memory layout
    out = np.full(shape, np.nan)
    assert hf.V_into(x_strided, out) is out  # written in place, the same numbers as V
    np.testing.assert_allclose(out, plain.V(x_strided), rtol=1e-13, atol=1e-15)
    for name in ("V", "Vt", "W", "g_tilde", "beta_init"):
        for arg in (x, x_strided):
            keep = arg.copy()
            got, expect = getattr(hf, name)(arg), getattr(plain, name)(arg)
            np.testing.assert_allclose(got, expect, rtol=1e-13, atol=1e-15, err_msg=name)
            np.testing.assert_array_equal(arg, keep, err_msg=f"{name} changed its argument")
            assert not np.shares_memory(got, arg)
    blocks = np.einsum("icd,ied->ice", *(2 * [rng.normal(size=(*shape, shape[1]))]))
    diag_K = np.einsum("icc->ic", blocks)
    w_of = lambda P: np.einsum("icd,id->ic", blocks, P)  # noqa: E731
    expect = plain.precond_diag(diag_K, w_of(plain.pi))
    np.testing.assert_allclose(hf.precond_diag(diag_K, w_of), expect, rtol=1e-13, atol=1e-15)
    if kappa == -np.inf:
        assert hf.fixed_alpha is None
    else:
        assert (~plain.free).any() and plain.zero_start.any()  # both App. B sets are exercised
        np.testing.assert_allclose(hf.fixed_alpha, plain.fixed_alpha(), rtol=1e-13, atol=1e-15)


def test_products_do_not_share_their_results():
    """Each product returns a fresh array: two results of one factor stay valid side by side."""
    _, _, hf, rng = _case(30, 5, -20.0)
    x, y = rng.normal(size=(30, 5)), rng.normal(size=(30, 5))
    a, b = hf.V(x), hf.V(y)
    np.testing.assert_allclose(a, hf.V(x), rtol=0, atol=0)
    c, d = hf.Vt(x), hf.W(y)
    assert not any(np.shares_memory(p, q) for p, q in [(a, b), (a, c), (c, d), (b, d)])


@pytest.mark.parametrize("kappa", [-20.0, -np.inf])
def test_point_V_is_the_generic_per_point_blocks(kappa):
    _, _, hf, _ = _case(30, 7, kappa)
    np.testing.assert_allclose(hf.point_V(), HessianFactor.point_V(hf), rtol=1e-15, atol=0)


def test_V_into_default_copies_V_into_the_buffer():
    """The protocol's default V_into (a factor without its own) is V written into the caller's buffer."""
    rng = np.random.default_rng(3)
    U, Y = rng.normal(size=(20, 1)), rng.normal(size=(20, 1))
    hf = Gaussian().hessian_factor(U, Y)
    x, out = rng.normal(size=(20, 1)), np.empty((20, 1))
    assert hf.V_into(x, out) is out
    np.testing.assert_array_equal(out, hf.V(x))


@pytest.mark.parametrize("kappa", [-20.0, -np.inf])
def test_the_factor_on_a_device_backend_gives_the_plain_products(kappa):
    """``on(backend)``: V, V^T and the rows' V on that backend's arrays (App. B's fixed components too); the
    other methods still the host's."""
    pytest.importorskip("array_api_compat")
    from device_backends import device_backends

    U, Y, hf, rng = _case(40, 6, kappa)
    plain, x = Plain(U, Y, kappa), rng.normal(size=(40, 6))
    for make in device_backends()[0].values():
        be = make()
        held = hf.on(be)
        for name in ("V", "Vt"):
            got = be.to_host(getattr(held, name)(be.from_host(x)))
            np.testing.assert_allclose(got, getattr(plain, name)(x), rtol=1e-12, atol=1e-15, err_msg=f"{be} {name}")
        rows = held.rows(slice(5, 30))
        np.testing.assert_allclose(be.to_host(rows.V(be.from_host(x[5:30]))), plain.V(x)[5:30], rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(held.g_tilde(x), hf.g_tilde(x))


def test_a_blocks_rows_are_made_once_per_factor():
    """A row-blocks preconditioner asks for each block's factor in its set-up and again in its application: the
    same object, the products of a factor made from those rows alone."""
    U, Y, hf, rng = _case(30, 5, -20.0)
    rows = slice(8, 19)
    part = hf.rows(rows)
    assert hf.rows(slice(8, 19)) is part and hf.rows(slice(0, 8)) is not part
    alone = Softmax(kappa=-20.0).hessian_factor(U[rows], Y[rows])
    x = rng.normal(size=(11, 5))
    np.testing.assert_array_equal(part.V(x), alone.V(x))
    np.testing.assert_array_equal(part.Vt(x), alone.Vt(x))
