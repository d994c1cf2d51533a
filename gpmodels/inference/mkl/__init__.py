"""Kernel-weight learning (Nickisch & Seeger 2011, Alg. 1): MKL, joint MAP, Gaussian MLM, VB weights."""

from gpmodels.inference.mkl.algorithms import (
           CRITERIA,
           KernelCriterion,
           KernelLearningResult,
           MKLOptions,
           WeightsObjective,
           algorithm1,
           alternating,
           criterion_at,
           learn_weights,
)

__all__ = ["CRITERIA", "MKLOptions", "KernelLearningResult", "algorithm1", "alternating", "criterion_at",
           "KernelCriterion", "WeightsObjective", "learn_weights"]
