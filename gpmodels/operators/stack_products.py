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
gradient trace, the Kronecker terms (each term's product the same way), and the strategy of the same parts
at other hyperparameters or on subsets of their points.  Restrictions of one K to two families of point sets
give the blocks between them, diag(K_{I_1,J_1}, ..., K_{I_F,J_F}), the same way (:class:`ThroughBaseCross`:
CV's held-out blocks).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpmodels.errors import InputError
from gpmodels.linalg.arrays import HOST, Made
from gpmodels.operators.base import CrossOperator, KronTerm, Operator
from gpmodels.operators.restriction import Restriction

__all__ = ["PartByPart", "ThroughBase", "ThroughBaseCross"]


def _offsets(parts) -> np.ndarray:
    return np.cumsum([0] + [p.n_points for p in parts])


class PartByPart:
    """Each part's own products (module docstring)."""

    def __init__(self, parts: Sequence[Operator]):
        self.parts = tuple(parts)
        self.offsets = _offsets(self.parts)

    def _rows(self, k: int) -> slice:
        return slice(int(self.offsets[k]), int(self.offsets[k + 1]))

    def product(self, ops, S, on):
        """K_k S_k for S (rows, C[, k]) in the stacked layout on the arrays of ``ops``, zero off the parts ``on``."""
        outs = [
            ops.product(part)(S[self._rows(k), ...]) if on[k] else ops.xp.zeros_like(S[self._rows(k), ...])
            for k, part in enumerate(self.parts)
        ]
        return ops.concat(outs, axis=0)

    def diag(self) -> np.ndarray:
        return np.concatenate([p.diag() for p in self.parts])

    def grad_trace(self, Es: np.ndarray, Fs: np.ndarray) -> np.ndarray:
        return sum(
            p.grad_trace(np.ascontiguousarray(Es[self._rows(k)]), np.ascontiguousarray(Fs[self._rows(k)]))
            for k, p in enumerate(self.parts)
        )

    def kron_terms(self) -> list[KronTerm] | None:
        """Σ_t diag(M_t^(1), ..., M_t^(F)) ⊗ S_t where every part has the same terms' S_t, each term's product
        part by part; None otherwise."""
        terms = [p.kron_terms() for p in self.parts]
        if any(t is None or len(t) != len(terms[0]) for t in terms):
            return None
        out = []
        for j, first in enumerate(terms[0]):
            if any(not np.array_equal(t[j].S, first.S) for t in terms):
                return None
            ranks = [t[j].rank for t in terms]
            rank = None if any(r is None for r in ranks) else sum(ranks)
            out.append(KronTerm(self._part_by_part([t[j].mvm for t in terms]), first.S, rank))
        return out

    def _part_by_part(self, maps):
        """B (rows, m) -> diag(M^(1), ..., M^(F)) B from the parts' maps B_k -> M^(k) B_k."""
        return lambda B: np.concatenate([m(np.ascontiguousarray(B[self._rows(k)])) for k, m in enumerate(maps)])

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
    multiplied through it (module docstring).  The scatter and gather maps are made once per kind of arrays,
    set of parts ``on`` and width."""

    def __init__(self, base: Operator, index_sets: Sequence):
        self.base = base
        self.parts = tuple(Restriction(base, J) for J in index_sets)
        self.index_sets = tuple(p.J for p in self.parts)
        self.offsets = _offsets(self.parts)
        self._made = Made()

    def _host_maps(self, on, C: int, k: int) -> tuple:
        """The scatter and the gather of the parts ``on`` for (rows, C, k) arrays, as flat takes: (for every
        entry of K's (n, C, F' k) right-hand side, its entry of the flattened stacked array and 1, or 0 and 0
        off the part's points; for every entry of the stacked (rows, C, k) result, its entry of K's flattened
        product and 1, or 0 and 0 for a part not ``on``; the gather's weights None where all are on), F'."""
        n, total = self.base.n_points, int(self.offsets[-1])
        active = [kk for kk, b in enumerate(on) if b]
        F = len(active)
        src = np.zeros((n, F), dtype=np.intp)  # stacked row of each (point, active part)
        inside = np.zeros((n, F))
        dst = np.zeros(total, dtype=np.intp)  # flat (point, part) column of each stacked row
        rows_on = np.zeros(total)
        for i, kk in enumerate(active):
            J, lo = self.index_sets[kk], int(self.offsets[kk])
            src[J, i], inside[J, i] = lo + np.arange(J.size), 1.0
            dst[lo : lo + J.size], rows_on[lo : lo + J.size] = J * F + i, 1.0
        c, j = np.arange(C)[None, :, None, None], np.arange(k)[None, None, None, :]
        scatter = ((src[:, None, :, None] * C + c) * k + j).ravel()  # (n, C, F, k): entry of S
        scatter_w = np.broadcast_to(inside[:, None, :, None], (n, C, F, k)).ravel()
        pt, part = np.divmod(dst, F)
        c, j = np.arange(C)[None, :, None], np.arange(k)[None, None, :]
        gather = (((pt[:, None, None] * C + c) * F + part[:, None, None]) * k + j).ravel()  # (rows, C, k)
        gather_w = None if len(active) == len(on) else np.broadcast_to(rows_on[:, None, None], (total, C, k)).ravel()
        return scatter, scatter_w, gather, gather_w, F

    def _maps(self, ops, on, C: int, k: int) -> tuple:
        """:meth:`_host_maps` on the arrays of ``ops`` (:data:`~gpmodels.linalg.arrays.HOST`, or the base operator's
        one ``device_backend``), made once per (``ops``, parts ``on``, C, k)."""

        def make():
            scatter, scatter_w, gather, gather_w, F = self._host_maps(on, C, k)
            gather_w = None if gather_w is None else ops.from_host(gather_w)
            return ops.indices(scatter), ops.from_host(scatter_w), ops.indices(gather), gather_w, F

        return self._made.get((ops, tuple(bool(b) for b in on), C, k), make)

    def _product(self, ops, S, maps, product):
        """K_{J_k} S_k for the parts of ``maps`` (:meth:`_maps`), S the stacked (rows, C, k) array on the arrays of
        ``ops`` and ``product`` K's (n, C, F' k) product there: one take and one product by the 0/1 weights each
        way (the array API has no scatter)."""
        rows, C, k = S.shape
        return self._gather(ops, product(self._scatter(ops, S, maps)), maps, (rows, C, k))

    def _scatter(self, ops, S, maps):
        """The stacked (rows, C, k) S at the parts' points of K, (n, C, F' k), zero elsewhere."""
        scatter, scatter_w, _, _, F = maps
        _, C, k = S.shape
        W = ops.take(ops.xp.reshape(S, (-1,)), scatter) * scatter_w
        return ops.xp.reshape(W, (self.base.n_points, C, F * k))

    def _gather(self, ops, U, maps, shape):
        """Each part's rows of its columns of K's (n, C, F' k) product U, stacked: ``shape`` (rows, C, k)."""
        _, _, gather, gather_w, _ = maps
        out = ops.take(ops.xp.reshape(U, (-1,)), gather)
        return ops.xp.reshape(out if gather_w is None else out * gather_w, shape)

    def product(self, ops, S, on):
        """K_{J_k} S_k for S (rows, C[, k]) in the stacked layout on the arrays of ``ops``, zero off the parts
        ``on``."""
        rows, C = S.shape[:2]
        k = 1 if S.ndim == 2 else int(S.shape[2])
        S3 = S if S.ndim == 3 else ops.xp.reshape(S, (rows, C, 1))
        out = self._product(ops, S3, self._maps(ops, on, C, k), ops.product(self.base))
        return out if S.ndim == 3 else ops.xp.reshape(out, (rows, C))

    def diag(self) -> np.ndarray:
        d = self.base.diag()
        return np.concatenate([d[J] for J in self.index_sets])

    def grad_trace(self, Es: np.ndarray, Fs: np.ndarray) -> np.ndarray:
        """Σ_k tr E_k^T (∂K)_{J_k} F_k as one trace of ∂K: each part's q columns at its points of K, (n, C, F q)."""
        return self.base.grad_trace(self._scattered(Es), self._scattered(Fs))

    def _scattered(self, A: np.ndarray) -> np.ndarray:
        """A (rows, C, q) in the stacked layout at the parts' points of K, (n, C, F q): the products' scatter."""
        _, C, q = A.shape
        return self._scatter(HOST, np.ascontiguousarray(A), self._maps(HOST, self._every(), C, q))

    def _every(self) -> np.ndarray:
        return np.ones(len(self.parts), dtype=bool)

    def cross(self, rows: ThroughBase) -> ThroughBaseCross:
        """diag(K_{I_1,J_1}, ..., K_{I_F,J_F}) between the parts of ``rows`` (restrictions of the same K to I_k)
        and these (to J_k): :class:`ThroughBaseCross`."""
        return ThroughBaseCross(rows, self)

    def kron_terms(self) -> list[KronTerm] | None:
        """The base's terms M_t ⊗ S_t restricted to every part, diag(P_1^T M_t P_1, ..., P_F^T M_t P_F) ⊗ S_t,
        each product one product of M_t with a column block per part; None where the base has no Kronecker
        form."""
        terms = self.base.kron_terms()
        if terms is None:
            return None
        F = len(self.parts)
        return [KronTerm(self._through(t.mvm), t.S, None if t.rank is None else F * t.rank) for t in terms]

    def _through(self, point_map):
        """B (rows, m) -> P_k^T M P_k B_k for every part k, from M's map (n, m') -> (n, m'): one product of M."""
        n = self.base.n_points

        def product(B):
            rows, m = B.shape
            maps = self._maps(HOST, self._every(), 1, m)
            S = np.asarray(B, dtype=np.float64).reshape(rows, 1, m)
            out = self._product(HOST, S, maps, lambda U: point_map(U.reshape(n, -1)).reshape(U.shape))
            return out.reshape(rows, m)

        return product

    def with_params(self, theta) -> ThroughBase:
        return ThroughBase(self.base.with_params(theta), self.index_sets)

    def restricted(self, pieces: Sequence[tuple[int, np.ndarray]]) -> ThroughBase:
        """The parts k on their points ``local`` for every (k, local) of ``pieces``, in that order."""
        return ThroughBase(self.base, [self.index_sets[k][local] for k, local in pieces])

    def subset(self, ks: Sequence[int]) -> ThroughBase:
        """The parts ``ks``, in that order."""
        return ThroughBase(self.base, [self.index_sets[k] for k in ks])


class ThroughBaseCross(CrossOperator):
    """diag(K_{I_1,J_1}, ..., K_{I_F,J_F}) from the stacked layout of ``cols`` (K's restrictions to J_k) to that
    of ``rows`` (to I_k; the held-out folds beside CV's training folds): each product one product of K with a
    column per part, scattered from one layout and gathered into the other (K symmetric: the transpose
    too), where F cross blocks would each be taken out of K's matrices and multiplied on their own."""

    def __init__(self, rows: ThroughBase, cols: ThroughBase):
        if rows.base is not cols.base or len(rows.parts) != len(cols.parts):
            raise InputError("ThroughBaseCross needs restrictions of one operator with as many row as column parts")
        self.rows, self.cols = rows, cols

    @property
    def shape(self):
        return int(self.rows.offsets[-1]), int(self.cols.offsets[-1]), self.rows.base.n_classes

    def _between(self, source: ThroughBase, target: ThroughBase, V):
        _, C, k = V.shape
        U = self.rows.base.mvm(source._scatter(HOST, V, source._maps(HOST, source._every(), C, k)))
        return target._gather(HOST, U, target._maps(HOST, target._every(), C, k), (int(target.offsets[-1]), C, k))

    def _mvm(self, V):
        return self._between(self.cols, self.rows, np.ascontiguousarray(V))

    def _rmvm(self, W):
        return self._between(self.rows, self.cols, W)
