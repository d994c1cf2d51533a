"""Preconditioners of the Newton systems: exactness where they must be exact, and Newton–CG
with each of them against dense / exact references, for flat, ANOVA and coupled priors."""

import numpy as np
import pytest
from conftest import toy_classification
from hypothesis import given
from hypothesis import strategies as st
from oracles import dense_softmax_map
from tree_strategies import random_trees

from gpmodels.errors import InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.inference.map.exact_newton import exact_newton
from gpmodels.inference.map.newton_cg import NewtonOptions, newton_cg
from gpmodels.inference.map.preconditioners import make_preconditioner
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.linalg.arrays import HOST
from gpmodels.priors import ANOVAPrior, CoupledPrior, IndependentGP

TREE = [
    ("r", "a"),
    ("r", "b"),
    ("r", "c"),
    ("a", "a1"),
    ("a", "a2"),
    ("a2", "x"),
    ("a2", "y"),
    ("b", "b1"),
    ("b", "b2"),
    ("b", "b3"),
]


def _separate(X, C):
    """Separate kernels that really differ: C distinct kernel matrices (C Kronecker terms)."""
    op = IndependentGP(RBF(0.3), "separate", 2.0, 0.5).operator(X, C)
    theta = op.params.copy()
    theta[:C] += np.linspace(-0.5, 0.5, C)
    return op.with_params(theta)


def _operators(X, C, tree):
    return {
        "flat": IndependentGP(RBF(0.3), "semi", [2.0 + c for c in range(C)], 0.5).operator(X, C),
        "separate": _separate(X, C),
        "anova": ANOVAPrior(tree, Linear(), "level", [4.0, 2.0, 1.0], sigma2=0.5).operator(X, C),
        "coupled": CoupledPrior(RBF(0.3), init="random", seed=3, variance=3.0, sigma2=0.2).operator(X, C),
        "loadings": CoupledPrior(RBF(0.3), n_factors=3, tree=tree, variance=3.0).operator(X, C),
    }


def _dense_system(op, hf):
    n, C = op.n_points, op.n_classes
    E = np.eye(n * C).reshape(n, C, n * C)
    V = np.stack([hf.V(E[:, :, j]).ravel() for j in range(n * C)], axis=1)
    return np.eye(n * C) + V.T @ op.dense() @ V, E


def _state(n, C, seed):
    r = np.random.default_rng(seed)
    return r.normal(size=(n, C)) * 3.0, np.eye(C)[r.integers(0, C, n)]


@pytest.mark.parametrize("precond", ["lowrank", "lowrank_block"])
@pytest.mark.parametrize("kind", ["flat", "separate", "anova", "coupled", "loadings"])
def test_lowrank_with_full_rank_is_the_exact_inverse(kind, precond):
    """With rank >= n the eigen-split is exact (R = 0, D = 1): P is the system matrix itself."""
    tree = ClassTree(TREE)
    X, _ = toy_classification(9, tree.n_classes, d=3, seed=1)
    op = _operators(X, tree.n_classes, tree)[kind]
    U, Y = _state(9, tree.n_classes, 0)
    hf = Softmax().hessian_factor(U, Y)
    A, E = _dense_system(op, hf)
    apply = make_preconditioner(precond, op, rank=10 * 9 * tree.n_classes).inverse(hf).on(HOST, hf)
    Pinv = np.stack([apply(E[:, :, j]).ravel() for j in range(A.shape[0])], axis=1)
    np.testing.assert_allclose(Pinv @ A, np.eye(A.shape[0]), atol=1e-7)


@pytest.mark.parametrize("kind", ["separate", "anova", "coupled"])
def test_lowrank_ways_of_forming_the_small_system_agree(kind):
    """Z^T B^{-1} Z from L's rows (built with or without the stacked F_k), from batched pairs of
    equal-shaped F_k, or from the block-diagonal F_big: the computations of one preconditioner."""
    tree = ClassTree(TREE)
    X, _ = toy_classification(11, tree.n_classes, d=3, seed=4)
    op = _operators(X, tree.n_classes, tree)[kind]
    U, Y = _state(11, tree.n_classes, 2)
    hf = Softmax().hessian_factor(U, Y)
    _, E = _dense_system(op, hf)
    pc = make_preconditioner("lowrank", op, rank=6)
    stack = pc.F_stack

    def inverse(rows, stacked):
        pc.F_stack = stack if stacked else None
        pc.use_rows(rows)
        apply = pc.inverse(hf).on(HOST, hf)
        return np.stack([apply(E[:, :, j]).ravel() for j in range(E.shape[2])], axis=1)

    ref = inverse(False, False)
    np.testing.assert_allclose(inverse(True, False), ref, atol=1e-10)
    if stack is not None:
        np.testing.assert_allclose(inverse(False, True), ref, atol=1e-10)
        np.testing.assert_allclose(inverse(True, True), ref, atol=1e-10)


@given(edges=random_trees(max_nodes=7), seed=st.integers(0, 2**31 - 1), rank=st.integers(1, 4), blocks=st.booleans())
def test_lowrank_is_the_woodbury_inverse_of_its_splitting(edges, seed, rank, blocks):
    """Low rank: P^{-1} is the inverse of B + V^T L L^T V with B = diag(I + V^T (K - L L^T) V)
    (``lowrank``) or its per-point C x C blocks (``lowrank_block``)."""
    tree = ClassTree(edges)
    r = np.random.default_rng(seed)
    n, C = 6, tree.n_classes
    X = r.normal(size=(n, 2))
    op = ANOVAPrior(tree, RBF(0.7), "node", list(r.random(tree.n_nodes) + 0.5), sigma2=0.3).operator(X, C)
    U, Y = _state(n, C, seed)
    hf = Softmax().hessian_factor(U, Y)
    A, E = _dense_system(op, hf)
    pc = make_preconditioner("lowrank_block" if blocks else "lowrank", op, rank=rank, seed=seed)
    Pinvs = []
    for rows in (False, True):  # both ways of forming Z^T B^{-1} Z give the same P^{-1}
        pc.use_rows(rows)
        apply = pc.inverse(hf).on(HOST, hf)
        Pinvs.append(np.stack([apply(E[:, :, j]).ravel() for j in range(n * C)], axis=1))
    np.testing.assert_allclose(Pinvs[0], Pinvs[1], atol=1e-10)
    Pinv = Pinvs[1]
    np.testing.assert_allclose(Pinv, Pinv.T, atol=1e-10)
    low = sum(np.kron(np.outer(a, a), F @ F.T) for a, F in zip(pc.A.T, pc.F))
    Vd = np.stack([hf.V(E[:, :, j]).ravel() for j in range(n * C)], axis=1)
    Rsys = np.eye(n * C) + Vd.T @ (op.dense() - low) @ Vd
    if blocks:
        B = np.zeros_like(Rsys)
        for i in range(n):
            s = slice(i * C, (i + 1) * C)
            B[s, s] = Rsys[s, s]
    else:
        B = np.diag(np.maximum(np.diag(Rsys), 1.0))
    P = B + Vd.T @ low @ Vd
    np.testing.assert_allclose(Pinv @ P, np.eye(n * C), atol=1e-8)
    assert np.linalg.eigvalsh(op.dense() - low).min() > -1e-8  # the split keeps R PSD


def test_block_preconditioner_blocks_are_the_dense_point_blocks():
    tree = ClassTree(TREE)
    X, _ = toy_classification(7, tree.n_classes, d=3, seed=2)
    op = _operators(X, tree.n_classes, tree)["anova"]
    U, Y = _state(7, tree.n_classes, 1)
    hf = Softmax().hessian_factor(U, Y)
    A, _ = _dense_system(op, hf)
    n, C = op.n_points, op.n_classes
    blocks = hf.precond_blocks(op.point_blocks())
    expect = A.reshape(n, C, n, C)[np.arange(n), :, np.arange(n), :]
    np.testing.assert_allclose(blocks, expect, atol=1e-10)
    np.testing.assert_allclose(np.einsum("icc->ic", blocks), hf.precond_diag(op.diag(), op.point_block_mvm), atol=1e-10)


def test_lowrank_preconditioner_reuses_a_start_basis():
    """``basis`` of one preconditioner starts the next on the same points (2 MVMs per term); a basis
    of the wrong shape is ignored."""
    tree = ClassTree(TREE)
    X, _ = toy_classification(30, tree.n_classes, d=3, seed=5)
    op = _operators(X, tree.n_classes, tree)["separate"]
    first = make_preconditioner("lowrank", op, rank=6)
    assert first.basis is not None and first.basis.shape[0] == 30
    again = make_preconditioner("lowrank", op, rank=6, start=first.basis)
    np.testing.assert_allclose(np.sum(again.A**2, axis=0), np.sum(first.A**2, axis=0), rtol=1e-2)  # the λ_tj
    wrong = make_preconditioner("lowrank", op, rank=6, start=first.basis[:, :-1])  # ignored: a fresh start
    np.testing.assert_allclose(wrong.A, first.A)


@pytest.mark.parametrize("kind", ["flat", "separate", "anova", "coupled", "loadings"])
@pytest.mark.parametrize("precond", ["diagonal", "block", "lowrank", "lowrank_block"])
def test_newton_cg_with_each_preconditioner_reaches_the_dense_optimum(kind, precond):
    tree = ClassTree(TREE)
    X, y = toy_classification(14, tree.n_classes, d=3, seed=4)
    op = _operators(X, tree.n_classes, tree)[kind]
    Y = np.eye(tree.n_classes)[y]
    res = newton_cg(
        op,
        Softmax(),
        Y,
        NewtonOptions(
            max_iter=60, cg_max_iter=300, grad_tol=1e-9, phi_rtol=0.0, preconditioner=precond, precond_rank=3
        ),
    )
    assert res.converged, res.diagnostics.message
    u, phi = dense_softmax_map(op.dense(), Y)
    assert res.phi == pytest.approx(phi, rel=1e-9)
    np.testing.assert_allclose(res.u, u, atol=1e-6)


def test_the_flat_default_path_is_unchanged_and_lowrank_falls_back_without_kron_form():
    X, y = toy_classification(30, 3, seed=0)
    op = IndependentGP(RBF(0.5), "separate", 4.0, 1.0).operator(X, 3)
    Y = np.eye(3)[y]
    ref = exact_newton(op, Softmax(), Y, NewtonOptions(grad_tol=1e-10))
    for pc in ("diagonal", "lowrank"):
        res = newton_cg(op, Softmax(), Y, NewtonOptions(grad_tol=1e-10, preconditioner=pc))
        np.testing.assert_allclose(res.u, ref.u, atol=1e-7)

    class NoKron(type(op)):
        def _kron_terms(self):
            return None

    pc = make_preconditioner("lowrank", NoKron(op.inner, op.sigma2))
    assert pc.name == "diagonal" and not pc.forcing_in_alpha_space  # no Kronecker form: the diagonal
    with pytest.raises(InputError, match="preconditioner must be one of"):
        NewtonOptions(preconditioner="ilu")
    with pytest.raises(InputError, match="preconditioner must be one of"):
        make_preconditioner("ilu", op)


def test_auto_deflates_from_lowrank_min_points_on(monkeypatch):
    """``auto`` is the diagonal on small problems and ``lowrank`` from the plan's ``lowrank_min_points``
    points on (both sides built here by moving the threshold); either way the fit reaches the same optimum."""
    from gpmodels.inference import execution_plan as E

    X, y = toy_classification(30, 3, seed=1)
    op = _separate(X, 3)
    at = E.DEFAULT_RULES.lowrank_min_points
    assert make_preconditioner("auto", op).name == ("lowrank" if op.n_points >= at else "diagonal")
    opts = NewtonOptions(max_iter=60, grad_tol=1e-10, phi_rtol=0.0, preconditioner="auto")
    fits = {}
    for threshold, expect in [(31, "diagonal"), (30, "lowrank")]:
        monkeypatch.setattr(E, "DEFAULT_RULES", E.PlanRules(lowrank_min_points=threshold))
        assert make_preconditioner("auto", op).name == expect
        assert E.plan_for(op).preconditioner.choice == expect
        fits[expect] = newton_cg(op, Softmax(), np.eye(3)[y], opts)
    np.testing.assert_allclose(fits["diagonal"].u, fits["lowrank"].u, atol=1e-7)
    assert fits["diagonal"].diagnostics.mvm_count != fits["lowrank"].diagnostics.mvm_count


@pytest.mark.parametrize("kind", ["separate", "anova"])
def test_lowrank_pair_sums_are_the_plain_weighted_sums(kind):
    """Σ_i a_ik a_il G_i from the upper triangles (pairs k <= l, entries c <= d) equals the plain sum over
    all pairs and entries, for symmetric G_i, also when the pair weights are rebuilt (not kept)."""
    tree = ClassTree(TREE)
    X, _ = toy_classification(13, tree.n_classes, d=3, seed=5)
    op = _operators(X, tree.n_classes, tree)[kind]
    pc = make_preconditioner("lowrank", op, rank=5)
    B = np.random.default_rng(0).normal(size=(13, tree.n_classes, tree.n_classes))
    G = B + np.swapaxes(B, 1, 2)
    expect = np.einsum("ik,il,icd->klcd", pc.A, pc.A, G)
    np.testing.assert_allclose(pc._pair_sums(G), expect, rtol=1e-12, atol=1e-12)
    assert pc._AA is not None  # kept for the next Newton iteration
    pc._AA = None
    np.testing.assert_allclose(pc._pair_sums(G), expect, rtol=1e-12, atol=1e-12)
