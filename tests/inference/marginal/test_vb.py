"""VB: φ_VB bounds -2 log P(y|θ) (quadrature), is exact for Gaussian noise, decreases monotonically
in the double loop, and its gradient matches finite differences."""

import itertools

import numpy as np
import pytest

from gpmodels.errors import InputError
from gpmodels.inference.marginal.vb import VBOptions, gamma_bound, learn_vb, vb_criterion
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods import Gaussian, Laplace, Logistic, SmoothedHinge, Softmax, StudentT
from gpmodels.likelihoods.smoothed import VarianceSmoothed
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.intercept import Intercept
from gpmodels.optimize.driver import outer_options
from gpmodels.optimize.objective import JointParams


def _data(n=30, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 2))
    f = np.sin(2 * X[:, 0]) + X[:, 1]
    yb = np.where(f + 0.3 * r.normal(size=n) > 0, 1.0, -1.0)
    yr = f + 0.2 * r.standard_t(3, size=n)
    yr[:2] += 5.0
    return X, yb, yr


LIKS = {
    "logistic": (Logistic(), "b"),
    "gaussian": (Gaussian(0.2), "r"),
    "laplace": (Laplace(0.3), "r"),
    "student_t": (StudentT(4.0, 0.3, learn_df=True), "r"),
}


def _op(X):
    return Intercept(BlockDiagonal.from_sharing(X, RBF(0.7), 1, "tied", 2.0), 0.5, learn=True)


@pytest.mark.parametrize("name", list(LIKS))
def test_gradient_against_finite_differences_and_monotone_double_loop(name):
    X, yb, yr = _data()
    lik, kind = LIKS[name]
    y = yb if kind == "b" else yr
    op = _op(X)
    res = vb_criterion(op, lik, y)
    assert res.converged
    tr = np.array(res.trace)
    assert np.all(np.diff(tr) <= 1e-10 * abs(tr[-1])), "the double loop must decrease φ monotonically"
    J = JointParams(op, lik)
    x0, h = J.x0, 1e-5
    fd = np.empty(x0.size)
    for p in range(x0.size):
        xp, xm = x0.copy(), x0.copy()
        xp[p] += h
        xm[p] -= h
        fd[p] = (
            vb_criterion(*J.build(xp), y, gradient=False).phi - vb_criterion(*J.build(xm), y, gradient=False).phi
        ) / (2 * h)
    np.testing.assert_allclose(res.gradient, fd, rtol=1e-4, atol=1e-4)


def test_gaussian_vb_is_the_exact_marginal_likelihood():
    X, _, yr = _data()
    op = _op(X)
    A = op.dense() + 0.2 * np.eye(30)
    exact = np.linalg.slogdet(A)[1] + yr @ np.linalg.solve(A, yr) + 30 * np.log(2 * np.pi)
    assert vb_criterion(op, Gaussian(0.2), yr).phi == pytest.approx(exact, rel=1e-12)


def _exact_minus_2_log_evidence(K, lik, y, nodes):
    """-2 log ∫ N(u | 0, K) Π_i P(y_i | u_i) du by a Gauss-Hermite product rule after whitening."""
    n = K.shape[0]
    t, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / np.sqrt(2 * np.pi)
    L = np.linalg.cholesky(K)
    V = np.array(list(itertools.product(t, repeat=n)))  # (nodes^n, n)
    Wt = np.prod(np.array(list(itertools.product(w, repeat=n))), axis=1)
    U = V @ L.T
    logp = -np.sum(lik._nlp(U, np.broadcast_to(y, U.shape)), axis=1)
    return -2 * np.log(np.sum(Wt * np.exp(logp)))


@pytest.mark.parametrize("name", ["logistic", "laplace", "student_t", "gaussian"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_vb_bound_is_above_the_exact_evidence_by_quadrature(name, n):
    r = np.random.default_rng(n)
    X = r.normal(size=(n, 1))
    lik, kind = LIKS[name]
    y = np.array([1.0, -1.0, 1.0][:n]) if kind == "b" else np.array([0.3, 2.5, -1.0][:n])
    op = BlockDiagonal.from_sharing(X, RBF(1.0), 1, "tied", 1.5)
    exact = _exact_minus_2_log_evidence(op.dense(), lik, y, 160 if n < 3 else 70)
    res = vb_criterion(op, lik, y)
    if name == "gaussian":
        assert res.phi == pytest.approx(exact, abs=1e-6)  # quadrature error ~1e-7 at 70 nodes
    else:
        assert res.phi >= exact - 1e-6, f"VB bound {res.phi} below the exact -2 log P(y) {exact}"
        assert res.phi - exact < 3.0  # a bound, not a vacuous one (outlier y = 2.5 loosens the robust ones)
    # any γ gives an upper bound, not only the optimal one
    gb = gamma_bound(op.dense(), lik, lik.check_targets(y, n, 1), np.full((n, 1), 0.7))
    assert gb.phi >= res.phi - 1e-9 and gb.phi >= exact - 1e-6


def test_zero_variances_recover_the_map_loss():
    r = np.random.default_rng(0)
    U, y = r.normal(size=(5, 1)), r.normal(size=(5, 1))
    for lik in (Laplace(0.5), StudentT(3.0, 0.5), Gaussian(0.4)):
        assert VarianceSmoothed(lik, np.zeros((5, 1))).value(U, y) == pytest.approx(lik.value(U, y), rel=1e-12)
    yb = np.sign(y)
    assert VarianceSmoothed(Logistic(), np.zeros((5, 1))).value(U, yb) == pytest.approx(Logistic().value(U, yb))


def test_learning_decreases_the_bound():
    X, _, yr = _data(25)
    op = BlockDiagonal.from_sharing(X, RBF(5.0), 1, "tied", 0.3)
    start = vb_criterion(op, StudentT(4.0, 1.0), yr, gradient=False).phi
    result, op2, lik2 = learn_vb(op, StudentT(4.0, 1.0), yr, VBOptions(), outer=outer_options(40))
    end = vb_criterion(op2, lik2, yr)
    assert end.phi < start - 1.0
    assert np.abs(end.gradient).max() < 1e-2 * max(1.0, abs(end.phi))


def test_bad_input():
    X, yb, _ = _data()
    with pytest.raises(InputError, match="super-Gaussian"):
        vb_criterion(_op(X), SmoothedHinge(), yb)
    with pytest.raises(InputError, match="super-Gaussian"):
        vb_criterion(_op(X), Softmax(), np.eye(2)[(yb > 0).astype(int)])
    with pytest.raises(InputError, match="finite"):
        vb_criterion(_op(X), Gaussian(1.0), np.where(np.arange(30) == 3, np.nan, 0.0))
