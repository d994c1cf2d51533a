"""Scores of predictive distributions (Seeger 2008, Sec. 6).

All take P of shape (m, C) (rows are predictive distributions) and true labels y (m,).
- ``error``: fraction of argmax predictions that are wrong;
- ``log_loss``: mean -log P(y_j) (natural log), P clipped below at 1e-300;
- ``prec``: mean reciprocal rank of the true class (classes ranked by P, ties broken in favour
  of the true class' competitors, i.e. pessimistically);
- ``error_reject_curve``: reject the fraction a of test points with the lowest max_c P, report
  the error on the rest (Sec. 6.2, Fig. 3).
"""

from __future__ import annotations

import numpy as np

from .errors import InputError
from .validation import check_shape

__all__ = ["accuracy", "error", "log_loss", "prec", "error_reject_curve", "classification_report"]


def _check(P, y):
    P = np.asarray(P, dtype=np.float64)
    y = np.asarray(y)
    if P.ndim != 2:
        raise InputError(f"P must be a 2-D array (m, C) of probabilities; got shape {P.shape}")
    check_shape("y", y, (P.shape[0],))
    if y.size and (y.min() < 0 or y.max() >= P.shape[1]):
        raise InputError(f"labels must lie in 0..{P.shape[1] - 1}; got values from {y.min()} to {y.max()}")
    return P, y.astype(np.intp)


def accuracy(P, y) -> float:
    P, y = _check(P, y)
    return float(np.mean(np.argmax(P, axis=1) == y))


def error(P, y) -> float:
    return 1.0 - accuracy(P, y)


def log_loss(P, y) -> float:
    P, y = _check(P, y)
    return float(-np.mean(np.log(np.maximum(P[np.arange(y.size), y], 1e-300))))


def prec(P, y) -> float:
    """Mean 1/rank of the true class; rank 1 = most probable (Cai & Hofmann 2004)."""
    P, y = _check(P, y)
    p_true = P[np.arange(y.size), y]
    rank = np.sum(P >= p_true[:, None], axis=1)  # ties count against the true class
    return float(np.mean(1.0 / rank))


def error_reject_curve(P, y, fractions=None) -> list[tuple[float, float]]:
    """(rejected fraction, error on the accepted points) pairs, rejecting least confident first."""
    P, y = _check(P, y)
    if fractions is None:
        fractions = np.linspace(0.0, 0.5, 11)
    conf = P.max(axis=1)
    order = np.argsort(-conf, kind="stable")  # most confident first
    wrong = (np.argmax(P, axis=1) != y)[order]
    m = y.size
    out = []
    for a in fractions:
        if not 0.0 <= a < 1.0:
            raise InputError(f"rejection fractions must lie in [0, 1); got {a}")
        keep = max(1, int(round((1.0 - a) * m)))
        out.append((float(a), float(np.mean(wrong[:keep]))))
    return out


def classification_report(P, y) -> dict:
    """error, log-loss and prec in one dictionary."""
    return {"error": error(P, y), "log_loss": log_loss(P, y), "prec": prec(P, y)}
