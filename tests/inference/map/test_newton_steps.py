"""The steps of Newton–CG (Seeger 2008, Alg. 1) as functions of their own: the projected start, the Newton
system (5), the CG direction (the Newton point in u-space), the line search step, stall handling."""

import functools
import importlib

import numpy as np
import pytest
from conftest import toy_classification

from gpmodels.errors import InputError
from gpmodels.inference.map.line_search import LineSearchResult, objective
from gpmodels.inference.map.newton import NewtonPoint, NewtonProblem
from gpmodels.inference.map.newton_cg import (
    NewtonCG,
    NewtonOptions,
    is_damped_truncation,
    is_stall,
    line_search_step,
    newton_cg,
    newton_direction,
    newton_step_with_restarts,
    newton_system,
    project_start,
    start_residual,
)
from gpmodels.inference.map.preconditioners import make_preconditioner
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.linalg.arrays import HOST
from gpmodels.linalg.cg import cg
from gpmodels.linalg.counting import MVMCounter
from gpmodels.priors.independent import IndependentGP

newton_cg_module = importlib.import_module("gpmodels.inference.map.newton_cg")

TIGHT = NewtonOptions(cg_max_iter=500, cg_tol=1e-13, cg_forcing=0.0)


def _problem(n=20, C=3, seed=0):
    X, y = toy_classification(n, C, seed=seed)
    op = IndependentGP(RBF(0.5), "separate", 2.0, 1.0).operator(X, C)
    return op, Softmax(), np.eye(C)[y]


def _state(op, lik, Y, seed=1):
    """A point α in ran W with u = K̃ α, the gradient g and the Hessian factor there."""
    alpha, u = project_start(lik, 0.3 * np.random.default_rng(seed).normal(size=Y.shape), *Y.shape, op.mvm)
    g = lik.gradient(u, Y)
    return alpha, u, g, lik.hessian_factor(u, Y)


def test_project_start_at_zero_needs_no_mvm_and_checks_the_shape():
    op, lik, Y = _problem()
    calls = []
    alpha, u = project_start(lik, None, *Y.shape, lambda V: calls.append(V) or op.mvm(V))
    assert not calls and not alpha.any() and not u.any()
    with pytest.raises(InputError, match="alpha0 must have shape"):
        project_start(lik, np.zeros((3, 3)), *Y.shape, op.mvm)


def test_project_start_lands_in_the_range_of_W_with_u_its_image():
    op, lik, Y = _problem()
    alpha, u = project_start(lik, np.random.default_rng(0).normal(size=Y.shape), *Y.shape, op.mvm)
    np.testing.assert_allclose(lik.project_alpha(alpha), alpha, atol=1e-14)  # a projection
    np.testing.assert_allclose(u, op.mvm(alpha), atol=1e-14)


def test_newton_direction_solves_the_newton_equation_in_u_space():
    op, lik, Y = _problem()
    alpha, u, g, hf = _state(op, lik, Y)
    assert hf.fixed_alpha is None
    system = newton_system(hf, MVMCounter(op), u, g)
    precondition = make_preconditioner("diagonal", op).inverse(hf).on(HOST, hf)
    res, new_alpha = newton_direction(system, hf.beta_init(alpha), TIGHT, precondition, forcing=0.0, alpha_norm=False)
    assert res.converged

    # (I + V^T K̃ V) β = V^T u − g̃ with α' = V β  <=>  α' + W K̃ α' = W u − g  (W = V V^T, g ∈ ran V)
    def W(x):
        return hf.V(hf.Vt(x))

    np.testing.assert_allclose(new_alpha + W(op.mvm(new_alpha)), W(u) - g, atol=1e-9)


def test_line_search_step_searches_along_the_newton_point():
    op, lik, Y = _problem()
    alpha, u, _, _ = _state(op, lik, Y)
    new_alpha = alpha + 0.1 * np.random.default_rng(2).normal(size=alpha.shape)
    phi = objective(lik, Y, alpha, u)
    point = NewtonPoint(alpha, u, phi, lik.gradient(u, Y))
    ls, s, s_tilde = line_search_step(NewtonProblem(lik, Y, op.mvm, NewtonOptions()), point, new_alpha)
    np.testing.assert_allclose(s, new_alpha - alpha, atol=0)
    np.testing.assert_allclose(s_tilde, op.mvm(s), atol=1e-14)
    if ls.success:
        assert ls.phi == pytest.approx(objective(lik, Y, alpha + ls.step * s, u + ls.step * s_tilde), rel=1e-12)
        assert ls.phi <= phi


@pytest.mark.parametrize(
    "step,phi_new,stall",
    [(0.0, 5.0, True), (1.0, 4.0, False), (0.5, 4.0, False), (0.5, 5.0 - 1e-15, True), (1.0, 5.0 - 1e-15, False)],
)
def test_is_stall(step, phi_new, stall):
    assert is_stall(LineSearchResult(step=step, phi=phi_new, evaluations=1), 5.0, 1e-12) is stall


@pytest.mark.parametrize(
    "step,stall_step,stall",
    [(0.05, 0.1, True), (0.1, 0.1, False), (0.05, 0.0, False), (1.0, 1.0, False), (0.99, 1.0, True)],
)
def test_a_step_below_stall_step_is_a_stall(step, stall_step, stall):
    """A clear decrease (5 -> 4) still counts as a stall when λ < stall_step: the direction is poor."""
    assert is_stall(LineSearchResult(step=step, phi=4.0, evaluations=1), 5.0, 1e-12, stall_step) is stall


@pytest.mark.parametrize(
    "step,forcing,stopped,residual,continued",
    [
        (0.5, 0.1, True, 1e-3, True),  # damped, CG stopped at the forcing term: continue it
        (1.0, 0.1, True, 1e-3, False),  # a full step: the forcing term did its work
        (0.5, 0.0, True, 1e-3, False),  # already a continuation (no forcing term)
        (0.5, 0.1, False, 1e-3, False),  # CG ran out of steps (k2), not truncated by the forcing term
        (0.5, 0.1, True, 1e-12, False),  # CG converged to cg_tol: nothing to continue
        (0.0, 0.1, True, 1e-3, False),  # no decrease: is_stall's case
    ],
)
def test_a_damped_step_along_a_forcing_truncated_direction_continues_cg(step, forcing, stopped, residual, continued):
    ls = LineSearchResult(step=step, phi=4.0, evaluations=1)
    assert is_damped_truncation(ls, forcing, stopped, residual, 1e-10) is continued


def test_a_fit_continues_the_truncated_direction_of_a_damped_step():
    """With stall_step 0 only the damped-truncation rule restarts CG: from a warm start whose first step is
    damped and whose CG met the forcing term, the fit continues that CG without the forcing term."""
    op, lik, Y = _problem(40, 3, seed=1)
    alpha0 = 0.1 * np.random.default_rng(0).normal(size=Y.shape)
    opts = NewtonOptions(max_iter=1, cg_max_iter=60, cg_forcing=0.5, stall_step=0.0, preconditioner="diagonal")
    calls = []
    original = newton_cg_module.is_damped_truncation

    def spy(ls, forcing, stopped, residual, cg_tol):
        calls.append((ls.step, forcing, original(ls, forcing, stopped, residual, cg_tol)))
        return calls[-1][-1]

    newton_cg_module.is_damped_truncation = spy
    try:
        res = NewtonCG(opts).fit(op, lik, Y, alpha0=alpha0)
    finally:
        newton_cg_module.is_damped_truncation = original
    assert calls[0][0] < 1.0 and calls[0][2]  # the first attempt: damped and truncated
    assert calls[1][1] == 0.0  # continued without the forcing term
    assert res.diagnostics.stalls == 1


def _step_at_state(op, lik, Y, opts):
    """Φ at the test state and one Newton iteration from it (diagonal preconditioner)."""
    alpha, u, g, hf = _state(op, lik, Y)
    system = newton_system(hf, MVMCounter(op), u, g)
    phi = objective(lik, Y, alpha, u)
    return phi, newton_step_with_restarts(
        NewtonProblem(lik, Y, op.mvm, opts),
        NewtonPoint(alpha, u, phi, g),
        system,
        make_preconditioner("diagonal", op),
        hf.beta_init(alpha),
    )


def test_a_damped_step_below_stall_step_restarts_cg_and_the_fit_reaches_the_same_optimum():
    op, lik, Y = _problem()
    stalls = {}
    for stall_step in (0.0, 1.0):  # 1.0: every damped step restarts CG
        phi, step = _step_at_state(
            op, lik, Y, NewtonOptions(cg_max_iter=1, max_stall_restarts=2, stall_step=stall_step)
        )
        stalls[stall_step] = step.stalls
        assert step.line_search.success and step.line_search.phi < phi
    assert stalls[0.0] == 0 and stalls[1.0] >= 1
    fits = [newton_cg(op, lik, Y, NewtonOptions(cg_max_iter=3, grad_tol=1e-8, stall_step=s)) for s in (0.0, 0.5)]
    assert all(f.converged for f in fits) and fits[1].diagnostics.stalls >= fits[0].diagnostics.stalls
    assert fits[1].phi == pytest.approx(fits[0].phi, rel=1e-10)


def test_one_newton_step_is_the_first_iteration_of_newton_cg():
    op, lik, Y = _problem()
    opts = NewtonOptions(max_iter=1)
    alpha, u = project_start(lik, None, *Y.shape, op.mvm)
    g = lik.gradient(u, Y)
    hf = lik.hessian_factor(u, Y)
    system = newton_system(hf, MVMCounter(op), u, g)
    step = newton_step_with_restarts(
        NewtonProblem(lik, Y, op.mvm, opts),
        NewtonPoint(alpha, u, objective(lik, Y, alpha, u), g),
        system,
        make_preconditioner("diagonal", op),
        hf.beta_init(alpha),
    )
    ls, s, beta, n_cg, stalls = step.line_search, step.s, step.beta, step.cg_iterations, step.stalls
    fit = newton_cg(op, lik, Y, opts)
    assert stalls == fit.diagnostics.stalls == 0 and n_cg == fit.diagnostics.cg_iterations[0]
    np.testing.assert_array_equal(alpha + ls.step * s, fit.alpha)
    np.testing.assert_array_equal(beta, fit.beta)
    assert ls.phi == fit.phi < objective(lik, Y, alpha, u)


def test_a_truncated_direction_that_stalls_restarts_cg_from_its_last_beta():
    op, lik, Y = _problem()
    # phi_rtol = 1: every damped step counts as a stall, so each attempt (one CG step) is followed by a restart
    results = {}
    for restarts in (0, 2):
        phi, results[restarts] = _step_at_state(
            op, lik, Y, NewtonOptions(cg_max_iter=1, max_stall_restarts=restarts, phi_rtol=1.0)
        )
    (ls0, n_cg0, stalls0), (ls2, n_cg2, stalls2) = (
        (r.line_search, r.cg_iterations, r.stalls) for r in (results[0], results[2])
    )
    assert (stalls0, n_cg0, stalls2, n_cg2) == (1, 1, 3, 3)
    assert ls0.success and ls0.step < 1.0
    assert ls2.phi <= ls0.phi < phi  # the best attempt is kept, and the first attempt is one of them


def test_newton_system_products_stay_valid_side_by_side():
    """The system's product reuses one buffer for V β: results the caller keeps are not overwritten by the
    next product, and each equals x + V^T K̃ V x (Seeger 2008, eq. 5)."""
    op, lik, Y = _problem()
    alpha, u, g, hf = _state(op, lik, Y)
    system = newton_system(hf, MVMCounter(op), u, g)
    rng = np.random.default_rng(2)
    x1, x2 = rng.normal(size=Y.shape), rng.normal(size=Y.shape)
    a1 = system.matvec(x1)
    keep = a1.copy()
    a2 = system.matvec(x2)
    np.testing.assert_array_equal(a1, keep)
    for x, a in ((x1, a1), (x2, a2)):
        np.testing.assert_allclose(a, x + hf.Vt(op.mvm(hf.V(x))), rtol=1e-13, atol=1e-13)


def test_the_start_residual_without_a_product_is_the_multiplied_one():
    """β_init = D^{-1/2} α has V β_init = α for α in ran W, so rhs - (I + V^T K̃ V) β_init = rhs - (β_init + V^T u)
    (no App. B component fixed or zeroed here)."""
    op, lik, Y = _problem()
    alpha, u, g, hf = _state(op, lik, Y)
    assert hf.beta_init_exact
    system = newton_system(hf, MVMCounter(op), u, g)
    x0 = hf.beta_init(alpha)
    got = start_residual(hf, system.rhs, x0, u)
    np.testing.assert_allclose(got, system.rhs - system.matvec(x0), rtol=1e-11, atol=1e-12)
    assert start_residual(hf, system.rhs, None, u) is None


def test_no_start_residual_where_app_b_zeroes_the_start():
    op, lik, Y = _problem()
    U = np.zeros(Y.shape)
    U[0, int(np.argmin(Y[0]))] = -40.0  # log π below κ with y = 0: App. B's set I0, β_init = 0 there
    hf = lik.hessian_factor(U, Y)
    assert not hf.beta_init_exact
    system = newton_system(hf, MVMCounter(op), U, lik.gradient(U, Y))
    assert start_residual(hf, system.rhs, np.ones(Y.shape), U) is None


def test_cg_from_a_given_start_residual_saves_the_product_and_keeps_the_iterates():
    op, lik, Y = _problem()
    alpha, u, g, hf = _state(op, lik, Y)
    system = newton_system(hf, MVMCounter(op), u, g)
    x0 = hf.beta_init(alpha)
    plain = cg(system.matvec, system.rhs, x0=x0, max_iter=3)
    given = cg(system.matvec, system.rhs, x0=x0, max_iter=3, r0=system.rhs - system.matvec(x0))
    assert given.matvecs == plain.matvecs - 1
    np.testing.assert_array_equal(given.x, plain.x)
    restart = cg(system.matvec, system.rhs, x0=plain.x, max_iter=2, r0=plain.r)  # CG's own residual at its x
    again = cg(system.matvec, system.rhs, x0=plain.x, max_iter=2)
    assert restart.matvecs == again.matvecs - 1
    np.testing.assert_allclose(restart.x, again.x, rtol=1e-10, atol=1e-12)


def test_restarts_from_cg_residuals_reach_the_multiplied_fit_with_fewer_products(monkeypatch):
    op, lik, Y = _problem()
    opts = NewtonOptions(cg_max_iter=2, max_stall_restarts=2, stall_step=0.9, grad_tol=1e-9, max_iter=40)
    fast = newton_cg(op, lik, Y, opts)
    monkeypatch.setattr(newton_cg_module, "start_residual", lambda *a: None)
    monkeypatch.setattr(newton_cg_module, "cg", functools.partial(_cg_without_r0, newton_cg_module.cg))
    slow = newton_cg(op, lik, Y, opts)
    assert fast.converged and slow.converged and fast.diagnostics.stalls >= 1
    assert fast.diagnostics.mvm_count < slow.diagnostics.mvm_count
    assert fast.phi == pytest.approx(slow.phi, rel=1e-12)
    np.testing.assert_allclose(fast.alpha, slow.alpha, rtol=1e-7, atol=1e-8 * np.abs(slow.alpha).max())


def _cg_without_r0(cg_function, *args, r0=None, **kwargs):
    return cg_function(*args, **kwargs)
