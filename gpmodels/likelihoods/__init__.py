"""Likelihoods and their Hessian factors."""

from .base import HessianFactor, Likelihood
from .diagonal import DiagonalFactor, DiagonalLikelihood
from .gaussian import Gaussian
from .hinge import SmoothedHinge
from .logistic import Logistic
from .robust import Laplace, StudentT
from .softmax import Softmax
from .uncertain import PseudoTargets, coarsen_labels

__all__ = ["Likelihood", "HessianFactor", "Softmax", "DiagonalLikelihood", "DiagonalFactor", "Logistic", "Gaussian",
           "Laplace", "StudentT", "SmoothedHinge", "PseudoTargets", "coarsen_labels"]
