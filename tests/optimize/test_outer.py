"""The outer optimiser: bounded L-BFGS on known problems, failed evaluations as right brackets
with their inner state discarded, seeds from the last successful evaluation to the left."""

import attrs
import numpy as np
import pytest
from scipy.optimize import minimize

from gpmodels.errors import ConvergenceError, InputError
from gpmodels.optimize.lbfgs import (
    OuterOptions,
    Trial,
    minimize_outer,
    outer_iteration,
    outer_start,
    projected_gradient,
)

OPTS = OuterOptions(max_iter=200, max_evaluations=2000, ftol=0.0, gtol=1e-9, max_step=10.0)


def _quadratic(A, b):
    def f(x):
        return 0.5 * x @ A @ x - b @ x, A @ x - b

    return f


def _plain(fun):
    """An evaluate callable over a plain function; inner state = an id of the evaluation."""
    count = [0]

    def evaluate(x, seed):
        count[0] += 1
        v, g = fun(x)
        return Trial(float(v), np.asarray(g, float), True, {"id": count[0], "x": np.array(x)})

    return evaluate


def test_bounded_quadratic_matches_scipy_lbfgsb():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(5, 5))
    A, b = Z @ Z.T + 0.5 * np.eye(5), rng.normal(size=5) * 3
    bounds = np.array([[-1.0, 1.0]] * 5)
    fun = _quadratic(A, b)
    st = minimize_outer(_plain(fun), np.zeros(5), bounds, OPTS)
    ref = minimize(
        lambda x: fun(x),
        np.zeros(5),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"ftol": 1e-15, "gtol": 1e-12},
    )
    assert st.converged, st.message
    np.testing.assert_allclose(st.x, ref.x, atol=1e-6)
    assert np.sum((st.x <= -1 + 1e-12) | (st.x >= 1 - 1e-12)) >= 1  # a bound is active at the optimum
    assert np.abs(projected_gradient(st.x, st.gradient, bounds)).max() <= 1e-8


def test_rosenbrock_converges():
    def rosen(x):
        f = 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2
        g = np.array([-400 * x[0] * (x[1] - x[0] ** 2) - 2 * (1 - x[0]), 200 * (x[1] - x[0] ** 2)])
        return f, g

    st = minimize_outer(_plain(rosen), np.array([-1.2, 1.0]), np.array([[-5.0, 5.0]] * 2), OPTS)
    np.testing.assert_allclose(st.x, [1.0, 1.0], atol=1e-5)
    assert st.converged and st.iteration < 100


def _walled(fun, wall, radius=np.inf):
    """Evaluations with x[0] > wall fail (as inner fits at extreme hyperparameters do), and so do
    those farther than ``radius`` from the point of their seed (as warm-started fits far from home)."""
    log = []
    count = [0]

    def evaluate(x, seed):
        count[0] += 1
        ok = bool(x[0] <= wall) and (seed is None or np.linalg.norm(x - seed["x"]) <= radius)
        inner = {"id": count[0], "x": np.array(x), "ok": ok}
        log.append({"x": np.array(x), "seed": seed, "inner": inner, "ok": ok})
        if not ok:
            return Trial(float("nan"), None, False, inner, {"message": "injected failure"})
        v, g = fun(x)
        return Trial(float(v), np.asarray(g, float), True, inner)

    return evaluate, log


def test_failed_evaluations_are_right_brackets_and_their_inner_state_is_discarded():
    A, b = np.diag([1.0, 4.0]), np.array([1.0, 2.0])  # minimum at (1, 0.5), inside the wall
    fun = _quadratic(A, b)
    bounds = np.array([[-50.0, 50.0]] * 2)
    opts = attrs.evolve(OPTS, initial_step=8.0, max_step=20.0)
    total_failed = 0
    for x_start in ([-3.0, 2.0], [-10.0, 3.0], [-2.0, -6.0]):
        evaluate, log = _walled(fun, wall=1.05, radius=2.5)
        state = outer_start(evaluate, np.array(x_start), bounds, opts)
        failed_ids = set()
        while not state.finished:
            start = len(log)
            x0, inner0 = state.x.copy(), state.inner
            new = outer_iteration(evaluate, state, bounds, opts)
            successful = {id(inner0)}
            limits = {}  # per search direction: distance of the nearest failed trial from x0
            for t in log[start:]:
                dist = np.linalg.norm(t["x"] - x0)
                direction = tuple(np.round((t["x"] - x0) / dist, 6))
                # a failed trial is a right bracket: nothing at or beyond it is tried again
                assert dist < limits.get(direction, np.inf) - 1e-12
                # the seed is the state of a successful evaluation to the left, never a failed one's
                assert id(t["seed"]) in successful and t["seed"]["id"] not in failed_ids
                assert np.linalg.norm(t["seed"]["x"] - x0) < dist
                if t["ok"]:
                    successful.add(id(t["inner"]))
                else:
                    failed_ids.add(t["inner"]["id"])
                    limits[direction] = min(limits.get(direction, np.inf), dist)
            if new.iteration > state.iteration:  # the accepted inner state is a successful one
                assert new.inner["ok"] and new.inner["id"] not in failed_ids
            state = new
        total_failed += state.failed
        assert state.failed == len(failed_ids) >= sum(r.failed for r in state.history)
        np.testing.assert_allclose(state.x, [1.0, 0.5], atol=1e-6)
    assert total_failed >= 5, "the wall must have been hit for the test to mean anything"


def test_a_failed_trial_is_never_exceeded_within_its_line_search():
    """Direct check along one search: every trial after a failure lies strictly nearer the start."""
    fun = _quadratic(np.eye(1), np.array([100.0]))  # far minimum: the search wants to extrapolate
    evaluate, log = _walled(fun, wall=3.0)
    bounds = np.array([[-100.0, 1000.0]])
    opts = attrs.evolve(OPTS, initial_step=1.0, max_step=50.0, line_search_evals=10)
    st = outer_start(evaluate, np.array([0.0]), bounds, opts)
    start = len(log)
    new = outer_iteration(evaluate, st, bounds, opts)
    xs = [t["x"][0] for t in log[start:]]
    oks = [t["ok"] for t in log[start:]]
    assert not all(oks)
    first_fail = oks.index(False)
    lim = np.inf
    for x, ok in zip(xs, oks):
        assert x < lim
        if not ok:
            lim = min(lim, x)
    assert xs[:first_fail] == sorted(xs[:first_fail])  # extrapolation until the wall
    assert new.iteration == 1 and new.x[0] <= 3.0 and new.inner["ok"]


def test_the_first_evaluation_failing_is_an_error():
    evaluate, _ = _walled(_quadratic(np.eye(2), np.zeros(2)), wall=-1.0)
    with pytest.raises(ConvergenceError, match="first evaluation"):
        outer_start(evaluate, np.zeros(2), np.array([[-5.0, 5.0]] * 2), OPTS)


def test_no_decrease_anywhere_ends_the_run_without_claiming_convergence():
    fun = _quadratic(np.eye(2), np.array([5.0, 5.0]))
    evaluate, _ = _walled(fun, wall=0.0)  # every step away from x0 = 0 fails
    st = minimize_outer(evaluate, np.array([0.0, 0.0]), np.array([[-5.0, 5.0]] * 2), OPTS)
    assert st.finished and not st.converged and "no decrease" in st.message
    assert st.iteration == 0 and st.failed >= OPTS.line_search_evals


def test_stopping_rules_and_history():
    fun = _quadratic(np.diag([1.0, 10.0]), np.array([1.0, 1.0]))
    st = minimize_outer(
        _plain(fun), np.array([3.0, 3.0]), np.array([[-9.0, 9.0]] * 2), OuterOptions(max_iter=2, ftol=0.0, gtol=0.0)
    )
    assert st.iteration == 2 and not st.converged and "outer iterations" in st.message
    assert [r.iteration for r in st.history] == [0, 1, 2]
    assert all(r2.value < r1.value for r1, r2 in zip(st.history, st.history[1:]))
    st = minimize_outer(_plain(fun), np.array([3.0, 3.0]), np.array([[-9.0, 9.0]] * 2), OuterOptions(ftol=1e-3))
    assert st.converged and "ftol" in st.message


def test_bad_options_and_bounds_are_refused():
    with pytest.raises(InputError, match="armijo < wolfe"):
        OuterOptions(armijo=0.5, wolfe=0.4)
    with pytest.raises(InputError, match="max_iter"):
        OuterOptions(max_iter=0)
    with pytest.raises(InputError, match="shape"):
        outer_start(_plain(_quadratic(np.eye(2), np.zeros(2))), np.zeros(2), np.array([[-1.0, 1.0]]))
    with pytest.raises(InputError, match="outside the bounds"):
        outer_start(_plain(_quadratic(np.eye(2), np.zeros(2))), np.array([2.0, 0.0]), np.array([[-1.0, 1.0]] * 2))
    with pytest.raises(InputError, match="lower < upper"):
        outer_start(_plain(_quadratic(np.eye(2), np.zeros(2))), np.zeros(2), np.array([[1.0, -1.0]] * 2))


def test_trial_steps_never_exceed_max_step_and_extrapolations_are_limited():
    fun = _quadratic(np.eye(2), np.array([40.0, -25.0]))  # far minimum: every search wants to go far
    evaluate, log = _walled(fun, wall=np.inf)
    opts = OuterOptions(max_iter=5, max_step=0.5, max_extrapolations=1, initial_step=0.1)
    state = outer_start(evaluate, np.zeros(2), np.array([[-100.0, 100.0]] * 2), opts)
    while not state.finished:
        start, x0 = len(log), state.x.copy()
        state = outer_iteration(evaluate, state, np.array([[-100.0, 100.0]] * 2), opts)
        steps = [np.abs(t["x"] - x0).max() for t in log[start:]]
        assert max(steps) <= 0.5 + 1e-12
        assert len(steps) <= 2  # λ = 1 and one extrapolation
    assert state.iteration == 5 and state.value < fun(np.zeros(2))[0]


def test_score_patience_stops_when_the_held_out_score_stops_improving():
    """A slowly converging quadratic whose reported score improves for a while, then stays put: with
    patience p the run stops p iterations after the score's last improvement; without, it goes on."""
    A, b = np.diag([1.0, 1e-3]), np.array([1.0, 1.0])
    fun = _quadratic(A, b)

    def evaluate(x, seed):
        v, g = fun(x)
        return Trial(float(v), g, True, None, {"score": max(0, 5 - int(np.sum(np.abs(x) > 0.5)) * 2)})

    opts = attrs.evolve(OPTS, max_iter=50, score_patience=2)
    st = minimize_outer(evaluate, np.zeros(2), np.array([[-1e4, 1e4]] * 2), opts)
    scores = [r.info["score"] for r in st.history]
    best_at = scores.index(min(scores))
    assert st.converged and "held-out score" in st.message
    assert len(scores) - 1 == best_at + 2
    off = minimize_outer(evaluate, np.zeros(2), np.array([[-1e4, 1e4]] * 2), attrs.evolve(opts, score_patience=0))
    assert off.iteration > st.iteration
    with pytest.raises(InputError, match="score_patience"):
        OuterOptions(score_patience=-1)


def test_score_rtol_counts_only_gains_above_that_share_of_the_best_as_improvements():
    """Scores 200, 180, 179, 179, 179: with rtol 0.01 the gain of 1 on 180 (below 1.8) is noise and a
    patience of 3 stops at the fifth record; with rtol 0 it counts."""
    from gpmodels.optimize.lbfgs import _score_stalled

    class Rec:
        def __init__(self, score):
            self.info = {"score": score}

    history = [Rec(s) for s in (200, 180, 179, 179, 179)]
    assert not _score_stalled(history[:4], 3, 0.01)  # 180 vs 200 is a gain: only 2 records after it
    assert _score_stalled(history, 3, 0.01)
    assert not _score_stalled(history, 3, 0.0)
    assert not _score_stalled([Rec(200), Rec(180), Rec(179), Rec(179), Rec(178)], 3, 0.01)  # 2 > 1.8
    with pytest.raises(InputError, match="score_rtol"):
        OuterOptions(score_rtol=-0.1)


def test_an_overshooting_extrapolation_keeps_the_sufficient_decrease_found_before_it():
    """1-D f(x) = (x - 1.5)^2 from 0 with a steepest-descent step of 1: λ = 1 decreases f but its slope is
    still steep (no curvature), the extrapolation to λ = 4 overshoots; the search accepts λ = 1 after
    those two evaluations instead of interpolating inside [1, 4]."""
    evaluate = _plain(lambda x: ((x[0] - 1.5) ** 2, np.array([2.0 * (x[0] - 1.5)])))
    opts = OuterOptions(initial_step=1.0, max_step=10.0, wolfe=0.1)
    state = outer_start(evaluate, np.zeros(1), np.array([[-10.0, 10.0]]), opts)
    new = outer_iteration(evaluate, state, np.array([[-10.0, 10.0]]), opts)
    assert new.iteration == 1 and new.history[-1].evaluations == 2
    assert new.x[0] == pytest.approx(1.0) and new.value == pytest.approx(0.25)
