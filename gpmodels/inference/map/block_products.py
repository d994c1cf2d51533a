"""K̃'s products on the row blocks of an operator of independent blocks, counted per block: the product of
the Newton loop's steps when its blocks are fitted together (Seeger 2008, Sec. 4: the CV folds' refits).

An operator made of independent operators on separate points (``Operator.row_blocks``, e.g.
:class:`~gpmodels.operators.stacked.Stacked` over the folds' K̃_{J_k}) multiplies the blocks still solving
(``Operator.row_blocks_mvm``): for restrictions of one operator one product of it with a column per block
(:meth:`~gpmodels.operators.stacked.Stacked.restrictions`), else one product per block.  A block's products
are its own (``counts``): the ones its fit alone would take.
"""

from __future__ import annotations

import numpy as np

from gpmodels.errors import InputError
from gpmodels.operators.base import Operator

__all__ = ["BlockProducts"]


class BlockProducts:
    """K̃ X on the row blocks ``on`` of an operator of independent blocks (``op.row_blocks``), zero on the
    others, each block's products counted (``counts``, (F,)): on host arrays (:meth:`mvm`, through the operator's
    device in one transfer each way where it has one) and, by :meth:`device_mvm`, on that device's arrays."""

    def __init__(self, op: Operator):
        blocks = op.row_blocks
        if blocks is None:
            raise InputError(f"products by row blocks need an operator of independent row blocks; {op!r} declares none")
        self.op, self.blocks, self.ops = op, blocks, op.arrays
        self.offsets = np.array([0] + [rows.stop for rows, _ in blocks])
        self.counts = np.zeros(len(blocks), dtype=np.intp)

    def _on(self, on) -> np.ndarray:
        return np.ones(len(self.blocks), dtype=bool) if on is None else np.asarray(on, dtype=bool)

    def __call__(self, X: np.ndarray, on=None) -> np.ndarray:
        ops = self.ops
        return ops.to_host(self._product(ops, ops.from_host(X), on))

    mvm = __call__

    def device_mvm(self, Xd, on=None):
        return self._product(self.ops, Xd, on)

    def _product(self, ops, X, on):
        on = self._on(on)
        self.counts += on
        return self.op.row_blocks_mvm(X, on, ops)
