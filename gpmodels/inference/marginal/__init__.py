"""Marginal-likelihood criteria (Nickisch & Seeger 2011): Laplace MLM and the VB double loop."""

from gpmodels.inference.marginal.laplace import LaplaceOptions, laplace_mlm, learn_laplace
from gpmodels.inference.marginal.vb import VBOptions, learn_vb, vb_criterion

__all__ = ["laplace_mlm", "learn_laplace", "LaplaceOptions", "vb_criterion", "learn_vb", "VBOptions"]
