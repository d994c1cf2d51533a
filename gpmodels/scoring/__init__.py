"""Scores and decisions: classification metrics, Bayes decision rules, hierarchical precision / recall / F1,
hierarchical multilabel scores."""

from gpmodels.scoring.decisions import (
    DECISION_RULES,
    argmax_rule,
    bayes_decision,
    decide,
    expected_loss,
    max_expected_parent_accuracy,
    min_expected_taxo,
)
from gpmodels.scoring.hierarchical_prf import (
    hierarchical_f1,
    hierarchical_precision,
    hierarchical_prf,
    hierarchical_recall,
)
from gpmodels.scoring.metrics import (
    accuracy,
    classification_report,
    error,
    error_reject_curve,
    hierarchical_report,
    level_confusion,
    log_loss,
    parent_accuracy,
    prec,
    taxo_loss,
)
from gpmodels.scoring.multilabel import (
    NODE_WEIGHTINGS,
    check_multilabels,
    h_loss,
    htilde_loss,
    micro_prf,
    multilabel_report,
    node_weights,
    paths_to_multilabels,
    per_level_prf,
    symmetric_difference_loss,
    zero_one_loss,
)

__all__ = ["DECISION_RULES", "expected_loss", "bayes_decision", "argmax_rule", "min_expected_taxo",
           "max_expected_parent_accuracy", "decide", "accuracy", "error", "log_loss", "prec", "error_reject_curve",
           "classification_report", "parent_accuracy", "taxo_loss", "level_confusion", "hierarchical_report",
           "hierarchical_prf", "hierarchical_precision", "hierarchical_recall", "hierarchical_f1",
           "NODE_WEIGHTINGS", "check_multilabels", "paths_to_multilabels", "node_weights", "zero_one_loss",
           "symmetric_difference_loss", "htilde_loss", "h_loss", "micro_prf", "per_level_prf", "multilabel_report",
           "ReliabilityCurve", "brier_score", "expected_calibration_error", "reliability_curve", "calibration_report"]

# calibration of predictive probabilities (Brier score, top-label ECE, reliability curve)
from gpmodels.scoring.calibration import (  # noqa: E402
    ReliabilityCurve,
    brier_score,
    calibration_report,
    expected_calibration_error,
    reliability_curve,
)

__all__ += ["ReliabilityCurve", "brier_score", "expected_calibration_error", "reliability_curve", "calibration_report"]
