"""Scores and decisions: classification metrics, Bayes decision rules, hierarchical precision / recall / F1,
hierarchical multilabel scores."""

from gpmodels.scoring.calibration import brier_score, calibration_report, expected_calibration_error, reliability_curve
from gpmodels.scoring.decisions import argmax_rule, bayes_decision, max_expected_parent_accuracy, min_expected_taxo
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
    log_loss,
    parent_accuracy,
    prec,
    taxo_loss,
)
from gpmodels.scoring.multilabel import (
    h_loss,
    htilde_loss,
    micro_prf,
    multilabel_report,
    paths_to_multilabels,
    per_level_prf,
    symmetric_difference_loss,
    zero_one_loss,
)

__all__ = [
    "accuracy",
    "error",
    "log_loss",
    "prec",
    "error_reject_curve",
    "classification_report",
    "parent_accuracy",
    "taxo_loss",
    "hierarchical_report",
    "hierarchical_prf",
    "hierarchical_precision",
    "hierarchical_recall",
    "hierarchical_f1",
    "argmax_rule",
    "min_expected_taxo",
    "max_expected_parent_accuracy",
    "bayes_decision",
    "zero_one_loss",
    "symmetric_difference_loss",
    "htilde_loss",
    "h_loss",
    "micro_prf",
    "per_level_prf",
    "multilabel_report",
    "paths_to_multilabels",
    "brier_score",
    "expected_calibration_error",
    "reliability_curve",
    "calibration_report",
]
