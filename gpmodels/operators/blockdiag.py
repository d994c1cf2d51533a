"""Block-diagonal kernel matrix with kernel sharing: K = diag(K^(c))_c, K^(c) = v_c M^(l_c).

Seeger 2008, Sec. 2 and App. D.1.  Classes are grouped by kernel l (one shape function and one
representation of M^(l) per group) and, independently, by variance (one v per variance group).
The sharing modes of Sec. 6.2 are:

=========  ==========================  =============================
mode       kernel groups               variance groups
=========  ==========================  =============================
tied       one M for all classes       one v            (mc-tied)
semi       one M for all classes       one v per class  (mc-semi)
separate   one M per class             one v per class  (mc-sep)
=========  ==========================  =============================

and arbitrary groups may be given instead.  An MVM runs one GEMM ``M @ V[:, group]`` per distinct
M, scaled by v per class afterwards; groups whose kernels are currently equal (same type and
parameters on the same inputs) share one stored matrix and one GEMM.

Hyperparameters: every kernel group's shape parameters (``kernel{l}.log_w``, ...), then
``log_variance{j}`` for every variance group.  Each variance has declared bounds (``variance_bounds``,
default :data:`VARIANCE_BOUNDS`, as scikit-learn's ``ConstantKernel`` has ``constant_value_bounds``) on its
signal variance v_j m̄_j, m̄_j the mean of the kernel diagonal M_ii over the training points and the classes
of group j: scale-free, so that a linear kernel on raw term counts (m̄ ~ 100) and an RBF (m̄ = 1) get the same
room; ``param_bounds`` gives them in log v, and every hyperparameter learner keeps v inside.  Gradients (eq. 6):
  d/dlog v_j: Σ_{c in j} v_c Σ_k e_ck^T M^(l_c) f_ck,
  shape parameters of M^(l): the representation's ``grad_contract`` of E_l diag(v), F_l.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.representation_base import Representation, RepresentationBuilder, shared_arrays
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.linalg.arrays import Made
from gpmodels.operators.base import CompositeBlock, KronTerm, Operator, concat_params
from gpmodels.validation import check_features, positive_number, sequence_of

__all__ = ["BlockDiagonal", "SHARING_MODES", "VARIANCE_BOUNDS", "check_variance_bounds", "variance_bounds_field"]

SHARING_MODES = ("tied", "semi", "separate")

#: default declared bounds (low, high) of a signal variance v_j m̄_j (module docstring): scikit-learn's
#: ``constant_value_bounds``.  On separable data the CV criterion keeps falling as v grows, and the final fit's
#: Newton steps degrade with it; the bound stops v there and the learning outcome names the variance at it.
VARIANCE_BOUNDS = (1e-5, 1e5)


#: what a ``variance_bounds`` may be: [low, high], two positive finite numbers, low <= high
BOUNDS_VALIDATOR = sequence_of(positive_number(), min_len=2, max_len=2, ascending=True)


def variance_bounds_field():
    """The ``variance_bounds`` field of a prior that builds a :class:`BlockDiagonal` (keyword-only): (low, high)
    of every signal variance v_j m̄_j, default :data:`VARIANCE_BOUNDS`."""
    return attrs.field(default=VARIANCE_BOUNDS, converter=_pair_of_floats, validator=BOUNDS_VALIDATOR, kw_only=True)


def _pair_of_floats(value):
    """A list or array of two real numbers as a tuple of floats (anything else unchanged, for the validator)."""
    if BOUNDS_VALIDATOR.allows(value):
        return (float(value[0]), float(value[1]))
    return value


def check_variance_bounds(bounds, what: str = "variance_bounds") -> tuple[float, float]:
    """``bounds`` as (low, high) if :data:`BOUNDS_VALIDATOR` allows it, else an :class:`InputError` naming ``what``."""
    if not BOUNDS_VALIDATOR.allows(bounds):
        raise InputError(f"{what} must be {BOUNDS_VALIDATOR.describe()}; got {bounds!r}")
    return float(bounds[0]), float(bounds[1])


def _is_group_list(groups) -> bool:
    return len(groups) > 0 and all(isinstance(g, (list, tuple, np.ndarray)) for g in groups)


def _group_array(name: str, groups, n_classes: int | None) -> np.ndarray:
    """class -> group index from either a (C,) index array or a list of class lists."""
    if _is_group_list(groups):
        n = sum(len(g) for g in groups) if n_classes is None else n_classes
        out = np.full(n, -1, dtype=np.intp)
        for g, members in enumerate(groups):
            for c in members:
                c = int(c)
                if not 0 <= c < n:
                    raise InputError(f"{name}: class {c} is outside 0..{n - 1}")
                if out[c] >= 0:
                    raise InputError(f"{name}: class {c} appears in more than one group")
                out[c] = g
        if np.any(out < 0):
            raise InputError(
                f"{name}: classes {np.flatnonzero(out < 0).tolist()} are in no group; every class needs one"
            )
        return out
    arr = np.asarray(groups)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
        raise InputError(f"{name} must be a list of class lists or an integer array (class -> group); got {groups!r}")
    arr = arr.astype(np.intp)
    if n_classes is not None and arr.shape != (n_classes,):
        raise InputError(f"{name} must map each of the {n_classes} classes to a group; got shape {arr.shape}")
    if arr.min() < 0 or set(np.unique(arr).tolist()) != set(range(int(arr.max()) + 1)):
        raise InputError(f"{name} must use the group indices 0..G-1 without gaps; got {sorted(set(arr.tolist()))}")
    return arr


class _Columns(NamedTuple):
    """For right-hand sides of k columns per class, flattened to (rows, C k), on the arrays of one ``ops``: each
    group's columns (a slice, or indices); the indices that gather them group after group (``gather``) and
    that put the groups' concatenated results back in class order (``order``), both None where the groups
    are in class order already; the row of v_c per column (``scale``); the distinct M's products there
    (``products``) and their device stack (``stack``, :attr:`_Layout.stack`)."""

    columns: list
    gather: object
    order: object
    scale: object
    products: list
    stack: object


class _Layout:
    """Which classes go through which distinct representation, for one MVM; ``arrays``: the primitives of the
    device all of them live on, else the host's (:func:`shared_arrays`)."""

    def __init__(self, reps: list[Representation], rep_of_group: np.ndarray, class_kernel: np.ndarray):
        self.reps, self.n_classes = reps, int(class_kernel.size)
        self.classes = []
        for r in range(len(reps)):
            cls = np.flatnonzero(rep_of_group[class_kernel] == r)
            contiguous = cls.size and np.array_equal(cls, np.arange(cls[0], cls[0] + cls.size))
            self.classes.append(slice(int(cls[0]), int(cls[0]) + cls.size) if contiguous else cls)
        self._made = Made()

    @property
    def arrays(self):
        return self._made.get("arrays", lambda: shared_arrays(self.reps))  # asked on every MVM

    @property
    def stack(self):
        """The device stack that holds every distinct M, in this order, where each serves as many classes
        (one batched product, :mod:`gpmodels.kernels.device.stack`); else None."""
        return self._made.get("stack", self._one_stack)

    def _one_stack(self):
        stack = self.reps[0].stack
        sizes = {np.arange(self.n_classes)[cls].size for cls in self.classes}
        ok = (
            stack is not None
            and stack.size == len(self.reps)
            and all(r.stack is stack and r.stack_index == i for i, r in enumerate(self.reps))
            and len(sizes) == 1
        )
        return stack if ok else None

    def columns(self, ops, k: int, class_v: np.ndarray) -> _Columns:
        """The column maps of right-hand sides of k columns per class, flattened to (rows, C k), on the arrays
        of ``ops`` (:class:`_Columns`), made once per ``ops`` and k."""
        return self._made.get(("columns", ops, k), lambda: self._columns(ops, k, class_v))

    def _columns(self, ops, k: int, class_v: np.ndarray) -> _Columns:
        columns, flat = [], []
        for cls in self.classes:
            idx = np.arange(self.n_classes, dtype=np.intp)[cls]
            cols = (idx[:, None] * k + np.arange(k)[None, :]).ravel()
            flat.append(cols)
            columns.append(slice(int(cols[0]), int(cols[-1]) + 1) if isinstance(cls, slice) else ops.indices(cols))
        flat = np.concatenate(flat)
        in_order = np.array_equal(flat, np.arange(flat.size))
        return _Columns(
            columns,
            None if in_order else ops.indices(flat),
            None if in_order else ops.indices(np.argsort(flat)),
            ops.from_host(np.repeat(class_v, k)[None, :]),
            [ops.product(rep) for rep in self.reps],
            self.stack,
        )


class BlockDiagonal(Operator):
    """K = diag(v_c M^(l_c))_c over n points and C classes; see the module docstring."""

    is_class_diagonal = True

    def __init__(
        self,
        X,
        kernels: Sequence[Kernel],
        class_kernel,
        variances,
        class_variance,
        representation: RepresentationBuilder | None = None,
        *,
        variance_bounds=VARIANCE_BOUNDS,
        _reps: dict | None = None,
    ):
        self.X = X if _reps is not None else check_features("X", X)
        self.kernels = tuple(kernels)
        if not self.kernels:
            raise InputError("BlockDiagonal needs at least one kernel")
        variances = np.atleast_1d(np.asarray(variances, dtype=np.float64))
        if not np.all(np.isfinite(variances)) or np.any(variances <= 0):
            raise InputError(f"variances must be positive and finite; got {variances.tolist()}")
        self.class_kernel = _group_array("class_kernel", class_kernel, None)
        self._C = int(self.class_kernel.size)
        self.class_variance = _group_array("class_variance", class_variance, self._C)
        if self.class_kernel.max() + 1 != len(self.kernels):
            raise InputError(
                f"class_kernel uses {self.class_kernel.max() + 1} kernel groups but {len(self.kernels)} kernels "
                "were given"
            )
        if self.class_variance.max() + 1 != variances.size:
            raise InputError(
                f"class_variance uses {self.class_variance.max() + 1} variance groups but {variances.size} "
                "variances were given"
            )
        self.variances = variances
        # a copy made by _evolve (every with_params / restrict) keeps its already checked bounds
        self.variance_bounds = variance_bounds if _reps is not None else check_variance_bounds(variance_bounds)
        self.representation = representation or RepresentationConfig()
        self._build_reps(_reps or {})

    # ------------------------------------------------------------------ construction helpers
    @classmethod
    def from_sharing(
        cls,
        X,
        kernel: Kernel,
        n_classes: int,
        sharing: str = "separate",
        variance: float | Sequence[float] = 1.0,
        representation: RepresentationBuilder | None = None,
        *,
        variance_bounds=VARIANCE_BOUNDS,
    ) -> BlockDiagonal:
        """Build with a sharing mode: ``tied``, ``semi`` or ``separate`` (Seeger 2008, Sec. 6.2)."""
        if sharing not in SHARING_MODES:
            raise InputError(f"sharing must be one of {SHARING_MODES} (or give groups); got {sharing!r}")
        C = int(n_classes)
        if C < 1:
            raise InputError(f"n_classes must be >= 1; got {n_classes}")
        n_var = 1 if sharing == "tied" else C
        v = (
            np.broadcast_to(np.asarray(variance, dtype=np.float64), (n_var,))
            if np.ndim(variance) == 0
            else np.asarray(variance, dtype=np.float64)
        )
        if v.shape != (n_var,):
            raise InputError(f"sharing {sharing!r} with {C} classes needs {n_var} variances; got {v.size}")
        if sharing == "separate":
            kernels, ck = [kernel] * C, np.arange(C)
        else:
            kernels, ck = [kernel], np.zeros(C, dtype=np.intp)
        cv = np.zeros(C, dtype=np.intp) if sharing == "tied" else np.arange(C)
        return cls(X, kernels, ck, np.array(v), cv, representation, variance_bounds=variance_bounds)

    def _build_reps(self, old: dict) -> None:
        """One representation per distinct kernel key; reuse old ones with equal keys, build the others
        together (``build_group``: on a device, one stack of stored matrices)."""
        first: dict = {}
        for k in self.kernels:
            first.setdefault(k.key(), k)
        missing = [key for key in first if key not in old]
        columns = -(-self._C // len(first))  # `auto` costs products of about C / (distinct kernels) columns
        built = (  # `auto` budgets for every kernel group (separate sharing: C matrices)
            self.representation.for_columns(columns).build_group(
                self.X,
                [first[key] for key in missing],
                len(self.kernels),
                log=not old,
                like=next(iter(old.values()), None),
            )
            if missing
            else []
        )
        made = dict(zip(missing, built))
        reps = {key: old[key] if key in old else made[key] for key in first}
        rep_index = {key: i for i, key in enumerate(reps)}
        rep_of_group = np.array([rep_index[k.key()] for k in self.kernels], dtype=np.intp)
        self._rep_by_key = reps
        self._rep_list = list(reps.values())
        self._rep_of_group = rep_of_group
        self._layout = _Layout(self._rep_list, rep_of_group, self.class_kernel)
        self._class_v = self.variances[self.class_variance]

    def _evolve(self, X=None, kernels=None, variances=None, reps=None) -> BlockDiagonal:
        return BlockDiagonal(
            self.X if X is None else X,
            self.kernels if kernels is None else kernels,
            self.class_kernel,
            self.variances if variances is None else variances,
            self.class_variance,
            self.representation,
            variance_bounds=self.variance_bounds,
            _reps=self._rep_by_key if reps is None else reps,
        )

    # ------------------------------------------------------------------ protocol
    @property
    def n_points(self) -> int:
        return self.X.shape[0]

    @property
    def n_classes(self) -> int:
        return self._C

    @property
    def rep_groups(self) -> list[tuple[Representation, np.ndarray]]:
        """(representation, class indices) per distinct kernel matrix M: the GEMM groups of an MVM."""
        C = self._C
        return [(rep, np.arange(C)[cls]) for rep, cls in zip(self._layout.reps, self._layout.classes)]

    def kernel_groups(self) -> list[tuple[Representation, np.ndarray]]:
        out = []
        for rep, cls in self.rep_groups:
            weights = np.zeros(self._C)
            weights[cls] = self._class_v[cls]
            out.append((rep, weights))
        return out

    @property
    def class_variances(self) -> np.ndarray:
        """v_c per class, shape (C,)."""
        return self._class_v

    def _grouped(self, ops, maps, flat, k: int, layout: _Columns | None = None):
        """K V given one map per distinct M (``_layout.reps`` order) on the arrays of ``ops``: M's MVM, or a block
        M_{I,J} or its transpose (K_{I,J} = diag(v_c M^(l_c)_{I,J}), its transpose diag(v_c M^(l_c)_{I,J}^T));
        V of k columns per class flattened, (cols, C k) -> (rows, C k); ``layout``: its :class:`_Columns` where
        the caller has it."""
        layout = layout or self._layout.columns(ops, k, self._class_v)
        if len(maps) == 1:  # one M for every class (tied, semi): the GEMM result is the output
            out = maps[0](flat)
            out *= layout.scale
            return out
        parts = (apply(ops.columns(flat, c)) for apply, c in zip(maps, layout.columns))
        return ops.join_columns(parts, layout.columns, layout.order, layout.scale)

    def _square(self, ops, flat, k: int):
        """K V on the arrays of ``ops``, flat (n, C k): one batched product over a device stack of the distinct
        M's, else one product per M (:meth:`_grouped`)."""
        layout = self._layout.columns(ops, k, self._class_v)
        if layout.stack is not None:
            return self._stacked(ops, layout, flat)
        return self._grouped(ops, layout.products, flat, k, layout)

    def _stacked(self, ops, layout: _Columns, flat):
        """K V on the device when the distinct M's are one stack, flat (n, C k): the groups' columns gathered
        group after group as B (G, n, w), S B in one batched product, then scattered back to class order and
        scaled by v_c."""
        xp = ops.xp
        n, G = flat.shape[0], layout.stack.size
        B = flat if layout.gather is None else ops.take(flat, layout.gather, axis=1)
        w = B.shape[1] // G
        B3 = xp.reshape(xp.permute_dims(xp.reshape(B, (n, G, w)), (1, 0, 2)), (G, n, w), copy=True)  # C order
        out = layout.stack.product(B3)
        out = xp.reshape(xp.permute_dims(out, (1, 0, 2)), (n, G * w))
        if layout.order is not None:
            out = ops.take(out, layout.order, axis=1)
        return out * layout.scale

    @staticmethod
    def _across(ops, V, product, *args):
        """``product(ops, *args, flat, k)`` (flat (cols, C k) on the arrays of ``ops`` -> (rows, C k)) for host V
        (cols, C, k): on a device V crosses there once and the result back once (not once per group: C round
        trips per MVM for separate kernels)."""
        cols, C, k = V.shape
        out = ops.to_host(product(ops, *args, ops.from_host(V.reshape(cols, C * k)), k))
        return out.reshape(out.shape[0], C, k)

    @property
    def arrays(self):
        return self._layout.arrays

    def _product(self, ops, V):
        if V.ndim == 2:
            return self._square(ops, V, 1)
        n, C, k = V.shape
        xp = ops.xp
        return xp.reshape(self._square(ops, xp.reshape(V, (n, C * k)), k), (n, C, k))

    def _mvm(self, V):
        return self._across(self._layout.arrays, V, self._square)

    def _block(self, blocks) -> CompositeBlock:
        """K_{R,C} from the blocks of the distinct M's over the same row and column points, its algebra on their
        one device where they share one."""
        rows, cols = blocks[0].shape
        ops = shared_arrays(blocks)

        def compose(maps, V):
            return self._across(ops, V, self._grouped, maps)

        forward, transpose = [ops.product(b) for b in blocks], [ops.rproduct(b) for b in blocks]
        return CompositeBlock(compose, forward, transpose, (rows, cols, self._C))

    def _diag(self):
        out = np.empty((self.n_points, self._C))
        for rep, cls in zip(self._layout.reps, self._layout.classes):
            out[:, cls] = rep.diag()[:, None] * self._class_v[cls][None, :]
        return out

    def _point_block_mvm(self, P):
        return self._diag() * P

    def _kron_terms(self):
        # K = Σ_r M_r ⊗ diag(v_c 1{c uses M_r})
        out = []
        for rep, cls in self.rep_groups:
            S = np.zeros((self._C, self._C))
            S[cls, cls] = self._class_v[cls]
            out.append(KronTerm(rep.mvm, S))
        return out

    @property
    def params(self) -> np.ndarray:
        return concat_params(self._param_parts())[0]

    @property
    def param_names(self) -> tuple[str, ...]:
        return concat_params(self._param_parts())[1]

    def _param_parts(self):
        parts = [(f"kernel{l}.", k.params, k.param_names) for l, k in enumerate(self.kernels)]
        parts.append(("", np.log(self.variances), [f"log_variance{j}" for j in range(self.variances.size)]))
        return parts

    @property
    def param_bounds(self) -> np.ndarray:
        """The kernels' own bounds (e.g. a scikit-learn kernel's), then log v_j in log(``variance_bounds`` / m̄_j)."""
        parts = [k.param_bounds.reshape(-1, 2) for k in self.kernels]
        scale = self.signal_scales()
        variance = np.log(np.asarray(self.variance_bounds))[None, :] - np.log(scale)[:, None]
        return np.vstack(parts + [variance])

    def signal_scales(self) -> np.ndarray:
        """m̄_j per variance group: the mean of M_ii over the training points and the group's classes (1 where
        it is not a positive number, e.g. a linear kernel on all-zero inputs)."""
        per_class = np.empty(self._C)
        for rep, cls in zip(self._layout.reps, self._layout.classes):
            per_class[cls] = float(np.mean(rep.diag()))
        count = np.bincount(self.class_variance, minlength=self.variances.size)
        scale = np.bincount(self.class_variance, weights=per_class, minlength=self.variances.size) / count
        return np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)

    def param_classes(self) -> tuple[tuple[int, ...], ...]:
        """Kernel group l's shape parameters act on the classes c with l_c = l, variance j on those in group j."""
        kernel = [tuple(np.flatnonzero(self.class_kernel == l).tolist()) for l in range(len(self.kernels))]
        var = [tuple(np.flatnonzero(self.class_variance == j).tolist()) for j in range(self.variances.size)]
        return tuple(cls for l, k in enumerate(self.kernels) for cls in [kernel[l]] * k.params.size) + tuple(var)

    def with_params(self, theta) -> BlockDiagonal:
        theta = np.asarray(theta, dtype=np.float64).ravel()
        if theta.size != self.params.size:
            raise InputError(
                f"BlockDiagonal has {self.params.size} parameters {self.param_names}; got {theta.size} values"
            )
        if not np.all(np.isfinite(theta)):
            raise InputError(f"hyperparameters must be finite; got {theta.tolist()}")
        kernels, pos = [], 0
        for k in self.kernels:
            p = k.params.size
            kernels.append(k.with_params(theta[pos : pos + p]) if p else k)
            pos += p
        return self._evolve(kernels=kernels, variances=np.exp(theta[pos:]))

    def _grad_trace(self, E, F):
        n, C, q = E.shape
        grads_kernel = [np.zeros(k.params.size) for k in self.kernels]
        t = np.zeros(C)  # t_c = Σ_k e_ck^T M f_ck
        for l in range(len(self.kernels)):
            cls = np.flatnonzero(self.class_kernel == l)
            rep = self._rep_list[self._rep_of_group[l]]
            Fl = np.ascontiguousarray(F[:, cls, :]).reshape(n, -1)
            El = np.ascontiguousarray(E[:, cls, :]).reshape(n, -1)
            values, grad = rep.contractions(El, Fl, np.repeat(self._class_v[cls], q))
            t[cls] = values.reshape(cls.size, q).sum(axis=1)
            if self.kernels[l].params.size:
                grads_kernel[l] = grad
        g_var = np.bincount(self.class_variance, weights=self._class_v * t, minlength=self.variances.size)
        return np.concatenate(grads_kernel + [g_var])

    def _grad_trace_blocks(self, A):
        # per kernel group l: d/dθ_l Σ_{c in l} v_c Σ_ab (A_c)_ab M_ab (one contraction of the summed
        # weights); d/dlog v_j: Σ_{c in j} v_c Σ_ab (A_c)_ab M_ab
        C = self._C
        grads_kernel = [np.zeros(k.params.size) for k in self.kernels]
        t = np.zeros(C)
        for l in range(len(self.kernels)):
            cls = np.flatnonzero(self.class_kernel == l)
            rep = self._rep_list[self._rep_of_group[l]]
            M = rep.dense()
            t[cls] = [float(np.vdot(A[c], M)) for c in cls]
            if self.kernels[l].params.size:
                weights = np.tensordot(self._class_v[cls], A[cls], axes=1)
                grads_kernel[l] = rep.grad_contract_dense(weights)
        g_var = np.bincount(self.class_variance, weights=self._class_v * t, minlength=self.variances.size)
        return np.concatenate(grads_kernel + [g_var])

    def _restrict(self, J):
        stack = self._layout.stack
        if stack is not None:  # one take of S[:, J, J] for every M
            reps = dict(zip(self._rep_by_key, stack.restrict(self._rep_list, J)))
        else:
            reps = {key: rep.restrict(J) for key, rep in self._rep_by_key.items()}
        return self._evolve(X=self.X[J], reps=reps)

    def _cross(self, I, J):
        return self._block([r.cross(I, J) for r in self._layout.reps])

    def _cross_test(self, X_new):
        X_new = self._check_new(X_new)
        return self._block([r.cross_test(X_new) for r in self._layout.reps])

    def _check_new(self, X_new):
        X_new = check_features("X_new", X_new)
        if X_new.shape[1] != self.X.shape[1]:
            raise InputError(
                f"X_new must have {self.X.shape[1]} features like the training inputs; got {X_new.shape[1]}"
            )
        return X_new

    def _test_point_blocks(self, X_new):
        # K_** = diag(v_c M^(l_c)(x_*, x_*))_c: class-diagonal like K (a low-rank representation's
        # diagonal correction makes its diagonal exact, so M(x_*, x_*) is the kernel's own)
        X_new = self._check_new(X_new)
        m, C = X_new.shape[0], self._C
        d = np.empty((m, C))
        for l, k in enumerate(self.kernels):
            cls = np.flatnonzero(self.class_kernel == l)
            d[:, cls] = k.diag(X_new)[:, None] * self._class_v[cls][None, :]
        out = np.zeros((m, C, C))
        out[:, np.arange(C), np.arange(C)] = d
        return out

    def _dense(self):
        n, C = self.n_points, self._C
        out = np.zeros((n, C, n, C))
        for rep, cls in zip(self._layout.reps, self._layout.classes):
            M = rep.dense()
            for c in np.arange(C)[cls]:
                out[:, c, :, c] = self._class_v[c] * M
        return out.reshape(n * C, n * C)

    def class_block(self, c: int) -> np.ndarray:
        if not 0 <= c < self._C:
            raise InputError(f"class index must be in 0..{self._C - 1}; got {c}")
        rep = self._rep_list[self._rep_of_group[self.class_kernel[c]]]
        return self._class_v[c] * rep.dense()

    def __repr__(self) -> str:
        return (
            f"BlockDiagonal(n={self.n_points}, C={self._C}, kernels={len(self.kernels)}, "
            f"distinct={len(self._rep_list)}, variances={self.variances.size})"
        )
