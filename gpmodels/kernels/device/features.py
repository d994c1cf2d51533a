"""The linear kernel on a device: X (X^T B) with X in PyTorch's sparse CSR (or dense) on the card, or the
Gram matrix M = X X^T stored there, chosen as on the host by the cost of one product
(:func:`~gpmodels.kernels.memory_budget.linear_choice`, :mod:`gpmodels.kernels.product_cost`) within the
device's budget.

- :class:`DeviceFeatureGram` (Seeger 2008, App. D.3 on the card): X and X^T uploaded once as CSR tensors
  (``torch.sparse_csr_tensor``), each product two sparse x dense products there (cuSPARSE on CUDA);
  restrictions and fold blocks take host rows of X and upload them (a fold's block: once per fold).
- :class:`DeviceLinearStoredGram`: M built once on the host (one sparse X X^T) and uploaded, float64 or
  float32 (float64 accumulation, as :class:`~gpmodels.kernels.device.gram.DeviceMatrixCross` does);
  restrictions and fold blocks are ``take``s on the device.

Both need a PyTorch backend (sparse tensors are not in the array API); float64 numbers on the device.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from gpmodels.errors import DeviceError, InputError
from gpmodels.kernels.base import Kernel, cross_product, sq_norms
from gpmodels.kernels.device.backend import ArrayBackend
from gpmodels.kernels.device.gram import DeviceBlock, DeviceMatrixCross
from gpmodels.kernels.representation_base import Representation, take_rows

__all__ = ["DeviceFeatureCross", "DeviceFeatureGram", "DeviceLinearStoredGram", "to_device_matrix"]


def to_device_matrix(backend: ArrayBackend, A):
    """A host matrix on ``backend``'s device, float64: sparse as a PyTorch CSR tensor, dense as an array."""
    if not sp.issparse(A):
        return backend.from_host(np.asarray(A))
    torch = getattr(backend, "torch", None)
    if torch is None:
        raise DeviceError(
            f"the linear kernel's sparse X on a device needs PyTorch's sparse CSR tensors; {backend.label} is "
            "not a PyTorch backend (allowed: device cuda, or device cpu for sparse inputs)"
        )
    A = A.tocsr()
    with warnings.catch_warnings():  # PyTorch calls its sparse CSR support beta on every construction
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta", category=UserWarning)
        return torch.sparse_csr_tensor(
            torch.from_numpy(A.indptr.astype(np.int64)),
            torch.from_numpy(A.indices.astype(np.int64)),
            torch.from_numpy(np.asarray(A.data, dtype=np.float64)),
            size=A.shape,
            device=backend.device,
            check_invariants=False,  # scipy's CSR is valid by construction
        )


def _transposed(A):
    return A.T.tocsr() if sp.issparse(A) else np.ascontiguousarray(np.asarray(A).T)


class DeviceFeatureCross(DeviceBlock):
    """X1 X2^T B on the device, never forming the block; X1 and X2^T uploaded on construction, X2 and
    X1^T (for ``rmvm``) on first use."""

    def __init__(self, backend: ArrayBackend, X1, X2, memory_mb: float = 256.0):
        self.backend, self.memory_mb = backend, memory_mb
        self.X1, self.X2 = X1, X2
        self.shape = (X1.shape[0], X2.shape[0])
        self._X1d, self._X2Td = to_device_matrix(backend, X1), to_device_matrix(backend, _transposed(X2))
        self._reverse = None

    def device_mvm(self, Bd):
        return self._X1d @ (self._X2Td @ Bd)

    def device_rmvm(self, Bd):
        if self._reverse is None:
            self._reverse = (
                to_device_matrix(self.backend, self.X2),
                to_device_matrix(self.backend, _transposed(self.X1)),
            )
        X2d, X1Td = self._reverse
        return X2d @ (X1Td @ Bd)

    def dense(self):
        return cross_product(self.X1, self.X2)

    def __reduce__(self):  # device tensors stay in the process that made them: rebuilt from X
        return (DeviceFeatureCross, (self.backend, self.X1, self.X2, self.memory_mb))


def _check_linear(kernel: Kernel) -> None:
    if not kernel.is_linear:
        raise InputError(f"the device's linear forms are for the linear kernel only; got {type(kernel).__name__}")


class _LinearGram:
    """What both device forms of M = X X^T share: diag ||x_i||², test blocks X_new X^T, no parameters."""

    def diag(self):
        return self._diag

    def cross_test(self, X_new):
        return DeviceFeatureCross(self.backend, X_new, self.X, self.memory_mb)

    def grad_contract(self, E, F):
        return np.zeros(0)


class DeviceFeatureGram(_LinearGram, Representation, DeviceFeatureCross):
    """M = X X^T on the device as X (X^T B) (module docstring)."""

    def __init__(self, X, kernel: Kernel, backend: ArrayBackend, memory_mb: float = 256.0):
        _check_linear(kernel)
        self.backend, self.memory_mb, self.X, self.X1, self.X2, self.kernel = backend, memory_mb, X, X, X, kernel
        self._X1d, self._X2Td = to_device_matrix(backend, X), to_device_matrix(backend, _transposed(X))
        self._reverse = (self._X1d, self._X2Td)  # symmetric: M^T B = M B
        self._diag = sq_norms(X)

    def restrict(self, J):
        return DeviceFeatureGram(take_rows(self.X, J), self.kernel, self.backend, self.memory_mb)

    def cross(self, I, J):
        return DeviceFeatureCross(self.backend, take_rows(self.X, I), take_rows(self.X, J), self.memory_mb)

    def with_kernel(self, kernel):
        return self if kernel.key() == self.kernel.key() else DeviceFeatureGram(self.X, kernel, self.backend)

    @property
    def nbytes(self):
        if sp.issparse(self.X):
            return 2 * (16 * int(self.X.nnz) + 8 * (self.X.shape[0] + self.X.shape[1] + 2))
        return 2 * 8 * self.X.shape[0] * self.X.shape[1]

    def __reduce__(self):  # the recipe, not the device arrays
        return (DeviceFeatureGram, (self.X, self.kernel, self.backend, self.memory_mb))


class DeviceLinearStoredGram(_LinearGram, Representation, DeviceMatrixCross):
    """M = X X^T stored on the device (module docstring); ``M``: an existing device matrix (a restriction)."""

    def __init__(self, X, kernel: Kernel, backend: ArrayBackend, dtype: str = "float64", memory_mb=256.0, M=None):
        _check_linear(kernel)
        if M is None:
            M = backend.from_host(cross_product(X, X), dtype=dtype)
        self.backend, self.M, self.memory_mb = backend, M, memory_mb
        self.X, self.kernel, self.dtype = X, kernel, dtype
        self._diag = sq_norms(X)

    def restrict(self, J):
        J = np.asarray(J)
        M = self._take(J, J)
        return DeviceLinearStoredGram(take_rows(self.X, J), self.kernel, self.backend, self.dtype, self.memory_mb, M)

    def cross(self, I, J):
        return DeviceMatrixCross(self.backend, self._take(np.asarray(I), np.asarray(J)), self.memory_mb)

    def with_kernel(self, kernel):
        return self if kernel.key() == self.kernel.key() else DeviceLinearStoredGram(self.X, kernel, self.backend)

    @property
    def nbytes(self):
        return self.n * self.n * np.dtype(self.dtype).itemsize

    def __reduce__(self):  # the recipe, not the device matrix
        return (DeviceLinearStoredGram, (self.X, self.kernel, self.backend, self.dtype, self.memory_mb))
