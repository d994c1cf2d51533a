"""Covariance shapes and their kernel-matrix representations."""

from gpmodels.kernels.base import Kernel, ParameterFreeKernel
from gpmodels.kernels.factory import KERNEL_NAMES, KERNEL_PARAMS, make_kernel
from gpmodels.kernels.linear import Linear, Polynomial
from gpmodels.kernels.precomputed import Precomputed, index_inputs
from gpmodels.kernels.rbf import ARD, RBF
from gpmodels.kernels.representations import (
                              BlockedGram,
                              FeatureGram,
                              LowRankGram,
                              Representation,
                              RepresentationConfig,
                              StoredGram,
                              incomplete_cholesky,
)

__all__ = ["Kernel", "ParameterFreeKernel", "RBF", "ARD", "Linear", "Polynomial", "Precomputed", "index_inputs",
           "Representation", "StoredGram", "BlockedGram", "FeatureGram", "LowRankGram", "RepresentationConfig",
           "incomplete_cholesky", "make_kernel", "KERNEL_NAMES", "KERNEL_PARAMS"]
