"""Crammer–Singer: the reduced problem (34), the full dual (15) against cvxpy, the Sec. 7 switches."""

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import toy_classification
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpmodels.baselines.crammer_singer.kernel_cache import KernelRows
from gpmodels.baselines.crammer_singer.loops import compiled_available
from gpmodels.baselines.crammer_singer.reduced_problem import solve_exact, solve_fixed_point, theta_exact
from gpmodels.baselines.crammer_singer.solver import CSOptions, cooling_schedule, fit_crammer_singer
from gpmodels.errors import InputError
from gpmodels.kernels import RBF, Linear, Polynomial, Precomputed
from gpmodels.kernels.precomputed import index_inputs


def _sorting_reference(D):
    """θ* of (37) by a scan over the sorted breakpoints, written independently of the package."""
    d = sorted(D, reverse=True)
    target = sum(d) - 1.0
    # h(θ) = Σ min(θ, D_r) is increasing and piecewise linear; find the piece where h = target
    for s in range(1, len(d) + 1):
        theta = (sum(d[:s]) - 1.0) / s
        lo = d[s] if s < len(d) else -np.inf
        if lo <= theta <= d[s - 1]:
            assert abs(sum(min(theta, v) for v in d) - target) < 1e-9 * (1 + abs(target))
            return theta
    raise AssertionError("no piece found")


finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False)

#: both engines of the Fig. 4 loop; the compiled one only where the C extension was built
ENGINES = [
    "numpy",
    pytest.param(
        "compiled",
        marks=pytest.mark.skipif(
            not compiled_available(),
            reason="C extension gpmodels.baselines.crammer_singer._core not built (no C compiler at install)",
        ),
    ),
]


@given(st.lists(finite, min_size=2, max_size=70), st.floats(1e-10, 1e-3))
def test_fixed_point_matches_the_sorting_solution(D, tol):
    D = np.array(D)
    th = _sorting_reference(D)
    assert theta_exact(D) == pytest.approx(th, abs=1e-9 * (1 + abs(th)))
    nu_star = np.minimum(th, D)
    np.testing.assert_allclose(solve_exact(D), nu_star, atol=1e-9 * (1 + np.abs(D).max()))
    res = solve_fixed_point(D, D.mean() - 1.0 / D.size, tol, max_iter=100_000)
    # feasible: ν ≤ D and Σ ν = Σ D − 1 exactly (the repair), and close to ν*
    assert np.all(res.nu <= D + 1e-12)
    assert res.nu.sum() == pytest.approx(D.sum() - 1.0, abs=1e-9 * (1 + np.abs(D).sum()))
    scale = 1.0 + np.abs(D).max()
    assert np.abs(res.nu - nu_star).max() <= 1e-6 * scale + 50 * D.size * tol * (abs(th) + 1)
    # objective of (34) never below the optimum
    assert np.sum(res.nu**2) >= np.sum(nu_star**2) - 1e-9 * scale**2


@settings(max_examples=10)
@given(st.lists(finite, min_size=2, max_size=8))
@example([0.0, 1.0])
def test_reduced_problem_against_cvxpy(D):
    D = np.array(D)
    nu = cp.Variable(D.size)
    # tight solver tolerances: at a degenerate vertex (D = [0, 1]: ν ≤ D active with a zero multiplier)
    # CLARABEL's defaults stop 2e-5 away from the solution, the size of the tolerance below
    cp.Problem(cp.Minimize(cp.sum_squares(nu)), [nu <= D, cp.sum(nu) == D.sum() - 1]).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    np.testing.assert_allclose(solve_exact(D), nu.value, atol=1e-5 * (1 + np.abs(D).max()))


def test_fixed_point_rate_from_below():
    """Theorem 2: from θ_1 ≤ max D the iterates increase to θ* (rate ≥ 1 − 1/k)."""
    D = np.array([3.0, 1.0, 0.5, -2.0, -4.0])
    th = theta_exact(D)
    prev_err = np.inf
    t = D.min()
    for _ in range(30):
        new = (np.maximum(t, D).sum() - 1) / D.size
        err = abs(new - th)
        assert new <= th + 1e-12 and err <= (1 - 1 / D.size) * prev_err + 1e-12
        prev_err, t = err, new


def _cvxpy_dual(K, y, k, beta):
    m = K.shape[0]
    w, V = np.linalg.eigh(K)
    R = V * np.sqrt(np.clip(w, 0, None))
    T = cp.Variable((m, k))
    Y1 = np.eye(k)[y]
    obj = -0.5 * cp.sum_squares(R.T @ T) + beta * cp.sum(cp.multiply(Y1, T))  # (15)
    prob = cp.Problem(cp.Maximize(obj), [T <= Y1, cp.sum(T, axis=1) == 0])
    prob.solve(solver="CLARABEL")
    return T.value, prob.value


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kernel_name", ["rbf", "linear_sparse", "precomputed"])
@pytest.mark.parametrize("solver", ["fixed_point", "exact"])
def test_dual_against_cvxpy(kernel_name, solver, engine):
    X, y = toy_classification(36, 4, d=3, seed=3, spread=1.0)
    beta = 0.5
    if kernel_name == "rbf":
        kern, Xin = RBF(w=0.7), X
    elif kernel_name == "linear_sparse":
        Xs = np.abs(X) * (np.random.default_rng(1).random(X.shape) < 0.6)
        kern, Xin = Linear(), sp.csr_matrix(np.hstack([Xs, np.ones((36, 1))]))
    else:
        G = RBF(w=0.3).gram(X, X) + 0.5
        kern, Xin = Precomputed(G), index_inputs(np.arange(36))
    K = np.asarray(kern.gram(Xin, Xin))
    T_ref, Q_ref = _cvxpy_dual(K, y, 4, beta)
    model = fit_crammer_singer(kern, Xin, y, CSOptions(beta=beta, epsilon=1e-7, reduced_solver=solver, engine=engine))
    r = model.result
    assert r.converged and r.stats["engine"] == engine
    assert r.dual_objective == pytest.approx(Q_ref, rel=1e-4)
    # feasibility of τ: τ ≤ 1_y, Σ_r τ_r = 0
    assert np.all(r.tau <= np.eye(4)[y] + 1e-12) and np.abs(r.tau.sum(axis=1)).max() < 1e-10
    # the reported F is Σ_j K_ij τ_j − β 1_y (eq. 23) and the gap is small and non-negative
    np.testing.assert_allclose(r.F, K @ r.tau - beta * np.eye(4)[y], atol=1e-8)
    assert -1e-9 <= r.gap <= 1e-4 * abs(r.primal)
    # same predictions as the cvxpy solution on new points
    Xn = X + 0.3 if kernel_name != "precomputed" else Xin
    if kernel_name == "linear_sparse":
        Xn = Xin
    ref_scores = np.asarray(kern.gram(Xn, Xin)) @ T_ref
    ours = model.decision_function(Xn)
    margin = np.sort(ref_scores, axis=1)
    clear = margin[:, -1] - margin[:, -2] > 1e-3
    assert np.array_equal(np.argmax(ours, axis=1)[clear], np.argmax(ref_scores, axis=1)[clear])


@pytest.mark.parametrize(
    "opts",
    [
        dict(selection="cyclic", active_set=False, cooling="none", cache_mb=0.0),
        dict(active_set=False, cooling="none", cache_mb=0.0),
        dict(active_set=True, cooling="exponential", cache_mb=0.0),
        dict(active_set=True, cooling="linear", epsilon0=0.01, cache_mb=0.01),
        dict(active_set=True, cooling="logarithmic", sparse="sparse"),
    ],
)
@pytest.mark.parametrize("engine", ENGINES)
def test_every_improvement_reaches_the_same_optimum(opts, engine):
    X, y = toy_classification(60, 3, d=4, seed=5, spread=1.5)
    X = np.where(np.abs(X) < 0.3, 0.0, X)
    kern = RBF(w=0.4)
    ref = fit_crammer_singer(kern, X, y, CSOptions(beta=1.0, epsilon=1e-8, reduced_solver="exact"))
    got = fit_crammer_singer(kern, X, y, CSOptions(beta=1.0, epsilon=1e-6, engine=engine, **opts))
    assert got.result.converged
    assert got.result.dual_objective == pytest.approx(ref.result.dual_objective, rel=1e-5)
    assert got.result.stats["sparse_inputs"] == (opts.get("sparse") == "sparse")
    np.testing.assert_array_equal(got.predict(X), ref.predict(X))


def test_cooling_schedules():
    assert cooling_schedule("none", 0.999, 1e-3, 100) == [1e-3]
    for kind in ("exponential", "linear", "logarithmic"):
        s = cooling_schedule(kind, 0.999, 1e-3, 100_000)
        assert s[0] == 0.999 and s[-1] == 1e-3 and all(a > b for a, b in zip(s, s[1:]))
    assert len(cooling_schedule("exponential", 0.999, 1e-3, 100_000)) == 8  # e^-7 < 1e-3
    assert len(cooling_schedule("linear", 0.999, 1e-3, 100_000)) == 999  # 0.999/(t+1) > 1e-3 for t < 998, then ε


def test_kernel_row_cache_is_lru_and_bounded():
    X = np.random.default_rng(0).normal(size=(50, 3))
    k = RBF(w=0.5)
    rows = KernelRows(k, X, memory_mb=3 * 50 * 8 / 2**20)  # room for exactly 3 rows
    assert rows.capacity == 3
    G = k.gram(X, X)
    for p in (0, 1, 2, 0, 3):  # 1 is the least recently used when 3 arrives
        np.testing.assert_allclose(rows.row(p), G[p], atol=1e-12)
    assert rows.hits == 1 and rows.misses == 4 and rows.evictions == 1
    rows.row(1)
    assert rows.misses == 5
    rows.row(0)
    assert rows.hits == 2
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0))
    for kern in (Linear(), RBF(w=0.3), Polynomial(degree=2)):
        r = KernelRows(kern, Xs, memory_mb=0)
        np.testing.assert_allclose(r.row(7), np.asarray(kern.gram(Xs, Xs))[7], atol=1e-10)
        np.testing.assert_allclose(r.diag(), kern.diag(Xs), atol=1e-12)


def test_bad_input_is_refused():
    X, y = toy_classification(20, 3)
    with pytest.raises(InputError, match="labels must lie"):
        fit_crammer_singer(RBF(w=1.0), X, y + 5, CSOptions(), n_classes=3)
    with pytest.raises(InputError, match="shape"):
        fit_crammer_singer(RBF(w=1.0), X, y[:-1])
    with pytest.raises(InputError, match="cooling"):
        CSOptions(cooling="fast")
    with pytest.raises(InputError, match="cyclic"):
        CSOptions(selection="cyclic")
    with pytest.raises(InputError, match="beta"):
        CSOptions(beta=0.0)
    with pytest.raises(InputError, match="must be > 0"):
        fit_crammer_singer(Linear(), np.vstack([X[:-1], np.zeros((1, 2))]), y)
