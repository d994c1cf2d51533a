"""Leading eigenpairs of a symmetric PSD matrix given only by its products (Halko, Martinsson & Tropp 2011):
of every diagonal block of a block-diagonal one at once (:func:`block_randomized_eigh`), each block's
iterates those of the block alone while every product covers all blocks, and of one matrix, its one-block
case (:func:`randomized_eigh`): the eigensolvers of the lockstep CV folds' preconditioners, one
product of K̃'s Kronecker term with a column block per fold
(:meth:`~gpmodels.operators.stacked.Stacked.restrictions`) where the folds one by one take one each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["block_randomized_eigh", "randomized_eigh"]


def _rayleigh_ritz(Q: np.ndarray, MQ: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``rank`` leading Ritz pairs (λ, Q U) of M on the orthonormal basis Q, from MQ = M Q; eigenvalues
    below 1e-12 of the largest dropped."""
    T = Q.T @ MQ
    lam, U = np.linalg.eigh(0.5 * (T + T.T))
    order = np.argsort(lam)[::-1][: min(rank, Q.shape[1])]
    lam, U = lam[order], U[:, order]
    keep = lam > 1e-12 * max(float(lam[0]) if lam.size else 0.0, np.finfo(float).tiny)
    return lam[keep], np.ascontiguousarray(Q @ U[:, keep])


def randomized_eigh(
    mvm: Callable[[np.ndarray], np.ndarray],
    n: int,
    rank: int,
    rng: np.random.Generator,
    *,
    oversample: int = 8,
    power_iters: int = 2,
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leading eigenpairs (λ (r,), Q (n, r)) of a symmetric PSD n x n matrix given by B -> M B, and
    the orthonormal basis (n, k) of the subspace they were taken from, k = rank + oversample.

    Randomized range finder with ``power_iters`` subspace iterations and a Rayleigh–Ritz step
    (Halko et al. 2011, Alg. 4.4 and 5.3); eigenvalues below 1e-12 of the largest are
    dropped.  Costs (power_iters + 2) MVMs with k columns.  ``start``: a basis (n, k) of a nearby
    matrix's leading subspace (the previous call's third result): the range is then one subspace
    iteration from it (Alg. 4.4 with the start in place of the Gaussian test matrix and no further
    power iterations), 2 MVMs.  The one-block case of :func:`block_randomized_eigh`.
    """
    found = block_randomized_eigh(
        mvm, (0, n), (rank,), (rng,), oversample=oversample, power_iters=power_iters, starts=(start,)
    )
    return found[0]


def block_randomized_eigh(
    mvm: Callable[[np.ndarray], np.ndarray],
    offsets: Sequence[int],
    ranks: Sequence[int],
    rngs: Sequence[np.random.Generator],
    *,
    oversample: int = 8,
    power_iters: int = 2,
    starts: Sequence[np.ndarray | None] | None = None,
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The leading eigenpairs of every diagonal block M_b of M = diag(M_1, ..., M_F), given by B (N, m) -> M B
    over the rows ``offsets`` cut into blocks, by :func:`randomized_eigh`'s algorithm on each: block b's
    result (rank ``ranks[b]``, its test matrix drawn from ``rngs[b]``, its ``starts[b]``) is the one it gives
    on M_b alone, while every product covers all blocks: each block's k_b columns in its rows of one
    (N, max k_b) array, zero beyond them and for a block with nothing left to do in that product (a started
    block skips the power iterations).  (power_iters + 2) products, 2 where every block has a start."""
    offsets = np.asarray(offsets, dtype=np.intp)
    sizes = np.diff(offsets)
    rows = [slice(int(offsets[b]), int(offsets[b + 1])) for b in range(sizes.size)]
    widths = [int(min(n, r + oversample)) for n, r in zip(sizes, ranks)]
    starts = [None] * sizes.size if starts is None else list(starts)
    started = [s is not None and s.shape == (n, k) for s, n, k in zip(starts, sizes, widths)]
    m = max(widths)

    def product(blocks: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        X = np.zeros((int(offsets[-1]), m))
        for b, B in blocks.items():
            X[rows[b], : widths[b]] = B
        Y = mvm(X)
        return {b: Y[rows[b], : widths[b]] for b in blocks}

    Y = product({b: starts[b] if started[b] else rngs[b].standard_normal((n, widths[b])) for b, n in enumerate(sizes)})
    cold = [b for b in range(sizes.size) if not started[b]]
    for _ in range(power_iters if cold else 0):
        Y.update(product({b: np.linalg.qr(Y[b])[0] for b in cold}))
    Qs = {b: np.linalg.qr(Y[b])[0] for b in range(sizes.size)}
    MQ = product(Qs)
    return [(*_rayleigh_ritz(Qs[b], MQ[b], ranks[b]), Qs[b]) for b in range(sizes.size)]
