"""The MVM operator protocol: every prior reaches inference only through this interface.

An operator represents a kernel matrix K of size nC x nC over n points and C classes without
forming it.  A latent "vector" is an array of shape (n, C), C-contiguous, so that one row holds
all classes of one point (Seeger 2008, App. D.3 "dimension flipping"); several right-hand sides
have shape (n, C, k).  The flat index of entry (i, c) is ``i * C + c``, which is the index used by
:meth:`Operator.dense`.

Hyperparameters are one flat float vector in an unconstrained space (log for positive ones),
with names; ``with_params(theta)`` returns a new operator.  Operators are immutable.

Public methods validate and then call the ``_`` hooks.  Subclasses must define the hooks in the
"must be defined" section; the hooks in the "for speed" section have correct generic defaults
(unit-vector MVMs, finite differences) so that a new operator works first and gets fast second.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Sequence

import numpy as np

from gpmodels.errors import InputError
from gpmodels.hyperparameters import Parameterised, natural_values
from gpmodels.linalg.arrays import HOST
from gpmodels.linalg.finite_differences import central_differences
from gpmodels.linalg.point_blocks import point_blocks
from gpmodels.validation import check_indices

__all__ = ["Operator", "CrossOperator", "CompositeBlock", "Composite", "KronTerm", "as_rhs", "FD_STEP"]

#: step of the central differences used by the generic ``grad_trace`` default (log space).
FD_STEP = 1e-5


def as_rhs(V, n: int, C: int, name: str = "V") -> tuple[np.ndarray, bool]:
    """Return ``V`` as a float64 array of shape (n, C, k) and whether it was 2-D."""
    V = np.asarray(V, dtype=np.float64)
    if V.ndim == 2 and V.shape == (n, C):
        return V[:, :, None], True
    if V.ndim == 3 and V.shape[:2] == (n, C):
        return V, False
    raise InputError(f"Dimension mismatch: {name} must have shape ({n}, {C}) or ({n}, {C}, k); got {V.shape}")


class KronTerm:
    """One term M ⊗ S of a Kronecker-sum form K = Σ_t M_t ⊗ S_t (points ⊗ classes).

    ``mvm``: B (n, m) -> M B for the n x n point matrix M (symmetric PSD); ``S``: the C x C class
    matrix (symmetric PSD); ``rank``: an upper bound on rank M when known (e.g. 1 for 1 1^T).  In
    the (n, C) layout the term maps V to M V S.  Used by structure-aware preconditioners.
    """

    __slots__ = ("mvm", "S", "rank")

    def __init__(self, mvm, S: np.ndarray, rank: int | None = None):
        self.mvm, self.S, self.rank = mvm, np.asarray(S, dtype=np.float64), rank

    def with_S(self, S: np.ndarray) -> KronTerm:
        return KronTerm(self.mvm, S, self.rank)


class CrossOperator(abc.ABC):
    """A rectangular block K_{I,J} of an operator: maps (|J|, C[, k]) to (|I|, C[, k]).

    Used for held-out folds (``Operator.cross(I, J)``) and for prediction at new points
    (``Operator.cross_test(X_new)``).  Must be defined: ``shape``, ``_mvm``; for speed: ``_rmvm``
    (the transpose K_{I,J}^T, generic default from ``dense()``).
    """

    @property
    @abc.abstractmethod
    def shape(self) -> tuple[int, int, int]:
        """(rows, cols, C): number of row points, column points and classes."""

    @abc.abstractmethod
    def _mvm(self, V: np.ndarray) -> np.ndarray:
        """K_{I,J} V for V of shape (cols, C, k)."""

    def _rmvm(self, W: np.ndarray) -> np.ndarray:
        """K_{I,J}^T W for W of shape (rows, C, k) -> (cols, C, k).

        Generic default: the transpose of ``dense()``, i.e. cols*C unit-vector MVMs and an
        (rows*C, cols*C) matrix in memory — slow; the package's cross blocks override it.
        """
        rows, cols, C = self.shape
        k = W.shape[2]
        return (self.dense().T @ W.reshape(rows * C, k)).reshape(cols, C, k)

    def mvm(self, V) -> np.ndarray:
        rows, cols, C = self.shape
        V3, flat = as_rhs(V, cols, C)
        out = self._mvm(V3)
        return out[:, :, 0] if flat else out

    def rmvm(self, W) -> np.ndarray:
        """K_{I,J}^T W for W of shape (rows, C) or (rows, C, k); the result has cols rows.

        The transpose is what maps test-point directions back to the training points, e.g. the
        columns Q_j = K̃_{X,(j,.)} of the Laplace predictive (R&W 2006, eq. 3.44).
        """
        rows, cols, C = self.shape
        W3, flat = as_rhs(W, rows, C, "W")
        out = self._rmvm(np.ascontiguousarray(W3))
        return out[:, :, 0] if flat else out

    def dense(self) -> np.ndarray:
        """The block as a (rows*C, cols*C) matrix, for tests; built from unit-vector MVMs."""
        rows, cols, C = self.shape
        out = np.empty((rows * C, cols * C))
        eye = np.eye(cols * C).reshape(cols, C, cols * C)
        step = max(1, 4096 // max(1, rows * C))
        for s in range(0, cols * C, step):
            out[:, s : s + step] = self._mvm(np.ascontiguousarray(eye[:, :, s : s + step])).reshape(rows * C, -1)
        return out


#: a linear map of a composite's part: (cols, ...) -> (rows, ...) (an operator's or a representation's MVM)
PartMap = Callable[[np.ndarray], np.ndarray]


class CompositeBlock(CrossOperator):
    """The block K_{R,C} of a composite operator: the composite's one algebra over its parts' blocks.

    A composite (intercept, sum, block-diagonal, ANOVA, coupling) is K = 𝒜(A_1, ..., A_m): a fixed
    algebra over the linear maps of its parts (inner operators or kernel representations) that
    acts on the class axis or adds a constant per class (Φ_L, B, θ_m, σ² 1 1^T) and never mixes
    points.  So taking row points R and column points C commutes with it,
    K_{R,C} = 𝒜((A_1)_{R,C}, ..., (A_m)_{R,C}), and every such algebra is its own transpose in its
    parts (L A L^T, Σ θ_m A_m, A + σ² 1 1^T): K_{R,C}^T = 𝒜((A_1)_{R,C}^T, ...).  A composite
    therefore writes its MVM once, as ``compose(maps, V)`` given its parts' maps; the square MVM
    passes the parts' MVMs, a block the parts' block MVMs (``forward``) and the block's transpose
    their transposes (``transpose``).  One class serves every composite and every nesting of them.
    """

    def __init__(
        self,
        compose: Callable[[Sequence[PartMap], np.ndarray], np.ndarray],
        forward: Sequence[PartMap],
        transpose: Sequence[PartMap],
        shape: tuple[int, int, int],
    ):
        self._compose, self._forward, self._transpose = compose, tuple(forward), tuple(transpose)
        self._shape = tuple(int(s) for s in shape)

    @classmethod
    def of(cls, compose, blocks: Sequence[CrossOperator], n_classes: int) -> CompositeBlock:
        """The block over the same blocks of operator parts (all of one shape (rows, cols, .))."""
        rows, cols, _ = blocks[0].shape
        return cls(compose, [b._mvm for b in blocks], [b._rmvm for b in blocks], (rows, cols, n_classes))

    @property
    def shape(self):
        return self._shape

    def _mvm(self, V):
        return self._compose(self._forward, V)

    def _rmvm(self, W):
        return self._compose(self._transpose, W)


class Operator(Parameterised):
    """Kernel matrix K (nC x nC) over n points and C classes, reached through MVMs.

    Must be defined: ``n_points``, ``n_classes``, ``_mvm``, ``params``, ``param_names``,
    ``with_params``, ``_restrict``, ``_cross``, ``_cross_test``.
    For speed (generic defaults exist): ``_diag``, ``_point_block_mvm``, ``_point_blocks``,
    ``_grad_trace``, ``_dense``; optional structure: ``_kron_terms``; optional capability (no
    default, raises): ``_test_point_blocks`` (prior blocks at new points, for the predictive).
    """

    #: True when K is block-diagonal over classes (K_{ic,jc'} = 0 for c != c'); lets Newton-CG
    #: use the cheap diagonal preconditioner formula of Seeger 2008, App. B.
    is_class_diagonal: bool = False
    #: True when the operator carries intercepts b = σ² Σ_i α_i (Sec. 5.1.1): see :meth:`intercepts`.
    has_intercept: bool = False
    #: True for K = Σ_m θ_m K_m with components ``ops`` and weights ``weights`` (kernel-weight learning)
    is_kernel_sum: bool = False

    def intercepts(self, alpha) -> np.ndarray | None:
        """The intercepts b (C,) of the dual vector α (n, C), or None without ``has_intercept``."""
        return None

    @property
    def row_blocks(self) -> tuple[tuple[slice, Operator], ...] | None:
        """K = diag(K_1, ..., K_F) over consecutive row ranges, as (rows, K_k) pairs, where the operator is
        made of independent operators on separate points (:class:`~gpmodels.operators.stacked.Stacked`):
        preconditioners are then built per block.  None (the default): no such form."""
        return None

    def row_blocks_mvm(self, X, on, ops=HOST):
        """K X for X (n, C) on the row blocks ``on`` (a bool per block of :attr:`row_blocks`), zero on the
        rows of the others: the products of the blocks still solving in a lockstep fit.  X and the result are
        arrays of ``ops`` (:mod:`gpmodels.linalg.arrays`: host numpy, or the operator's ``arrays``).  An
        operator that declares ``row_blocks`` defines this."""
        raise InputError(f"{type(self).__name__} declares no row blocks (row_blocks is None)")

    @property
    def arrays(self):
        """The array primitives (:mod:`gpmodels.linalg.arrays`) of the operator's algebra, decided when it is built:
        a device backend (:mod:`gpmodels.kernels.device.backend`) where every kernel matrix lives on that device
        and the algebra is written over its arrays (:meth:`_product`), so that :meth:`device_mvm` runs K V from
        and to its arrays; :data:`~gpmodels.linalg.arrays.HOST` (the default) else."""
        return HOST

    @property
    def device_backend(self):
        """The device backend of :attr:`arrays` (None on the host): where the kernel matrices live."""
        return self.arrays.device_backend

    def device_mvm(self, Vd):
        """K V for V (n, C) or (n, C, k) an array of the operator's :attr:`arrays`, the result left there."""
        n, C = self.n_points, self.n_classes
        if tuple(Vd.shape[:2]) != (n, C) or Vd.ndim not in (2, 3):
            raise InputError(
                f"Dimension mismatch: V must have shape ({n}, {C}) or ({n}, {C}, k); got {tuple(Vd.shape)}"
            )
        return self._product(self.arrays, Vd)

    def _product(self, ops, V):
        """K V on the arrays of ``ops`` (:mod:`gpmodels.linalg.arrays`: :data:`~gpmodels.linalg.arrays.HOST`, or
        the device backend the operator declares as its ``arrays``, V (n, C) or (n, C, k) there): the one product
        of an operator whose algebra runs on host and device arrays alike; an operator that declares device
        ``arrays`` defines it."""
        raise InputError(f"{type(self).__name__} multiplies by mvm only (it defines no _product)")

    # ------------------------------------------------------------------ must be defined
    @property
    @abc.abstractmethod
    def n_points(self) -> int:
        """Number of points n."""

    @property
    @abc.abstractmethod
    def n_classes(self) -> int:
        """Number of classes C (the latent functions the likelihood sees)."""

    @abc.abstractmethod
    def _mvm(self, V: np.ndarray) -> np.ndarray:
        """K V for V of shape (n, C, k); returns a new array of the same shape."""

    @abc.abstractmethod
    def _restrict(self, J: np.ndarray) -> Operator:
        """The operator on the points J, laid out contiguously (Seeger 2008, App. D.2)."""

    @abc.abstractmethod
    def _cross(self, I: np.ndarray, J: np.ndarray) -> CrossOperator:
        """The block K_{I,J} between two sets of training points."""

    @abc.abstractmethod
    def _cross_test(self, X_new) -> CrossOperator:
        """The block K_{*,.} between new points X_new and all n training points."""

    # ------------------------------------------------------------------ for speed
    def _diag(self) -> np.ndarray:
        """diag K as (n, C).  Generic default: unit-vector MVMs, C*n of them in chunks."""
        n, C = self.n_points, self.n_classes
        out = np.empty(n * C)
        eye = np.eye(n * C).reshape(n, C, n * C)
        step = 64
        for s in range(0, n * C, step):
            cols = self._mvm(np.ascontiguousarray(eye[:, :, s : s + step])).reshape(n * C, -1)
            idx = np.arange(s, min(s + step, n * C))
            out[idx] = cols[idx, idx - s]
        return out.reshape(n, C)

    def _point_block_mvm(self, P: np.ndarray) -> np.ndarray:
        """Row i = K_i p_i with K_i the C x C block of point i (Seeger 2008, App. B).

        Generic default: extracts the blocks from ``dense()`` (O(n^2 C^2) memory).
        """
        n, C = self.n_points, self.n_classes
        if self.is_class_diagonal:
            return self._diag() * P
        D = self._dense().reshape(n, C, n, C)
        blocks = D[np.arange(n), :, np.arange(n), :]  # shape: (n, C, C)
        return np.einsum("icd,id->ic", blocks, P)

    def _point_blocks(self) -> np.ndarray:
        """All per-point C x C blocks K_i as (n, C, C), for block preconditioners.

        Generic default: C calls of ``_point_block_mvm`` with unit vectors (column c of every K_i).
        """
        n, C = self.n_points, self.n_classes
        return point_blocks(self._point_block_mvm, n, C)

    def _kron_terms(self) -> list[KronTerm] | None:
        """K = Σ_t M_t ⊗ S_t as a list of :class:`KronTerm`, or None when K has no such form.

        Generic default: None (preconditioners that need it fall back to the diagonal).
        """
        return None

    def kernel_groups(self) -> list[tuple[object, np.ndarray]] | None:
        """K = Σ_r M_r ⊗ diag(w_r) over distinct kernel matrices M_r: per M_r its representation
        (``mvm``: B (n, m) -> M_r B) and its class weights w_r, shape (C,) (v_c > 0 on the classes
        that use M_r, 0 elsewhere), when K is block-diagonal over classes with shared matrices;
        None otherwise (default).  A composite around K may then regroup its GEMMs (ANOVA's
        merged MVM)."""
        return None

    def _grad_trace(self, E: np.ndarray, F: np.ndarray) -> np.ndarray:
        """d/dθ_p Σ_k e_k^T K(θ) f_k for all p (Seeger 2008, eq. 6).

        Generic default: central finite differences in log space (two MVM sets per parameter).
        """
        return central_differences(self.params, lambda t: np.sum(E * self.with_params(t)._mvm(F)), FD_STEP)

    def _test_point_blocks(self, X_new) -> np.ndarray:
        """The prior C x C blocks K_** of each new point, (m, C, C): optional capability.

        There is no generic default (an operator over training points alone cannot know its
        kernel at new inputs); the default raises.  Needed by the Laplace predictive.
        """
        raise InputError(
            f"{type(self).__name__} does not give prior covariance blocks at new points "
            f"(test_point_blocks), which the predictive distribution needs; define "
            f"{type(self).__name__}._test_point_blocks(X_new) -> (m, C, C)"
        )

    def _dense(self) -> np.ndarray:
        """K as an (nC, nC) matrix; generic default from unit-vector MVMs."""
        n, C = self.n_points, self.n_classes
        out = np.empty((n * C, n * C))
        eye = np.eye(n * C).reshape(n, C, n * C)
        step = 256
        for s in range(0, n * C, step):
            out[:, s : s + step] = self._mvm(np.ascontiguousarray(eye[:, :, s : s + step])).reshape(n * C, -1)
        return out

    # ------------------------------------------------------------------ public surface
    def mvm(self, V) -> np.ndarray:
        """K V for V of shape (n, C) or (n, C, k); the result has the shape of V."""
        V3, flat = as_rhs(V, self.n_points, self.n_classes)
        out = self._mvm(V3)
        return out[:, :, 0] if flat else out

    def diag(self) -> np.ndarray:
        """diag K, shape (n, C)."""
        return self._diag()

    def point_block_mvm(self, P) -> np.ndarray:
        """For P of shape (n, C), row i of the result is K_i p_i (K_i: C x C block of point i)."""
        P = np.asarray(P, dtype=np.float64)
        if P.shape != (self.n_points, self.n_classes):
            raise InputError(
                f"Dimension mismatch: P must have shape ({self.n_points}, {self.n_classes}); got {P.shape}"
            )
        return self._point_block_mvm(P)

    def point_blocks(self) -> np.ndarray:
        """The per-point C x C blocks K_i of K (Seeger 2008, App. B), shape (n, C, C)."""
        return self._point_blocks()

    def kron_terms(self) -> list[KronTerm] | None:
        """K as a Kronecker sum Σ_t M_t ⊗ S_t over (points, classes), or None (see KronTerm)."""
        return self._kron_terms()

    def grad_trace(self, E, F) -> np.ndarray:
        """Vector over hyperparameters p of Σ_k e_k^T (dK/dθ_p) f_k = tr E^T (dK) F.

        E and F have shape (n, C) or (n, C, q).
        """
        E3, _ = as_rhs(E, self.n_points, self.n_classes, "E")
        F3, _ = as_rhs(F, self.n_points, self.n_classes, "F")
        if E3.shape != F3.shape:
            raise InputError(f"Dimension mismatch: E and F must have the same shape; got {E3.shape} and {F3.shape}")
        if self.params.size == 0:
            return np.zeros(0)
        return self._grad_trace(np.ascontiguousarray(E3), np.ascontiguousarray(F3))

    def grad_trace_blocks(self, A) -> np.ndarray:
        """Vector over hyperparameters p of Σ_c Σ_ab (A_c)_ab (∂K_c/∂θ_p)_ab for a class-diagonal K with
        class blocks K_c (n x n) and dense weights A (C, n, n): the gradient of Σ_c tr(A_c^T K_c), e.g.
        tr(R_cc ∂K_c) of the Laplace gradient (R&W 2006, eq. 5.23).  The same vector as ``grad_trace(E, F)``
        with E[:, c, :] = A_c and F[:, c, :] = I."""
        n, C = self.n_points, self.n_classes
        if not self.is_class_diagonal:
            raise InputError(
                f"grad_trace_blocks needs a class-diagonal operator; {type(self).__name__} couples "
                "the classes (use grad_trace)"
            )
        A = np.asarray(A, dtype=np.float64)
        if A.shape != (C, n, n):
            raise InputError(f"Dimension mismatch: A must have shape ({C}, {n}, {n}); got {A.shape}")
        if self.params.size == 0:
            return np.zeros(0)
        return self._grad_trace_blocks(A)

    def _grad_trace_blocks(self, A: np.ndarray) -> np.ndarray:
        """Generic default: ``_grad_trace`` with F the identity in every class (O(n^3 C) products)."""
        n, C = self.n_points, self.n_classes
        F = np.ascontiguousarray(np.broadcast_to(np.eye(n)[:, None, :], (n, C, n)))
        return self._grad_trace(np.ascontiguousarray(A.transpose(1, 0, 2)), F)

    def restrict(self, J) -> Operator:
        """The operator on the training points J (in the order given), contiguous."""
        return self._restrict(check_indices("J", J, self.n_points))

    def cross(self, I, J) -> CrossOperator:
        """The block K_{I,J} between training points I (rows) and J (columns)."""
        return self._cross(check_indices("I", I, self.n_points), check_indices("J", J, self.n_points))

    def cross_test(self, X_new) -> CrossOperator:
        """The block K_{*,.} between new points (rows) and all training points (columns)."""
        return self._cross_test(X_new)

    def test_point_blocks(self, X_new) -> np.ndarray:
        """Prior covariance K_** of the C latent values at each new point: shape (m, C, C).

        Block j is what ``dense()`` would hold at point j if the operator were built on the
        training inputs and X_new together (the same kernel, variances, intercept, mixing).
        """
        out = np.asarray(self._test_point_blocks(X_new), dtype=np.float64)
        C = self.n_classes
        if out.ndim != 3 or out.shape[1:] != (C, C):
            raise InputError(
                f"{type(self).__name__}._test_point_blocks must return shape (m, {C}, {C}); got {out.shape}"
            )
        return out

    def dense(self) -> np.ndarray:
        """K as an (nC, nC) matrix with flat index i*C + c. For exact solvers and tests only."""
        return self._dense()

    def class_block(self, c: int) -> np.ndarray:
        """The n x n block K_{.c,.c} of class c (exact solvers); default slices ``dense()``."""
        if not 0 <= c < self.n_classes:
            raise InputError(f"class index must be in 0..{self.n_classes - 1}; got {c}")
        C = self.n_classes
        return self._dense()[c::C, c::C].copy()

    @property
    def param_bounds(self) -> np.ndarray:
        """(p, 2) lower and upper bounds of ``params`` (unconstrained: ±inf)."""
        return np.tile([-np.inf, np.inf], (self.params.size, 1))

    def describe(self) -> dict:
        """Hyperparameters by name, in natural units where the name says ``log_``."""
        return natural_values(self.param_names, self.params)

    def param_classes(self) -> tuple[tuple[int, ...] | None, ...]:
        """Per hyperparameter (the order of ``params``), the indices of the classes whose covariance it
        scales or shapes, or None where it is not tied to particular classes; reports label hyperparameters
        with these classes' names.  Default: None for every hyperparameter."""
        return (None,) * self.params.size


class Composite(Operator):
    """An operator made of operators by one algebra (see :class:`CompositeBlock`).

    Must be defined (besides the protocol's parameters, restrict, diag, ...): ``_parts`` (the inner
    operators, in the order ``_compose`` takes their maps) and ``_compose(ops, maps, V)``, the MVM given
    the parts' linear maps on the arrays of ``ops`` (:mod:`gpmodels.linalg.arrays`); the MVM on host and
    device arrays, cross blocks K_{I,J} and test-point blocks K_{*,X} all come from it.  A composite may
    override ``_product`` with a faster square-only form of the same matrix.
    """

    @abc.abstractmethod
    def _parts(self) -> tuple[Operator, ...]:
        """The inner operators, in the order of ``_compose``'s maps."""

    @abc.abstractmethod
    def _compose(self, ops, maps: Sequence[PartMap], V):
        """K V given the maps of the parts (square MVMs, blocks or transposed blocks) on the arrays of ``ops``:
        V (cols, C, k), on a device also (cols, C); a composite that declares no device ``arrays`` is given
        :data:`~gpmodels.linalg.arrays.HOST` only."""

    def _mvm(self, V):  # the parts' unchecked host products: no array checks per part and product
        return self._compose(HOST, tuple(p._mvm for p in self._parts()), V)

    def _product(self, ops, V):
        return self._compose(ops, tuple(ops.product(p) for p in self._parts()), V)

    def _cross(self, I, J):
        return CompositeBlock.of(
            functools.partial(self._compose, HOST), [p._cross(I, J) for p in self._parts()], self.n_classes
        )

    def _cross_test(self, X_new):
        blocks = [p._cross_test(X_new) for p in self._parts()]
        return CompositeBlock.of(functools.partial(self._compose, HOST), blocks, self.n_classes)


def concat_params(parts: Sequence[tuple[str, np.ndarray, Sequence[str]]]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Join (prefix, values, names) triples into one vector and prefixed names."""
    values = [np.asarray(v, dtype=np.float64).ravel() for _, v, _ in parts]
    names = tuple(f"{prefix}{name}" for prefix, _, ns in parts for name in ns)
    return (np.concatenate(values) if values else np.zeros(0)), names
