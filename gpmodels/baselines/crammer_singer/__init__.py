"""Crammer–Singer multiclass SVM (Crammer & Singer 2001, Fig. 3, 4, Sec. 7)."""

from gpmodels.baselines.crammer_singer.solver import CrammerSingerModel, CSOptions, fit_crammer_singer

__all__ = ["CSOptions", "CrammerSingerModel", "fit_crammer_singer"]
