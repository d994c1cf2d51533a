"""The constants of DESIGN.md's "Unifying-paper objectives", checked numerically (docs/architecture.md
records the statements we corrected)."""

import numpy as np
import pytest
from scipy.special import expit

from gpmodels.inference.mkl.algorithms import MKLOptions, criterion_at
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods import Laplace, Logistic, StudentT
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.sum import Sum


def test_jaakkola_jordan_constants():
    """σ(z) >= σ(ξ) exp((z - ξ)/2 - λ(ξ)(z² - ξ²)), λ(ξ) = tanh(ξ/2)/(4ξ): 1/γ = 2λ(ξ), b = y/2."""
    lik = Logistic()
    z = np.linspace(-8, 8, 401)
    for xi in (0.3, 1.0, 4.0):
        lam = np.tanh(xi / 2) / (4 * xi)
        bound = expit(xi) * np.exp((z - xi) / 2 - lam * (z**2 - xi**2))
        assert np.all(bound <= expit(z) * (1 + 1e-12))
        zs = np.array([-xi, xi])  # the bound touches σ at z = ±ξ
        assert np.allclose(expit(xi) * np.exp((zs - xi) / 2 - lam * (zs**2 - xi**2)), expit(zs), rtol=1e-12)
        assert lik.sg_dG(np.array([[xi**2]]), None)[0, 0] == pytest.approx(2 * lam, rel=1e-12)  # 1/γ = 2λ(ξ)
    u, y = np.array([[0.7], [-2.0]]), np.array([[1.0], [1.0]])
    assert np.allclose(lik.sg_G(u**2, y) - y * u, -2 * np.log(expit(y * u)))  # b = y/2: -2 b u = -y u


def test_laplace_scale_mixture_identity():
    """|r|/τ = min_γ r²/(2γ) + γ/(2τ²), attained at γ = τ|r|."""
    tau, g = 0.7, np.logspace(-4, 4, 20001)
    for r in (0.05, 1.0, 3.0):
        assert np.min(r**2 / (2 * g) + g / (2 * tau**2)) == pytest.approx(r / tau, rel=1e-6)


@pytest.mark.parametrize("lik, convex", [(Logistic(), True), (Laplace(0.5), True), (StudentT(4.0, 0.5), False)])
def test_h_is_convex_for_log_concave_likelihoods(lik, convex):
    """h(γ) = G(x) - x G'(x) at G'(x) = 1/γ: convex in γ when P is log-concave, not for the Student-t."""
    x = np.logspace(-3, 3, 4001)[:, None]
    y = np.ones_like(x)
    gam = 1.0 / lik.sg_dG(x, y)[:, 0]
    h = (lik.sg_G(x, y) - x * lik.sg_dG(x, y))[:, 0]
    dh = np.diff(h) / np.diff(gam)
    second = np.diff(dh)  # γ is increasing in x (G concave): sign of h'' on a sorted grid
    assert np.all(np.diff(gam) > 0)
    if convex:
        assert np.all(second >= -1e-9 * np.abs(dh[:-1]).max())
    else:
        assert np.any(second < -1e-6)


def test_gaussian_mlm_identity():
    """min_u u^T K^{-1} u + σ^{-2}||y - u||² = y^T (K + σ² I)^{-1} y."""
    r = np.random.default_rng(0)
    Z = r.normal(size=(6, 6))
    K, y, s2 = Z @ Z.T + 0.1 * np.eye(6), r.normal(size=6), 0.4
    u = K @ np.linalg.solve(K + s2 * np.eye(6), y)
    lhs = u @ np.linalg.solve(K, u) + (y - u) @ (y - u) / s2
    assert lhs == pytest.approx(y @ np.linalg.solve(K + s2 * np.eye(6), y), rel=1e-12)


def test_regression_bound_needs_gamma_dependent_b():
    """For the Laplace likelihood the bound is Gaussian in the residual: b = y/γ and h contains y²/γ.
    With γ fixed, no constant b (independent of γ) reproduces -2 log P at its touching point."""
    lik, y = Laplace(0.5), 1.3
    for u in (-1.0, 0.4, 2.0):
        x = np.array([[(y - u) ** 2]])
        gam = 1.0 / lik.sg_dG(x, None)[0, 0]
        h = lik.sg_G(x, None)[0, 0] - x[0, 0] / gam
        b = y / gam
        quad = -2 * b * u + u**2 / gam + (h + y**2 / gam)  # -2 log of exp(b u - u²/(2γ) - h̃/2)
        assert quad == pytest.approx(2 * lik._nlp(np.array([[u]]), np.array([[y]]))[0, 0], rel=1e-12)


def test_joint_map_is_unbounded_below_as_theta_goes_to_zero():
    """φ_MAP(s θ) -> -∞ as s -> 0: min_u R <= 2 Σ ℓ(0) while log|K_sθ| = n log s + const."""
    r = np.random.default_rng(1)
    X = r.normal(size=(12, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    op = Sum([BlockDiagonal.from_sharing(X, RBF(1.0), 1, "tied", 1.0)])
    vals = [
        criterion_at(op, Logistic(), y, [s], MKLOptions(criterion="joint_map", jitter=0.0))[0]
        for s in (1.0, 1e-2, 1e-4)
    ]
    assert vals[0] > vals[1] > vals[2]
    assert vals[1] - vals[2] == pytest.approx(12 * np.log(1e2), rel=0.05)
