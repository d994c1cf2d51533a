"""The MVM counter: K v through an operator, counting right-hand sides.

Cost in this package is counted in kernel MVMs (Seeger 2008, Sec. 6: an MVM with K̃ is the unit of
work of Newton–CG, the CV criterion and the MVM path of the Laplace MLM), one per (n, C) vector, so
a batched (n, C, k) block counts k.  Inference routines wrap the operator once and report
``count`` in their diagnostics (``mvm_count``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["MVMCounter"]


class MVMCounter:
    """Callable V -> ``op.mvm(V)`` that adds the number of right-hand sides of V to ``count``.

    ``V``: shape (n, C) (one right-hand side) or (n, C, k) (k of them).
    """

    __slots__ = ("count", "op")

    def __init__(self, op, count: int = 0):
        self.op, self.count = op, int(count)

    def __call__(self, V) -> np.ndarray:
        V = np.asarray(V)
        self.count += 1 if V.ndim == 2 else V.shape[2]
        return self.op.mvm(V)

    mvm = __call__

    @property
    def counts(self) -> np.ndarray:
        """``count`` as the products of one block, (1,) (the Newton loop's per-block counts)."""
        return np.array([self.count])

    def device_mvm(self, Vd):
        """``op.device_mvm(Vd)`` for Vd (n, C) or (n, C, k) on the operator's device, counted."""
        self.count += 1 if Vd.ndim == 2 else int(Vd.shape[2])
        return self.op.device_mvm(Vd)
