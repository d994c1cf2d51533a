"""Representation.contractions: e_j^T M f_j per column and d/dθ Σ_j w_j e_j^T M f_j, the two
parts of a gradient trace; the stored matrix computes both in one blocked pass from cached squared
distances while M is not built."""

import numpy as np
import pytest
from oracles import naive_gram

import gpmodels.kernels.stored_gram as reps
from gpmodels.kernels.rbf import RBF
from gpmodels.kernels.stored_gram import SqDistCache, StoredGram
from gpmodels.linalg.finite_differences import central_differences


@pytest.mark.parametrize("block_mb", [0.001, 4.0])  # many row blocks / one
def test_stored_contractions_from_sq_dists_match_the_dense_matrix(rng, monkeypatch, block_mb):
    monkeypatch.setattr(reps, "GRAD_BLOCK_MB", block_mb)
    n, m = 37, 4
    X = rng.normal(size=(n, 3))
    kernel = RBF(0.6)
    E, F, w = rng.normal(size=(n, m)), rng.normal(size=(n, m)), rng.random(m) + 0.5
    rep = StoredGram(X, kernel, sq_dists=SqDistCache(X))
    values, grad = rep.contractions(E, F, w)
    assert rep._M is None  # the blocked pass built no n x n matrix
    M = naive_gram(kernel, X, X)
    np.testing.assert_allclose(values, np.einsum("ij,ij->j", E, M @ F), rtol=1e-12)

    def weighted(theta):
        return float(np.sum(w * np.einsum("ij,ij->j", E, naive_gram(kernel.with_params(theta), X, X) @ F)))

    np.testing.assert_allclose(grad, central_differences(kernel.params, weighted, 1e-5), rtol=1e-6)
    built = StoredGram(X, kernel)  # M stored: the generic path gives the same numbers
    v2, g2 = built.contractions(E, F, w)
    np.testing.assert_allclose(v2, values, rtol=1e-12)
    np.testing.assert_allclose(g2, grad, rtol=1e-10)


def test_stored_contractions_on_threads_give_the_one_thread_numbers(rng, monkeypatch):
    # the row blocks run on as many threads as the BLAS may use, summed in the blocks' order
    from threadpoolctl import threadpool_limits

    import gpmodels.linalg.blas_threads as bt

    monkeypatch.setattr(reps, "GRAD_BLOCK_MB", 0.001)
    n, m = 53, 3
    X = rng.normal(size=(n, 4))
    E, F, w = rng.normal(size=(n, m)), rng.normal(size=(n, m)), rng.random(m) + 0.5
    rep = StoredGram(X, RBF(0.4), sq_dists=SqDistCache(X), dtype="float32")
    pools = []
    monkeypatch.setattr(reps, "thread_pool", lambda k: pools.append(k) or bt.thread_pool(k))
    monkeypatch.setattr(reps, "blas_threads", lambda: 3)
    values, grad = rep.contractions(E, F, w)
    assert pools == [3]
    monkeypatch.setattr(reps, "blas_threads", lambda: 1)
    with threadpool_limits(limits=1, user_api="blas"):
        v1, g1 = rep.contractions(E, F, w)
    assert pools == [3]  # one thread: no pool
    np.testing.assert_array_equal(values, v1)
    np.testing.assert_array_equal(grad, g1)
