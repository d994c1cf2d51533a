"""The array backends the device tests run on: numpy (through array-api-compat) and array-api-strict
always; PyTorch's CPU tensors where PyTorch imports (CI has no torch), with the fused Triton products
under Triton's interpreter (``torch-fused``, when ``TRITON_INTERPRET=1`` was set before Triton
compiled); CUDA, marked ``gpu``, where there is a usable GPU.  Import after
``pytest.importorskip("array_api_compat")``."""

import os

import pytest

from gpmodels.kernels.device import fused as fused_products
from gpmodels.kernels.device.backend import (
    NumpyBackend,
    cuda_backend,
    cuda_status,
    numpy_backend,
    strict_backend,
    torch_backend,
)


def device_backends() -> tuple[dict, list]:
    """(name -> backend factory, the names as pytest parameters, CUDA's marked ``gpu``)."""
    backends = {"numpy": numpy_backend, "strict": strict_backend}
    try:
        import torch  # noqa: F401

        backends["torch-cpu"] = lambda: torch_backend("cpu", fused=False)
        if fused_products.AVAILABLE and os.environ.get("TRITON_INTERPRET") == "1":
            backends["torch-fused"] = lambda: torch_backend("cpu", fused=True)
    except ImportError:
        pass
    params = [pytest.param(name) for name in sorted(backends)]
    if cuda_status() is None:
        backends["cuda"] = cuda_backend
        params.append(pytest.param("cuda", marks=pytest.mark.gpu))
    return backends, params


class CountingBackend(NumpyBackend):
    """The numpy backend, counting the arrays that cross to and from the host."""

    def __init__(self):
        super().__init__()
        self.uploads = self.downloads = 0

    def from_host(self, a, dtype="float64"):
        self.uploads += 1
        return super().from_host(a, dtype)

    def to_host(self, a):
        self.downloads += 1
        return super().to_host(a)
