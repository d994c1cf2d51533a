"""The randomized eigensolver (Halko et al. 2011) of one matrix and of the diagonal blocks of a block-diagonal
one in lockstep."""

import numpy as np
import pytest

from gpmodels.linalg.randomized_eigh import block_randomized_eigh, randomized_eigh


def test_randomized_eigh_finds_the_leading_eigenpairs(rng):
    Q, _ = np.linalg.qr(rng.normal(size=(60, 60)))
    lam = 100.0 * 0.5 ** np.arange(60)
    M = (Q * lam) @ Q.T
    got, vecs, basis = randomized_eigh(lambda B: M @ B, 60, 5, rng)
    np.testing.assert_allclose(got, lam[:5], rtol=1e-8)
    np.testing.assert_allclose(np.abs(vecs.T @ Q[:, :5]), np.eye(5), atol=1e-6)
    np.testing.assert_allclose(basis.T @ basis, np.eye(13), atol=1e-12)  # rank + oversampling, orthonormal


def test_randomized_eigh_from_a_nearby_subspace_costs_two_products(rng):
    """Started from the subspace of a nearby matrix, one subspace iteration (2 products) finds the
    new leading eigenpairs as accurately as 2 power iterations from a random start (4 products)."""
    Q, _ = np.linalg.qr(rng.normal(size=(80, 80)))
    lam = 100.0 * 0.6 ** np.arange(80)
    M = (Q * lam) @ Q.T
    _, _, basis = randomized_eigh(lambda B: M @ B, 80, 6, rng)
    R, _ = np.linalg.qr(Q + 0.02 * rng.normal(size=(80, 80)))  # the next evaluation's matrix
    M2 = (R * lam * 1.1) @ R.T
    calls = []

    def mvm(B):
        calls.append(B.shape[1])
        return M2 @ B

    got, vecs, _ = randomized_eigh(mvm, 80, 6, rng, start=basis)
    assert len(calls) == 2
    cold, _, _ = randomized_eigh(lambda B: M2 @ B, 80, 6, np.random.default_rng(1))
    exact = 1.1 * lam[:6]
    assert np.max(np.abs(got - exact) / exact) <= max(2 * np.max(np.abs(cold - exact) / exact), 1e-6)
    np.testing.assert_allclose(np.abs(vecs.T @ R[:, :6]), np.eye(6), atol=1e-3)


def _spectrum(rng, n, decay):
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return (Q * (10.0 * decay ** np.arange(n))) @ Q.T


@pytest.mark.parametrize("started", [(), (0, 2), (0, 1, 2)])
def test_the_blocks_eigensolvers_in_lockstep_are_each_blocks_own(rng, started):
    """Each block's eigenpairs and basis are those of randomized_eigh on that block alone, from the same
    generator state and start; block 1 is smaller than rank + oversample (fewer columns, zero beyond them);
    every product covers all blocks: power iterations + 2 of them, 2 where every block is started."""
    Ms = [_spectrum(rng, n, d) for n, d in ((30, 0.6), (9, 0.5), (25, 0.7))]
    offsets = np.cumsum([0] + [M.shape[0] for M in Ms])
    ranks = [5, 4, 6]
    cold = [randomized_eigh(lambda B, M=M: M @ B, M.shape[0], r, np.random.default_rng(3)) for M, r in zip(Ms, ranks)]
    starts = [cold[b][2] if b in started else None for b in range(3)]
    expect = [
        randomized_eigh(lambda B, M=M: M @ B, M.shape[0], r, np.random.default_rng(7), start=s)
        for M, r, s in zip(Ms, ranks, starts)
    ]
    calls = []

    def mvm(X):
        calls.append(X.shape)
        return np.concatenate([M @ X[offsets[b] : offsets[b + 1]] for b, M in enumerate(Ms)])

    rngs = [np.random.default_rng(7) for _ in Ms]
    got = block_randomized_eigh(mvm, offsets, ranks, rngs, starts=starts)
    assert calls == [(64, 14)] * (2 if len(started) == 3 else 4)
    for (lam, vecs, basis), (lam0, vecs0, basis0) in zip(got, expect):
        np.testing.assert_allclose(lam, lam0, rtol=1e-12)
        np.testing.assert_allclose(vecs, vecs0, atol=1e-10)
        np.testing.assert_allclose(basis, basis0, atol=1e-10)
    assert got[1][2].shape == (9, 9)
