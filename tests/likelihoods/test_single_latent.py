"""Newton–CG (Seeger 2008, Alg. 1) fits the single-latent likelihoods: logistic, Gaussian, Laplace,
Student-t and the smoothed hinge; targets, projection and prediction."""

import numpy as np
import pytest

from gpmodels.errors import InputError
from gpmodels.inference.map.model import fit_map
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions, newton_cg
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods import Gaussian, Laplace, Logistic, SmoothedHinge, StudentT
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.intercept import Intercept

OPTS = NewtonOptions(max_iter=100, cg_max_iter=300, grad_tol=1e-8, phi_rtol=0.0)


def _problem(n=50, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 2))
    f = np.sin(2 * X[:, 0]) + X[:, 1]
    yb = np.where(f + 0.3 * r.normal(size=n) > 0, 1.0, -1.0)
    yr = f + 0.1 * r.normal(size=n)
    yr[:5] += r.normal(scale=5.0, size=5)  # outliers
    op = Intercept(BlockDiagonal.from_sharing(X, RBF(1.0), 1, "tied", 2.0), 1.0)
    return op, X, yb, yr


@pytest.mark.parametrize(
    "lik", [Logistic(), Gaussian(0.05), StudentT(4.0, 0.1), SmoothedHinge(0.1)], ids=lambda l: type(l).__name__
)
def test_newton_cg_reaches_a_stationary_point_by_descent(lik):
    op, _, yb, yr = _problem()
    y = yr if isinstance(lik, (Gaussian, StudentT)) else yb
    res = newton_cg(op, lik, y, OPTS)
    d = res.diagnostics
    tol = 1e-5 if isinstance(lik, SmoothedHinge) else 1e-7  # majoriser (IRLS) steps: linear convergence
    assert d.grad_norm[-1] < tol, d.message
    assert np.all(np.diff(d.phi) <= 1e-12 * abs(d.phi[-1])), "every Newton step must decrease Φ"
    g = lik.gradient(res.u, lik.check_targets(y, 50, 1))
    assert np.abs(res.alpha + g).max() < 10 * tol  # stationarity: α = -∇Φ_lh


def test_gaussian_map_is_the_posterior_mean():
    op, _, _, yr = _problem()
    res = newton_cg(op, Gaussian(0.05), yr, OPTS)
    alpha = np.linalg.solve(op.dense() + 0.05 * np.eye(50), yr)
    np.testing.assert_allclose(res.alpha[:, 0], alpha, atol=1e-7)


def test_student_t_downweights_outliers_where_gaussian_does_not():
    op, X, _, yr = _problem()
    clean = np.sin(2 * X[:, 0]) + X[:, 1]
    gauss = newton_cg(op, Gaussian(0.05), yr, OPTS).u[:, 0]
    robust = newton_cg(op, StudentT(4.0, 0.1), yr, OPTS).u[:, 0]
    assert np.sqrt(np.mean((robust - clean)[5:] ** 2)) < 0.5 * np.sqrt(np.mean((gauss - clean)[5:] ** 2))
    w = StudentT(4.0, 0.1).hessian_factor(robust[:, None], yr[:, None]).W(np.ones((50, 1)))
    h = StudentT(4.0, 0.1).hessian_diag(robust[:, None], yr[:, None])
    assert np.any(h < 0) and np.all(w > 0), "outliers have W < 0; Newton uses the positive majoriser curvature"


def test_laplace_irls_decreases_phi():
    op, _, _, yr = _problem()
    res = newton_cg(op, Laplace(0.1), yr, NewtonOptions(max_iter=60, cg_max_iter=300, grad_tol=1e-10))
    assert np.all(np.diff(res.diagnostics.phi) <= 1e-12 * abs(res.diagnostics.phi[-1]))
    assert res.diagnostics.phi[-1] < res.diagnostics.phi[0] - 10


def test_targets_projection_and_prediction():
    op, X, yb, yr = _problem()
    model = fit_map(op, Logistic(), yb, NewtonCG(OPTS))
    P = model.predict_proba(X[:7])
    assert P.shape == (7, 2) and np.allclose(P.sum(axis=1), 1.0)
    assert np.mean(model.predict(X) == (yb > 0)) > 0.8  # column 1 is y = +1
    a = np.random.default_rng(0).normal(size=(50, 1))
    for lik in (Logistic(), Gaussian(), Laplace(), StudentT()):
        np.testing.assert_array_equal(lik.project_alpha(a), a)  # W > 0: ran W is everything
    reg = fit_map(op, Gaussian(0.05), yr, NewtonCG(OPTS))
    assert reg.predict_proba(X[:3]).shape == (3, 1)  # predictive mean (regression)
    with pytest.raises(InputError, match=r"logistic labels must be in \{-1, \+1\}; got 0.0 at position 0"):
        Logistic().check_targets(np.zeros(50), 50, 1)
    with pytest.raises(InputError, match="n_classes = 1"):
        Gaussian().check_targets(np.zeros((50, 2)), 50, 2)
    with pytest.raises(InputError, match=r"Y must be finite \(no NaN or inf\); found nan"):
        StudentT().check_targets(np.where(np.arange(50) == 4, np.nan, 0.0), 50, 1)
    with pytest.raises(InputError, match=r"Y must have shape \(50, 1\)"):
        Laplace().check_targets(np.zeros(49), 50, 1)
    with pytest.raises(InputError, match="positive"):
        Gaussian(noise=-1.0)
    with pytest.raises(InputError, match="positive"):
        StudentT(df=0.0)
