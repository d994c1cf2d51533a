"""How a :class:`~gpmodels.operators.stacked.Stacked` operator diag(K_1, ..., K_F) multiplies its parts: the
two strategies, each over the parts' stacked layout (part after part), on host or device arrays.

- :class:`PartByPart`: any parts, each multiplied on its own (one product call chain per part).
- :class:`ThroughBase`: restrictions K_{J_k} = P_k^T K P_k of one operator K (the CV folds' K̃_{J_k}),
  all multiplied by one product of K with a column per part: the parts' rows scattered into an (n, C, F)
  array, zero off J_k, multiplied and gathered back.  A stored matrix is then read once for the F parts,
  where restricted copies (App. D.2) would read F (1 - 1/F)^2 times as many entries (3.2 for five folds),
  no copies are held, and on a device the F parts cost one call chain.  Its parts are
  :class:`~gpmodels.operators.restriction.Restriction` views, for what is asked of them one by one
  (preconditioners, warm starts).

Both give the products of the parts ``on`` (a bool per part; zero rows for the others), the diagonal, the
gradient trace, and the strategy of the same parts at other hyperparameters or on subsets of their points.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpmodels.operators.base import Operator
from gpmodels.operators.restriction import Restriction

__all__ = ["PartByPart", "ThroughBase"]


def _offsets(parts) -> np.ndarray:
    return np.cumsum([0] + [p.n_points for p in parts])


class PartByPart:
    """Each part's own products (module docstring)."""

    def __init__(self, parts: Sequence[Operator]):
        self.parts = tuple(parts)
        self.offsets = _offsets(self.parts)

    def _rows(self, k: int) -> slice:
        return slice(int(self.offsets[k]), int(self.offsets[k + 1]))

    def host(self, S: np.ndarray, on) -> np.ndarray:
        """K_k S_k for S (rows, C, k) in the stacked layout, zero off the parts ``on``."""
        out = np.zeros_like(S)
        for k in np.flatnonzero(on):
            out[self._rows(k)] = self.parts[k].mvm(np.ascontiguousarray(S[self._rows(k)]))
        return out

    def device(self, backend, Sd, on):
        """:meth:`host` on ``backend``'s device for Sd (rows, C) or (rows, C, k)."""
        xp = backend.xp
        outs = [
            part.device_mvm(Sd[self._rows(k), ...]) if on[k] else xp.zeros_like(Sd[self._rows(k), ...])
            for k, part in enumerate(self.parts)
        ]
        return xp.concat(outs, axis=0)

    def diag(self) -> np.ndarray:
        return np.concatenate([p.diag() for p in self.parts])

    def grad_trace(self, Es: np.ndarray, Fs: np.ndarray) -> np.ndarray:
        return sum(
            p.grad_trace(np.ascontiguousarray(Es[self._rows(k)]), np.ascontiguousarray(Fs[self._rows(k)]))
            for k, p in enumerate(self.parts)
        )

    def with_params(self, theta) -> PartByPart:
        return PartByPart([p.with_params(theta) for p in self.parts])

    def restricted(self, pieces: Sequence[tuple[int, np.ndarray]]) -> PartByPart:
        """The parts k restricted to their points ``local`` for every (k, local) of ``pieces``, in that order."""
        return PartByPart([self.parts[k].restrict(local) for k, local in pieces])

    def subset(self, ks: Sequence[int]) -> PartByPart:
        """The parts ``ks``, in that order."""
        return PartByPart([self.parts[k] for k in ks])


class ThroughBase:
    """Restrictions of ``base`` to the point sets ``index_sets`` (each without repeats; they may overlap),
    multiplied through it (module docstring).  The index arrays are made once per set of parts ``on``."""

    def __init__(self, base: Operator, index_sets: Sequence):
        self.base = base
        self.parts = tuple(Restriction(base, J) for J in index_sets)
        self.index_sets = tuple(p.J for p in self.parts)
        self.offsets = _offsets(self.parts)
        self._indices: dict = {}

    def _host_indices(self, on) -> tuple[np.ndarray, np.ndarray, int]:
        """(for the F' parts ``on`` and every point of K, its row in the stacked rows or the appended zero
        row, (F' n,); for every stacked row, its row of the product's (F' n) rows or the zero row; F')."""
        key = tuple(bool(b) for b in on)
        if key not in self._indices:
            n, total = self.base.n_points, int(self.offsets[-1])
            active = [k for k, b in enumerate(key) if b]
            scatter = np.full((len(active), n), total, dtype=np.intp)
            gather = np.full(total, len(active) * n, dtype=np.intp)
            for i, k in enumerate(active):
                J, lo = self.index_sets[k], int(self.offsets[k])
                scatter[i, J] = lo + np.arange(J.size)
                gather[lo : lo + J.size] = i * n + J
            self._indices[key] = (scatter.ravel(), gather, len(active))
        return self._indices[key]

    def _product(self, xp, device, S, indices, product):
        """K_{J_k} S_k for the parts of ``indices`` (:meth:`_host_indices`, or their device copies), S the
        stacked (rows, C, k) array of namespace ``xp`` on ``device`` and ``product`` K's (n, C, F' k)
        product there; the array API has no scatter, so both moves are takes with a zero row appended."""
        scatter, gather, F = indices
        _, C, k = S.shape
        n = self.base.n_points
        zero = xp.zeros((1, C, k), dtype=S.dtype, device=device)
        W = xp.take(xp.concat([S, zero], axis=0), scatter, axis=0)  # (F n, C, k): part after part
        W = xp.reshape(xp.permute_dims(xp.reshape(W, (F, n, C, k)), (1, 2, 0, 3)), (n, C, F * k))
        U = product(W)
        U = xp.reshape(xp.permute_dims(xp.reshape(U, (n, C, F, k)), (2, 0, 1, 3)), (F * n, C, k))
        return xp.take(xp.concat([U, zero], axis=0), gather, axis=0)

    def host(self, S: np.ndarray, on) -> np.ndarray:
        """K_{J_k} S_k for S (rows, C, k) in the stacked layout, zero off the parts ``on``."""
        return self._product(np, None, S, self._host_indices(on), self.base.mvm)

    def device(self, backend, Sd, on):
        """:meth:`host` on ``backend``'s device for Sd (rows, C) or (rows, C, k)."""
        key = (id(backend), tuple(bool(b) for b in on))
        if key not in self._indices:
            scatter, gather, F = self._host_indices(on)
            self._indices[key] = (backend.indices(scatter), backend.indices(gather), F)
        xp = backend.xp
        S3 = Sd if Sd.ndim == 3 else xp.reshape(Sd, (*Sd.shape, 1))
        out = self._product(xp, backend.device, S3, self._indices[key], self.base.device_mvm)
        return out if Sd.ndim == 3 else xp.reshape(out, tuple(Sd.shape))

    def diag(self) -> np.ndarray:
        d = self.base.diag()
        return np.concatenate([d[J] for J in self.index_sets])

    def grad_trace(self, Es: np.ndarray, Fs: np.ndarray) -> np.ndarray:
        """Σ_k tr E_k^T (∂K)_{J_k} F_k as one trace of ∂K: each part's q columns at its points of K, (n, C, F q)."""
        return self.base.grad_trace(self._scattered(Es), self._scattered(Fs))

    def _scattered(self, A: np.ndarray) -> np.ndarray:
        _, C, q = A.shape
        out = np.zeros((self.base.n_points, C, len(self.parts), q))
        for k, J in enumerate(self.index_sets):
            out[J, :, k, :] = A[int(self.offsets[k]) : int(self.offsets[k + 1])]
        return out.reshape(out.shape[0], C, -1)

    def with_params(self, theta) -> ThroughBase:
        return ThroughBase(self.base.with_params(theta), self.index_sets)

    def restricted(self, pieces: Sequence[tuple[int, np.ndarray]]) -> ThroughBase:
        """The parts k on their points ``local`` for every (k, local) of ``pieces``, in that order."""
        return ThroughBase(self.base, [self.index_sets[k][local] for k, local in pieces])

    def subset(self, ks: Sequence[int]) -> ThroughBase:
        """The parts ``ks``, in that order."""
        return ThroughBase(self.base, [self.index_sets[k] for k in ks])

    def __getstate__(self) -> dict:  # device indices stay in the process that made them
        return {**self.__dict__, "_indices": {}}
