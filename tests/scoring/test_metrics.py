import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpmodels import metrics as M
from gpmodels.errors import InputError


@given(st.integers(1, 30), st.integers(2, 6), st.integers(0, 10**6))
def test_scores_against_brute_force(m, C, seed):
    r = np.random.default_rng(seed)
    P = r.dirichlet(np.ones(C), size=m)
    y = r.integers(0, C, m)
    assert M.error(P, y) == pytest.approx(np.mean([np.argmax(P[j]) != y[j] for j in range(m)]))
    assert M.log_loss(P, y) == pytest.approx(-np.mean([np.log(P[j, y[j]]) for j in range(m)]))
    ranks = [1 + sum(P[j, c] > P[j, y[j]] for c in range(C)) for j in range(m)]
    assert M.prec(P, y) == pytest.approx(np.mean([1 / r_ for r_ in ranks]))


def test_error_reject_curve_rejects_the_least_confident_first():
    P = np.array([[0.9, 0.1], [0.6, 0.4], [0.55, 0.45], [0.99, 0.01]])
    y = np.array([0, 1, 1, 0])  # the two unsure points are wrong
    curve = dict(M.error_reject_curve(P, y, [0.0, 0.25, 0.5]))
    assert curve == {0.0: 0.5, 0.25: pytest.approx(1 / 3), 0.5: 0.0}


def test_metric_inputs_are_checked():
    with pytest.raises(InputError, match="outside|lie in"):
        M.error(np.ones((2, 2)) / 2, np.array([0, 2]))
    with pytest.raises(InputError, match="shape"):
        M.error(np.ones((2, 2)) / 2, np.array([0]))
