"""Max-margin baselines (Crammer–Singer, H-M^3)."""

from gpmodels.baselines.crammer_singer.solver import CrammerSingerModel, CSOptions, fit_crammer_singer
from gpmodels.baselines.hm3.node_svms import fit_node_svms
from gpmodels.baselines.hm3.solver import HM3Model, HM3Options, fit_hm3

__all__ = [
    "CSOptions",
    "CrammerSingerModel",
    "fit_crammer_singer",
    "HM3Options",
    "HM3Model",
    "fit_hm3",
    "fit_node_svms",
]
