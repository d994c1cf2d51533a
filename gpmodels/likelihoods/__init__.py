"""Likelihoods and their Hessian factors."""

from .base import HessianFactor, Likelihood
from .softmax import Softmax

__all__ = ["Likelihood", "HessianFactor", "Softmax"]
