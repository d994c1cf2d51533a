"""Kernel-weight learning (Nickisch & Seeger 2011, Alg. 1): MKL, joint MAP, Gaussian MLM, VB weights."""

from gpmodels.inference.mkl.algorithms import MKLOptions, algorithm1, alternating, criterion_at, learn_weights

__all__ = ["MKLOptions", "algorithm1", "alternating", "criterion_at", "learn_weights"]
