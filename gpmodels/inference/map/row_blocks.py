"""A Newton–CG preconditioner per block of points: P = diag(P_1, ..., P_F) for an operator made of
independent operators on separate points (``Operator.row_blocks``, e.g. the stacked folds of CV,
:class:`~gpmodels.operators.stacked.Stacked`).

The Newton system of such an operator is block-diagonal over the same row ranges (the likelihood is per
point, so V is too), and each block's preconditioner is the one the block would get alone, built on its
operator and applied with its rows of the Hessian factor (``HessianFactor.rows``).  A deflating
preconditioner (``lowrank``) on the whole stack instead would take its eigenvectors across the blocks:
to keep r of them per block it needs F r, and its set-up costs grow with (F r)^2 (on satimage's five
folds, rank 32 each: 25 of the 33 s of one evaluation under cProfile, against 6.1 s for the whole
evaluation with one preconditioner per fold).  On a device the blocks' inverses are applied as one:
diagonals and per-point blocks concatenated, the ``lowrank`` eigenvectors block-diagonal, their factors and
small systems joined (``join`` of each kind of inverse), the same P^{-1} with one block's calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.linalg.arrays import HOST

__all__ = ["RowBlocksPreconditioner", "separate_inverses"]


def separate_inverses(parts: list, factors: list, setup=HOST, cache: dict | None = None) -> list:
    """[P_k^{-1}] of blocks of points ``parts`` at their Hessian factors ``factors``, each set up alone
    (``Preconditioner.inverses`` of a kind with nothing to share between blocks)."""
    return [p.inverse(hf, setup) for p, hf in zip(parts, factors)]


def _factor_rows(hf, rows: slice):
    part = hf.rows(rows)
    if part is None:
        raise InputError(
            f"a preconditioner per block of points needs the Hessian factor of each block; {type(hf).__name__} "
            "does not give its rows (HessianFactor.rows): use the preconditioner 'diagonal' or 'block', or fit "
            "the blocks one by one (CV: folds_per_fit 1)"
        )
    return part


class RowBlocksPreconditioner:
    """diag(P_1, ..., P_F) from ``blocks``, (rows, P_k) pairs over consecutive row ranges (module docstring)."""

    def __init__(self, blocks: Sequence[tuple[slice, object]]):
        self.blocks = tuple(blocks)
        self._joined: dict = {}  # the blocks' eigenvectors and factors joined, for the fit
        first = self.blocks[0][1]
        self.name = first.name
        self.forcing_in_alpha_space = first.forcing_in_alpha_space
        bases = [p.basis for _, p in self.blocks]
        same = all(b is not None for b in bases) and len({b.shape[1] for b in bases}) == 1
        self.basis = np.concatenate(bases) if same else None

    def inverse(self, hf, setup=HOST) -> _ByRows:
        """diag(P_1, ..., P_F)^{-1}: each block's P_k^{-1} from its rows of ``hf``, set up together by their kind's
        ``inverses`` (``setup``: as the blocks')."""
        parts = [p for _, p in self.blocks]
        factors = [_factor_rows(hf, rows) for rows, _ in self.blocks]
        kinds = {type(p) for p in parts}
        set_up = kinds.pop().inverses if len(kinds) == 1 else separate_inverses
        inverses = set_up(parts, factors, setup, self._joined)
        return _ByRows(tuple((rows, inv) for (rows, _), inv in zip(self.blocks, inverses)), self._joined)


@attrs.frozen(eq=False)
class _ByRows:
    """diag(P_1, ..., P_F)^{-1} from ``parts``, (rows, P_k^{-1}) pairs; applied block by block on the host, as one
    on a device (the primitives' ``block_rows``), where the blocks' inverses are of one kind; ``cache``: the
    joined form's arrays for the fit."""

    parts: tuple
    cache: dict

    def on(self, ops, factor) -> Callable:
        return ops.block_rows(self.parts, factor, self.joined)

    def joined(self):
        """The blocks' inverses joined into one (their kind's ``join``), or None where they are of several kinds."""
        kinds = {type(inverse) for _, inverse in self.parts}
        return kinds.pop().join([inverse for _, inverse in self.parts], self.cache) if len(kinds) == 1 else None
