"""Preconditioned linear conjugate gradients (Saad 1996, Alg. 9.1) on a batch of independent systems.

One loop, :func:`cg`, solves A x = b for symmetric positive definite A given as a function x -> A x on
arrays of any shape, with an optional preconditioner: a diagonal one (an array of the inverse diagonal) or
any symmetric positive definite r -> M^{-1} r (``precondition``; e.g. the per-point block-Jacobi of
Newton–CG).  The arrays may hold many independent systems (:class:`Systems`): consecutive row blocks of a
block-diagonal A (the Newton or accumulation systems of stacked CV folds), the columns of the last axis
(many right-hand sides of one A: the probes of stochastic Lanczos quadrature, the test points of the
predictive variances), or both.  Each system has its own scalars r^T z, p^T A p, step lengths α_i,
β_i = r_{i+1}^T z_{i+1} / r_i^T z_i and stopping test, as linear_operator's ``linear_cg`` keeps them per
column; a system that has stopped takes step 0 from then on, and a product told which row blocks still
solve may skip the others.  Each system's iterates are those of CG on it alone (up to the order of sums).
Used for the Newton systems (5) of Seeger 2008 (Alg. 1), the CV accumulation systems (Sec. 5.2) and the
Laplace criterion's probes.

Where A's product computes another linear map M of its argument on the way (the Newton system's
A β = β + V^T (K̃ V β) computes K̃ V β), CG can keep w = M x beside x from w_0 = M x_0 and each step's M p_i
(``image``): one more vector update per step, and the caller has M x at the end without a product (Newton–CG's
s̃ = K̃ s of the line search).

Optionally the run records each system's α_i and β_i: they give the Lanczos tridiagonal T of the
(preconditioned) A started at b / ||b|| (Saad 2003, Sec. 6.7.3; Gardner et al. 2018, "mBCG"),

  T[0, 0] = 1/α_0,  T[i, i] = 1/α_i + β_{i-1}/α_{i-1},  T[i, i+1] = √β_i / α_i   (:meth:`CGResult.lanczos`).

The vector work goes through a :class:`Vectors` strategy: :data:`HOST_VECTORS` for numpy arrays (updates in
place into one scratch array, no allocation per step; per-system scalars as small numpy arrays; as compiled
row sweeps, :data:`SWEPT_VECTORS`, where the execution plan places a fit's host passes there),
:class:`ArrayVectors` for the arrays of a device backend (any array-API namespace), where A, the
preconditioner, the iterates and the per-system scalars stay on the device: a step's one transfer is the
flags of the systems still solving, which the next product needs (the ``row blocks`` it may skip) and the
loop's test of whether any system is left.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import attrs
import numpy as np

from gpmodels.linalg import row_kernels

__all__ = [
    "CGResult",
    "Systems",
    "cg",
    "Vectors",
    "HostVectors",
    "SweptVectors",
    "ArrayVectors",
    "HOST_VECTORS",
    "SWEPT_VECTORS",
]


@attrs.frozen
class Systems:
    """How CG's arrays split into independent systems: the consecutive row blocks of axis 0 cut at ``offsets``
    (None: all rows one block) and, with ``columns``, each entry of the last axis a system of its own.  The
    systems are numbered row block first: system k * n_columns + j is row block k's column j."""

    offsets: tuple[int, ...] | None = attrs.field(
        default=None, converter=lambda o: None if o is None else tuple(int(v) for v in o)
    )
    columns: bool = False

    @property
    def row_blocks(self) -> int:
        return 1 if self.offsets is None else len(self.offsets) - 1

    def count(self, b) -> int:
        """The number of systems of arrays shaped like ``b``."""
        return self.row_blocks * (int(b.shape[-1]) if self.columns else 1)

    def blocks_on(self, on: np.ndarray) -> np.ndarray:
        """The row blocks (R,) with a system still solving, from the systems' flags ``on`` (F,)."""
        return np.asarray(on).reshape(self.row_blocks, -1).any(axis=1)


#: one system over the whole array (the default)
ONE_SYSTEM = Systems()
#: up to this many systems a step's flags come to the host as the bits of one integer
MAX_BITS = 62


class Layout(Protocol):
    """The per-system reductions and coefficients of one kind of array for one :class:`Systems` and shape."""

    def sums(self, x, y):
        """Σ over each system's entries of x ∘ y: (F,) in the arrays' namespace."""

    def norms(self, x):
        """Each system's ||x||: (F,)."""

    def spread(self, c):
        """The per-system coefficients c (F,) broadcastable against the arrays (each system's entries get its
        own)."""

    def flags(self, mask: np.ndarray):
        """A host bool array (F,) in the arrays' namespace."""

    def to_host(self, a) -> np.ndarray:
        """Per-system values (floats) on the host (on a device: one transfer)."""

    def flags_to_host(self, a) -> np.ndarray:
        """Per-system flags (bools) on the host (on a device: one transfer)."""

    def going_on(self, on) -> np.ndarray:
        """The flags ``on`` (F,) on the host by one scalar synchronisation (a step's only one)."""

    @property
    def xp(self):
        """The namespace of the per-system scalars."""


class Vectors(Protocol):
    """The vector operations of CG on one kind of array (host numpy; a device's namespace)."""

    def layout(self, systems: Systems, like) -> Layout:
        """The per-system reductions of arrays shaped like ``like`` split as ``systems``."""

    def zeros_like(self, x): ...

    def copy(self, x): ...

    def scratch(self, x):
        """An array like x for :meth:`add_scaled` to write its temporaries into (None: it allocates)."""

    def add_scaled(self, y, c, x, scratch):
        """y += c x in place (c broadcastable, from :meth:`Layout.spread`); returns y."""

    def scale_add(self, p, c, z):
        """p = c p + z in place (the search direction's update); returns p."""


def _row_shape(shape: tuple, k: int) -> tuple:
    """The shape of per-row coefficients (N, k) broadcast against arrays of ``shape``."""
    return (shape[0],) if len(shape) == 1 else (shape[0],) + (1,) * (len(shape) - 2) + (k,)


@attrs.frozen(eq=False)
class HostLayout:
    """numpy arrays: one BLAS dot / norm for a single system, per-row sums cut by ``np.add.reduceat`` for row
    blocks, one einsum per column for columns."""

    systems: Systems
    shape: tuple
    xp = np

    def sums(self, x, y):
        s = self.systems
        if s.offsets is None and not s.columns:
            return np.array([np.vdot(x, y)])
        k = self.shape[-1] if s.columns else 1
        if s.offsets is None:
            return np.einsum("ak,ak->k", x.reshape(-1, k), y.reshape(-1, k))
        n = self.shape[0]
        if n == 0:
            return np.zeros(s.count(x))
        per_row = np.einsum("iak,iak->ik", x.reshape(n, -1, k), y.reshape(n, -1, k))
        return np.add.reduceat(per_row, np.asarray(s.offsets[:-1], dtype=np.intp), axis=0).reshape(-1)

    def norms(self, x):
        if self.systems.offsets is None and not self.systems.columns:
            return np.array([np.linalg.norm(x)])
        return np.sqrt(np.maximum(self.sums(x, x), 0.0))

    def spread(self, c):
        s = self.systems
        if s.offsets is None:
            return c  # (1,) or (k,): broadcasts over all entries / along the last axis
        rows = np.repeat(c.reshape(s.row_blocks, -1), np.diff(np.asarray(s.offsets, dtype=np.intp)), axis=0)
        return rows.reshape(_row_shape(self.shape, rows.shape[1]))

    def flags(self, mask):
        return np.asarray(mask, dtype=bool)

    def to_host(self, a):
        return a

    flags_to_host = going_on = to_host


class HostVectors:
    """numpy arrays: BLAS norms and dots, updates through one scratch array (the same numbers as y += c x)."""

    def layout(self, systems: Systems, like) -> HostLayout:
        return HostLayout(systems, tuple(like.shape))

    def zeros_like(self, x):
        return np.zeros_like(x)

    def copy(self, x):
        return x.copy()

    def scratch(self, x):
        return np.empty_like(x)

    def add_scaled(self, y, c, x, scratch):
        y += np.multiply(x, c, out=scratch)
        return y

    def scale_add(self, p, c, z):
        p *= c
        p += z
        return p


class SweptVectors(HostVectors):
    """numpy (n, C) arrays of one system or of row blocks, whose updates run as compiled parallel sweeps
    (:mod:`gpmodels.linalg.row_kernels`: the same numbers as :class:`HostVectors`'), where the execution plan
    places a fit's host passes there (``sweeps``)."""

    def add_scaled(self, y, c, x, scratch):
        return row_kernels.add_scaled(y, c, x)

    def scale_add(self, p, c, z):
        return row_kernels.scale_add(p, c, z)


#: the vector operations of numpy arrays on the host
HOST_VECTORS = HostVectors()
#: the same, their updates as compiled row sweeps
SWEPT_VECTORS = SweptVectors()


@attrs.frozen(eq=False)
class ArrayLayout:
    """The arrays of a device backend: per-row sums on the device, cut into row blocks by a product with the
    0/1 segment matrix S (R, N) made there (no transfer), coefficients spread by S^T."""

    backend: object
    systems: Systems
    shape: tuple
    S: object = None  # shape: (R, N), None without row blocks
    St: object = None
    bits: object = None  # 2^j for system j (int64, F,), while F fits in one integer

    @property
    def xp(self):
        return self.backend.xp

    @classmethod
    def make(cls, backend, systems: Systems, like) -> ArrayLayout:
        xp, shape, F = backend.xp, tuple(like.shape), systems.count(like)
        bits = 2 ** xp.arange(F, dtype=xp.int64, device=like.device) if 1 < F <= MAX_BITS else None
        if systems.offsets is None:
            return cls(backend, systems, shape, bits=bits)
        o = systems.offsets
        rows = xp.arange(shape[0], device=like.device)
        S = xp.stack([xp.astype((rows >= o[k]) & (rows < o[k + 1]), like.dtype) for k in range(len(o) - 1)])
        return cls(backend, systems, shape, S, xp.permute_dims(S, (1, 0)), bits)

    def sums(self, x, y):
        xp, s, nd = self.backend.xp, self.systems, len(self.shape)
        if s.offsets is None:
            axes = tuple(range(nd - 1)) if s.columns else None
            return xp.reshape(xp.sum(x * y, axis=axes), (-1,))
        inner = tuple(range(1, nd - 1)) if s.columns else tuple(range(1, nd))
        per_row = xp.sum(x * y, axis=inner) if inner else x * y
        return xp.reshape(self.S @ per_row, (-1,))

    def norms(self, x):
        return self.backend.xp.sqrt(self.sums(x, x))

    def spread(self, c):
        xp, s = self.backend.xp, self.systems
        if s.offsets is None:
            return c
        rows = self.St @ xp.reshape(c, (s.row_blocks, -1))  # shape: (N, k or 1)
        return xp.reshape(rows, _row_shape(self.shape, rows.shape[1]))

    def flags(self, mask):
        return self.backend.xp.asarray(np.asarray(mask, dtype=bool), device=self.backend.device)

    def to_host(self, a):
        return self.backend.to_host(a)

    def flags_to_host(self, a):
        xp = self.backend.xp
        return self.backend.to_host(xp.astype(a, xp.float64)) != 0.0

    def going_on(self, on):
        xp = self.backend.xp
        if on.shape[0] == 1:
            return np.array([bool(xp.any(on))])
        if self.bits is None:
            return self.flags_to_host(on)  # more systems than the bits of one integer: an array transfer
        code = int(xp.sum(xp.where(on, self.bits, 0 * self.bits)))  # the flags as one integer
        return (code >> np.arange(on.shape[0])) & 1 != 0


@attrs.frozen
class ArrayVectors:
    """The arrays of a device ``backend`` (:class:`~gpmodels.kernels.device.backend.ArrayBackend`, any
    array-API namespace): every product, update and per-system scalar stays there."""

    backend: object

    def layout(self, systems: Systems, like) -> ArrayLayout:
        return ArrayLayout.make(self.backend, systems, like)

    def zeros_like(self, x):
        return self.backend.xp.zeros_like(x)

    def copy(self, x):
        return self.backend.xp.asarray(x, copy=True)

    def scratch(self, x):
        return None

    def add_scaled(self, y, c, x, scratch):
        y += x * c
        return y

    def scale_add(self, p, c, z):
        p *= c
        p += z
        return p


@attrs.frozen
class CGResult:
    """Outcome of one CG run, per system (:class:`Systems`, F of them): ``iterations`` (F,) steps taken,
    ``residual`` (F,) ||b - A x|| / ||b||, ``converged`` (F,) whether the stopping test held; ``matvecs``:
    applications of A to the whole batch (1 extra for a nonzero x0 without ``r0``); with ``record``, ``alphas`` /
    ``betas``: per system the step lengths α_i and the ratios β_i (one fewer: the last step's is not needed);
    ``r``: the final residual b - A x as CG updated it (the ``r0`` of a restart from x); ``image``: M x where
    :func:`cg` was given an ``image`` (the ``w0`` of a restart from x), else None."""

    x: object
    iterations: np.ndarray
    residual: np.ndarray
    converged: np.ndarray
    matvecs: int
    alphas: tuple = ()
    betas: tuple = ()
    r: object = None
    image: object = None

    def lanczos(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """(diagonal, off-diagonal) of the Lanczos tridiagonal T of system j (module docstring)."""
        a = np.asarray(self.alphas[j])
        b = np.asarray(self.betas[j])
        m = a.size
        d = 1.0 / a
        d[1:] += b[: m - 1] / a[: m - 1]
        e = np.sqrt(b[: m - 1]) / a[: m - 1]
        return d, e


def _ratio(xp, a, b, one):
    """a / b where b > 0, else 0."""
    pos = b > 0
    return xp.where(pos, a / xp.where(pos, b, one), 0 * one)


def _stopping_test(lay: Layout, res0, r0, tol: float, forcing: float, forcing_map):
    """(res, r) -> per-system stop: ||r|| / ||b|| <= max(tol, forcing res0), or with ``forcing_map`` the ``tol``
    floor on ||r|| / ||b|| or ||map(r)|| <= forcing ||map(r_0)||."""
    if forcing_map is None:
        threshold = forcing * res0
        return lambda res, r: (res <= tol) | (res <= threshold)
    threshold = forcing * lay.norms(forcing_map(r0))
    return lambda res, r: (res <= tol) | (lay.norms(forcing_map(r)) <= threshold)


def _start(apply_A, b, x0, lay: Layout, vectors: Vectors, systems: Systems, on, clear, r0=None, image=None):
    """(x, r = b - A x, w, matvecs) at the start: x = x0 (None: 0), zero for the systems with b = 0 (``clear``:
    -1 there, else 0), and with an ``image`` (w0, last) w = M x alike (w0 = M x0; else w is None); A x0 only
    where x0 is not zero on a system that solves (no product when none), and not where the caller gave
    r0 = b - A x0."""
    if x0 is None:
        return vectors.zeros_like(b), vectors.copy(b), None if image is None else vectors.zeros_like(b), 0
    x, r, matvecs = vectors.copy(x0), vectors.copy(b if r0 is None else r0), 0
    w = None if image is None else vectors.copy(image[0])
    started, cleared = lay.flags_to_host(lay.xp.stack([on & (lay.norms(x0) > 0), clear < 0]))  # one transfer
    if started.any() and r0 is None:
        r, matvecs = b - (apply_A(x, systems.blocks_on(started)) if systems.offsets is not None else apply_A(x)), 1
    if cleared.any():
        x = vectors.add_scaled(x, lay.spread(clear), vectors.copy(x), None)
        w = None if w is None else vectors.add_scaled(w, lay.spread(clear), vectors.copy(w), None)
    return x, r, w, matvecs


def _per_system(records: list, on_flags: list, lay: Layout, F: int) -> tuple:
    """Per system, the recorded values of the steps where it was on: F tuples."""
    if not records:
        return tuple(() for _ in range(F))
    vals, ons = lay.to_host(lay.xp.stack(records)), lay.flags_to_host(lay.xp.stack(on_flags))
    return tuple(tuple(vals[ons[:, j], j].tolist()) for j in range(F))


@attrs.define(eq=False)
class _Run:
    """One CG run's per-system state (in the arrays' namespace) and the steps it took."""

    lay: Layout
    vectors: Vectors
    bn: object  # shape: (F,) ||b|| per system
    one: object
    x: object
    r: object
    res: object
    stop: object
    on: object
    matvecs: int
    w: object = None  # M x beside x (cg's ``image``), else None
    last_image: Callable | None = None  # M p of the latest product
    steps: list = attrs.Factory(list)  # per step: α (F,), and whether each system took it
    taken: list = attrs.Factory(list)
    betas: list = attrs.Factory(list)  # per step but the last: β (F,), and whether each system went on
    betas_on: list = attrs.Factory(list)

    def iterate(self, apply_A, apply_M, forced, max_iter: int) -> None:
        """The steps of Alg. 9.1 (Saad 1996) on every system still on, one product of A per step."""
        lay, vec, xp, one, zero = self.lay, self.vectors, self.lay.xp, self.one, 0 * self.one
        host_on = lay.going_on(self.on)
        if not host_on.any() or max_iter <= 0:
            return
        x, r, on = self.x, self.r, self.on
        z = apply_M(r)
        p, rz = vec.copy(z), lay.sums(r, z)
        scratch = vec.scratch(r)  # step p and step A p
        while True:
            Ap = apply_A(p, lay.systems.blocks_on(host_on))
            Mp = None if self.w is None else self.last_image()
            self.matvecs += 1
            pAp = lay.sums(p, Ap)
            on = on & (pAp > 0) & xp.isfinite(pAp)  # lost positive definiteness: keep that system's iterate
            step = xp.where(on, rz / xp.where(on, pAp, one), zero)
            step_c = lay.spread(step)
            x = vec.add_scaled(x, step_c, p, scratch)
            r = vec.add_scaled(r, -step_c, Ap, scratch)
            if Mp is not None:
                self.w = vec.add_scaled(self.w, step_c, Mp, scratch)
            self.steps.append(step)
            self.taken.append(on)
            self.res = xp.where(on, _ratio(xp, lay.norms(r), self.bn, one), self.res)
            self.stop = forced(self.res, r)
            on = on & ~self.stop
            host_on = lay.going_on(on)  # the step's one synchronisation: which systems go on
            if not host_on.any() or len(self.steps) == max_iter:
                break
            z = apply_M(r)
            rz_new = lay.sums(r, z)
            beta = xp.where(on, _ratio(xp, rz_new, rz, one), zero)
            p = vec.scale_add(p, lay.spread(beta), z)
            rz = xp.where(on, rz_new, rz)
            self.betas.append(beta)
            self.betas_on.append(on)
        self.x, self.r, self.on = x, r, on

    def result(self, F: int, record: bool) -> CGResult:
        """The solutions and, with one transfer, each system's residual, stopping test and steps."""
        xp, res = self.lay.xp, self.res
        its = sum((xp.astype(t, res.dtype) for t in self.taken), start=0 * self.one)
        final = self.lay.to_host(xp.stack([res, xp.astype(self.stop | (self.bn == 0), res.dtype), its]))
        alphas = betas = ()
        if record:
            alphas = _per_system(self.steps, self.taken, self.lay, F)
            betas = _per_system(self.betas, self.betas_on, self.lay, F)
        return CGResult(
            self.x,
            final[2].astype(np.intp),
            np.asarray(final[0]),
            final[1] != 0,
            self.matvecs,
            alphas,
            betas,
            self.r,
            self.w,
        )


def cg(
    apply_A: Callable,
    b,
    *,
    systems: Systems = ONE_SYSTEM,
    x0=None,
    active: np.ndarray | None = None,
    inv_diag=None,
    tol: float = 1e-6,
    forcing: float = 0.0,
    max_iter: int = 100,
    precondition: Callable | None = None,
    forcing_map: Callable | None = None,
    vectors: Vectors = HOST_VECTORS,
    record: bool = False,
    r0=None,
    image: tuple | None = None,
) -> CGResult:
    """Preconditioned CG on each system of ``b`` (:class:`Systems`) from x0 (None: 0); stops a system when
    ||r|| <= max(tol ||b||, forcing ||r_0||) or after ``max_iter`` steps.  ``forcing`` relative to the initial
    residual r_0 = b - A x0 is the truncated-Newton forcing term: with x0 the current point, r_0 is
    proportional to the gradient.  ``forcing_map`` measures the forcing test on ||map(r)|| instead of ||r||
    (e.g. the residual mapped to α-space by V in Newton–CG); the ``tol`` floor stays on ||r||.
    ``precondition`` (r -> M^{-1} r) takes the place of ``inv_diag`` when given; both act on all systems at
    once, like A.  With row blocks (``systems.offsets``) A is called as ``apply_A(x, on)``: ``on`` (R,) the
    row blocks still solving, whose rows it must compute (it may skip the others'); without, ``apply_A(x)``.
    ``active`` (F,): the systems to solve (the others keep x0 and take 0 steps).  A system whose p^T A p is
    not positive and finite (round-off) keeps its iterate and stops.  ``vectors``: the vector operations of
    the arrays b, x0 and the maps take and return (module docstring); ``record``: keep α_i, β_i; ``r0``: the
    residual b - A x0 where the caller has it without a product (a restart from an earlier run's x with that
    run's final ``r``), which saves the start's product; ``image``: (w0, last) where A's product computes a
    linear map M on the way (module docstring): w0 = M x0 (ignored for x0 None), ``last()`` M p of the latest
    call of ``apply_A``; the result's ``image`` is then M x."""
    lay = vectors.layout(systems, b)
    bn = lay.norms(b)
    one = bn * 0 + 1
    on = bn > 0 if active is None else (bn > 0) & lay.flags(active)
    clear = lay.xp.where(bn > 0, 0 * one, -one)
    x, r, w, matvecs = _start(apply_A, b, x0, lay, vectors, systems, on, clear, r0, image)
    apply_M = precondition if precondition is not None else (lambda v: v * inv_diag if inv_diag is not None else v)
    res = _ratio(lay.xp, lay.norms(r), bn, one)
    forced = _stopping_test(lay, res, r, tol, forcing, forcing_map)
    stop = forced(res, r)
    last_image = None if image is None else image[1]
    run = _Run(lay, vectors, bn, one, x, r, res, stop, on & ~stop, matvecs, w, last_image)
    run.iterate(apply_A if systems.offsets is not None else (lambda v, on: apply_A(v)), apply_M, forced, max_iter)
    return run.result(systems.count(b), record)
