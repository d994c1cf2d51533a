"""Calibration scores (gpmodels/scoring/calibration.py) against hand-computed values."""

import numpy as np
import pytest

from gpmodels.errors import InputError
from gpmodels.scoring.calibration import (
    brier_score,
    calibration_report,
    expected_calibration_error,
    log_loss,
    reliability_curve,
)

P = np.array(
    [
        [0.7, 0.2, 0.1],
        [0.4, 0.4, 0.2],  # tie: the first maximum (class 0) is the prediction
        [0.1, 0.3, 0.6],
        [0.95, 0.05, 0.0],
        [0.2, 0.75, 0.05],
    ]
)
y = np.array([0, 1, 1, 0, 0])


def test_brier_score_by_hand():
    # rows: 0.09+0.04+0.01, 0.16+0.36+0.04, 0.01+0.49+0.36, 0.0025+0.0025, 0.64+0.5625+0.0025
    assert brier_score(P, y) == pytest.approx((0.14 + 0.56 + 0.86 + 0.005 + 1.205) / 5, abs=1e-15)


def test_reliability_curve_by_hand():
    c = reliability_curve(P, y, n_bins=5)  # bins (0, .2], (.2, .4], (.4, .6], (.6, .8], (.8, 1]
    np.testing.assert_allclose(c.edges, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    np.testing.assert_array_equal(c.counts, [0, 1, 1, 2, 1])
    np.testing.assert_allclose(c.confidence[1:], [0.4, 0.6, 0.725, 0.95])
    np.testing.assert_allclose(c.accuracy[1:], [0.0, 0.0, 0.5, 1.0])
    assert np.isnan(c.confidence[0]) and np.isnan(c.accuracy[0])
    assert c.n_bins == 5


def test_expected_calibration_error_by_hand():
    # Σ_b |B_b|/m |acc - conf| = (0.4 + 0.6 + 2 * 0.225 + 0.05) / 5
    assert expected_calibration_error(P, y, n_bins=5) == pytest.approx(0.3, abs=1e-15)


def test_log_loss_and_report():
    expect = -np.mean(np.log([0.7, 0.4, 0.3, 0.95, 0.2]))
    assert log_loss(P, y) == pytest.approx(expect, abs=1e-15)
    rep = calibration_report(P, y, n_bins=5)
    assert set(rep) == {"brier", "ece", "log_loss"}
    assert rep["brier"] == brier_score(P, y) and rep["log_loss"] == log_loss(P, y)
    assert rep["ece"] == pytest.approx(0.3, abs=1e-15)


def test_perfect_forecaster_and_edge_confidences():
    Q = np.eye(3)[[0, 2, 1]]
    assert brier_score(Q, np.array([0, 2, 1])) == 0.0
    assert expected_calibration_error(Q, np.array([0, 2, 1])) == 0.0
    # confidence exactly on a bin edge goes to the lower bin; 1.0 to the last
    c = reliability_curve(np.array([[0.5, 0.5], [1.0, 0.0]]), np.array([0, 1]), n_bins=2)
    np.testing.assert_array_equal(c.counts, [1, 1])
    np.testing.assert_allclose(c.accuracy, [1.0, 0.0])


def test_binary_brier_is_twice_scikit_learns():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    p = rng.random(20)
    labels = rng.integers(0, 2, 20)
    ours = brier_score(np.column_stack([1 - p, p]), labels)
    assert ours == pytest.approx(2 * sklearn_metrics.brier_score_loss(labels, p), abs=1e-14)


def test_bad_inputs():
    with pytest.raises(InputError, match="n_bins"):
        expected_calibration_error(P, y, n_bins=0)
    with pytest.raises(InputError, match="labels"):
        brier_score(P, np.array([0, 1, 3, 0, 0]))
    with pytest.raises(InputError, match="at least one"):
        brier_score(np.zeros((0, 3)), np.zeros(0, dtype=int))
