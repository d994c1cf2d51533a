"""Likelihoods and their Hessian factors."""

from .base import HessianFactor, Likelihood
from .softmax import Softmax
from .uncertain import PseudoTargets, coarsen_labels

__all__ = ["Likelihood", "HessianFactor", "Softmax", "PseudoTargets", "coarsen_labels"]
