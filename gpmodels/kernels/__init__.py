"""Covariance shapes and their kernel-matrix representations."""

from gpmodels.kernels.base import Kernel, ParameterFreeKernel
from gpmodels.kernels.composite import Constrained, KernelProduct, KernelSum
from gpmodels.kernels.constant import Constant, White
from gpmodels.kernels.factory import KERNEL_NAMES, KERNEL_PARAMS, make_kernel
from gpmodels.kernels.linear import Linear, Polynomial
from gpmodels.kernels.matern import Matern, MaternARD
from gpmodels.kernels.precomputed import Precomputed, index_inputs
from gpmodels.kernels.rational_quadratic import RationalQuadratic, RationalQuadraticARD
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
from gpmodels.kernels.sklearn_adapter import SklearnKernel, from_sklearn

__all__ = ["Kernel", "ParameterFreeKernel", "RBF", "ARD", "Matern", "MaternARD", "RationalQuadratic",
           "RationalQuadraticARD", "Constant", "White", "KernelSum", "KernelProduct", "Constrained", "SklearnKernel",
           "from_sklearn", "Linear", "Polynomial", "Precomputed", "index_inputs",
           "Representation", "StoredGram", "BlockedGram", "FeatureGram", "LowRankGram", "RepresentationConfig",
           "incomplete_cholesky", "make_kernel", "KERNEL_NAMES", "KERNEL_PARAMS"]
