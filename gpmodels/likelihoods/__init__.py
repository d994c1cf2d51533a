"""Likelihoods and their Hessian factors."""

from gpmodels.likelihoods.base import HessianFactor, Likelihood
from gpmodels.likelihoods.diagonal import DiagonalLikelihood
from gpmodels.likelihoods.gaussian import Gaussian
from gpmodels.likelihoods.hinge import SmoothedHinge
from gpmodels.likelihoods.logistic import Logistic
from gpmodels.likelihoods.robust import Laplace, StudentT
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.likelihoods.uncertain import PseudoTargets, coarsen_labels

__all__ = [
    "Likelihood",
    "HessianFactor",
    "DiagonalLikelihood",
    "Softmax",
    "Logistic",
    "Gaussian",
    "Laplace",
    "StudentT",
    "SmoothedHinge",
    "PseudoTargets",
    "coarsen_labels",
]
