"""The restriction K_J = P_J^T K P_J of an operator to training points J, multiplied through the operator.

``op.restrict(J)`` builds K̃_J as an operator of its own (Seeger 2008, App. D.2: stored matrices copy their
|J| x |J| block, so that a fold's products read |J|^2 entries, not n^2).  :class:`Restriction` is the same
matrix without a copy: a product scatters V into the rows J of an (n, C, k) array of zeros, multiplies by K
and gathers the rows J back, K_J V = P_J^T K (P_J V).  That costs a product of the whole K per call, which
pays where several restrictions share one call: the CV folds' refits in lockstep multiply their F
restrictions as one product of K with F columns per class
(:meth:`~gpmodels.operators.stacked.Stacked.restrictions`), reading each stored entry (or recomputing each
kernel tile) once for all folds instead of F (1 - 1/F)^2 times, and holding no fold copies.

Everything else reaches through K as well: diag and point blocks are K's rows J, d(K_J)/dθ = (dK/dθ)_J so
``grad_trace`` is K's with E, F scattered, cross blocks are K's at the points J[I], J[J'], and a
restriction of the view is the view on those points.
"""

from __future__ import annotations

import numpy as np

from gpmodels.linalg.arrays import HOST, Made
from gpmodels.operators.base import CrossOperator, KronTerm, Operator
from gpmodels.validation import check_indices

__all__ = ["Restriction"]


class Restriction(Operator):
    """K_J of ``op`` on the points ``J`` (distinct indices into op's points, in the order given),
    multiplied through ``op`` (module docstring)."""

    def __init__(self, op: Operator, J):
        self.op = op
        self.J = check_indices("J", J, op.n_points)
        self.is_class_diagonal = op.is_class_diagonal
        self.has_intercept = op.has_intercept
        self._maps = Made()

    # ------------------------------------------------------------------ scatter and gather
    def scatter(self, V: np.ndarray) -> np.ndarray:
        """P_J V: the rows of V (|J|, ...) at the rows J of an array of op's n points, zero elsewhere."""
        return HOST.scatter(V, self._maps_on(HOST)[0])

    def _maps_on(self, ops) -> tuple:
        """(the scatter map of P_J, the positions J) on the arrays of ``ops``, made once per ``ops``."""
        return self._maps.get(ops, lambda: (ops.scatter_map(self.J, self.op.n_points), ops.indices(self.J)))

    def _product(self, ops, V):
        # K_J V = P_J^T K (P_J V); V (|J|, C[, k]) on the arrays of ops
        scatter, rows = self._maps_on(ops)
        return ops.take(ops.product(self.op)(ops.scatter(V, scatter)), rows)

    def intercepts(self, alpha) -> np.ndarray | None:
        return self.op.intercepts(self.scatter(np.asarray(alpha, dtype=np.float64)))

    # ------------------------------------------------------------------ the protocol
    @property
    def n_points(self) -> int:
        return int(self.J.size)

    @property
    def n_classes(self) -> int:
        return self.op.n_classes

    @property
    def params(self) -> np.ndarray:
        return self.op.params

    @property
    def param_names(self) -> tuple[str, ...]:
        return self.op.param_names

    @property
    def param_bounds(self) -> np.ndarray:
        return self.op.param_bounds

    def param_classes(self):
        return self.op.param_classes()

    def with_params(self, theta) -> Restriction:
        return Restriction(self.op.with_params(theta), self.J)

    def _mvm(self, V):
        return self._product(HOST, V)

    def _diag(self):
        return self.op.diag()[self.J]

    def _point_block_mvm(self, P):
        if self.is_class_diagonal:
            return self._diag() * P
        return self.op.point_block_mvm(self.scatter(P))[self.J]

    def _point_blocks(self):
        return self.op.point_blocks()[self.J]

    def _grad_trace(self, E, F):
        return self.op.grad_trace(self.scatter(E), self.scatter(F))

    def _dense(self):
        C = self.n_classes
        flat = (self.J[:, None] * C + np.arange(C)[None, :]).ravel()
        return self.op.dense()[np.ix_(flat, flat)]

    def _kron_terms(self):
        terms = self.op.kron_terms()
        if terms is None:
            return None
        return [KronTerm(self._through(t.mvm), t.S, t.rank) for t in terms]

    def _through(self, point_map):
        """B (|J|, m) -> M_J B for a map B (n, m) -> M B of op's points."""
        return lambda B: point_map(self.scatter(np.asarray(B, dtype=np.float64)))[self.J]

    def _restrict(self, J):
        return Restriction(self.op, self.J[J])

    def _cross(self, I, J):
        return self.op.cross(self.J[I], self.J[J])

    def _cross_test(self, X_new):
        return _Columns(self.op.cross_test(X_new), self)

    def _test_point_blocks(self, X_new):
        return self.op.test_point_blocks(X_new)

    @property
    def arrays(self):
        return self.op.arrays

    def __repr__(self) -> str:
        return f"Restriction({self.op!r}, {self.J.size} of {self.op.n_points} points)"


class _Columns(CrossOperator):
    """K_{*,J} of a :class:`Restriction`: op's block at new points, on the columns J."""

    def __init__(self, block: CrossOperator, view: Restriction):
        self._block, self._view = block, view

    @property
    def shape(self):
        rows, _, C = self._block.shape
        return (rows, self._view.n_points, C)

    def _mvm(self, V):
        return self._block.mvm(self._view.scatter(V))

    def _rmvm(self, W):
        return self._block.rmvm(W)[self._view.J]
