"""A Newton–CG preconditioner per block of points: P = diag(P_1, ..., P_F) for an operator made of
independent operators on separate points (``Operator.row_blocks``, e.g. the stacked folds of CV,
:class:`~gpmodels.operators.stacked.Stacked`).

The Newton system of such an operator is block-diagonal over the same row ranges (the likelihood is per
point, so V is too), and each block's preconditioner is the one the block would get alone, built on its
operator and applied with its rows of the Hessian factor (``HessianFactor.rows``).  A deflating
preconditioner (``lowrank``) on the whole stack instead would take its eigenvectors across the blocks:
to keep r of them per block it needs F r, and its set-up costs grow with (F r)^2 (on satimage's five
folds, rank 32 each: 25 of the 33 s of one evaluation under cProfile, against 6.1 s for the whole
evaluation with one preconditioner per fold).  On a device the blocks' ``lowrank``
preconditioners are applied as one: their eigenvectors block-diagonal, their factors and small systems
joined (``LowRankPreconditioner.join_on_device``), the same P^{-1} with one block's calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from gpmodels.errors import InputError

__all__ = ["RowBlocksPreconditioner"]


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
        self._joined: dict = {}  # the blocks' eigenvectors joined on a device, per backend (for the fit)
        first = self.blocks[0][1]
        self.name = first.name
        self.forcing_in_alpha_space = first.forcing_in_alpha_space
        bases = [p.basis for _, p in self.blocks]
        same = all(b is not None for b in bases) and len({b.shape[1] for b in bases}) == 1
        self.basis = np.concatenate(bases) if same else None

    def for_factor(self, hf, backend=None) -> Callable[[np.ndarray], np.ndarray]:
        applies = [(rows, p.for_factor(_factor_rows(hf, rows), backend)) for rows, p in self.blocks]

        def apply(r):
            out = np.empty_like(r)
            for rows, part in applies:
                out[rows] = part(r[rows])
            return out

        return apply

    def for_device(self, hf, device_hf, backend) -> Callable:
        """On the device: the blocks' low-rank preconditioners joined into one Woodbury application where each
        is one (``woodbury``), so that F blocks cost one block's calls; else each block's own, side by side."""
        parts = [p for _, p in self.blocks]
        pieces = [p.woodbury(_factor_rows(hf, rows), backend) for rows, p in self.blocks]
        if all(x is not None for x in pieces):
            return type(parts[0]).join_on_device(parts, pieces, device_hf, backend, self._joined)
        applies = [
            (rows, p.for_device(_factor_rows(hf, rows), device_hf.rows(rows), backend)) for rows, p in self.blocks
        ]
        xp = backend.xp
        return lambda r: xp.concat([part(r[rows, ...]) for rows, part in applies], axis=0)
