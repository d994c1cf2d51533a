"""Preconditioners per block of points (``Operator.row_blocks``): on stacked independent operators the
deflating preconditioners are each block's own, on the host and on a device."""

import numpy as np
import pytest
from opaque_factor import OpaqueFactor

from gpmodels.errors import InputError
from gpmodels.inference import execution_plan
from gpmodels.inference.execution_plan import PlanRules
from gpmodels.inference.map.preconditioners import (
    DiagonalPreconditioner,
    LowRankPreconditioner,
    make_preconditioner,
)
from gpmodels.inference.map.row_blocks import RowBlocksPreconditioner
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.linalg.arrays import HOST
from gpmodels.operators.base import KronTerm
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.intercept import Intercept
from gpmodels.operators.stacked import Stacked

C = 3


def _stack(representation=None, through=False):
    """Three restrictions of one operator stacked: its restricted copies, or (``through``) views multiplied
    through it; the Hessian factor of random latents and a residual."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 2))
    op = Intercept(
        BlockDiagonal(
            X, [RBF(0.5), RBF(1.0), RBF(2.0)], [0, 1, 2], [2.0, 1.0, 3.0], [0, 1, 2], representation=representation
        ),
        2.0,
    )
    sets = [rng.permutation(40)[:m] for m in (30, 25, 33)]
    stack = Stacked.restrictions(op, sets) if through else Stacked([op.restrict(J) for J in sets])
    U = rng.normal(size=(stack.n_points, C))
    Y = np.eye(C)[rng.integers(0, C, stack.n_points)]
    return stack, Softmax().hessian_factor(U, Y), rng.normal(size=(stack.n_points, C))


def _on_host(precond, hf, r):
    """P^{-1} r of ``precond`` at the factor ``hf``, on the host."""
    return precond.inverse(hf).on(HOST, hf)(r)


@pytest.mark.parametrize("name", ["lowrank", "lowrank_block"])
def test_a_deflating_preconditioner_of_a_stack_is_each_blocks_own(name):
    stack, hf, r = _stack()
    P = make_preconditioner(name, stack, rank=4, seed=2)
    assert isinstance(P, RowBlocksPreconditioner) and P.forcing_in_alpha_space
    expect = []
    for rows, part in stack.row_blocks:
        own = make_preconditioner(name, part, rank=4, seed=2)
        expect.append(_on_host(own, hf.rows(rows), r[rows]))
    np.testing.assert_allclose(_on_host(P, hf, r), np.concatenate(expect), rtol=1e-12)
    assert P.basis.shape[0] == stack.n_points  # the blocks' subspaces row after row: the next fit's start
    again = make_preconditioner(name, stack, rank=4, seed=2, start=P.basis)
    for (rows, part), (_, block) in zip(stack.row_blocks, again.blocks):  # each block starts from its rows
        own = make_preconditioner(name, part, rank=4, seed=2, start=P.basis[rows])
        np.testing.assert_allclose(_on_host(block, hf.rows(rows), r[rows]), _on_host(own, hf.rows(rows), r[rows]))


def test_the_blocks_eigensolvers_share_each_product_of_the_base_operator(monkeypatch):
    """On restrictions multiplied through their operator (CV's stack), each block's preconditioner is the one
    it gets alone, while its eigensolvers take one product of the operator's Kronecker term for all blocks per
    step: 4 per term (2 from the previous fit's subspaces), where the blocks one by one take 4 (2) each."""
    through, hf, r = _stack(through=True)
    op = through.products.base
    products = []  # (term, columns) of every product of the operator's own terms
    real_terms = op.kron_terms

    def counted_terms():
        def spy(j, mvm):
            return lambda B: products.append((j, B.shape[1])) or mvm(B)

        return [KronTerm(spy(j, t.mvm), t.S, t.rank) for j, t in enumerate(real_terms())]

    monkeypatch.setattr(op, "kron_terms", counted_terms)
    P = make_preconditioner("lowrank", through, rank=4, seed=2)
    n_terms = len(real_terms())
    assert sorted(j for j, _ in products) == sorted(list(range(n_terms)) * 4)
    # every term here has rank 1 (4 // 3 for each kernel's, 1 for the intercept's): 9 columns a block, 3 blocks
    assert {c for _, c in products} == {3 * (1 + 8)}
    for (rows, part), (_, block) in zip(through.row_blocks, P.blocks):
        own = make_preconditioner("lowrank", part, rank=4, seed=2)
        np.testing.assert_allclose(_on_host(block, hf.rows(rows), r[rows]), _on_host(own, hf.rows(rows), r[rows]))
    products.clear()
    again = make_preconditioner("lowrank", through, rank=4, seed=2, start=P.basis)
    assert len(products) == 2 * n_terms
    for (rows, part), (_, block) in zip(through.row_blocks, again.blocks):
        own = make_preconditioner("lowrank", part, rank=4, seed=2, start=P.basis[rows])
        np.testing.assert_allclose(_on_host(block, hf.rows(rows), r[rows]), _on_host(own, hf.rows(rows), r[rows]))


def test_the_diagonal_preconditioners_stay_whole():
    stack, hf, r = _stack()
    P = make_preconditioner("diagonal", stack)
    assert isinstance(P, DiagonalPreconditioner)


def test_auto_decides_by_the_largest_block(monkeypatch):
    stack, _, _ = _stack()
    monkeypatch.setattr(execution_plan, "DEFAULT_RULES", PlanRules(lowrank_min_points=33))
    P = make_preconditioner("auto", stack, rank=4)
    assert isinstance(P, RowBlocksPreconditioner) and all(isinstance(p, LowRankPreconditioner) for _, p in P.blocks)
    monkeypatch.setattr(execution_plan, "DEFAULT_RULES", PlanRules(lowrank_min_points=34))
    assert isinstance(make_preconditioner("auto", stack, rank=4), DiagonalPreconditioner)  # not 88 stacked points


def test_a_factor_without_rows_is_a_clear_error():
    stack, hf, _ = _stack()
    with pytest.raises(InputError, match="does not give its rows.*'diagonal'.*folds_per_fit 1"):
        make_preconditioner("lowrank", stack, rank=4).inverse(OpaqueFactor(hf))


pytest.importorskip("array_api_compat")
from device_backends import CountingBackend, device_backends  # noqa: E402

from gpmodels.kernels.device.config import DeviceRepresentationConfig  # noqa: E402

BACKENDS, BACKEND_PARAMS = device_backends()


@pytest.mark.parametrize("name", ["lowrank", "lowrank_block"])
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_the_blocks_preconditioner_on_a_device_equals_the_host_one(backend, name):
    """The blocks' inverses joined into one Woodbury application on the device (``lowrank``: diagonal B
    concatenated; ``lowrank_block``: its per-point blocks), set up on the host or with H's products there."""
    be = BACKENDS[backend]()
    stack, hf, r = _stack(DeviceRepresentationConfig(be, kind="stored"))
    P = make_preconditioner(name, stack, rank=4, seed=2)
    expected = _on_host(P, hf, r)
    for setup in (HOST, be):
        on_device = P.inverse(hf, setup).on(be, hf.on(be))
        np.testing.assert_allclose(be.to_host(on_device(be.from_host(r))), expected, rtol=1e-10)
        np.testing.assert_allclose(P.inverse(hf, setup).on(HOST, hf)(r), expected, rtol=1e-12)
    assert "factors" in P._joined


def test_the_blocks_small_systems_are_one_product_on_the_set_up_arrays():
    """``lowrank`` blocks with L's rows: the H_k = I + Y_k^T Y_k of all blocks from one batched product over their
    rows joined on the set-up's arrays (one upload of the W_i and one download of the H_k per Newton iteration),
    equal bit for bit on the host to each block's own set-up."""
    stack, hf, r = _stack()
    P = make_preconditioner("lowrank", stack, rank=4, seed=2)
    for _, part in P.blocks:
        part.use_rows(True)  # Y_i = W_i^T L_i from L's rows (what _rows_cheaper picks where the F_k have few columns)
    be = CountingBackend()
    P.inverse(hf, be)  # the first joins the blocks' rows there, once for the fit
    before = (be.uploads, be.downloads)
    on_device = P.inverse(hf, be)
    assert (be.uploads - before[0], be.downloads - before[1]) == (1, 1)
    for (rows, part), (_, joint), (_, there) in zip(P.blocks, P.inverse(hf).parts, on_device.parts):
        own = part.inverse(hf.rows(rows))
        np.testing.assert_array_equal(joint.H[0], own.H[0])
        np.testing.assert_allclose(there.H[0], own.H[0], rtol=1e-12)
    np.testing.assert_allclose(_on_host(P, hf, r), P.inverse(hf, be).on(HOST, hf)(r), rtol=1e-12)


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_blocks_of_several_kinds_apply_side_by_side_on_a_device(backend):
    """A ``lowrank`` block beside ``diagonal`` ones: nothing to join, each block's own inverse on its rows."""
    be = BACKENDS[backend]()
    stack, hf, r = _stack(DeviceRepresentationConfig(be, kind="stored"))
    (rows, first), *rest = stack.row_blocks
    parts = [(rows, make_preconditioner("lowrank", first, rank=4))] + [(s, DiagonalPreconditioner(p)) for s, p in rest]
    P = RowBlocksPreconditioner(parts)
    expect = np.concatenate([_on_host(p, hf.rows(s), r[s]) for s, p in parts])
    np.testing.assert_allclose(_on_host(P, hf, r), expect, rtol=1e-12)
    on_device = P.inverse(hf).on(be, hf.on(be))
    np.testing.assert_allclose(be.to_host(on_device(be.from_host(r))), expect, rtol=1e-10)
    assert not P._joined


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_joined_blocks_with_one_factor_shape_equal_the_host(backend):
    """A flat prior without the intercept: every F_k of one shape, the stacked form of the joined factors."""
    be = BACKENDS[backend]()
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 2))
    op = BlockDiagonal(
        X,
        [RBF(0.7), RBF(1.3), RBF(0.4)],
        [0, 1, 2],
        [1.0, 2.0, 3.0],
        [0, 1, 2],
        representation=DeviceRepresentationConfig(be, kind="stored"),
    )
    stack = Stacked([op.restrict(rng.permutation(30)[:m]) for m in (20, 26)])
    hf = Softmax().hessian_factor(rng.normal(size=(46, C)), np.eye(C)[rng.integers(0, C, 46)])
    P = make_preconditioner("lowrank", stack, rank=3, seed=1)
    assert all(p.F_stack is not None for _, p in P.blocks)
    r = rng.normal(size=(46, C))
    got = be.to_host(P.inverse(hf).on(be, hf.on(be))(be.from_host(r)))
    assert P._joined["factors"].arrays[1].ndim == 3  # the stacked form
    np.testing.assert_allclose(got, _on_host(P, hf, r), rtol=1e-10)
