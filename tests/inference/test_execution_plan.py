"""The execution plan: its choices for injected hardware (cores, memory, a device or none) with their reasons,
and the plan that ran recorded on the fit, the CV evaluation, the estimator and the driver's files."""

import json

import attrs
import numpy as np
import pytest
from conftest import toy_classification

from gpmodels.errors import InputError
from gpmodels.estimators.gp import GPClassifier
from gpmodels.inference.cv.criterion import cv_criterion
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.execution_plan import (
    DEFAULT_RULES,
    Hardware,
    PlanRules,
    Problem,
    plan_execution,
    plan_for,
)
from gpmodels.inference.map.model import fit_map
from gpmodels.inference.map.newton import NewtonOptions
from gpmodels.inference.map.newton_cg import NewtonCG
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.linalg.arrays import HOST, SWEPT_HOST
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.stacked import Stacked

HOST16 = Hardware(cores=16)
CARD = Hardware(cores=16, device="cuda:0 (H100)")


def test_on_the_host_cg_stays_there_with_every_core_and_auto_deflates_from_the_rule_on():
    small = plan_execution(Problem(1000, 6), HOST16)
    big = plan_execution(Problem(DEFAULT_RULES.lowrank_min_points, 6), HOST16)
    assert (small.device.choice, small.cg.choice, small.host_blas.choice) == ("cpu", "host", 16)
    assert not small.cg_on_device and "host memory" in small.cg.reason
    assert small.preconditioner.choice == "diagonal" and "1000 points per fit < 1500" in small.preconditioner.reason
    assert big.preconditioner.choice == "lowrank"
    assert small.solver is None and small.folds_per_fit is None and small.workers is None  # no CV asked


def test_on_a_device_cg_follows_the_vectors_size_and_host_work_takes_one_blas_thread_beside_it():
    small = plan_execution(Problem(3548, 6), CARD)  # a satimage fold: 21 288 entries
    wide = plan_execution(Problem(10_000, 63), CARD)  # imclef07a's shape
    assert small.device.choice == "cuda:0 (H100)"
    assert (small.cg.choice, small.host_blas.choice) == ("host", 1)
    assert "21288 entries" in small.cg.reason and "launches" in small.cg.reason
    assert (wide.cg.choice, wide.host_blas.choice) == ("device", 16) and wide.cg_on_device
    moved = plan_execution(Problem(3548, 6), CARD, PlanRules(device_cg_min_entries=0))
    assert moved.cg.choice == "device"


def test_exact_newton_runs_no_cg_and_keeps_every_core_beside_a_device():
    plan = plan_execution(Problem(200, 3, solver="exact"), CARD)
    assert (plan.cg.choice, plan.host_blas.choice) == ("host", 16) and "App. C" in plan.cg.reason
    cv = plan_execution(Problem(24, 3, fit_points=16, folds=3, exact_applies=True), CARD)
    assert (cv.solver.choice, cv.cg.choice, cv.host_blas.choice) == ("exact", "host", 16)


def test_a_thousand_classes_keep_the_diagonal_whatever_the_points():
    plan = plan_execution(Problem(9794, 1172), HOST16)
    assert plan.preconditioner.choice == "diagonal" and "GiB" in plan.preconditioner.reason
    asked = plan_execution(Problem(9794, 1172, preconditioner="block"), HOST16)
    assert asked.preconditioner.as_dict() == {"choice": "block", "reason": "asked for"}


def test_cv_groups_the_folds_on_a_device_and_runs_them_one_by_one_on_the_host():
    cv = Problem(4435, 6, fit_points=3548, folds=5)
    on_card, on_host = plan_execution(cv, CARD), plan_execution(cv, HOST16)
    assert on_card.folds_per_fit.choice == 5 and on_host.folds_per_fit.choice == 1
    assert on_card.cg.choice == "device" and "of 5 blocks" in on_card.cg.reason  # 5 x 3548 x 6 entries
    assert on_host.solver.choice == "newton-cg" and "flat prior" in on_host.solver.reason
    exact = plan_execution(Problem(24, 3, fit_points=16, folds=3, exact_applies=True), CARD)
    assert (exact.solver.choice, exact.folds_per_fit.choice) == ("exact", 1)
    asked = plan_execution(attrs.evolve(cv, folds_per_fit=3, solver="newton-cg"), HOST16)
    assert (asked.folds_per_fit.choice, asked.solver.reason) == (3, "asked for")


def test_the_host_passes_are_compiled_sweeps_where_numba_is_and_the_vectors_are_large():
    fast = Hardware(cores=2, compiled=True)
    fold_b = plan_execution(Problem(9794, 1172, fit_points=7835), fast)  # WIPO-alpha section B, one fold
    small = plan_execution(Problem(4435, 6, fit_points=3548), fast)  # satimage: 21 288 entries
    plain = plan_execution(Problem(9794, 1172, fit_points=7835), Hardware(cores=2))
    assert fold_b.sweeps.choice == "compiled" and fold_b.host is SWEPT_HOST
    assert "9182620 entries" in fold_b.sweeps.reason
    assert small.sweeps.choice == "numpy" and small.host is HOST and "launch" in small.sweeps.reason
    assert plain.sweeps.choice == "numpy" and "Numba" in plain.sweeps.reason
    stacked = plan_execution(Problem(4435, 6, fit_points=3548, blocks=13), fast)  # 13 blocks: 276 744 entries
    assert stacked.sweeps.choice == "compiled" and "of 13 blocks" in stacked.sweeps.reason
    assert plan_execution(Problem(4435, 6), fast, PlanRules(sweep_min_entries=0)).sweeps.choice == "compiled"


@pytest.mark.parametrize("compiled", [False, True])
def test_a_fits_host_passes_run_on_the_plans_primitives(compiled):
    op, Y = _op()
    plan = plan_for(op, hardware=Hardware(cores=1, compiled=compiled), rules=PlanRules(sweep_min_entries=0))
    hf = Softmax().hessian_factor(np.zeros(Y.shape), Y)
    place = plan.place(op, hf)
    assert place.solve is place.products is plan.host is (SWEPT_HOST if compiled else HOST)
    swept = type(place.host_factor._held).__name__ == "_SweptFactorArrays"
    assert swept == compiled and place.solve_factor is place.host_factor
    lik = Softmax()
    assert plan.line_values(lik) == (lik.swept_pair_line_values if compiled else lik.pair_line_values)
    ref = fit_map(op, Softmax(), Y, NewtonCG(NewtonOptions(max_iter=20)))
    got = NewtonCG(NewtonOptions(max_iter=20)).fit(op, Softmax(), Y, plan=plan)
    np.testing.assert_allclose(got.alpha, ref.alpha, rtol=1e-10, atol=1e-12)


def test_bad_problems_and_hardware_are_refused():
    with pytest.raises(InputError, match="cannot come from"):
        plan_execution(Problem(10, 3, fit_points=11), HOST16)
    with pytest.raises(InputError):
        Hardware(cores=0)
    with pytest.raises(InputError):
        PlanRules(lowrank_min_points=-1)


def _op(n=45, C=3):
    X, y = toy_classification(n, C, seed=2)
    return BlockDiagonal(X, [RBF(1.0)], [0] * C, [2.0], [0] * C), np.eye(C)[y]


def test_the_plan_is_decided_once_per_fit_and_kept_on_the_model():
    op, Y = _op()
    solver = NewtonCG(NewtonOptions(max_iter=20, preconditioner="auto"))
    model = fit_map(op, Softmax(), Y, solver)
    assert model.plan.decisions() == solver.plan(op).decisions() == plan_for(op, preconditioner="auto").decisions()
    assert model.plan.hardware.device is None and model.plan.preconditioner.choice == "diagonal"
    deflate = plan_for(op, preconditioner="auto", rules=PlanRules(lowrank_min_points=0))
    assert deflate.preconditioner.choice == "lowrank"
    assert solver.stepper(op, None, deflate).precond.name == "lowrank"  # auto: the plan's choice is what runs
    named = NewtonCG(NewtonOptions(preconditioner="diagonal")).stepper(op, None, deflate)
    assert named.precond.name == "diagonal"  # a named preconditioner wins over the plan's auto choice


def test_a_stacked_operator_is_planned_by_its_largest_block_and_all_its_rows():
    op, _ = _op(60)
    stack = Stacked([op.restrict(np.arange(0, 40)), op.restrict(np.arange(20, 60))])
    plan = plan_for(stack, rules=PlanRules(lowrank_min_points=41, device_cg_min_entries=0))
    assert plan.preconditioner.choice == "diagonal" and "40 points per fit" in plan.preconditioner.reason
    card = plan_for(stack, hardware=CARD, rules=PlanRules(device_cg_min_entries=80 * 3))
    assert card.cg.choice == "device" and "240 entries per (n, C) vector of 2 blocks" in card.cg.reason


def test_a_cv_evaluation_records_its_plan_with_the_engines_workers():
    op, Y = _op()
    folds = np.array_split(np.arange(op.n_points), 3)
    ev = cv_criterion(op, Softmax(), Y, folds, CVOptions(newton=NewtonOptions(max_iter=30), fail_tol=1e-3))
    assert ev.ok and ev.plan.solver.choice == ev.solver and ev.plan.folds_per_fit.choice == ev.folds_per_fit
    assert ev.plan.workers.choice == 1 and "LocalEngine" in ev.plan.workers.reason


def test_the_estimator_shows_its_plan_and_the_plan_is_json():
    X, y = toy_classification(40, 3, seed=4)
    est = GPClassifier(random_state=0, n_jobs=1).fit(X, y)
    names = set(est.plan_.decisions())
    assert {"device", "cg", "host_blas", "preconditioner", "solver", "folds_per_fit", "workers"} <= names
    assert all(": " in line for line in est.plan_.describe())
    json.dumps(est.plan_.as_dict())
    assert set(est.plan_.as_metrics()) == {f"plan.{k}" for k in names} | {f"plan_reason.{k}" for k in names}
