"""Covariance shapes and their kernel-matrix representations."""

from .base import Kernel, ParameterFreeKernel
from .linear import Linear, Polynomial
from .precomputed import Precomputed, index_inputs
from .rbf import ARD, RBF
from .representations import (BlockedGram, FeatureGram, LowRankGram, Representation, RepresentationConfig,
                              StoredGram, incomplete_cholesky)

__all__ = ["Kernel", "ParameterFreeKernel", "RBF", "ARD", "Linear", "Polynomial", "Precomputed", "index_inputs", "Representation",
           "StoredGram", "BlockedGram", "FeatureGram", "LowRankGram", "RepresentationConfig", "incomplete_cholesky"]
