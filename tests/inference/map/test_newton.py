"""Newton–CG (Alg. 1) against exact Newton (App. C) on small problems, including hard ones."""

import numpy as np
import pytest
from conftest import toy_classification

from gpmodels.errors import InputError
from gpmodels.inference.map.exact_newton import ExactNewton, exact_newton, exact_newton_solve
from gpmodels.inference.map.model import fit_map
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions, newton_cg
from gpmodels.inference.map.solvers import make_solver
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.logistic import Logistic
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.linalg.cg import cg
from gpmodels.priors.independent import IndependentGP

TIGHT = NewtonOptions(max_iter=100, cg_max_iter=500, cg_tol=1e-13, cg_forcing=0.0, grad_tol=1e-10, phi_rtol=0.0)


def _problem(n=40, C=3, v=1.0, sigma2=1.0, seed=0, sharing="separate"):
    X, y = toy_classification(n, C, seed=seed)
    op = IndependentGP(RBF(0.5), sharing, v, sigma2).operator(X, C)
    return op, np.eye(C)[y], X, y


def _agree(op, Y, rtol=1e-7):
    a = newton_cg(op, Softmax(), Y, TIGHT)
    b = exact_newton(op, Softmax(), Y, TIGHT)
    assert a.converged, a.diagnostics.message
    assert b.converged, b.diagnostics.message
    assert a.phi == pytest.approx(b.phi, rel=1e-11, abs=1e-9)
    scale = max(1.0, np.abs(b.alpha).max())
    assert np.abs(a.alpha - b.alpha).max() <= rtol * scale
    return a, b


def test_exact_newton_solve_is_the_newton_system(rng):
    op, Y, _, _ = _problem(n=12, C=3)
    blocks = [op.class_block(c) for c in range(3)]
    pi = rng.dirichlet(np.ones(3), size=12)
    rhs = rng.normal(size=(12, 3))
    x = exact_newton_solve(blocks, pi, rhs)
    Kx = np.column_stack([blocks[c] @ x[:, c] for c in range(3)])
    WKx = pi * Kx - pi * np.sum(pi * Kx, axis=1, keepdims=True)
    np.testing.assert_allclose(x + WKx, rhs, atol=1e-10)


@pytest.mark.parametrize("v", [1e-2, 1e-1, 1.0, 10.0, 1e2])
def test_newton_cg_matches_exact_newton_over_four_orders_of_v(v):
    op, Y, _, _ = _problem(v=v)
    _agree(op, Y)


@pytest.mark.parametrize("sharing", ["tied", "semi", "separate"])
def test_newton_cg_matches_exact_newton_for_each_sharing_mode(sharing):
    op, Y, _, _ = _problem(sharing=sharing, v=3.0)
    _agree(op, Y)


def test_mislabelled_outlier_matches_exact():
    X, y = toy_classification(40, 3, seed=1, spread=6.0)
    y = y.copy()
    y[0] = (y[0] + 1) % 3  # deep inside another class
    op = IndependentGP(RBF(0.01), "separate", 300.0, 1.0).operator(X, 3)
    Y = np.eye(3)[y]
    a, b = _agree(op, Y, rtol=1e-6)
    logpi = np.log(Softmax().predict(a.u))
    assert logpi[0, y[0]] < -1.5  # a smooth kernel cannot fit the outlier: it stays improbable


def test_app_b_fixed_set_is_used_during_the_fit():
    """With components fixed to γ_I = -g_I the exact optimum is still the fixed point (γ_I = -g_I
    holds exactly there), so the safeguarded Newton–CG must reach exact Newton's Φ and α."""
    X, y_true = toy_classification(30, 3, seed=2, spread=8.0)
    y = y_true.copy()
    y[0] = (y[0] + 1) % 3
    op = IndependentGP(RBF(0.5), "separate", 1000.0, 1.0).operator(X, 3)
    Y = np.eye(3)[y]
    lik = Softmax(kappa=-4.0)
    start = newton_cg(op, lik, np.eye(3)[y_true], TIGHT)  # the flipped label starts improbable
    hf = lik.hessian_factor(start.u, Y)
    assert hf.fixed.any() and hf.fixed_alpha is not None
    a = newton_cg(op, lik, Y, TIGHT, alpha0=start.alpha)
    b = exact_newton(op, Softmax(), Y, TIGHT)
    assert a.converged
    assert a.phi == pytest.approx(b.phi, rel=1e-11)
    assert np.abs(a.alpha - b.alpha).max() <= 1e-7 * max(1.0, np.abs(b.alpha).max())


def test_a_class_with_a_single_example():
    X, y = toy_classification(31, 3, seed=3)
    y = np.where(np.arange(31) == 30, 3, y)
    op = IndependentGP(RBF(0.5), "separate", 5.0, 2.0).operator(X, 4)
    _agree(op, np.eye(4)[y])


def test_phi_decreases_monotonically_and_diagnostics_are_consistent():
    op, Y, _, _ = _problem(v=50.0)
    r = newton_cg(op, Softmax(), Y, NewtonOptions(max_iter=40, cg_max_iter=3, grad_tol=1e-8))
    phi = np.array(r.diagnostics.phi)
    assert np.all(np.diff(phi) <= 1e-9 * np.abs(phi[:-1]))
    d = r.diagnostics
    assert len(d.cg_iterations) == d.iterations == len(d.step_sizes)
    assert d.mvm_count == sum(d.cg_iterations)  # CG's start residual and the line search's s̃ cost no product
    assert len(d.mvm_trace) == len(d.phi) and d.mvm_trace[-1] == d.mvm_count
    assert np.all(np.diff(d.mvm_trace) > 0)
    assert d.seconds > 0


def test_warm_start_from_alpha0():
    op, Y, _, _ = _problem(v=5.0)
    ref = exact_newton(op, Softmax(), Y, TIGHT)
    again = newton_cg(op, Softmax(), Y, TIGHT, alpha0=ref.alpha + 3.0)  # off ran W: projected first
    assert again.diagnostics.iterations <= 2
    assert again.phi == pytest.approx(ref.phi, rel=1e-11)


def test_prediction_uses_the_cross_kernel_and_intercepts():
    X, y = toy_classification(60, 3, seed=4)
    op = IndependentGP(RBF(0.5), "separate", 2.0, 4.0).operator(X[:40], 3)
    m = fit_map(op, Softmax(), np.eye(3)[y[:40]], NewtonCG(TIGHT))
    u_train = m.latent(X[:40])
    np.testing.assert_allclose(u_train, m.result.u, atol=1e-8)
    P = m.predict_proba(X[40:])
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.mean(m.predict(X[40:]) == y[40:]) > 0.6
    b = m.intercepts
    np.testing.assert_allclose(b, 4.0 * m.alpha.sum(axis=0))


def test_exact_newton_refuses_what_it_cannot_do():
    op, Y, X, _ = _problem(n=10)
    with pytest.raises(InputError, match="solver must be a MAP solver"):
        fit_map(op, Softmax(), Y, "lu")
    with pytest.raises(InputError, match="solver must be a MAP solver"):
        fit_map(op, Softmax(), Y, TIGHT)  # options, not a solver
    with pytest.raises(InputError, match="solver must be one of"):
        make_solver("newton_cg", TIGHT)
    with pytest.raises(InputError, match="multinomial"):
        fit_map(op, Logistic(), Y, ExactNewton(TIGHT))


def test_bad_targets_and_shapes_are_named():
    op, Y, _, _ = _problem(n=10)
    with pytest.raises(InputError, match="shape"):
        newton_cg(op, Softmax(), Y[:5])
    Ybad = Y.copy()
    Ybad[0] = [0.5, 0.2, 0.2]
    with pytest.raises(InputError, match="row 0 sums to 0.9"):
        newton_cg(op, Softmax(), Ybad)
    with pytest.raises(InputError, match="alpha0"):
        newton_cg(op, Softmax(), Y, alpha0=np.zeros((3, 3)))


def test_cg_solves_spd_systems_and_reports(rng):
    A = rng.normal(size=(20, 20))
    A = A @ A.T + 20 * np.eye(20)
    b = rng.normal(size=20)
    res = cg(lambda x: A @ x, b, inv_diag=1 / np.diag(A), tol=1e-12, max_iter=100)
    np.testing.assert_allclose(A @ res.x, b, atol=1e-9)
    assert res.converged[0] and res.iterations[0] <= 20
    res2 = cg(lambda x: A @ x, b, x0=res.x, tol=1e-12, max_iter=100)
    assert res2.iterations[0] == 0 and res2.matvecs == 1
    assert cg(lambda x: A @ x, np.zeros(20)).iterations[0] == 0


def test_exact_newton_at_huge_variance_reaches_the_optimum():
    """At v = 1e12, c = E K̃ b nearly cancels b in the Woodbury form; an explicit A_c^{-1} made the
    Newton step garbage and the fit stopped near its start ("round-off level", 60 % training
    error).  Exact Newton must now reach a Φ no worse than Newton–CG's and fit the data."""
    X, y = toy_classification(60, 3, seed=0)
    op = IndependentGP(RBF(0.5), "separate", 1e12, 1.0).operator(X, 3)
    Y = np.eye(3)[y]
    blocks = [op.class_block(c) for c in range(3)]
    pi = np.full((60, 3), 1.0 / 3.0)
    rhs = Y - pi
    x = exact_newton_solve(blocks, pi, rhs)
    Kx = np.column_stack([blocks[c] @ x[:, c] for c in range(3)])
    WKx = pi * Kx - pi * np.sum(pi * Kx, axis=1, keepdims=True)
    assert np.abs(x + WKx - rhs).max() < 1e-2  # was ~1e5 with the explicit inverse
    # about 30 iterations from α = 0 (31 with numpy 2.4 / scipy 1.17): the point is the optimum, not the count
    exact = exact_newton(op, Softmax(), Y, NewtonOptions(max_iter=60))
    cg_fit = newton_cg(op, Softmax(), Y)
    assert exact.converged, exact.diagnostics.message
    assert exact.phi <= cg_fit.phi + 1e-6 * abs(cg_fit.phi)
    assert exact.phi < 0.1 * exact.diagnostics.phi[0]
    assert np.mean(np.argmax(exact.u, axis=1) != y) <= np.mean(np.argmax(cg_fit.u, axis=1) != y)


@pytest.mark.parametrize("solver", [ExactNewton, NewtonCG])
def test_a_solver_never_reports_a_stall_far_from_the_optimum_as_round_off(monkeypatch, solver):
    import sys

    loop = sys.modules["gpmodels.inference.map.newton"]
    from gpmodels.inference.map.line_search import LineSearchResult

    op, Y, _, _ = _problem(n=20, C=3)
    monkeypatch.setattr(loop, "pair_line_search", lambda *a, **k: LineSearchResult(0.0, a[2].phi, 1))
    res = solver().fit(op, Softmax(), Y)
    assert not res.converged
    assert "not converged" in res.diagnostics.message and "round-off" not in res.diagnostics.message
