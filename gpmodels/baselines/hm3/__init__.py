"""H-M^3 hierarchical max-margin multilabel learning (Rousu et al. 2006) and per-node SVM baselines."""

from gpmodels.baselines.hm3.inference import (
    TRAIN_LOSSES,
    best_labelings,
    best_single_paths,
    edge_losses,
    edge_onehot,
    labeling_scores,
    node_max_marginals,
    parent_bits,
)
from gpmodels.baselines.hm3.lp import DirectionLP, polytope_constraints, solve_marginal_qp
from gpmodels.baselines.hm3.node_svms import NODE_SVM_MODES, NodeSVMs, fit_node_svms, top_down_consistent
from gpmodels.baselines.hm3.solver import (
    DIRECTIONS,
    WORKING_SETS,
    HM3Model,
    HM3Options,
    HM3Result,
    best_vertex,
    conditional_gradient_ascent,
    dual_weights,
    edge_gradients,
    fit_hm3,
    objectives_and_gaps,
)

__all__ = ["parent_bits", "edge_onehot", "edge_losses", "best_labelings", "node_max_marginals", "labeling_scores",
           "best_single_paths", "TRAIN_LOSSES", "DirectionLP", "solve_marginal_qp", "polytope_constraints", "NodeSVMs",
           "fit_node_svms", "top_down_consistent", "NODE_SVM_MODES", "HM3Options", "HM3Result", "HM3Model", "fit_hm3",
           "WORKING_SETS", "DIRECTIONS", "conditional_gradient_ascent", "best_vertex", "edge_gradients", "dual_weights",
           "objectives_and_gaps"]
