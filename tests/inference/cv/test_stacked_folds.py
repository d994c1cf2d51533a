"""Folds refitted together (``CVOptions.folds_per_fit``): the folds' Newton–CG fits in lockstep on their
stacked operators, each with its own CG scalars, line search and stopping rules, so Ψ, ∇Ψ and the inner state
are those of the separate refits (up to the order of sums); the stacked products run on a device where the
folds' operators do."""

import attrs
import numpy as np
import pytest

from gpmodels.engine.processes import ProcessEngine
from gpmodels.errors import InputError
from gpmodels.inference.cv.criterion import cv_criterion, cv_plan
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.cv.partition import complements
from gpmodels.inference.map.newton import NewtonOptions
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.intercept import Intercept
from gpmodels.operators.stack_products import ThroughBase
from gpmodels.operators.stacked import Stacked

N, C, Q = 45, 3, 3


def _problem(representation=None):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, 2))
    kernels = [RBF(0.5), RBF(0.9), RBF(1.4)]
    op = Intercept(BlockDiagonal(X, kernels, [0, 1, 2], [2.0, 1.0, 3.0], [0, 1, 2], representation=representation), 1.5)
    Y = np.eye(C)[rng.integers(0, C, N)]
    folds = np.array_split(rng.permutation(N), Q)
    return op, Y, folds


def _options(folds_per_fit, preconditioner="lowrank", accumulation_tol=1e-12):
    newton = NewtonOptions(
        max_iter=40,
        cg_max_iter=200,
        grad_tol=1e-10,
        phi_rtol=0.0,
        cg_tol=1e-12,
        preconditioner=preconditioner,
        precond_rank=3,
    )
    return CVOptions(newton=newton, k3=300, accumulation_tol=accumulation_tol, folds_per_fit=folds_per_fit)


@pytest.mark.parametrize("preconditioner", ["diagonal", "lowrank"])
@pytest.mark.parametrize("folds_per_fit", [2, 3])
def test_stacked_refits_give_the_criterion_and_gradient_of_separate_refits(folds_per_fit, preconditioner):
    op, Y, folds = _problem()
    sep = cv_criterion(op, Softmax(), Y, folds, _options(1, preconditioner))
    stk = cv_criterion(op, Softmax(), Y, folds, _options(folds_per_fit, preconditioner))
    assert sep.ok and stk.ok
    assert stk.psi == pytest.approx(sep.psi, rel=1e-9)
    np.testing.assert_allclose(stk.gradient, sep.gradient, rtol=1e-6, atol=1e-8 * np.abs(sep.gradient).max())
    for a, b in zip(stk.state.alphas, sep.state.alphas):
        np.testing.assert_allclose(a, b, atol=1e-7 * np.abs(b).max())
    assert [f.held_out_errors for f in stk.folds] == [f.held_out_errors for f in sep.folds]


def test_a_stacked_evaluation_warm_starts_from_its_state_with_fewer_mvms():
    op, Y, folds = _problem()
    opts = _options(3)
    first = cv_criterion(op, Softmax(), Y, folds, opts)
    near = op.with_params(op.params + 0.05)
    warm = cv_criterion(near, Softmax(), Y, folds, opts, state=first.state)
    cold = cv_criterion(near, Softmax(), Y, folds, opts)
    assert warm.ok and cold.ok
    assert all(f.start == "warm" for f in warm.folds)
    assert warm.mvm_count < cold.mvm_count
    assert warm.psi == pytest.approx(cold.psi, rel=1e-8)


def test_each_fold_keeps_its_own_newton_iterations_cg_steps_and_products():
    """A fold's Newton iterations, accumulation steps and MVMs are those of its separate refit: the lockstep
    product multiplies only the folds still solving.  (At an accumulation tolerance of 1e-12 on this small
    problem a residual sits within round-off of the tolerance, where the stack's product through K̃, summed
    in another order than K̃_J's, can move a step.)"""
    op, Y, folds = _problem()
    sep = cv_criterion(op, Softmax(), Y, folds, _options(1, accumulation_tol=1e-10))
    stk = cv_criterion(op, Softmax(), Y, folds, _options(3, accumulation_tol=1e-10))
    assert [f.newton_iterations for f in stk.folds] == [f.newton_iterations for f in sep.folds]
    assert [f.accumulation_iterations for f in stk.folds] == [f.accumulation_iterations for f in sep.folds]
    assert [f.fit_mvms for f in stk.folds] == [f.fit_mvms for f in sep.folds]
    assert [f.accumulation_mvms for f in stk.folds] == [f.accumulation_mvms for f in sep.folds]


def test_stacked_folds_on_worker_processes_equal_the_local_run():
    op, Y, folds = _problem()
    opts = _options(2)
    local = cv_criterion(op, Softmax(), Y, folds, opts)
    with ProcessEngine(2) as engine:
        remote = cv_criterion(op, Softmax(), Y, folds, opts, engine=engine)
    assert remote.psi == local.psi
    np.testing.assert_array_equal(remote.gradient, local.gradient)


def test_the_exact_solver_does_not_stack_folds():
    with pytest.raises(InputError, match="folds_per_fit=2.*'exact'"):
        CVOptions(solver="exact", folds_per_fit=2)
    with pytest.raises(InputError, match="folds_per_fit"):
        CVOptions(folds_per_fit=0)


def test_the_stack_of_fold_operators_is_their_block_diagonal():
    op, _, folds = _problem()
    Js = complements(folds, N)
    stack = Stacked([op.restrict(J) for J in Js])
    rng = np.random.default_rng(0)
    V = rng.normal(size=(stack.n_points, C))
    expect, at = [], 0
    for J in Js:
        expect.append(op.restrict(J).mvm(V[at : at + J.size]))
        at += J.size
    np.testing.assert_allclose(stack.mvm(V), np.concatenate(expect), rtol=1e-13)
    with pytest.raises(InputError, match="share the classes and hyperparameters"):
        Stacked([op.restrict(Js[0]), op.with_params(op.params + 1.0).restrict(Js[1])])


def test_the_held_out_blocks_through_the_operator_are_the_folds_cross_blocks():
    """Stacked.cross_restrictions: diag(K̃_{I_k,J_k}) between the stacked layouts, and its transpose, one
    product of K̃ each, equal to each fold's cross block alone (one or k right-hand sides)."""
    op, _, folds = _problem()
    Js = complements(folds, N)
    held_out = Stacked.cross_restrictions(op, folds, Js)
    n_I, n_J = sum(I.size for I in folds), sum(J.size for J in Js)
    assert held_out.shape == (n_I, n_J, C)
    rng = np.random.default_rng(6)
    cols, rows = np.cumsum([0] + [J.size for J in Js]), np.cumsum([0] + [I.size for I in folds])
    blocks = [op.cross(I, J) for I, J in zip(folds, Js)]
    for k in ((), (3,)):
        V, W = rng.normal(size=(n_J, C, *k)), rng.normal(size=(n_I, C, *k))
        expect = np.concatenate([b.mvm(V[cols[f] : cols[f + 1]]) for f, b in enumerate(blocks)])
        np.testing.assert_allclose(held_out.mvm(V), expect, rtol=1e-12, atol=1e-12)
        expect_t = np.concatenate([b.rmvm(W[rows[f] : rows[f + 1]]) for f, b in enumerate(blocks)])
        np.testing.assert_allclose(held_out.rmvm(W), expect_t, rtol=1e-12, atol=1e-12)
    with pytest.raises(InputError, match="as many row as column parts"):
        Stacked.cross_restrictions(op, folds[:2], Js)


pytest.importorskip("array_api_compat")
from device_backends import device_backends  # noqa: E402

from gpmodels.kernels.device.config import DeviceRepresentationConfig  # noqa: E402

BACKENDS, BACKEND_PARAMS = device_backends()


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_a_stack_of_device_operators_multiplies_on_the_device(backend):
    be = BACKENDS[backend]()
    op, _, folds = _problem(DeviceRepresentationConfig(be, kind="stored"))
    stack = Stacked([op.restrict(J) for J in complements(folds, N)])
    assert stack.device_backend is be
    V = np.random.default_rng(1).normal(size=(stack.n_points, C))
    np.testing.assert_allclose(be.to_host(stack.device_mvm(be.from_host(V))), stack.mvm(V), rtol=1e-12)
    mixed = stack.restrict(np.array([stack.offsets[1], 0]))  # part 1's first point before part 0's
    assert mixed.order is not None and mixed.device_backend is None  # a reordered stack multiplies on the host


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_restrictions_multiplied_through_the_operator_equal_the_restricted_copies_on_a_device(backend):
    """Stacked.restrictions: one product of K̃ with a column per fold, on the device, for all folds or the
    ones still solving (zero rows for the others), with one or k right-hand sides; the reordered stack of
    a restriction keeps multiplying through K̃ on the host."""
    be = BACKENDS[backend]()
    op, _, folds = _problem(DeviceRepresentationConfig(be, kind="stored"))
    Js = complements(folds, N)
    copies, views = Stacked([op.restrict(J) for J in Js]), Stacked.restrictions(op, Js)
    assert views.device_backend is be
    rng = np.random.default_rng(2)
    V, V3 = rng.normal(size=(views.n_points, C)), rng.normal(size=(views.n_points, C, 2))
    for A in (V, V3):
        np.testing.assert_allclose(be.to_host(views.device_mvm(be.from_host(A))), copies.mvm(A), rtol=1e-12)
    on = np.array([True, False, True])
    got = be.to_host(views.row_blocks_mvm(be.from_host(V), on, be))
    np.testing.assert_allclose(got, copies.row_blocks_mvm(V, on), rtol=1e-12)
    assert not got[views.part_rows(1)].any()
    mixed = views.restrict(np.array([views.offsets[1], 0, 5]))
    assert mixed.order is not None and isinstance(mixed.products, ThroughBase)
    np.testing.assert_allclose(mixed.dense(), copies.restrict(np.array([copies.offsets[1], 0, 5])).dense(), rtol=1e-12)
    with pytest.raises(InputError, match="declares no row blocks"):  # its parts' rows are not its blocks
        mixed.row_blocks_mvm(np.ones((3, C)), np.ones(len(mixed.parts), dtype=bool))


def test_restrictions_hold_no_copies_and_their_gradient_is_the_operators():
    op, _, folds = _problem()
    Js = complements(folds, N)
    views = Stacked.restrictions(op, Js)
    assert all(p.op is op for p in views.parts)
    rng = np.random.default_rng(4)
    E, F = rng.normal(size=(2, views.n_points, C, 2))
    expect = sum(op.restrict(J).grad_trace(E[views.part_rows(k)], F[views.part_rows(k)]) for k, J in enumerate(Js))
    np.testing.assert_allclose(views.grad_trace(E, F), expect, rtol=1e-10)
    sub = views.subset([2, 0])
    assert isinstance(sub.products, ThroughBase) and [p.n_points for p in sub.parts] == [Js[2].size, Js[0].size]


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_a_stacked_evaluation_on_a_device_equals_the_host_one(backend):
    op, Y, folds = _problem()
    dev, _, _ = _problem(DeviceRepresentationConfig(BACKENDS[backend](), kind="stored"))
    a, b = (cv_criterion(o, Softmax(), Y, folds, _options(3)) for o in (op, dev))
    assert a.ok and b.ok
    assert b.psi == pytest.approx(a.psi, rel=1e-10)
    np.testing.assert_allclose(b.gradient, a.gradient, rtol=1e-7, atol=1e-9 * np.abs(a.gradient).max())


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_auto_refits_the_folds_together_where_the_matrices_are_on_a_device_and_one_by_one_on_the_host(backend):
    op, Y, folds = _problem()
    dev, _, _ = _problem(DeviceRepresentationConfig(BACKENDS[backend](), kind="stored"))
    auto = attrs.evolve(_options(1), folds_per_fit="auto", solver="newton-cg")

    def together(o, opts, q=Q):
        return cv_plan(o, Softmax(), folds[:q], opts).folds_per_fit.choice

    assert together(dev, auto) == Q and together(op, auto) == 1
    assert together(dev, attrs.evolve(auto, solver="exact")) == 1 and together(dev, auto, 1) == 1
    auto = attrs.evolve(_options(1), folds_per_fit="auto")
    assert CVOptions().folds_per_fit == "auto"
    on_device, on_host = (cv_criterion(o, Softmax(), Y, folds, auto) for o in (dev, op))
    assert (on_device.folds_per_fit, on_host.folds_per_fit) == (Q, 1)
    assert on_device.summary()["folds_per_fit"] == Q
    one_by_one = cv_criterion(dev, Softmax(), Y, folds, _options(1))
    assert one_by_one.folds_per_fit == 1
    assert on_device.psi == pytest.approx(one_by_one.psi, rel=1e-9)
    exact = cv_criterion(dev, Softmax(), Y, folds, attrs.evolve(auto, solver="exact"))
    assert exact.folds_per_fit == 1


def test_folds_per_fit_is_a_positive_integer_or_auto_resolved_before_the_folds_are_grouped():
    with pytest.raises(InputError, match="folds_per_fit.*positive integer.*'auto'"):
        CVOptions(folds_per_fit="all")
    with pytest.raises(InputError, match="resolved by the execution plan first"):
        CVOptions().fold_jobs([0, 1, 2])
    assert CVOptions(folds_per_fit=2).fold_jobs([0, 1, 2]) == [(0, 1), (2,)]


def test_stacked_folds_retry_a_failed_warm_refit_cold_as_separate_folds_do():
    from gpmodels.inference.cv.state import CVState
    from gpmodels.inference.cv.warm_start import unscaled_start

    op, Y, folds = _problem()
    good = cv_criterion(op, Softmax(), Y, folds, _options(1))
    bad = CVState(tuple(40.0 * a for a in good.state.alphas))  # saturates the softmax: worse than α = 0
    short = NewtonOptions(max_iter=6, cg_max_iter=50, grad_tol=1e-8)
    evs = [
        cv_criterion(
            op,
            Softmax(),
            Y,
            folds,
            CVOptions(newton=short, warm_start=unscaled_start, fail_tol=1e-4, folds_per_fit=f),
            state=bad,
        )
        for f in (1, 3)
    ]
    assert [f.start for f in evs[1].folds] == [f.start for f in evs[0].folds]
    assert "warm+cold" in [f.start for f in evs[1].folds] and evs[1].ok
    assert evs[1].psi == pytest.approx(evs[0].psi, rel=1e-9)


def test_a_checkpoint_identity_does_not_depend_on_how_the_folds_run():
    """Lockstep or one by one gives the same fits: a learning run may resume either way (as across engines)."""
    from gpmodels.inference.cv.learn import CVObjective

    op, Y, folds = _problem()
    ids = [CVObjective(op, Softmax(), Y, folds, _options(f)).identity() for f in (1, 3)]
    assert ids[0] == ids[1] and "folds_per_fit" not in str(ids[0])
