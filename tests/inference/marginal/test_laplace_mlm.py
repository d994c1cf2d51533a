"""Laplace MLM: exact gradients against finite differences, references, the MVM path's error."""

import numpy as np
import pytest
from minimal_operator import DenseTestOperator

from gpmodels.errors import InputError
from gpmodels.inference.map.exact_newton import ClassBlocks, ExactNewton, softmax_newton_factors
from gpmodels.inference.map.newton import NewtonOptions
from gpmodels.inference.marginal.laplace import (
    LaplaceOptions,
    chord_newton,
    laplace_mlm,
    learn_laplace,
    softmax_posterior_blocks,
)
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods import Gaussian, Laplace, Logistic, Softmax, StudentT
from gpmodels.linalg.finite_differences import central_differences
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.intercept import Intercept
from gpmodels.operators.sum import Sum
from gpmodels.optimize.driver import outer_options
from gpmodels.optimize.objective import JointParams

EXACT = LaplaceOptions(path="exact")


def _data(n=40, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 2))
    f = np.sin(2 * X[:, 0]) + X[:, 1]
    yb = np.where(f + 0.3 * r.normal(size=n) > 0, 1.0, -1.0)
    yr = f + 0.2 * r.standard_t(3, size=n)
    yr[:3] += 6.0  # outliers: W < 0 for the Student-t
    ym = np.eye(3)[np.digitize(f, [-0.5, 0.5])]
    return X, yb, yr, ym


def _fd(op, lik, Y, h=1e-5):
    J = JointParams(op, lik)
    return central_differences(J.x0, lambda x: laplace_mlm(*J.build(x), Y, EXACT, gradient=False).log_marginal, h)


def _op(X, C=1, sharing="tied", learn_sigma2=True):
    v = 2.0 if sharing == "tied" else [1.0, 2.0, 3.0][:C]
    return Intercept(BlockDiagonal.from_sharing(X, RBF(0.7), C, sharing, v), 0.5, learn=learn_sigma2)


@pytest.mark.parametrize("which", ["logistic", "gaussian", "student_t", "softmax", "softmax_dense", "sum"])
def test_exact_gradient_against_finite_differences(which):
    X, yb, yr, ym = _data()
    if which == "logistic":
        op, lik, Y = _op(X), Logistic(), yb
    elif which == "gaussian":
        op, lik, Y = _op(X), Gaussian(0.1), yr
    elif which == "student_t":
        op, lik, Y = _op(X), StudentT(4.0, 0.3, learn_df=True), yr
    elif which == "softmax":
        op, lik, Y = _op(X, 3, "separate"), Softmax(), ym
    elif which == "softmax_dense":  # not class-diagonal: the dense nC x nC path
        op, lik, Y = DenseTestOperator.random(np.random.default_rng(3), 12, 3), Softmax(), ym[:12]
    else:
        base = [BlockDiagonal.from_sharing(X, k, 1, "tied", 1.0) for k in (RBF(0.5), RBF(3.0), Linear())]
        op, lik, Y = Sum(base, [0.7, 1.5, 0.2]), Logistic(), yb
    res = laplace_mlm(op, lik, Y, EXACT)
    assert res.mode.converged
    if which == "student_t":
        assert np.any(lik.hessian_diag(res.mode.u, lik.check_targets(Y, 40, 1)) < 0), "the test needs W < 0 somewhere"
    # the mode is exact to grad_tol = 1e-9 and log|B| depends on it to first order: for the slowly
    # converging Student-t (MM steps) a wider difference step keeps that noise below the tolerance
    h = 1e-3 if which == "student_t" else 1e-5
    np.testing.assert_allclose(res.gradient, _fd(op, lik, Y, h), rtol=1e-5, atol=1e-6)


def test_gaussian_laplace_is_the_closed_form():
    """For Gaussian noise the Laplace approximation is exact: log N(y | 0, K + σ² I)."""
    X, _, yr, _ = _data()
    op, lik = _op(X), Gaussian(0.3)
    A = op.dense() + 0.3 * np.eye(40)
    sign, logdet = np.linalg.slogdet(A)
    expect = -0.5 * yr @ np.linalg.solve(A, yr) - 0.5 * logdet - 20 * np.log(2 * np.pi)
    assert laplace_mlm(op, lik, yr, EXACT).log_marginal == pytest.approx(expect, rel=1e-10)


def test_softmax_determinant_is_complete():
    """R&W Alg. 3.3's factors give log|I + K W| exactly (Σ_c log|B_c| + log|Σ_c E_c|)."""
    X, _, _, ym = _data()
    op = _op(X, 3, "separate")
    res = laplace_mlm(op, Softmax(), ym, EXACT, gradient=False)
    pi = Softmax().predict(res.mode.u)
    W = np.zeros((120, 120))
    for i in range(40):
        W[3 * i : 3 * i + 3, 3 * i : 3 * i + 3] = np.diag(pi[i]) - np.outer(pi[i], pi[i])
    assert res.logdet_B == pytest.approx(np.linalg.slogdet(np.eye(120) + op.dense() @ W)[1], rel=1e-10)


def test_binary_against_scikit_learn():
    """log q and its gradient against scikit-learn's GaussianProcessClassifier (same kernel)."""
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF as skRBF
    from sklearn.gaussian_process.kernels import ConstantKernel

    X, yb, _, _ = _data(60, seed=4)
    v, w = 2.5, 0.8
    op = BlockDiagonal.from_sharing(X, RBF(w), 1, "tied", v)
    gpc = GaussianProcessClassifier(ConstantKernel(v) * skRBF(1 / np.sqrt(w)), optimizer=None).fit(
        X, (yb > 0).astype(int)
    )
    sk_value, sk_grad = gpc.log_marginal_likelihood(gpc.kernel_.theta, eval_gradient=True)
    res = laplace_mlm(op, Logistic(), yb, EXACT)
    assert res.log_marginal == pytest.approx(sk_value, rel=1e-8)
    # sklearn's θ = (log v, log ℓ) with ℓ = w^{-1/2}; ours (log w, log v): d/dlog ℓ = -2 d/dlog w
    np.testing.assert_allclose([res.gradient[1], -2 * res.gradient[0]], sk_grad, rtol=1e-6)


@pytest.mark.parametrize("lik_name", ["logistic", "softmax"])
def test_mvm_path_approaches_the_exact_path(lik_name):
    X, yb, _, ym = _data(80)
    op, lik, Y = (_op(X), Logistic(), yb) if lik_name == "logistic" else (_op(X, 3, "separate"), Softmax(), ym)
    ex = laplace_mlm(op, lik, Y, EXACT)
    errs = []
    for m in (8, 512):
        mv = laplace_mlm(op, lik, Y, LaplaceOptions(path="mvm", n_probes=m, cg_tol=1e-10))
        errs.append((abs(mv.log_marginal - ex.log_marginal), np.linalg.norm(mv.gradient - ex.gradient)))
    assert errs[1][0] < 0.02 * abs(ex.log_marginal)
    assert errs[1][1] < 0.1 * np.linalg.norm(ex.gradient)
    again = laplace_mlm(op, lik, Y, LaplaceOptions(path="mvm", n_probes=8, cg_tol=1e-10))
    assert abs(again.log_marginal - ex.log_marginal) == errs[0][0], "the seeded probes make the estimate deterministic"


def test_learning_increases_the_evidence_to_a_stationary_point():
    X, yb, _, _ = _data(50)
    op = BlockDiagonal.from_sharing(X, RBF(5.0), 1, "tied", 0.3)
    start = laplace_mlm(op, Logistic(), yb, EXACT).log_marginal
    result, op2, _ = learn_laplace(op, Logistic(), yb, EXACT, outer=outer_options(50))
    end = laplace_mlm(op2, Logistic(), yb, EXACT)
    assert end.log_marginal > start + 1.0
    assert end.log_marginal == pytest.approx(-result.value, rel=1e-8)
    assert np.abs(end.gradient).max() < 1e-3


def test_bad_input():
    X, yb, yr, _ = _data()
    with pytest.raises(InputError, match="not differentiable"):
        laplace_mlm(_op(X), Laplace(0.3), yr)
    with pytest.raises(InputError, match="W >= 0"):
        laplace_mlm(_op(X), StudentT(4.0, 0.3), yr, LaplaceOptions(path="mvm"))
    with pytest.raises(InputError, match=r"\{-1, \+1\}"):
        laplace_mlm(_op(X), Logistic(), (yb > 0).astype(float))
    with pytest.raises(InputError, match="path"):
        LaplaceOptions(path="cholesky")


def test_softmax_sigma_blocks_against_the_dense_posterior():
    """softmax_posterior_blocks' Σ_i blocks and R_cc against Σ = K (I + W K)^{-1}, R = W (I + K W)^{-1} formed
    densely, where large variances make some π tiny (the divisions by π enter the gradient times π)."""
    X, _, _, ym = _data()
    lik = Softmax()
    for v in ([1.0, 2.0, 3.0], [300.0, 1000.0, 3000.0]):
        op = _op(X, 3, "separate")
        op = op.with_params(np.concatenate([op.params[:3], np.log(v), op.params[6:]]))
        f = laplace_mlm(op, lik, ym, EXACT, gradient=False).mode.u
        pi = lik.predict(f)
        blocks = [op.class_block(c) for c in range(3)]
        S, Rcc = softmax_posterior_blocks(blocks, softmax_newton_factors(blocks, pi, keep_E=True), pi)
        K, W = op.dense(), np.zeros((120, 120))
        for i in range(40):
            W[3 * i : 3 * i + 3, 3 * i : 3 * i + 3] = np.diag(pi[i]) - np.outer(pi[i], pi[i])
        Sigma = K @ np.linalg.inv(np.eye(120) + W @ K)
        R = W @ np.linalg.inv(np.eye(120) + K @ W)
        S_ref = np.stack([Sigma[3 * i : 3 * i + 3, 3 * i : 3 * i + 3] for i in range(40)])
        np.testing.assert_allclose([R[c::3, c::3] for c in range(3)], Rcc, atol=1e-9 * np.abs(R).max())
        s2, s2_ref = lik.trace_hessian_derivative(f, ym, S), lik.trace_hessian_derivative(f, ym, S_ref)
        np.testing.assert_allclose(s2, s2_ref, atol=1e-9 * np.abs(s2_ref).max())
        assert v[0] < 10 or pi.min() < 1e-10, "the second case needs tiny probabilities"


def test_chord_newton_mode_and_warm_starts_give_the_exact_newton_numbers():
    """The mode by chord Newton (from α = 0, a previous α, or the Newton step from a previous mode f)
    is exact Newton's, and log q and its gradient do not depend on the start."""
    X, _, _, ym = _data()
    lik, opts = Softmax(), NewtonOptions(max_iter=200, grad_tol=1e-11, phi_rtol=0.0)
    op = _op(X, 3, "separate")
    ref = ExactNewton(opts).fit(op, lik, ym)
    mode = chord_newton(ClassBlocks(op), lik, ym, opts)
    assert mode.converged and mode.phi == pytest.approx(ref.phi, rel=1e-13)
    np.testing.assert_allclose(mode.alpha, ref.alpha, atol=1e-9)
    cold = laplace_mlm(op, lik, ym, EXACT)
    moved = op.with_params(op.params + 0.3)  # the next outer iterate
    prev = laplace_mlm(moved, lik, ym, EXACT)
    for start in ({}, {"alpha0": prev.mode.alpha}, {"u0": prev.mode.u}, {"alpha0": prev.mode.alpha, "u0": prev.mode.u}):
        warm = laplace_mlm(op, lik, ym, EXACT, **start)
        assert warm.mode.converged
        # the modes agree to grad_tol = 1e-9 and log|B| depends on the mode to first order
        assert warm.log_marginal == pytest.approx(cold.log_marginal, rel=1e-9)
        np.testing.assert_allclose(warm.gradient, cold.gradient, rtol=1e-6, atol=1e-8)
