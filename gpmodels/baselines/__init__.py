"""Max-margin baselines (Crammer–Singer, H-M^3)."""

from gpmodels.baselines.crammer_singer.kernel_cache import KernelRows
from gpmodels.baselines.crammer_singer.solver import CrammerSingerModel, CSOptions, CSResult, fit_crammer_singer
from gpmodels.baselines.hm3.node_svms import NodeSVMs, fit_node_svms, top_down_consistent
from gpmodels.baselines.hm3.solver import HM3Model, HM3Options, HM3Result, fit_hm3

__all__ = ["CSOptions", "CSResult", "CrammerSingerModel", "fit_crammer_singer", "HM3Options", "HM3Result", "HM3Model",
           "fit_hm3", "KernelRows", "NodeSVMs", "fit_node_svms", "top_down_consistent"]
