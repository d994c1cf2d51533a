"""The eigen-approximations Q_t Λ_t Q_t^T of the Kronecker terms M_t of K̃ = Σ_t M_t ⊗ S_t that the deflating
preconditioners (``lowrank``, ``lowrank_block``: :mod:`gpmodels.inference.map.preconditioners`) take out:
how the requested rank is shared over the terms, and the randomized eigensolver of each term
(:mod:`gpmodels.linalg.randomized_eigh`), for one operator (:func:`term_eigenpairs`) or for every block of
a stack of independent operators at once (:func:`block_term_eigenpairs`, the lockstep CV folds: one product
of the stack's term per eigensolver step for all blocks, each block's eigenpairs its own).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpmodels.linalg.randomized_eigh import block_randomized_eigh
from gpmodels.operators.base import KronTerm

__all__ = ["RANGE_OVERSAMPLE", "block_term_eigenpairs", "deflated_terms", "term_eigenpairs"]

#: columns beyond the rank in the randomized eigensolver's subspace (Halko et al.'s oversampling p)
RANGE_OVERSAMPLE = 8


def deflated_terms(terms: Sequence[KronTerm]) -> list[KronTerm]:
    """The terms with a class matrix S_t other than zero (the others add nothing to deflate)."""
    return [t for t in terms if np.any(t.S != 0.0)]


def _ranks_and_widths(terms: Sequence[KronTerm], rank: int, n: int) -> tuple[list[int], list[int]]:
    """Each term's rank (its own bound where known, e.g. 1 for 1 1^T; else ``rank`` shared over the others)
    and the columns of its eigensolver's subspace."""
    flexible = [t for t in terms if t.rank is None]
    per_term = max(1, rank // max(1, len(flexible)))
    ranks = [per_term if t.rank is None else int(t.rank) for t in terms]
    return ranks, [min(n, r + RANGE_OVERSAMPLE) for r in ranks]


def _start_columns(start: np.ndarray | None, n: int, widths: list[int]) -> list[np.ndarray | None]:
    """Each term's columns of ``start`` (the ``basis`` of a preconditioner of a nearby operator: every term's
    subspace side by side), or None for all where it is another operator's or setting's."""
    if start is None or start.shape != (n, sum(widths)):
        return [None] * len(widths)
    offsets = np.cumsum([0] + widths)
    return [start[:, offsets[j] : offsets[j + 1]] for j in range(len(widths))]


def term_eigenpairs(
    terms: Sequence[KronTerm], n: int, rank: int, rng: np.random.Generator, start: np.ndarray | None = None
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(λ_t, Q_t, the subspace basis) of every term's M_t (n x n), one randomized eigensolver each in term
    order from ``rng``: (power iterations + 2) products of M_t, 2 from the columns of ``start``.  The one-block
    case of :func:`block_term_eigenpairs`."""
    plan = _ranks_and_widths(terms, rank, n)
    return _per_block([t.mvm for t in terms], (0, n), [plan], [rng], [_start_columns(start, n, plan[1])])[0]


def block_term_eigenpairs(
    stack_terms: Sequence[KronTerm],
    block_terms: Sequence[Sequence[KronTerm]],
    offsets: Sequence[int],
    rank: int,
    seed: int,
    starts: Sequence[np.ndarray | None],
) -> list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] | None:
    """Per block of rows ``offsets``, :func:`term_eigenpairs` of its terms ``block_terms[b]`` (from
    ``default_rng(seed)`` and ``starts[b]``), every eigensolver step one product of the stack's term
    diag(M_t^(1), ..., M_t^(F)) (``stack_terms``) for all blocks (:func:`block_randomized_eigh`); None where
    the stack's terms are not the blocks' (another count, or another S_t)."""
    stack_terms = deflated_terms(stack_terms)
    block_terms = [deflated_terms(terms) for terms in block_terms]
    for terms in block_terms:
        if len(terms) != len(stack_terms) or any(not np.array_equal(a.S, b.S) for a, b in zip(terms, stack_terms)):
            return None
    sizes = np.diff(np.asarray(offsets))
    plans = [_ranks_and_widths(terms, rank, int(n)) for terms, n in zip(block_terms, sizes)]
    columns = [_start_columns(s, int(n), widths) for s, n, (_, widths) in zip(starts, sizes, plans)]
    rngs = [np.random.default_rng(seed) for _ in block_terms]
    return _per_block([t.mvm for t in stack_terms], offsets, plans, rngs, columns)


def _per_block(mvms, offsets, plans, rngs, columns) -> list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """Per block of rows ``offsets``, the eigenpairs of every term (``mvms``, the stack's products) at the
    block's (ranks, widths) ``plans[b]`` from ``rngs[b]`` (one generator per block, taken in term order) and
    its start ``columns[b]``: each term's eigensolver steps one product for all blocks."""
    per_term = [
        block_randomized_eigh(
            mvm,
            offsets,
            [ranks[j] for ranks, _ in plans],
            rngs,
            oversample=RANGE_OVERSAMPLE,
            starts=[c[j] for c in columns],
        )
        for j, mvm in enumerate(mvms)
    ]
    return [[found[b] for found in per_term] for b in range(len(plans))]
