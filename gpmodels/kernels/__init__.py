"""Covariance shapes and their kernel-matrix representations."""

from gpmodels.kernels.base import Kernel, ParameterFreeKernel
from gpmodels.kernels.factory import make_kernel
from gpmodels.kernels.linear import Linear, Polynomial
from gpmodels.kernels.precomputed import Precomputed
from gpmodels.kernels.rbf import ARD, RBF
from gpmodels.kernels.representations import RepresentationConfig

__all__ = ["Kernel", "ParameterFreeKernel", "RBF", "ARD", "Linear", "Polynomial", "Precomputed", "make_kernel",
           "RepresentationConfig"]
