"""Independent copies of a prior on separate point sets, as one operator: K = diag(K_1, ..., K_F).

The F parts are operators with the same classes and hyperparameters on their own points (the
restrictions K̃_{J_k} of one prior to the training sets of CV folds); the stacked operator has their
points one after the other and no covariance between parts.  Since Φ(α) = Σ_k Φ_k(α_k) separates
over the parts, the F fits can run in lockstep on it (the folds' refits of Seeger 2008, Sec. 4:
:meth:`~gpmodels.inference.map.newton.SteppedSolver.fit_blocks`, :mod:`gpmodels.inference.cv.stacked`), every CG
update and preconditioner application touching all folds in one call; ``row_blocks`` declares the parts.

A restriction (or any row order) keeps the parts: ``order`` gives, for every row of the operator, its
row in the parts' stacked layout; products scatter into that layout and gather back.  Products on a
device (``arrays``) are declared for the stacked layout itself (no ``order``), the one
CV fitting uses; host and device products are one product over the array primitives
(:mod:`gpmodels.linalg.arrays`).

How the parts are multiplied is a strategy (:mod:`gpmodels.operators.stack_products`): any parts each on
their own (``Stacked(parts)``), or restrictions of one operator through one product of it with a column per
part (:meth:`Stacked.restrictions`, what CV stacks).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpmodels.errors import InputError
from gpmodels.kernels.representation_base import shared_arrays
from gpmodels.linalg.arrays import HOST
from gpmodels.operators.base import CrossOperator, KronTerm, Operator
from gpmodels.operators.stack_products import PartByPart, ThroughBase

__all__ = ["Stacked"]


#: what Stacked reads of its parts (an Operator's public surface; a measuring proxy around one passes too)
_PART_SURFACE = ("n_points", "n_classes", "params", "mvm", "diag", "restrict", "cross", "with_params")


def _check_parts(parts) -> tuple[Operator, ...]:
    parts = tuple(parts)
    if not parts or not all(all(hasattr(p, a) for a in _PART_SURFACE) for p in parts):
        raise InputError(f"Stacked needs a non-empty sequence of operators; got {[type(p).__name__ for p in parts]}")
    C, theta = parts[0].n_classes, parts[0].params
    for k, p in enumerate(parts[1:], 1):
        if p.n_classes != C or p.params.shape != theta.shape or not np.array_equal(p.params, theta):
            raise InputError(
                f"Stacked parts must share the classes and hyperparameters of part 0 ({C} classes, params "
                f"{theta.tolist()}); part {k} has {p.n_classes} classes and params {p.params.tolist()}"
            )
    return parts


class Stacked(Operator):
    """K = diag(K_1, ..., K_F) over the parts' points (module docstring); ``order``: row i of the
    operator is row ``order[i]`` of the parts' stacked layout (None: that layout)."""

    def __init__(self, parts: Sequence[Operator], order: np.ndarray | None = None):
        self._setup(PartByPart(_check_parts(parts)), order)

    @classmethod
    def restrictions(cls, op: Operator, index_sets: Sequence, order: np.ndarray | None = None) -> Stacked:
        """diag(K_{J_1}, ..., K_{J_F}) of the restrictions of ``op`` to the point sets ``index_sets`` (each
        without repeats; they may overlap), every product one product of ``op`` with a column per part
        (:class:`~gpmodels.operators.stack_products.ThroughBase`)."""
        return cls._of(ThroughBase(op, index_sets), order)

    @classmethod
    def cross_restrictions(cls, op: Operator, row_sets: Sequence, col_sets: Sequence) -> CrossOperator:
        """diag(K_{I_1,J_1}, ..., K_{I_F,J_F}) of ``op`` (I_k = ``row_sets[k]``, J_k = ``col_sets[k]``), from the
        layout of :meth:`restrictions` to ``col_sets`` to that of the restrictions to ``row_sets``: CV's
        held-out blocks, each product one product of ``op`` for all F
        (:class:`~gpmodels.operators.stack_products.ThroughBaseCross`)."""
        return ThroughBase(op, col_sets).cross(ThroughBase(op, row_sets))

    @classmethod
    def _of(cls, products: PartByPart | ThroughBase, order) -> Stacked:
        stack = cls.__new__(cls)
        stack._setup(products, order)
        return stack

    def _setup(self, products: PartByPart | ThroughBase, order) -> None:
        self.products, self.parts, self.offsets = products, products.parts, products.offsets
        if order is not None:
            order = np.asarray(order, dtype=np.intp)
            if not np.array_equal(np.sort(order), np.arange(self.offsets[-1])):
                raise InputError(f"Stacked order must be a permutation of 0..{self.offsets[-1] - 1}")
        self.order = order
        self.is_class_diagonal = all(p.is_class_diagonal for p in self.parts)

    def subset(self, ks: Sequence[int]) -> Stacked:
        """The stack of the parts ``ks`` (in that order), multiplied as this one is."""
        return Stacked._of(self.products.subset(ks), None)

    # ------------------------------------------------------------------ layout
    def part_rows(self, k: int) -> slice:
        """The rows of part k in the parts' stacked layout."""
        return slice(int(self.offsets[k]), int(self.offsets[k + 1]))

    def _to_stack(self, A: np.ndarray) -> np.ndarray:
        """Rows in the operator's order -> rows in the parts' stacked layout."""
        if self.order is None:
            return A
        out = np.empty_like(A)
        out[self.order] = A
        return out

    def _from_stack(self, A: np.ndarray) -> np.ndarray:
        return A if self.order is None else A[self.order]

    def _all(self) -> np.ndarray:
        return np.ones(len(self.parts), dtype=bool)

    def _per_part(self, fn, A: np.ndarray) -> np.ndarray:
        """fn(part k, its rows of A) for every part, stacked back in the operator's order."""
        S = self._to_stack(A)
        return self._from_stack(
            np.concatenate([fn(p, np.ascontiguousarray(S[self.part_rows(k)])) for k, p in enumerate(self.parts)])
        )

    def _locate(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(part, row within the part) of the operator's rows ``idx``."""
        s = idx if self.order is None else self.order[idx]
        part = np.searchsorted(self.offsets, s, side="right") - 1
        return part, s - self.offsets[part]

    # ------------------------------------------------------------------ the protocol
    @property
    def row_blocks(self):
        if self.order is not None:  # the parts' rows are not consecutive ranges of this operator's
            return None
        return tuple((self.part_rows(k), p) for k, p in enumerate(self.parts))

    @property
    def n_points(self) -> int:
        return int(self.offsets[-1])

    @property
    def n_classes(self) -> int:
        return self.parts[0].n_classes

    @property
    def params(self) -> np.ndarray:
        return self.parts[0].params

    @property
    def param_names(self) -> tuple[str, ...]:
        return self.parts[0].param_names

    @property
    def param_bounds(self) -> np.ndarray:
        return self.parts[0].param_bounds

    def param_classes(self):
        return self.parts[0].param_classes()

    def with_params(self, theta) -> Stacked:
        return Stacked._of(self.products.with_params(theta), self.order)

    def _mvm(self, V):
        return self._product(HOST, V)

    def _product(self, ops, V):
        # a device backend is declared for the parts' stacked layout only (no order)
        return self._from_stack(self.products.product(ops, self._to_stack(V), self._all()))

    def row_blocks_mvm(self, X, on, ops=HOST):
        if self.row_blocks is None:  # reordered: the parts' rows are not blocks of this operator's
            return super().row_blocks_mvm(X, on, ops)
        return self.products.product(ops, X, on)

    def _diag(self):
        return self._from_stack(self.products.diag())

    def _point_block_mvm(self, P):
        return self._per_part(lambda p, A: p.point_block_mvm(A), P)

    def _point_blocks(self):
        return self._from_stack(np.concatenate([p.point_blocks() for p in self.parts]))

    def _grad_trace(self, E, F):
        return self.products.grad_trace(self._to_stack(E), self._to_stack(F))

    def _dense(self):
        C = self.n_classes
        D = np.zeros((self.n_points * C,) * 2)
        for k, p in enumerate(self.parts):
            r = slice(int(self.offsets[k]) * C, int(self.offsets[k + 1]) * C)
            D[r, r] = p.dense()
        if self.order is None:
            return D
        flat = (self.order[:, None] * C + np.arange(C)[None, :]).ravel()
        return D[np.ix_(flat, flat)]

    def _kron_terms(self):
        """Σ_t diag(M_t^(1), ..., M_t^(F)) ⊗ S_t where every part has the same terms' S_t (parts of one prior),
        each term's product the strategy's (through the base operator: one product for all parts)."""
        terms = self.products.kron_terms()
        if terms is None or self.order is None:
            return terms
        return [KronTerm(self._in_order(t.mvm), t.S, t.rank) for t in terms]

    def _in_order(self, stacked_map):
        """B (n, m) -> M B in the operator's row order, from the map of the parts' stacked layout."""
        return lambda B: self._from_stack(stacked_map(self._to_stack(np.asarray(B, dtype=np.float64))))

    def _restrict(self, J):
        part, local = self._locate(J)
        products = self.products.restricted([(k, local[part == k]) for k in np.unique(part)])
        order = np.empty(J.size, dtype=np.intp)
        order[np.argsort(part, kind="stable")] = np.arange(J.size)
        return Stacked._of(products, None if np.array_equal(order, np.arange(J.size)) else order)

    def _cross(self, I, J):
        (pI, lI), (pJ, lJ) = self._locate(I), self._locate(J)
        blocks = []
        for k in np.intersect1d(pI, pJ):
            rows, cols = np.flatnonzero(pI == k), np.flatnonzero(pJ == k)
            blocks.append((rows, cols, self.parts[k].cross(lI[rows], lJ[cols])))
        return _StackedBlock(blocks, (I.size, J.size, self.n_classes))

    def _cross_test(self, X_new):
        blocks = [p.cross_test(X_new) for p in self.parts]
        return _TestBlock(self, blocks, (blocks[0].shape[0], self.n_points, self.n_classes))

    def _test_point_blocks(self, X_new):
        return self.parts[0].test_point_blocks(X_new)

    @property
    def arrays(self):
        return shared_arrays(self.parts) if self.order is None else HOST

    def __repr__(self) -> str:
        return f"Stacked({len(self.parts)} parts, n={self.n_points}, C={self.n_classes})"


class _StackedBlock(CrossOperator):
    """K_{I,J} of a :class:`Stacked`: the parts' blocks between the rows and columns each holds (zero
    between different parts); ``blocks``: (positions in I, positions in J, the part's block)."""

    def __init__(self, blocks, shape):
        self._blocks, self._shape = blocks, shape

    @property
    def shape(self):
        return self._shape

    def _mvm(self, V):
        out = np.zeros((self._shape[0], *V.shape[1:]))
        for rows, cols, b in self._blocks:
            out[rows] = b.mvm(np.ascontiguousarray(V[cols]))
        return out

    def _rmvm(self, W):
        out = np.zeros((self._shape[1], *W.shape[1:]))
        for rows, cols, b in self._blocks:
            out[cols] = b.rmvm(np.ascontiguousarray(W[rows]))
        return out


class _TestBlock(CrossOperator):
    """K_{*,.} of a :class:`Stacked` at new points: the parts' blocks side by side."""

    def __init__(self, op: Stacked, blocks, shape):
        self._op, self._blocks, self._shape = op, blocks, shape

    @property
    def shape(self):
        return self._shape

    def _mvm(self, V):
        S = self._op._to_stack(V)
        return sum(b.mvm(np.ascontiguousarray(S[self._op.part_rows(k)])) for k, b in enumerate(self._blocks))

    def _rmvm(self, W):
        return self._op._from_stack(np.concatenate([b.rmvm(W) for b in self._blocks]))
