"""The one Newton loop with a block axis (:func:`~gpmodels.inference.map.newton.newton_loop`): F = 3 independent
row blocks fitted together (``fit_blocks``) give each block the fit of F = 1 on that block alone (its iterations,
CG steps, α and Φ), the accumulation solves :func:`solve_weighted_system`'s, on the host and with the products and
CG on the CI's device namespaces."""

import importlib

import numpy as np
import pytest

from gpmodels.errors import InputError
from gpmodels.inference import execution_plan
from gpmodels.inference.execution_plan import PlanRules
from gpmodels.inference.map.exact_newton import ExactNewton
from gpmodels.inference.map.newton import NewtonProblem, newton_loop
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions, solve_weighted_blocks, solve_weighted_system
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.linalg.compiled_loops import AVAILABLE as NUMBA
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.intercept import Intercept
from gpmodels.operators.stacked import Stacked

C = 3
newton_cg = importlib.import_module("gpmodels.inference.map.newton_cg")


def _problem(representation=None):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(50, 2))
    kernels = [RBF(0.5), RBF(1.0), RBF(2.0)]
    op = Intercept(BlockDiagonal(X, kernels, [0, 1, 2], [3.0, 1.0, 2.0], [0, 1, 2], representation=representation), 2.0)
    sets = [rng.permutation(50)[:m] for m in (40, 31, 45)]
    Y = np.eye(C)[rng.integers(0, C, 50)]
    stack = Stacked([op.restrict(J) for J in sets])
    return stack, [Y[J] for J in sets], rng.normal(size=(stack.n_points, C))


def _options(preconditioner):
    # cg_tol well above round-off: a continued CG (is_damped_truncation) stops there, the same step alone or stacked
    return NewtonOptions(
        max_iter=20, cg_max_iter=30, cg_tol=1e-8, preconditioner=preconditioner, precond_rank=4, grad_tol=1e-8
    )


def _plan(op, passes):
    """The plan of a fit on ``op`` with the host's passes as ``passes`` asks, at every size."""
    hardware = execution_plan.Hardware(cores=1, compiled=passes == "compiled")
    return execution_plan.plan_for(op, hardware=hardware, rules=PlanRules(sweep_min_entries=0))


@pytest.mark.parametrize(
    "passes",
    [
        "numpy",
        pytest.param("compiled", marks=pytest.mark.skipif(not NUMBA, reason="the compiled sweeps need Numba (fast)")),
    ],
)
@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("preconditioner", ["diagonal", "lowrank"])
def test_each_block_is_fitted_as_newton_cg_fits_it_alone(preconditioner, warm, passes):
    stack, Ys, start = _problem()
    alpha0 = 0.1 * start if warm else None
    solver = NewtonCG(_options(preconditioner))
    res = solver.fit_blocks(stack, Softmax(), np.concatenate(Ys), alpha0=alpha0, plan=_plan(stack, passes))
    assert len(res.blocks) == 3
    for (rows, part), Y, fit in zip(stack.row_blocks, Ys, res.blocks):
        own = solver.fit(part, Softmax(), Y, alpha0=None if alpha0 is None else alpha0[rows], plan=_plan(part, passes))
        d, e = fit.diagnostics, own.diagnostics
        assert (d.iterations, d.cg_iterations, d.converged) == (e.iterations, e.cg_iterations, e.converged)
        assert fit.phi == pytest.approx(own.phi, rel=1e-12)
        np.testing.assert_allclose(fit.alpha, own.alpha, rtol=1e-7, atol=1e-9 * np.abs(own.alpha).max())
        assert d.mvm_count == e.mvm_count  # its own products: the blocks' product skips the blocks done
        assert d.phi == pytest.approx(e.phi, rel=1e-10) and d.step_sizes == pytest.approx(e.step_sizes, rel=1e-8)
    assert res.precond_basis is None or res.precond_basis.shape[0] == stack.n_points


def test_the_blocks_accumulation_solves_are_each_their_own():
    stack, Ys, b = _problem()
    u = 0.5 * b[::-1].copy()
    hf = Softmax().exact_hessian_factor(u, np.concatenate(Ys))
    solutions = solve_weighted_blocks(stack, hf, b, tol=1e-8, max_iter=40)
    for sol, (rows, part) in zip(solutions, stack.row_blocks):
        own = solve_weighted_system(part, hf.rows(rows), b[rows], tol=1e-8, max_iter=40)
        assert (sol.iterations, sol.mvms) == (own.iterations, own.mvms)
        np.testing.assert_allclose(sol.z, own.z, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("preconditioner", ["diagonal", "lowrank"])
def test_an_operator_without_row_blocks_is_one_block_fitted_as_fit_fits_it(preconditioner):
    stack, Ys, start = _problem()
    part, Y = stack.parts[1], Ys[1]
    alpha0 = 0.1 * start[stack.part_rows(1)]
    (fit,) = NewtonCG(_options(preconditioner)).fit_blocks(part, Softmax(), Y, alpha0=alpha0).blocks
    own = NewtonCG(_options(preconditioner)).fit(part, Softmax(), Y, alpha0=alpha0)
    np.testing.assert_array_equal(fit.alpha, own.alpha)
    assert fit.phi == own.phi and fit.diagnostics.phi == own.diagnostics.phi
    assert fit.diagnostics.mvm_trace == own.diagnostics.mvm_trace


def test_fit_on_a_stack_is_one_problem_and_exact_newton_fits_one_block():
    """``fit`` keeps F = 1 on an operator with row blocks (one Φ over all rows); exact Newton has no block
    axis, and progress calls report one fit."""
    stack, Ys, _ = _problem()
    Y = np.concatenate(Ys)
    whole = NewtonCG(_options("diagonal")).fit(stack, Softmax(), Y)
    blocks = NewtonCG(_options("diagonal")).fit_blocks(stack, Softmax(), Y).blocks
    assert whole.alpha.shape == (stack.n_points, C)
    assert whole.phi == pytest.approx(sum(b.phi for b in blocks), rel=1e-8)
    assert stack.is_class_diagonal  # what exact Newton needs, but not its row blocks
    with pytest.raises(InputError, match="one block"):
        ExactNewton(_options("diagonal")).fit_blocks(stack, Softmax(), Y)
    with pytest.raises(InputError, match="3 blocks"):
        stepper = NewtonCG(_options("diagonal")).stepper(stack, None, execution_plan.plan_for(stack), blocks=True)
        problem = NewtonProblem(Softmax(), Y, stepper.mvm, _options("diagonal"), stepper.offsets)
        newton_loop(problem, stepper, on_iteration=print)


pytest.importorskip("array_api_compat")
from device_backends import device_backends  # noqa: E402

from gpmodels.kernels.device.config import DeviceRepresentationConfig  # noqa: E402

BACKENDS, BACKEND_PARAMS = device_backends()


@pytest.mark.parametrize("solve_on_device", [False, True])
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_blocks_with_device_products_equal_the_host(backend, solve_on_device, monkeypatch):
    if solve_on_device:
        monkeypatch.setattr(execution_plan, "DEFAULT_RULES", PlanRules(device_cg_min_entries=0))
    host, Ys, b = _problem()
    dev, _, _ = _problem(DeviceRepresentationConfig(BACKENDS[backend](), kind="stored"))
    Y = np.concatenate(Ys)
    a, d = (NewtonCG(_options("lowrank")).fit_blocks(op, Softmax(), Y) for op in (host, dev))
    for x, y in zip(a.blocks, d.blocks):
        assert x.diagnostics.iterations == y.diagnostics.iterations
        assert y.phi == pytest.approx(x.phi, rel=1e-12)
    hf = Softmax().exact_hessian_factor(0.3 * b, Y)
    for x, y in zip(*(solve_weighted_blocks(op, hf, b, tol=1e-8, max_iter=40) for op in (host, dev))):
        np.testing.assert_allclose(y.z, x.z, rtol=1e-8, atol=1e-10)
