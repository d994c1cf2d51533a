"""Kernel-weight learning (Nickisch & Seeger 2011): Algorithm 1, alternating minimisation and the outer
optimiser on φ(θ) against cvxpy (convex cases), the Gaussian closed form and finite differences; Sum and bad input."""

import numpy as np
import pytest

from gpmodels.errors import InputError
from gpmodels.inference.map.model import fit_map
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions
from gpmodels.inference.marginal.vb import vb_criterion
from gpmodels.inference.mkl.algorithms import MKLOptions, algorithm1, alternating, criterion_at, learn_weights
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods import Gaussian, Laplace, Logistic, SmoothedHinge, StudentT
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.sum import Sum
from gpmodels.optimize import Checkpointing
from gpmodels.optimize.driver import outer_options

cp = pytest.importorskip("cvxpy")


def _data(n, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 3))
    f = np.sin(2 * X[:, 0]) + X[:, 1]
    yb = np.where(f + 0.3 * r.normal(size=n) > 0, 1.0, -1.0)
    yr = f + 0.2 * r.standard_t(3, size=n)
    return X, yb, yr


def _sum(X, kernels=None, theta=None):
    kernels = (RBF(0.2), RBF(1.0), Linear()) if kernels is None else kernels
    ops = [BlockDiagonal.from_sharing(X, k, 1, "tied", 1.0) for k in kernels]
    return Sum(ops, np.ones(len(ops)) if theta is None else theta)


def _cvx_mkl(op, y, loss, lam, p, jitter=1e-8):
    n = op.n_points
    Ks = [o.class_block(0) for o in op.ops]
    eps = jitter * float(np.mean(sum(np.diag(K) for K in Ks)))
    u, th = cp.Variable(n), cp.Variable(len(Ks), nonneg=True)
    Kth = sum(th[m] * Ks[m] for m in range(len(Ks))) + eps * np.eye(n)
    if loss == "logistic":
        L = 2 * cp.sum(cp.logistic(-cp.multiply(y, u)))
    elif loss == "hinge":
        L = 2 * cp.sum(cp.pos(1 - cp.multiply(y, u)))
    elif loss == "smoothed_hinge":
        L = 2 * cp.sum(cp.huber(cp.pos(1 - cp.multiply(y, u)), 1e-2)) / (2 * 1e-2)
    else:  # squared loss = Gaussian likelihood with σ² = 0.1
        L = cp.sum_squares(y - u) / 0.1 + n * np.log(2 * np.pi * 0.1)
    pen = lam * cp.sum(th) if p == 1 else lam * cp.sum(cp.power(th, p))
    prob = cp.Problem(cp.Minimize(cp.matrix_frac(u, Kth) + L + pen))
    prob.solve(solver="CLARABEL")
    return prob.value, th.value


@pytest.mark.parametrize(
    "loss, p", [("logistic", 1), ("logistic", 2), ("smoothed_hinge", 1), ("squared", 1), ("squared", 1.5)]
)
def test_mkl_matches_cvxpy(loss, p):
    X, yb, yr = _data(15)
    op = _sum(X)
    lik, y = {
        "logistic": (Logistic(), yb),
        "smoothed_hinge": (SmoothedHinge(1e-2), yb),
        "squared": (Gaussian(0.1), yr),
    }[loss]
    ref, th_ref = _cvx_mkl(op, y, loss, 1.0, p)
    for solver in (algorithm1, alternating):
        res = solver(op, lik, y, MKLOptions(criterion="mkl", lam=1.0, p=p))
        assert res.criterion == pytest.approx(ref, rel=1e-6, abs=1e-6), solver.__name__
        np.testing.assert_allclose(res.theta, th_ref, atol=2e-3 * max(1.0, th_ref.max()))


def test_smoothed_hinge_mkl_is_within_n_eps_of_the_hinge():
    X, yb, _ = _data(15)
    op = _sum(X)
    ref, _ = _cvx_mkl(op, yb, "hinge", 1.0, 1)
    eps = 1e-3
    res = algorithm1(op, SmoothedHinge(eps), yb, MKLOptions(criterion="mkl", lam=1.0, p=1))
    assert ref - 15 * eps - 1e-6 <= res.criterion <= ref + 1e-6  # 0 <= hinge - ℓ_ε <= ε/2, times 2 per point


@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared", "laplace"])
def test_inner_map_problem_matches_cvxpy(loss):
    """At fixed θ: Newton–CG's min_α ½ α^T K α + Σ ℓ((K α)_i) against cvxpy."""
    X, yb, yr = _data(25)
    K_op = _sum(X, theta=[0.5, 1.0, 0.3])
    K = K_op.dense()
    L = np.linalg.cholesky(K + 1e-10 * np.eye(25))
    a = cp.Variable(25)
    lik, y, expr = {
        "logistic": (Logistic(), yb, lambda u: cp.sum(cp.logistic(-cp.multiply(yb, u)))),
        "hinge": (SmoothedHinge(1e-2), yb, lambda u: cp.sum(cp.huber(cp.pos(1 - cp.multiply(yb, u)), 1e-2)) / 2e-2),
        "squared": (Gaussian(0.3), yr, lambda u: cp.sum_squares(yr - u) / 0.6 + 12.5 * np.log(2 * np.pi * 0.3)),
        "laplace": (Laplace(0.3), yr, lambda u: cp.sum(cp.abs(yr - u)) / 0.3 + 25 * np.log(0.6)),
    }[loss]
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(L.T @ a) + expr(K @ a)))
    prob.solve(solver="CLARABEL")
    # the Laplace likelihood is not differentiable: IRLS (majoriser) steps converge linearly
    model = fit_map(
        K_op, lik, y, NewtonCG(NewtonOptions(max_iter=300, cg_max_iter=500, grad_tol=1e-10, phi_rtol=1e-14))
    )
    assert model.result.phi == pytest.approx(prob.value, rel=1e-6 if loss == "laplace" else 1e-7)


def test_gaussian_mlm_against_the_closed_form():
    X, _, yr = _data(30)
    op = _sum(X, (RBF(0.2), RBF(1.0), RBF(5.0)))
    lik = Gaussian(0.1)
    opts = MKLOptions(criterion="mlm")

    def closed(theta):
        A = sum(t * o.class_block(0) for t, o in zip(theta, op.ops))
        A = A + (1e-8 * float(np.mean(sum(np.diag(o.class_block(0)) for o in op.ops))) + 0.1) * np.eye(30)
        return np.linalg.slogdet(A)[1] + yr @ np.linalg.solve(A, yr) + 30 * np.log(2 * np.pi)

    theta = np.array([0.3, 1.2, 0.7])
    value, grad = criterion_at(op, lik, yr, theta, opts)
    assert value == pytest.approx(closed(theta), rel=1e-10)
    fd = [(closed(theta * np.exp(1e-6 * e)) - closed(theta * np.exp(-1e-6 * e))) / 2e-6 for e in np.eye(3)]
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)
    res = algorithm1(op, lik, yr, opts)
    assert res.criterion == pytest.approx(closed(res.theta), rel=1e-10)
    from scipy.optimize import minimize

    best = minimize(
        lambda t: closed(np.exp(t)),
        np.zeros(3),
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000},
    )
    assert res.criterion <= best.fun + 1e-7


@pytest.mark.parametrize(
    "criterion, lik_name",
    [("mkl", "logistic"), ("joint_map", "logistic"), ("mlm", "gaussian"), ("vb", "logistic"), ("vb", "student_t")],
)
def test_criterion_gradient_against_finite_differences(criterion, lik_name):
    X, yb, yr = _data(20)
    op = _sum(X, (RBF(0.2), RBF(1.0), RBF(5.0)))
    cases = {"logistic": (Logistic(), yb), "gaussian": (Gaussian(0.1), yr), "student_t": (StudentT(4.0, 0.3), yr)}
    lik, y = cases[lik_name]
    opts = MKLOptions(criterion=criterion, lam=0.5, p=1.5, tol=1e-14)
    theta = np.array([0.3, 1.2, 0.7])
    _, grad = criterion_at(op, lik, y, theta, opts)
    h = 1e-5
    fd = [
        (
            criterion_at(op, lik, y, theta * np.exp(h * e), opts)[0]
            - criterion_at(op, lik, y, theta * np.exp(-h * e), opts)[0]
        )
        / (2 * h)
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "criterion, lik_name",
    [
        ("mkl", "hinge"),
        ("joint_map", "logistic"),
        ("mlm", "gaussian"),
        ("vb", "logistic"),
        ("vb", "laplace"),
        ("vb", "student_t"),
    ],
)
def test_algorithm1_decreases_monotonically_and_agrees_with_alternating(criterion, lik_name):
    X, yb, yr = _data(25)
    op = _sum(X, (RBF(0.2), RBF(1.0), RBF(5.0)))
    lik, y = {
        "hinge": (SmoothedHinge(1e-2), yb),
        "logistic": (Logistic(), yb),
        "gaussian": (Gaussian(0.1), yr),
        "laplace": (Laplace(0.3), yr),
        "student_t": (StudentT(4.0, 0.3), yr),
    }[lik_name]
    opts = MKLOptions(criterion=criterion, lam=1.0, p=1)
    a = algorithm1(op, lik, y, opts)
    tr = np.array(a.trace)
    assert a.converged, a.message
    assert np.all(np.diff(tr) <= 1e-10 * max(1.0, abs(tr[-1]))), "Algorithm 1 must decrease F monotonically"
    b = alternating(op, lik, y, opts)
    assert a.criterion == pytest.approx(b.criterion, rel=1e-6, abs=1e-6)
    if criterion == "vb":  # the same φ_VB as the VB module at the learned weights
        assert a.criterion == pytest.approx(vb_criterion(op.with_weights(a.theta), lik, y).phi, rel=1e-6)


def test_bad_input():
    X, yb, yr = _data(10)
    ops = [BlockDiagonal.from_sharing(X, k, 1, "tied", 1.0) for k in (RBF(1.0), Linear())]
    with pytest.raises(InputError, match=r"θ\[1\] = -0.5"):
        Sum(ops, [1.0, -0.5])
    with pytest.raises(InputError, match="one per kernel"):
        Sum(ops, [1.0])
    op = Sum(ops)
    with pytest.raises(InputError, match="MKLOptions.p must be a number >= 1"):
        MKLOptions(p=0.5)
    with pytest.raises(InputError, match="Gaussian marginal likelihood"):
        algorithm1(op, Logistic(), yb, MKLOptions(criterion="mlm"))
    with pytest.raises(InputError, match="super-Gaussian"):
        algorithm1(op, SmoothedHinge(), yb, MKLOptions(criterion="vb"))
    with pytest.raises(InputError, match="Sum operator"):
        algorithm1(ops[0], Logistic(), yb)
    with pytest.raises(InputError, match=r"\{-1, \+1\}"):
        algorithm1(op, Logistic(), np.where(yb > 0, 1.0, 0.0))
    with pytest.raises(InputError, match="must be finite"):
        algorithm1(op, Gaussian(1.0), np.where(np.arange(10) == 2, np.inf, yr))
    with pytest.raises(InputError, match="positive"):
        algorithm1(op, Logistic(), yb, theta0=[1.0, 0.0])


def test_learn_weights_by_the_outer_optimiser_matches_cvxpy(tmp_path):
    """MKL with p = 2 (interior optimum) by quasi-Newton on φ(θ) = min_u F(u, θ) over log θ."""
    X, yb, _ = _data(15)
    op = _sum(X)
    ref, th_ref = _cvx_mkl(op, yb, "logistic", 1.0, 2)
    seen = []

    def learn(**kw):
        options = MKLOptions(criterion="mkl", lam=1.0, p=2)
        checkpoint = Checkpointing(tmp_path / "ck.npz")
        return learn_weights(op, Logistic(), yb, options, outer=outer_options(tol=1e-9), checkpoint=checkpoint, **kw)

    result, fit = learn(on_iteration=seen.append)
    assert result.converged and result.names == ("log_theta0", "log_theta1", "log_theta2")
    assert fit.criterion == pytest.approx(ref, rel=1e-6) and result.value == pytest.approx(fit.criterion, rel=1e-10)
    np.testing.assert_allclose(fit.theta, th_ref, atol=2e-3 * max(1.0, th_ref.max()))
    assert [r.iteration for r in seen] == list(range(result.iterations + 1)) and fit.trace == result.values
    again, _ = learn()
    assert again.resumed_from == result.iterations and again.evaluations == result.evaluations
