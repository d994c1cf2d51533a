"""H-M^3 hierarchical max-margin multilabel learning (Rousu et al. 2006) and per-node SVM baselines."""

from gpmodels.baselines.hm3.node_svms import fit_node_svms
from gpmodels.baselines.hm3.solver import HM3Model, HM3Options, fit_hm3

__all__ = ["HM3Options", "HM3Model", "fit_hm3", "fit_node_svms"]
