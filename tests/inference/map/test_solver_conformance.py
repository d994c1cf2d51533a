"""One conformance suite for the MAP solvers and one for the CG preconditioners.

Every solver of ``SOLVERS`` (Newton–CG, Alg. 1; exact Newton, App. C) reaches the dense optimum of
Φ and the same optimum as every other solver, on small flat softmax problems, through the shared
Newton loop, and solves the weighted system z = (I + W K̃)^{-1} W b of the CV accumulation, with the host's
passes as numpy's and, where Numba is installed, as the compiled row sweeps (the plan's ``sweeps``).
Every preconditioner of ``PRECONDITIONERS`` gives an apply P^{-1} that is symmetric positive
definite on the Newton system of eq. (5), for flat, ANOVA and coupled priors, and leaves the CG
solution of that system unchanged.  The completeness tests fail when a solver or a preconditioner is
added without a case here.
"""

import numpy as np
import pytest
from conftest import toy_classification
from oracles import dense_softmax_map

from gpmodels.hierarchy import ClassTree
from gpmodels.inference.execution_plan import Hardware, PlanRules, plan_for
from gpmodels.inference.map.exact_newton import ExactNewton
from gpmodels.inference.map.newton import PRECONDITIONER_NAMES, NewtonOptions
from gpmodels.inference.map.newton_cg import NewtonCG, newton_system
from gpmodels.inference.map.preconditioners import PRECONDITIONERS, make_preconditioner
from gpmodels.inference.map.solvers import SOLVERS, make_solver
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.linalg.arrays import HOST
from gpmodels.linalg.cg import cg
from gpmodels.linalg.compiled_loops import AVAILABLE as NUMBA
from gpmodels.linalg.counting import MVMCounter
from gpmodels.priors import ANOVAPrior, CoupledPrior, IndependentGP

TIGHT = NewtonOptions(max_iter=100, cg_max_iter=500, cg_tol=1e-13, cg_forcing=0.0, grad_tol=1e-10, phi_rtol=0.0)
TREE = [("r", "a"), ("r", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2"), ("b", "b3")]

#: small flat softmax problems every solver must solve: name -> (n, C, seed, operator factory)
FLAT_PROBLEMS = {
    "rbf-separate": (30, 3, 0, lambda X, C: IndependentGP(RBF(0.5), "separate", 2.0, 1.0).operator(X, C)),
    "rbf-tied-large-v": (24, 4, 1, lambda X, C: IndependentGP(RBF(0.3), "tied", 30.0, 0.5).operator(X, C)),
    "linear-semi": (20, 3, 2, lambda X, C: IndependentGP(Linear(), "semi", [0.5, 2.0, 1.0], 2.0).operator(X, C)),
}
#: the operators each preconditioner is checked on (C = 5 leaves of TREE)
PRECOND_OPERATORS = {
    "flat": lambda X, C, tree: IndependentGP(RBF(0.4), "separate", [1.0 + c for c in range(C)], 0.5).operator(X, C),
    "anova": lambda X, C, tree: ANOVAPrior(tree, Linear(), "level", [3.0, 1.5], sigma2=0.5).operator(X, C),
    "coupled": lambda X, C, tree: CoupledPrior(RBF(0.4), init="random", seed=2, variance=2.0, sigma2=0.3).operator(
        X, C
    ),
}


#: the host's passes over (n, C) vectors: numpy's, and the compiled row sweeps where Numba is installed
HOST_PASSES = [
    "numpy",
    pytest.param("compiled", marks=pytest.mark.skipif(not NUMBA, reason="the compiled sweeps need Numba (fast)")),
]


def _plan(op, passes: str):
    """The plan of a fit on ``op`` with the host's passes as ``passes`` asks, at every size."""
    hardware = Hardware(cores=1, compiled=passes == "compiled")
    plan = plan_for(op, hardware=hardware, rules=PlanRules(sweep_min_entries=0))
    assert plan.sweeps.choice == passes
    return plan


def _flat(name):
    n, C, seed, factory = FLAT_PROBLEMS[name]
    X, y = toy_classification(n, C, seed=seed)
    return factory(X, C), np.eye(C)[y]


def test_every_solver_and_preconditioner_has_a_case():
    assert set(SOLVERS) == {"newton-cg", "exact"} and {cls.name for cls in SOLVERS.values()} == set(SOLVERS)
    assert set(PRECONDITIONERS) == set(PRECONDITIONER_NAMES)


@pytest.mark.parametrize("passes", HOST_PASSES)
@pytest.mark.parametrize("problem", sorted(FLAT_PROBLEMS))
@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_every_solver_reaches_the_dense_optimum(name, problem, passes):
    op, Y = _flat(problem)
    res = make_solver(name, TIGHT).fit(op, Softmax(), Y, plan=_plan(op, passes))
    assert res.converged, res.diagnostics.message
    u_ref, phi_ref = dense_softmax_map(op.dense(), Y)
    np.testing.assert_allclose(res.u, u_ref, atol=1e-7 * max(1.0, np.abs(u_ref).max()))
    assert res.phi == pytest.approx(phi_ref, rel=1e-10)
    d = res.diagnostics
    assert len(d.phi) == len(d.grad_norm) == len(d.mvm_trace) == d.iterations + 1
    assert np.all(np.diff(d.phi) <= 1e-12 * np.abs(d.phi[:-1]))  # the shared loop only accepts decreases


@pytest.mark.parametrize("problem", sorted(FLAT_PROBLEMS))
def test_the_solvers_reach_the_same_optimum(problem):
    op, Y = _flat(problem)
    fits = {name: make_solver(name, TIGHT).fit(op, Softmax(), Y) for name in SOLVERS}
    ref = fits["exact"]
    for name, res in fits.items():
        assert res.phi == pytest.approx(ref.phi, rel=1e-11, abs=1e-9), name
        np.testing.assert_allclose(res.alpha, ref.alpha, atol=1e-7 * max(1.0, np.abs(ref.alpha).max()))


@pytest.mark.parametrize("passes", HOST_PASSES)
@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_every_solver_solves_the_weighted_system(name, passes):
    """z = (I + W K̃)^{-1} W b with W the exact Hessian (the CV accumulation solve, Sec. 5.2)."""
    op, Y = _flat("rbf-separate")
    n, C = Y.shape
    u = np.random.default_rng(3).normal(size=(n, C))
    hf = Softmax().exact_hessian_factor(u, Y)
    b = np.random.default_rng(4).normal(size=(n, C))
    sol = make_solver(name, TIGHT).solve_weighted(op, hf, b, tol=1e-13, max_iter=2000, plan=_plan(op, passes))
    E = np.eye(n * C).reshape(n, C, n * C)
    W = np.stack([hf.W(E[:, :, j]).ravel() for j in range(n * C)], axis=1)
    z = np.linalg.solve(np.eye(n * C) + W @ op.dense(), W @ b.ravel())
    np.testing.assert_allclose(sol.z.ravel(), z, atol=1e-9 * max(1.0, np.abs(z).max()))


def test_solvers_from_warm_starts_reach_the_cold_optimum():
    op, Y = _flat("rbf-separate")
    for solver in (NewtonCG(TIGHT), ExactNewton(TIGHT)):
        cold = solver.fit(op, Softmax(), Y)
        warm = solver.fit(op, Softmax(), Y, alpha0=0.5 * cold.alpha)
        assert warm.diagnostics.iterations <= cold.diagnostics.iterations
        np.testing.assert_allclose(warm.u, cold.u, atol=1e-8)


def _newton_system_at_random_state(kind, seed):
    tree = ClassTree(TREE)
    C = tree.n_classes
    X, _ = toy_classification(14, C, d=3, seed=seed)
    op = PRECOND_OPERATORS[kind](X, C, tree)
    r = np.random.default_rng(seed)
    Y = np.eye(C)[r.integers(0, C, X.shape[0])]
    u = r.normal(size=(X.shape[0], C))
    lik = Softmax()
    hf = lik.hessian_factor(u, Y)
    return op, hf, newton_system(hf, MVMCounter(op), u, lik.gradient(u, Y))


@pytest.mark.parametrize("kind", sorted(PRECOND_OPERATORS))
@pytest.mark.parametrize("name", sorted(PRECONDITIONERS))
def test_every_preconditioner_is_symmetric_positive_definite(name, kind):
    op, hf, system = _newton_system_at_random_state(kind, seed=5)
    apply = make_preconditioner(name, op, rank=4, seed=1).inverse(hf).on(HOST, hf)
    n, C = op.n_points, op.n_classes
    E = np.eye(n * C).reshape(n, C, n * C)
    free = hf.free.ravel()
    Pinv = np.stack([apply(E[:, :, j]).ravel() for j in range(n * C)], axis=1)[np.ix_(free, free)]
    np.testing.assert_allclose(Pinv, Pinv.T, atol=1e-10 * np.abs(Pinv).max())
    assert np.linalg.eigvalsh(0.5 * (Pinv + Pinv.T)).min() > 0


@pytest.mark.parametrize("kind", sorted(PRECOND_OPERATORS))
@pytest.mark.parametrize("name", sorted(PRECONDITIONERS))
def test_every_preconditioner_leaves_the_cg_solution_unchanged(name, kind):
    """Preconditioned CG to a tight residual gives the dense solution of (I + V^T K̃ V) β = rhs."""
    op, hf, system = _newton_system_at_random_state(kind, seed=6)
    n, C = op.n_points, op.n_classes
    E = np.eye(n * C).reshape(n, C, n * C)
    A = np.stack([system.matvec(E[:, :, j]).ravel() for j in range(n * C)], axis=1)
    free = hf.free.ravel()
    beta = np.zeros(n * C)
    beta[free] = np.linalg.solve(A[np.ix_(free, free)], system.rhs.ravel()[free])
    pc = make_preconditioner(name, op, rank=4, seed=1)
    res = cg(system.matvec, system.rhs, precondition=pc.inverse(hf).on(HOST, hf), tol=1e-13, max_iter=10 * n * C)
    assert res.converged[0]
    np.testing.assert_allclose(res.x.ravel(), beta, atol=1e-9 * max(1.0, np.abs(beta).max()))
