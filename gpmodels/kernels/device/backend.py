"""Array backends: the array-API namespace and device that a device representation computes with.

The device code is written once against the array API standard (through ``array-api-compat``); a
backend names the namespace, the device and how arrays cross to and from the host.  CI runs it on
:func:`numpy_backend` and :func:`strict_backend` (``array-api-strict``, which refuses numpy-only
habits); a GPU runs it on :func:`torch_backend` (PyTorch on CUDA, the ``gpmodels[cuda]`` extra).

:func:`cuda_backend` is what ``device: cuda`` asks for: PyTorch's first CUDA device, or a
:class:`~gpmodels.errors.DeviceError` naming what is missing (the extra, PyTorch, a CUDA build of
it, a visible GPU); never the CPU instead.

A backend crosses process boundaries as its recipe (:meth:`ArrayBackend.__reduce__`: the namespace,
the device, for PyTorch the fused flag) and is rebuilt in the receiving process, so the kernel
matrices of a worker process live in that process's own device context.  What a worker process
holding a backend's arrays needs is declared by :attr:`ArrayBackend.worker_start_method`: host
backends none (a forked worker inherits their arrays), PyTorch ``spawn`` (a forked child cannot
re-initialise CUDA, nor use PyTorch's thread pools).
"""

from __future__ import annotations

import abc

import numpy as np
import scipy.linalg as sla

from gpmodels.errors import DeviceError
from gpmodels.kernels.device import fused as fused_products
from gpmodels.kernels.memory_budget import available_memory_bytes
from gpmodels.linalg.cg import ArrayVectors, Vectors

__all__ = [
    "ArrayBackend",
    "numpy_backend",
    "strict_backend",
    "torch_backend",
    "process_torch_backend",
    "cuda_backend",
    "cuda_status",
]

CUDA_EXTRA = "pip install 'gpmodels[cuda]' (PyTorch with CUDA and array-api-compat)"


def _compat():
    try:
        import array_api_compat
    except ImportError:
        raise DeviceError(
            f"device representations need array-api-compat, which is not installed; {CUDA_EXTRA}"
        ) from None
    return array_api_compat


class ArrayBackend(abc.ABC):
    """An array namespace ``xp`` on one ``device``; ``label`` names it in reports.  Its methods are the array
    primitives an operator's algebra is written over (:mod:`gpmodels.linalg.arrays`; the host's are
    :data:`~gpmodels.linalg.arrays.HOST`)."""

    xp: object
    device: object
    label: str
    #: whether products on this backend may be timed without a synchronisation (host arrays)
    on_host: bool = True
    #: the fused Triton products of this backend (:class:`~gpmodels.kernels.device.fused.FusedProducts`),
    #: or None: the array-API products only
    fused: fused_products.FusedProducts | None = None
    #: how a worker process that holds arrays of this backend must start (multiprocessing's start
    #: method): None, any (host arrays, inherited by a forked worker); ``spawn``: a fresh interpreter
    #: that rebuilds the backend from its recipe (:meth:`__reduce__`) and its arrays from theirs
    worker_start_method: str | None = None

    @abc.abstractmethod
    def __reduce__(self):
        """The recipe that rebuilds this backend in another process (pickle): the backend holds a
        namespace module and, on a device, that process's device handles, which do not cross."""

    @property
    def device_backend(self) -> ArrayBackend:
        """This backend: the device backend of its arrays (:data:`~gpmodels.linalg.arrays.HOST`'s is None)."""
        return self

    def from_host(self, a, dtype: str = "float64"):
        """A host numpy array as an array of this backend."""
        return self.xp.asarray(np.ascontiguousarray(a, dtype=dtype), device=self.device)

    def indices(self, idx):
        """Integer positions (host) as an int64 array of this backend."""
        return self.xp.asarray(np.ascontiguousarray(idx, dtype=np.int64), device=self.device)

    def take(self, a, idx, axis: int = 0):
        """``a``'s entries at the non-negative positions ``idx`` (an array of :meth:`indices`) along ``axis``:
        the array API's ``take``."""
        return self.xp.take(a, idx, axis=axis)

    @abc.abstractmethod
    def to_host(self, a) -> np.ndarray:
        """A float64 host copy of an array of this backend."""

    def row_sum(self, V):
        """The sum of V over axis 0, kept as one row."""
        return self.xp.sum(V, axis=0, keepdims=True)

    def scatter_map(self, rows, n: int):
        """For V's rows at the distinct rows ``rows`` of an n-row array (:meth:`scatter`): for each of the n rows
        its row in V with one zero row appended (V's row count for the rows not in ``rows``), as indices."""
        rows = np.asarray(rows, dtype=np.intp)
        pad = np.full(int(n), rows.size, dtype=np.intp)
        pad[rows] = np.arange(rows.size)
        return self.indices(pad)

    def scatter(self, V, scatter_map):
        """V's rows at the rows of :meth:`scatter_map`, zero elsewhere: one take of V with a zero row appended
        (the array API has no scatter)."""
        zero = self.xp.zeros((1, *V.shape[1:]), dtype=V.dtype, device=self.device)
        return self.take(self.xp.concat([V, zero], axis=0), scatter_map)

    def class_matrix(self, S):
        """A host C x C matrix S for :meth:`mix_classes`: S^T here."""
        return self.from_host(np.transpose(S))

    def mix_classes(self, V, S_T):
        """V S per point (S^T from :meth:`class_matrix`), the rows of each column of V (n, C[, k]) times S,
        flattened to (n, C k): one (n k) x C by C x C GEMM of V's rows."""
        xp = self.xp
        if V.ndim == 3 and V.shape[2] == 1:  # one column: V's rows are its points
            V = xp.reshape(V, tuple(V.shape[:2]))
        if V.ndim == 2:
            return V @ S_T
        n, C, k = V.shape
        mixed = xp.reshape(xp.permute_dims(V, (0, 2, 1)), (n * k, C)) @ S_T
        return xp.reshape(xp.permute_dims(xp.reshape(mixed, (n, k, C)), (0, 2, 1)), (n, C * k))

    def concat(self, arrays, axis: int = 0):
        return self.xp.concat(arrays, axis=axis)

    def columns(self, A, cols):
        """The columns ``cols`` (a slice, or :meth:`indices`) of a 2-D array A."""
        return A[:, cols] if isinstance(cols, slice) else self.take(A, cols, axis=1)

    def join_columns(self, parts, columns, order, scale):
        """The results ``parts`` side by side in column order (``order``: the indices that put their
        concatenation there, None where it is), every column times its entry of ``scale``: one concatenation,
        a take where needed and one product."""
        out = self.xp.concat(list(parts), axis=1)
        if order is not None:
            out = self.take(out, order, axis=1)
        return out * scale

    def product(self, part):
        """The linear map of an operator's part (an operator or a kernel representation held here) on this
        backend's arrays: its ``device_mvm`` (:mod:`gpmodels.linalg.arrays`)."""
        return part.device_mvm

    def rproduct(self, part):
        """The transpose of a block held here on this backend's arrays: its ``device_rmvm``."""
        return part.device_rmvm

    def buffer(self, shape) -> None:
        """None: the products here allocate their results (the array API writes into no ``out``)."""
        return None

    def multiply(self, a, b, out=None):
        return a * b

    def fill_where(self, a, mask, value: float):
        return self.xp.where(mask, value, a)

    def spd_solver(self, blocks):
        """b -> diag(H_1, ..., H_F)^{-1} b for SPD host blocks: each inverted on the host, uploaded block-diagonal."""
        inverses = [sla.cho_solve(sla.cho_factor(H, lower=True), np.eye(len(H)), check_finite=False) for H in blocks]
        H_inv = self.from_host(sla.block_diag(*inverses))
        return lambda b: H_inv @ b

    def stack_tmv(self, F, X):
        """F_k^T x_k for each k of a stack F (K, C, s) and rows X (K, C)."""
        return self.xp.sum(F * X[:, :, None], axis=1)

    def stack_mv(self, F, Z):
        """F_k z_k for each k of a stack F (K, C, s) and rows Z (K, s)."""
        return self.xp.sum(F * Z[:, None, :], axis=2)

    def block_rows(self, parts, factor, join):
        """diag(M_1, ..., M_F) over row ranges: the blocks' maps joined into one, so that F blocks cost one block's
        calls, where ``join()`` gives one; else each block's on its rows, side by side."""
        joined = join()
        if joined is not None:
            return joined.on(self, factor)
        applies = [(rows, m.on(self, factor.rows(rows))) for rows, m in parts]
        return lambda r: self.xp.concat([part(r[rows, ...]) for rows, part in applies], axis=0)

    def free_bytes(self) -> int | None:
        """Memory free on the device now (host backends: the machine's available memory)."""
        return available_memory_bytes()

    def synchronize(self) -> None:  # noqa: B027 - host backends have nothing to wait for
        """Wait for queued device work (timings)."""

    @property
    def vectors(self) -> Vectors:
        """CG's vector operations on this backend's arrays (:mod:`gpmodels.linalg.cg`)."""
        return ArrayVectors(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label})"


class NumpyBackend(ArrayBackend):
    def __init__(self):
        self.xp = _compat().array_namespace(np.zeros(1))
        self.device, self.label = "cpu", "cpu (numpy)"

    def __reduce__(self):
        return (numpy_backend, ())

    def to_host(self, a):
        return np.asarray(a, dtype=np.float64)


class StrictBackend(ArrayBackend):
    def __init__(self):
        try:
            import array_api_strict
        except ImportError:
            raise DeviceError(
                "the array-api-strict backend needs array-api-strict (pip install array-api-strict)"
            ) from None
        self.xp = array_api_strict
        self.device, self.label = array_api_strict.Device("CPU_DEVICE"), "cpu (array-api-strict)"

    def __reduce__(self):
        return (strict_backend, ())

    def to_host(self, a):
        return np.asarray(np.from_dlpack(a), dtype=np.float64)


class TorchBackend(ArrayBackend):
    """PyTorch on a device (``"cuda"``, ``"cuda:1"``; ``"cpu"`` for tests of the torch path).

    ``fused``: use the fused Triton products (default: on a CUDA device where Triton is installed;
    True on the CPU needs Triton's interpreter, ``TRITON_INTERPRET=1``).

    Pickles as (device string, fused flag): the receiving process imports PyTorch and opens the
    device in its own context, as its :func:`process_torch_backend`; its worker processes start by
    ``spawn``.
    """

    worker_start_method = "spawn"

    def __init__(self, device: str = "cuda", fused: bool | None = None):
        import torch

        self.torch = torch
        self.xp = _compat().array_namespace(torch.zeros(1))
        self.device = torch.device(device)
        self.on_host = self.device.type == "cpu"
        name = torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu"
        if fused is None:
            fused = self.device.type == "cuda" and fused_products.AVAILABLE
        if fused and not fused_products.AVAILABLE:
            raise DeviceError("fused device products need Triton, which is not installed; allowed: fused=False")
        if fused:  # on the CPU (Triton's interpreter, the tests) every product is fused
            cuda = self.device.type == "cuda"
            min_entries = fused_products.FUSED_MIN_ENTRIES if cuda else 0
            self.fused = fused_products.FusedProducts(torch, tune=cuda, min_entries=min_entries)
        kernels = "Triton-fused products" if fused else "array-API products"
        self.label = f"{self.device} ({name}, torch {torch.__version__}, {kernels})"

    def __reduce__(self):
        return (process_torch_backend, (str(self.device), self.fused is not None))

    def to_host(self, a):
        return a.detach().to("cpu", dtype=self.torch.float64).numpy()

    def free_bytes(self):
        if self.device.type != "cuda":
            return super().free_bytes()
        return int(self.torch.cuda.mem_get_info(self.device)[0])

    def synchronize(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def take(self, a, idx, axis: int = 0):
        # one index_select: array-api-compat's take first maps negative positions (three more launches)
        return self.torch.index_select(a, axis, idx)

    @property
    def vectors(self) -> Vectors:
        return TorchVectors(self)


class TorchVectors(ArrayVectors):
    """CG's vector operations (:class:`~gpmodels.linalg.cg.Vectors`) with PyTorch's in-place calls
    (``addcmul_``, ``mul_``): on a GPU each array operation is a launch from the host, and a CG step is a
    few dozen of them."""

    def copy(self, x):
        return x.clone()

    def add_scaled(self, y, c, x, scratch):
        return y.addcmul_(x, c)

    def scale_add(self, p, c, z):
        return p.mul_(c).add_(z)


def numpy_backend() -> ArrayBackend:
    return NumpyBackend()


def strict_backend() -> ArrayBackend:
    return StrictBackend()


def torch_backend(device: str = "cuda", fused: bool | None = None) -> ArrayBackend:
    _compat()
    return TorchBackend(device, fused)


#: this process's PyTorch backends, one per (device, fused flag) (:func:`process_torch_backend`)
_PROCESS_TORCH_BACKENDS: dict = {}


def process_torch_backend(device: str = "cuda", fused: bool | None = None) -> ArrayBackend:
    """This process's one PyTorch backend on ``device`` with ``fused`` products (None: where Triton is
    installed, on CUDA), made at the first call: every matrix that ``device: cuda`` builds, and every
    pickled backend that this process receives, is on that one object, so that composite operators see
    their blocks on one device (``shared_arrays``) and a rebuilt representation reuses the inputs
    already uploaded (``like``)."""
    _compat()
    if fused is None:
        import torch

        fused = torch.device(device).type == "cuda" and fused_products.AVAILABLE
    key = (str(device), bool(fused))
    if key not in _PROCESS_TORCH_BACKENDS:
        _PROCESS_TORCH_BACKENDS[key] = TorchBackend(device, fused)
    return _PROCESS_TORCH_BACKENDS[key]


def cuda_status() -> str | None:
    """None when a CUDA device is usable, else what is missing (for an error or a report)."""
    try:
        import array_api_compat  # noqa: F401
    except ImportError:
        return f"array-api-compat is not installed; {CUDA_EXTRA}"
    try:
        import torch
    except ImportError:
        return f"PyTorch is not installed; {CUDA_EXTRA}"
    if torch.version.cuda is None:
        return f"the installed PyTorch {torch.__version__} is a CPU-only build (no CUDA); install a CUDA build"
    if not torch.cuda.is_available():
        return (
            f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}) sees no usable GPU "
            "(no device, a driver too old, or CUDA_VISIBLE_DEVICES empty)"
        )
    return None


def cuda_backend() -> ArrayBackend:
    """PyTorch's first CUDA device, or a DeviceError naming what is missing."""
    missing = cuda_status()
    if missing is not None:
        raise DeviceError(
            f"device 'cuda' was asked for but cannot be used: {missing}. "
            "Allowed: device: cpu, or device: auto (the GPU when there is one)"
        )
    return process_torch_backend("cuda")


def device_in_use(requested: str) -> str:
    """What ``device: requested`` runs on, for reports: ``cpu``; the GPU's label (``cuda``, or ``auto``
    with a usable GPU); ``cpu (auto: why not the GPU)``.  ``cuda`` without a usable GPU raises the
    DeviceError of :func:`cuda_backend`, before any work.  Per matrix, ``rep.choice.device`` says
    where each kernel matrix went (``auto`` keeps a kernel without a device form on the CPU)."""
    if requested == "cpu":
        return "cpu"
    missing = cuda_status()
    if requested == "auto" and missing is not None:
        return f"cpu (auto: {missing})"
    return cuda_backend().label
