"""The pieces of the Crammer–Singer solver as functions of their own: τ from the reduced problem's ν (eq. 33),
the cooling rounds of Fig. 4 / Sec. 7 and the cyclic baseline's sweeps, driven by a scripted loop."""

import numpy as np
import pytest

from gpmodels.baselines.crammer_singer.reduced_problem import solve_exact, tau_from_nu
from gpmodels.baselines.crammer_singer.solver import (
    CSOptions,
    cooling_schedule,
    run_cooling_rounds,
    run_cyclic_sweeps,
)


def test_tau_from_nu_is_feasible_for_the_dual():
    r = np.random.default_rng(0)
    for _ in range(20):
        k = int(r.integers(2, 9))
        y = int(r.integers(k))
        D = r.normal(size=k)
        D[y] += 1.0
        tau = tau_from_nu(solve_exact(D), D, y)
        assert tau.sum() == pytest.approx(0.0, abs=1e-12)  # Σ_r τ_r = 0
        assert np.all(tau <= np.eye(k)[y] + 1e-12)  # τ ≤ 1_y


class _ScriptedLoop:
    """Stands in for a Fig. 4 engine: each round/sweep makes the scripted number of updates."""

    def __init__(self, updates_per_call, stall_at=None):
        self.script, self.updates, self.calls, self.stall_at = list(updates_per_call), 0, [], stall_at

    def run_round(self, threshold, max_updates):
        self.calls.append(threshold)
        self.updates = min(self.updates + self.script.pop(0), max_updates)
        return len(self.calls) == self.stall_at

    def sweep(self):
        self.calls.append(None)
        self.updates += self.script.pop(0)


def test_cooling_rounds_follow_the_schedule_and_record_rounds_with_updates():
    o = CSOptions(beta=2.0, epsilon=1e-3, cooling="exponential", epsilon0=0.5)
    schedule = cooling_schedule("exponential", 0.5, 1e-3, 100_000)
    loop = _ScriptedLoop([3, 0] + [1] * (len(schedule) - 2))
    recorded = []
    rounds, message = run_cooling_rounds(loop, o, recorded.append)
    assert rounds == len(schedule) and message == "max ψ < βε"
    assert loop.calls == [e * 2.0 for e in schedule]  # thresholds βε_t
    assert recorded == [schedule[0]] + schedule[2:]  # round 1 made no update


@pytest.mark.parametrize(
    "stall_at,max_updates,message",
    [
        (2, 10_000_000, "stalled: the reduced problem of the selected example made no progress (round-off)"),
        (None, 4, "max_updates reached"),
    ],
)
def test_cooling_rounds_stop_on_a_stall_or_the_update_budget(stall_at, max_updates, message):
    o = CSOptions(cooling="linear", epsilon0=0.9, epsilon=1e-3, max_updates=max_updates)
    loop = _ScriptedLoop([3] * 1000, stall_at=stall_at)
    rounds, got = run_cooling_rounds(loop, o, lambda eps: None)
    assert got == message and rounds == 2


def test_cyclic_sweeps_stop_when_max_psi_falls_below_epsilon():
    o = CSOptions(selection="cyclic", active_set=False, cooling="none", epsilon=0.1, max_sweeps=10)
    psis = iter([0.5, 0.2, 0.05])
    sweeps, message = run_cyclic_sweeps(_ScriptedLoop([5] * 10), o, lambda eps: {"max_psi": next(psis)})
    assert (sweeps, message) == (3, "max ψ < βε after a sweep")
    o = CSOptions(selection="cyclic", active_set=False, cooling="none", epsilon=0.1, max_sweeps=2)
    sweeps, message = run_cyclic_sweeps(_ScriptedLoop([5] * 10), o, lambda eps: {"max_psi": 1.0})
    assert (sweeps, message) == (2, "max_sweeps reached")
