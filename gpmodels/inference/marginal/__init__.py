"""Marginal-likelihood criteria (Nickisch & Seeger 2011): Laplace MLM and the VB double loop."""

from gpmodels.inference.marginal.laplace import LaplaceOptions, LaplaceResult, laplace_mlm, laplace_objective, LaplaceObjective, learn_laplace, LAPLACE_PATHS, MODE_OPTIONS
from gpmodels.inference.marginal.vb import VBOptions, VBResult, GammaBound, gamma_bound, vb_criterion, vb_objective, VBObjective, learn_vb, check_vb_likelihood

__all__ = ['LaplaceOptions', 'LaplaceResult', 'laplace_mlm', 'laplace_objective', 'LaplaceObjective', 'learn_laplace', 'LAPLACE_PATHS', 'MODE_OPTIONS', 'VBOptions', 'VBResult', 'GammaBound', 'gamma_bound', 'vb_criterion', 'vb_objective', 'VBObjective', 'learn_vb', 'check_vb_likelihood']
