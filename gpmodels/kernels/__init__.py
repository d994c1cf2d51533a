"""Covariance shapes and their kernel-matrix representations."""

from gpmodels.kernels.base import Kernel, ParameterFreeKernel
from gpmodels.kernels.composite import KernelProduct, KernelSum
from gpmodels.kernels.constant import Constant, White
from gpmodels.kernels.factory import make_kernel
from gpmodels.kernels.linear import Linear, Polynomial
from gpmodels.kernels.matern import Matern, MaternARD
from gpmodels.kernels.precomputed import Precomputed
from gpmodels.kernels.rational_quadratic import RationalQuadratic, RationalQuadraticARD
from gpmodels.kernels.rbf import ARD, RBF
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.kernels.sklearn_adapter import from_sklearn

__all__ = [
    "Kernel",
    "ParameterFreeKernel",
    "RBF",
    "ARD",
    "Matern",
    "MaternARD",
    "RationalQuadratic",
    "RationalQuadraticARD",
    "Constant",
    "White",
    "KernelSum",
    "KernelProduct",
    "from_sklearn",
    "Linear",
    "Polynomial",
    "Precomputed",
    "make_kernel",
    "RepresentationConfig",
]
