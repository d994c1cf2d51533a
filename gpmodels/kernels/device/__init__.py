"""Kernel matrices on an accelerator, written against the array API standard.

- :mod:`~gpmodels.kernels.device.forms`: what a kernel declares so that a device can build its
  matrices from X (``Kernel.distance_form``);
- :mod:`~gpmodels.kernels.device.backend`: array namespaces and devices (numpy and array-api-strict
  for CI, PyTorch on CUDA for GPUs), and what ``device: cuda`` needs;
- :mod:`~gpmodels.kernels.device.gram`: the stored and recomputed device representations and their
  configuration.

Importing this package needs neither PyTorch nor array-api-compat; building a backend does.
"""

from gpmodels.kernels.device.forms import (
    DEVICE_KERNELS,
    DistanceForm,
    GaussianForm,
    MaternForm,
    RationalQuadraticForm,
)

__all__ = ["DistanceForm", "GaussianForm", "MaternForm", "RationalQuadraticForm", "DEVICE_KERNELS"]
