"""Kernel matrices on a device: the whole :class:`~gpmodels.kernels.representation_base.Representation`
protocol in array-API code, for kernels that declare a scaled squared-distance form
(:mod:`gpmodels.kernels.device.forms`).

Two forms, each a block over a row side and a column side like the host representations:

- :class:`DeviceStoredGram` keeps M on the device (the App. D.1 scheme of
  :class:`~gpmodels.kernels.stored_gram.StoredGram`): built there from X in row tiles, float64
  or float32; float32 products convert row tiles to float64 and accumulate in float64, as on the
  host.  CV restrictions and fold blocks are ``take``s on the device: nothing crosses to the host
  but the (n, m) vectors.
- :class:`DeviceRecomputedGram` keeps only Z = X diag(√s) and rebuilds row tiles of M in every
  product (KeOps-style), ``grad_contract`` included, so n beyond the device's memory works and CV
  can learn the length-scales.  Each product evaluates the n1 n2 exponentials once for all m
  columns of B (all classes and right-hand sides of a kernel group), and ``contractions`` takes
  the values e_j^T M f_j and the gradient from the same tiles; the distance part of a tile is one
  GEMM, the exponential one elementwise pass over it.

Where the backend has fused products (Triton on a CUDA device, :mod:`gpmodels.kernels.device.fused`),
the float32 stored product reads M once with no float64 copy, and the recomputed product builds
each tile in registers (distances, profile, product with B in one kernel): no n1 x n2 array is
written, and each exponential is paid once per entry for all m columns.  Gradients keep the tiles.

Products take and return host float64 numpy arrays, so Newton–CG, CV and Laplace run unchanged.
:class:`~gpmodels.kernels.device.config.DeviceRepresentationConfig` builds them; its ``auto`` chooses
stored float64, stored float32 or recomputed from the device's free memory as
:mod:`gpmodels.kernels.memory_budget` does on the host.
"""

from __future__ import annotations

import abc

import numpy as np
import scipy.sparse as sp

from gpmodels.errors import DeviceError, InputError
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.device.backend import ArrayBackend
from gpmodels.kernels.device.forms import DEVICE_KERNELS
from gpmodels.kernels.mixed_precision import STORAGE_DTYPES, block_rows
from gpmodels.kernels.representation_base import CrossRepresentation, Representation
from gpmodels.kernels.stationary import SNAP_RTOL

__all__ = [
    "DeviceMatrixCross",
    "DeviceTileCross",
    "DeviceStoredGram",
    "DeviceRecomputedGram",
    "device_form",
]


def device_form(kernel: Kernel):
    """The kernel's declared distance form, or a DeviceError naming the kernel."""
    form = kernel.distance_form
    if form is None:
        raise DeviceError(
            f"the {type(kernel).__name__} kernel declares no squared-distance form, so its matrices "
            f"cannot be built on a device; allowed there: {', '.join(DEVICE_KERNELS)}, one kernel per "
            "matrix (sums, products and other kernels: device: cpu)"
        )
    return form


class DeviceInputs:
    """Z = X diag(√s) on the device with |z_a|^2: one side of a kernel block."""

    def __init__(self, backend: ArrayBackend, form, Xd):
        xp = backend.xp
        self.backend, self.form, self.X = backend, form, Xd  # X: unscaled, float64, on the device
        scales = backend.from_host(form.input_scales(Xd.shape[1]))
        self.Z = Xd * scales
        self.sq = xp.sum(self.Z * self.Z, axis=1)
        self._padded = None

    @classmethod
    def from_host(cls, backend: ArrayBackend, form, X) -> DeviceInputs:
        if sp.issparse(X):
            raise DeviceError("device representations take dense inputs; got a sparse matrix (use device: cpu)")
        return cls(backend, form, backend.from_host(X))

    def take(self, idx) -> DeviceInputs:
        out = object.__new__(DeviceInputs)
        xp, Jd = self.backend.xp, self.backend.indices(idx)
        out.backend, out.form = self.backend, self.form
        out.X, out.Z, out.sq = (xp.take(a, Jd, axis=0) for a in (self.X, self.Z, self.sq))
        out._padded = None
        return out

    def rows(self, r0: int, r1: int) -> DeviceInputs:
        out = object.__new__(DeviceInputs)
        out.backend, out.form = self.backend, self.form
        out.X, out.Z, out.sq = self.X[r0:r1, :], self.Z[r0:r1, :], self.sq[r0:r1]
        out._padded = None
        return out

    @property
    def n(self) -> int:
        return self.Z.shape[0]

    def padded(self):
        """Z with zero columns up to the fused products' width, made once per side."""
        if self._padded is None:
            self._padded = self.backend.fused.padded_inputs(self.Z)
        return self._padded

    def fused_product(self, other: DeviceInputs, Bd):
        """g(D(self, other)) B in one fused pass (the backend's Triton products)."""
        fused = self.backend.fused
        return fused.form_matmul(self.form.fused_profile, self.padded(), self.sq, other.padded(), other.sq, Bd)


def sq_dist_tile(xp, a: DeviceInputs, b: DeviceInputs):
    """D_ab = |z_a|^2 + |z_b|^2 - 2 z_a·z_b clipped at 0, shape (a.n, b.n): one GEMM.  For a form that
    ``snaps``, entries below ``SNAP_RTOL`` (|z_a|^2 + |z_b|^2) (rounding of equal points) are 0."""
    scale = xp.reshape(a.sq, (-1, 1)) + xp.reshape(b.sq, (1, -1))
    D = scale - 2.0 * (a.Z @ b.Z.T)
    if a.form.snaps:
        return xp.where(D <= scale * SNAP_RTOL, 0.0, D)
    return xp.clip(D, min=0.0)


def contract_tile(xp, H, a: DeviceInputs, b: DeviceInputs):
    """Per input j: Σ_ab H_ab (z_aj - z_bj)^2 = (H 1)·z_j^2 + (H^T 1)·z_j^2 - 2 Σ_a z_aj (H Z_b)_aj,
    shape (d,) on the device (forms module docstring)."""
    t1 = xp.sum(H, axis=1) @ (a.Z * a.Z)
    t2 = xp.sum(H, axis=0) @ (b.Z * b.Z)
    t3 = xp.sum(a.Z * (H @ b.Z), axis=0)
    return t1 + t2 - 2.0 * t3


def row_tiles(n1: int, n2: int, memory_mb: float):
    """(r0, r1) over the rows of an n1 x n2 float64 block, each tile at most ``memory_mb``."""
    step = block_rows(n1, n2, memory_mb)
    for s in range(0, n1, step):
        yield s, min(n1, s + step)


def _stacked(xp, parts: list):
    """The row tiles' results as one array (one tile: itself, not a copy)."""
    return parts[0] if len(parts) == 1 else xp.concat(parts, axis=0)


# ---------------------------------------------------------------------------- blocks
class DeviceBlock(CrossRepresentation):
    """A block whose numbers live on ``backend``: host float64 in and out through ``mvm`` / ``rmvm``,
    device arrays in and out through ``device_mvm`` / ``device_rmvm`` (a composite operator whose
    blocks all live on one backend runs its algebra there, one transfer each way per product)."""

    backend: ArrayBackend
    memory_mb: float

    @property
    def arrays(self) -> ArrayBackend:
        return self.backend

    def mvm(self, B):
        return self.backend.to_host(self.device_mvm(self.backend.from_host(B)))

    def rmvm(self, B):
        return self.backend.to_host(self.device_rmvm(self.backend.from_host(B)))

    def _fused_for(self):
        """The backend's fused products where they pay for this block's size, else None."""
        fused = self.backend.fused
        return fused if fused is not None and fused.covers(*self.shape) else None

    @abc.abstractmethod
    def device_mvm(self, Bd):
        """M B on the device."""

    @abc.abstractmethod
    def device_rmvm(self, Bd):
        """M^T B on the device."""


class DeviceMatrixCross(DeviceBlock):
    """A stored block on the device, float64 or float32 (row tiles converted, float64 accumulation)."""

    def __init__(self, backend: ArrayBackend, M, memory_mb: float = 256.0):
        self.backend, self.M, self.memory_mb = backend, M, memory_mb
        self.shape = (M.shape[0], M.shape[1])

    def _float64(self) -> bool:
        return self.M.dtype == self.backend.xp.float64

    def _take(self, I, J):
        """M[I][:, J] on the device (a stored Gram matrix's restrictions and cross blocks)."""
        xp = self.backend.xp
        return xp.take(xp.take(self.M, self.backend.indices(I), axis=0), self.backend.indices(J), axis=1)

    def _tiles(self):
        return row_tiles(self.shape[0], self.shape[1], self.memory_mb)

    def device_mvm(self, Bd):
        xp = self.backend.xp
        if self._float64():
            return self.M @ Bd
        fused = self._fused_for()
        if fused is not None:
            return fused.mixed_matmul(self.M, Bd)
        return _stacked(xp, [xp.astype(self.M[r0:r1, :], xp.float64) @ Bd for r0, r1 in self._tiles()])

    def device_rmvm(self, Bd):
        xp = self.backend.xp
        if self._float64():
            return self.M.T @ Bd
        fused = self._fused_for()
        if fused is not None:
            return fused.mixed_matmul(self.M.T, Bd)
        out = xp.zeros((self.shape[1], Bd.shape[1]), dtype=xp.float64, device=self.backend.device)
        for r0, r1 in self._tiles():
            out = out + xp.astype(self.M[r0:r1, :], xp.float64).T @ Bd[r0:r1, :]
        return out

    def row_tile(self, r0: int, r1: int):
        """M's rows r0:r1 as float64 on the device."""
        return self.backend.xp.astype(self.M[r0:r1, :], self.backend.xp.float64)

    def dense(self):
        return self.backend.to_host(self.M)


class DeviceTileCross(DeviceBlock):
    """A block M(X1, X2) recomputed on the device in row tiles of at most ``memory_mb`` per product."""

    def __init__(self, rows: DeviceInputs, cols: DeviceInputs, memory_mb: float = 256.0):
        self.backend, self.form = rows.backend, rows.form
        self.rows_in, self.cols_in, self.memory_mb = rows, cols, memory_mb
        self.shape = (rows.n, cols.n)

    def _tiles(self):
        # a tile holds D and M: two n1 x n2 float64 arrays
        return row_tiles(self.shape[0], self.shape[1], self.memory_mb / 2)

    def tile(self, r0: int, r1: int):
        """(D, M) of rows r0:r1, float64 on the device."""
        xp = self.backend.xp
        D = sq_dist_tile(xp, self.rows_in.rows(r0, r1), self.cols_in)
        return D, self.form.profile(xp, D)

    def device_mvm(self, Bd):
        xp = self.backend.xp
        if self._fused_for() is not None:
            return self.rows_in.fused_product(self.cols_in, Bd)
        return _stacked(xp, [self.tile(r0, r1)[1] @ Bd for r0, r1 in self._tiles()])

    def device_rmvm(self, Bd):
        xp = self.backend.xp
        if self._fused_for() is not None:  # M(X1, X2)^T = M(X2, X1): the kernel is symmetric
            return self.cols_in.fused_product(self.rows_in, Bd)
        out = xp.zeros((self.shape[1], Bd.shape[1]), dtype=xp.float64, device=self.backend.device)
        for r0, r1 in self._tiles():
            out = out + self.tile(r0, r1)[1].T @ Bd[r0:r1, :]
        return out

    def dense(self):
        return self.backend.to_host(self.tile(0, self.shape[0])[1])


# ---------------------------------------------------------------------------- square representations
class DeviceGram(Representation):
    """What both square forms share: the training inputs on the device, diag, cross_test and the
    tile loops of ``grad_contract`` / ``contractions`` (each row tile of M once for both)."""

    inputs: DeviceInputs
    form: object
    backend: ArrayBackend
    memory_mb: float

    def _setup(
        self,
        X,
        kernel: Kernel,
        backend: ArrayBackend,
        memory_mb: float,
        inputs: DeviceInputs | None,
        rescale: bool = False,
    ):
        """``inputs``: these points already on the device (a restriction: as they are; another kernel
        value, ``rescale``: Z rebuilt there from the unscaled X)."""
        self.X, self.kernel, self.backend, self.memory_mb = X, kernel, backend, memory_mb
        self.form = device_form(kernel)
        if inputs is None:
            self.inputs = DeviceInputs.from_host(backend, self.form, X)
        else:
            self.inputs = DeviceInputs(backend, self.form, inputs.X) if rescale else inputs

    def diag(self):
        return np.full(self.n, self.form.diagonal_value)

    def cross_test(self, X_new):
        return DeviceTileCross(DeviceInputs.from_host(self.backend, self.form, X_new), self.inputs, self.memory_mb)

    @abc.abstractmethod
    def _grad_tiles(self):
        """(r0, r1, D or None, M) over row tiles of M, float64 on the device."""

    @abc.abstractmethod
    def _rebuilt(self, kernel: Kernel) -> DeviceGram:
        """The same form for another kernel value, on the same device inputs."""

    def _grad(self, total, H, r0, r1):
        return total + contract_tile(self.backend.xp, H, self.inputs.rows(r0, r1), self.inputs)

    def _finish_grad(self, total, extra) -> np.ndarray:
        g = self.backend.to_host(total)
        g = np.array([g.sum()]) if self.form.isotropic else g
        return np.concatenate([g, self.backend.to_host(extra)]) if self.form.n_extra else g

    def _zeros(self, size: int):
        xp = self.backend.xp
        return xp.zeros(size, dtype=xp.float64, device=self.backend.device)

    def _tile_grad(self, total, extra, D, M, G, r0, r1):
        """Add one row tile's contraction with G = (E F^T)[r0:r1]: the scales' by H = g'(D)∘G, the
        shape parameters' by Σ_ab (∂M/∂log η)_ab G_ab (forms module docstring)."""
        xp = self.backend.xp
        total = self._grad(total, self.form.slope(xp, D, M) * G, r0, r1)
        if self.form.n_extra:
            extra = extra + xp.stack([xp.sum(dM * G) for dM in self.form.extra_derivatives(xp, D, M)])
        return total, extra

    def grad_contract(self, E, F):
        # d/dlog θ_p Σ_ab M_ab (E F^T)_ab per row tile (forms module docstring)
        if self.kernel.params.size == 0:
            return np.zeros(0)
        to = self.backend.from_host
        Ed, Fd = to(E), to(F)
        total, extra = self._zeros(self.inputs.Z.shape[1]), self._zeros(self.form.n_extra)
        for r0, r1, D, M in self._grad_tiles():
            total, extra = self._tile_grad(total, extra, D, M, Ed[r0:r1, :] @ Fd.T, r0, r1)
        return self._finish_grad(total, extra)

    def contractions(self, E, F, weights):
        if self.kernel.params.size == 0:
            return super().contractions(E, F, weights)
        xp, to = self.backend.xp, self.backend.from_host
        Ed, Fd, Ewd = to(E), to(F), to(E * weights[None, :])
        values = self._zeros(E.shape[1])
        total, extra = self._zeros(self.inputs.Z.shape[1]), self._zeros(self.form.n_extra)
        for r0, r1, D, M in self._grad_tiles():
            values = values + xp.sum(Ed[r0:r1, :] * (M @ Fd), axis=0)
            total, extra = self._tile_grad(total, extra, D, M, Ewd[r0:r1, :] @ Fd.T, r0, r1)
        return self.backend.to_host(values), self._finish_grad(total, extra)

    def with_kernel(self, kernel):
        if kernel.key() == self.kernel.key():
            return self
        return self._rebuilt(kernel)


class DeviceStoredGram(DeviceGram, DeviceMatrixCross):
    """M stored on the device (float64 or float32), built there from X in row tiles."""

    def __init__(
        self,
        X,
        kernel: Kernel,
        backend: ArrayBackend,
        dtype: str = "float64",
        memory_mb: float = 256.0,
        inputs: DeviceInputs | None = None,
        M=None,
        rescale: bool = False,
    ):
        if dtype not in STORAGE_DTYPES:
            raise InputError(f"the storage dtype must be one of {STORAGE_DTYPES}; got {dtype!r}")
        self._setup(X, kernel, backend, memory_mb, inputs, rescale)
        self.dtype = dtype if M is None else _dtype_name(backend, M)
        self.M = self._build() if M is None else M

    def _build(self):
        xp, n = self.backend.xp, self.n
        M = xp.empty((n, n), dtype=getattr(xp, self.dtype), device=self.backend.device)
        self.fill(M, self.inputs, self.memory_mb)
        return M

    @staticmethod
    def fill(M, inputs: DeviceInputs, memory_mb: float) -> None:
        """Write g(D(Z, Z)) into the device array M (n, n), of its own storage dtype, in row tiles of at most
        ``memory_mb`` (the tile's D and M in float64)."""
        xp, n = inputs.backend.xp, inputs.n
        for r0, r1 in row_tiles(n, n, memory_mb / 2):
            M[r0:r1, :] = xp.astype(inputs.form.profile(xp, sq_dist_tile(xp, inputs.rows(r0, r1), inputs)), M.dtype)

    def _rebuilt(self, kernel):
        return DeviceStoredGram(self.X, kernel, self.backend, self.dtype, self.memory_mb, self.inputs, rescale=True)

    def restrict(self, J):
        J = np.asarray(J)
        return DeviceStoredGram(
            self.X[J],
            self.kernel,
            self.backend,
            memory_mb=self.memory_mb,
            inputs=self.inputs.take(J),
            M=self._take(J, J),
        )

    def cross(self, I, J):
        return DeviceMatrixCross(self.backend, self._take(np.asarray(I), np.asarray(J)), self.memory_mb)

    def _grad_tiles(self):
        needs_d = self.form.slope_needs_distances or self.form.n_extra > 0
        for r0, r1 in row_tiles(self.n, self.n, self.memory_mb / 3):
            D = sq_dist_tile(self.backend.xp, self.inputs.rows(r0, r1), self.inputs) if needs_d else None
            yield r0, r1, D, self.row_tile(r0, r1)

    @property
    def nbytes(self):
        return self.n * self.n * np.dtype(self.dtype).itemsize

    def __reduce__(self):
        # the recipe, not the device arrays: the receiving process builds M on its own device from the
        # host X (a restriction's own X[J]: its M is rebuilt, equal to the taken block up to rounding)
        return (
            DeviceStoredGram,
            (self.X, self.kernel, self.backend, self.dtype, self.memory_mb),
            {"choice": self.choice},
        )


class DeviceRecomputedGram(DeviceGram, DeviceTileCross):
    """M recomputed on the device in row tiles at every product; only Z (n x d) is kept."""

    def __init__(
        self,
        X,
        kernel: Kernel,
        backend: ArrayBackend,
        memory_mb: float = 256.0,
        inputs: DeviceInputs | None = None,
        rescale: bool = False,
    ):
        self._setup(X, kernel, backend, memory_mb, inputs, rescale)
        self.rows_in = self.cols_in = self.inputs
        self.dtype = "float64"

    def _rebuilt(self, kernel):
        return DeviceRecomputedGram(self.X, kernel, self.backend, self.memory_mb, self.inputs, rescale=True)

    def restrict(self, J):
        J = np.asarray(J)
        return DeviceRecomputedGram(self.X[J], self.kernel, self.backend, self.memory_mb, self.inputs.take(J))

    def cross(self, I, J):
        return DeviceTileCross(self.inputs.take(np.asarray(I)), self.inputs.take(np.asarray(J)), self.memory_mb)

    def _grad_tiles(self):
        for r0, r1 in row_tiles(self.n, self.n, self.memory_mb / 3):
            D, M = self.tile(r0, r1)
            yield r0, r1, D, M

    @property
    def nbytes(self):
        return int(self.inputs.Z.shape[0] * (self.inputs.Z.shape[1] * 2 + 1) * 8)

    def __reduce__(self):
        # the recipe: the receiving process uploads X and rebuilds Z on its own device
        return DeviceRecomputedGram, (self.X, self.kernel, self.backend, self.memory_mb), {"choice": self.choice}


def _dtype_name(backend: ArrayBackend, M) -> str:
    return "float32" if M.dtype == backend.xp.float32 else "float64"
