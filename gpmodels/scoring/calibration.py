"""Calibration scores of predictive distributions: Brier score, expected calibration error, reliability.

All take P of shape (m, C) (rows are predictive distributions over the C classes) and true labels
y (m,) in 0..C-1, like :mod:`gpmodels.scoring.metrics`.

- ``brier_score``: the multiclass Brier score (Brier 1950)
  BS = (1/m) Σ_j Σ_c (P_jc - 1{y_j = c})², in [0, 2]; 0 for a certain, correct forecaster.  For
  C = 2 it is twice scikit-learn's ``brier_score_loss`` of the positive class.
- ``reliability_curve``: top-label reliability (Guo et al. 2017): confidence conf_j = max_c P_jc,
  prediction argmax_c P_jc (first maximum on ties), the unit interval cut into ``n_bins``
  equal-width bins B_b = ((b-1)/B, b/B] (the first bin also holds 0); per bin the mean
  confidence, the accuracy of the predictions and the count.
- ``expected_calibration_error``: ECE = Σ_b (|B_b| / m) |acc(B_b) - conf(B_b)| over the
  non-empty bins of the reliability curve (top-label ECE, equal-width bins; Naeini et al. 2015,
  Guo et al. 2017).
- ``log_loss``: mean -log P_{j, y_j} (re-exported from :mod:`gpmodels.scoring.metrics`).
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.scoring.metrics import _check, log_loss

__all__ = [
    "brier_score",
    "expected_calibration_error",
    "reliability_curve",
    "ReliabilityCurve",
    "log_loss",
    "calibration_report",
]


@attrs.frozen
class ReliabilityCurve:
    """Per-bin top-label reliability: ``edges`` (B + 1,), ``confidence`` and ``accuracy`` (B,)
    means (NaN in empty bins), ``counts`` (B,) integers."""

    edges: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    counts: np.ndarray

    @property
    def n_bins(self) -> int:
        return int(self.counts.size)


def _check_bins(n_bins) -> int:
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise InputError(f"n_bins must be a positive integer; got {n_bins!r}")
    return int(n_bins)


def brier_score(P, y) -> float:
    """Multiclass Brier score (1/m) Σ_j ||P_j - e_{y_j}||² (see the module docstring)."""
    P, y = _check(P, y)
    if y.size == 0:
        raise InputError("brier_score needs at least one test point; got none")
    E = P.copy()
    E[np.arange(y.size), y] -= 1.0
    return float(np.mean(np.sum(E * E, axis=1)))


def reliability_curve(P, y, n_bins: int = 15) -> ReliabilityCurve:
    """Top-label reliability over ``n_bins`` equal-width confidence bins (see the module docstring)."""
    P, y = _check(P, y)
    B = _check_bins(n_bins)
    conf = P.max(axis=1)
    correct = (np.argmax(P, axis=1) == y).astype(np.float64)
    # bin b holds ((b-1)/B, b/B]: ceil(conf B) - 1, with conf = 0 in the first bin
    idx = np.clip(np.ceil(conf * B).astype(np.intp) - 1, 0, B - 1)
    counts = np.bincount(idx, minlength=B)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(idx, weights=conf, minlength=B) / counts
        acc = np.bincount(idx, weights=correct, minlength=B) / counts
    return ReliabilityCurve(np.linspace(0.0, 1.0, B + 1), mean_conf, acc, counts)


def expected_calibration_error(P, y, n_bins: int = 15) -> float:
    """Top-label ECE with ``n_bins`` equal-width bins: Σ_b (|B_b|/m) |acc_b - conf_b|."""
    curve = reliability_curve(P, y, n_bins)
    m = int(curve.counts.sum())
    if m == 0:
        raise InputError("expected_calibration_error needs at least one test point; got none")
    full = curve.counts > 0
    return float(np.sum(curve.counts[full] / m * np.abs(curve.accuracy[full] - curve.confidence[full])))


def calibration_report(P, y, n_bins: int = 15) -> dict:
    """Brier score, ECE and log loss of one set of predictive probabilities, as a dict."""
    return {"brier": brier_score(P, y), "ece": expected_calibration_error(P, y, n_bins), "log_loss": log_loss(P, y)}
