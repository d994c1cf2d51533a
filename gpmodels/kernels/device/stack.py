"""Several stored kernel matrices over the same points as one device array: a block-diagonal operator's
distinct matrices M^(l) (mc-sep: one per class, Seeger 2008 Sec. 6.2) multiplied in one batched product.

:class:`DeviceGramStack` holds S = (M^(0), ..., M^(G-1)), shape (G, n, n), float64 or float32, on one
backend; the representation of M^(l) is a :class:`~gpmodels.kernels.device.gram.DeviceStoredGram` over the
view S[l] (its ``stack`` and ``stack_index``), so everything a single matrix does (gradients, cross blocks,
diag) is unchanged.  What the stack adds:

- :meth:`DeviceGramStack.product`: S B for B of shape (G, n, w), every matrix's product at once: one
  fused launch where the backend has fused products and the stack is large enough for them (G n^2
  entries; each entry of S read once, a float32 one widened to float64 in registers,
  :meth:`~gpmodels.kernels.device.fused.FusedProducts.mixed_matmul`), else one batched product in float64
  (float32 storage: row tiles of the whole stack converted to float64).  Per MVM this is one launch
  instead of G products and the column scatter around them (the per-call cost that bounds CV folds of a
  few thousand points on a GPU), and a float32 stack moves 4 bytes per entry where the array-API products
  of single matrices write and read a float64 copy of each (20 bytes per entry).
- :meth:`DeviceGramStack.restrict`: the CV restriction S[:, J, J] of all G matrices in one take.

:func:`build_stack` builds it from X (uploaded once, each kernel's scaled inputs made on the device).
"""

from __future__ import annotations

import numpy as np

from gpmodels.kernels.base import Kernel
from gpmodels.kernels.device.backend import ArrayBackend
from gpmodels.kernels.device.gram import DeviceInputs, DeviceStoredGram, block_rows, device_form

__all__ = ["DeviceGramStack", "build_stack"]


class DeviceGramStack:
    """G stored kernel matrices over the same n points, one (G, n, n) device array (module docstring)."""

    def __init__(self, backend: ArrayBackend, S, memory_mb: float):
        self.backend, self.S, self.memory_mb = backend, S, memory_mb
        self.size, self.n = int(S.shape[0]), int(S.shape[1])

    def _members(self, kernels: list[Kernel], X, inputs: list[DeviceInputs]) -> list[DeviceStoredGram]:
        """One representation per matrix of the stack, over the view S[l]: kernel l on the host points X
        and their scaled inputs on the device ``inputs[l]``."""
        out = []
        for l, (kernel, inp) in enumerate(zip(kernels, inputs)):
            member = DeviceStoredGram(X, kernel, self.backend, memory_mb=self.memory_mb, inputs=inp, M=self.S[l, ...])
            member.stack, member.stack_index = self, l
            out.append(member)
        return out

    def product(self, B3):
        """S B for B3 of shape (G, n, w), float64 and C-contiguous on the device: (G, n, w) float64.  Fused:
        one launch over the stack, either storage; array-API: one batched product (strided-batched GEMM) in
        float64, for float32 storage over row tiles of all G matrices at once, each tile converted to
        float64 (a float64 copy of the whole stack would be twice its memory; the tiles keep the copy within
        ``memory_mb``, and one tile, where the stack fits, makes the product three calls)."""
        fused = self.backend.fused
        if fused is not None and fused.covers(self.size * self.n, self.n):
            return fused.mixed_matmul(self.S, B3)
        xp = self.backend.xp
        if self.S.dtype == xp.float64:
            return self.S @ B3
        step = max(1, min(self.n, block_rows(self.size * self.n, self.n, self.memory_mb) // self.size))
        parts = [xp.astype(self.S[:, r0 : min(self.n, r0 + step), :], xp.float64) @ B3 for r0 in range(0, self.n, step)]
        return parts[0] if len(parts) == 1 else xp.concat(parts, axis=1)

    def restrict(self, reps: list[DeviceStoredGram], J) -> list[DeviceStoredGram]:
        """The members' restrictions to the points J (App. D.2), ``reps`` the members in stack order: one
        take of S[:, J, J] for all of them."""
        J = np.asarray(J)
        xp, Jd = self.backend.xp, self.backend.indices(J)
        stack = DeviceGramStack(self.backend, xp.take(xp.take(self.S, Jd, axis=1), Jd, axis=2), self.memory_mb)
        return stack._members([r.kernel for r in reps], reps[0].X[J], [r.inputs.take(J) for r in reps])


def build_stack(
    X, kernels: list[Kernel], backend: ArrayBackend, dtype: str, memory_mb: float, device_X=None
) -> list[DeviceStoredGram]:
    """The matrices M(X, X) of ``kernels`` as the members of one :class:`DeviceGramStack` of storage
    ``dtype``; ``device_X``: X already on the device (float64), else uploaded once for all of them."""
    xp = backend.xp
    Xd = backend.from_host(X) if device_X is None else device_X
    inputs = [DeviceInputs(backend, device_form(k), Xd) for k in kernels]
    n = inputs[0].n
    S = xp.empty((len(kernels), n, n), dtype=getattr(xp, dtype), device=backend.device)
    for l, inp in enumerate(inputs):
        DeviceStoredGram.fill(S[l, ...], inp, memory_mb)
    return DeviceGramStack(backend, S, memory_mb)._members(list(kernels), X, inputs)
