"""Scores and decisions: classification metrics, Bayes decision rules, hierarchical multilabel scores."""

from gpmodels.scoring.decisions import DECISION_RULES, expected_loss, bayes_decision, argmax_rule, min_expected_taxo, max_expected_parent_accuracy, decide
from gpmodels.scoring.metrics import accuracy, error, log_loss, prec, error_reject_curve, classification_report, parent_accuracy, taxo_loss, level_confusion, hierarchical_report
from gpmodels.scoring.multilabel import NODE_WEIGHTINGS, SCALINGS, check_multilabels, paths_to_multilabels, node_weights, zero_one_loss, symmetric_difference_loss, htilde_loss, h_loss, micro_prf, per_level_prf, multilabel_report  # noqa: F401 (old SCALINGS)

__all__ = ['DECISION_RULES', 'expected_loss', 'bayes_decision', 'argmax_rule', 'min_expected_taxo', 'max_expected_parent_accuracy', 'decide', 'accuracy', 'error', 'log_loss', 'prec', 'error_reject_curve', 'classification_report', 'parent_accuracy', 'taxo_loss', 'level_confusion', 'hierarchical_report', 'NODE_WEIGHTINGS', 'check_multilabels', 'paths_to_multilabels', 'node_weights', 'zero_one_loss', 'symmetric_difference_loss', 'htilde_loss', 'h_loss', 'micro_prf', 'per_level_prf', 'multilabel_report', 'ReliabilityCurve', 'brier_score', 'expected_calibration_error', 'reliability_curve', 'calibration_report']

# calibration of predictive probabilities (Brier score, top-label ECE, reliability curve)
from gpmodels.scoring.calibration import (  # noqa: E402
    ReliabilityCurve,
    brier_score,
    calibration_report,
    expected_calibration_error,
    reliability_curve,
)

__all__ += ["ReliabilityCurve", "brier_score", "expected_calibration_error", "reliability_curve", "calibration_report"]
