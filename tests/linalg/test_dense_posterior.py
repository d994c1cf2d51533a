"""The shared dense factors of B = I + Vᵀ K V (R&W Alg. 3.1 / 5.1) against direct formulas, the MVM
counter, and the log_-name helper."""

import numpy as np
import pytest

from gpmodels.errors import InputError
from gpmodels.hyperparameters import natural_name, natural_values
from gpmodels.linalg.counting import MVMCounter
from gpmodels.linalg.dense_posterior import DensePosterior


def _problem(n=7, seed=0):
    r = np.random.default_rng(seed)
    Z = r.normal(size=(n, n))
    return Z @ Z.T / n + 0.1 * np.eye(n), r.uniform(0.2, 2.0, size=n), r.normal(size=(n, n + 2))


@pytest.mark.parametrize("diagonal", [True, False])
def test_factors_match_the_direct_formulas(diagonal):
    K, w, Vm = _problem()
    V = np.diag(np.sqrt(w)) if diagonal else Vm
    post = DensePosterior(K, np.sqrt(w) if diagonal else Vm)
    W = V @ V.T
    n = K.shape[0]
    assert post.logdet == pytest.approx(np.linalg.slogdet(np.eye(n) + K @ W)[1], rel=1e-12)  # |B| = |I + K W|
    Sigma = np.linalg.inv(np.linalg.inv(K) + W)
    np.testing.assert_allclose(post.R, V @ np.linalg.solve(np.eye(V.shape[1]) + V.T @ K @ V, V.T), atol=1e-12)
    np.testing.assert_allclose(post.sigma(), Sigma, atol=1e-10)
    np.testing.assert_allclose(post.sigma_diag(), np.diag(Sigma), atol=1e-10)
    x = np.arange(n, dtype=float)
    np.testing.assert_allclose(post.apply_R(x), post.R @ x, atol=1e-12)
    np.testing.assert_allclose(post.apply_sigma(np.column_stack([x, -x])), Sigma @ np.column_stack([x, -x]), atol=1e-10)
    if diagonal:  # R = (K + W^{-1})^{-1}
        np.testing.assert_allclose(post.R, np.linalg.inv(K + np.diag(1.0 / w)), atol=1e-10)


def test_shapes_are_checked():
    K, w, _ = _problem()
    with pytest.raises(InputError, match="Dimension mismatch"):
        DensePosterior(K, w[:-1])


def test_mvm_counter_counts_right_hand_sides():
    K, _, _ = _problem()
    counter = MVMCounter(_Dense(K))
    v = np.ones((7, 1))
    np.testing.assert_allclose(counter(v), K @ v)
    counter(np.ones((7, 1, 3)))
    assert counter.count == 4


class _Dense:
    def __init__(self, K):
        self.K = K

    def mvm(self, V):
        return np.einsum("ij,j...->i...", self.K, V)


def test_natural_values():
    assert natural_name("kernel0.log_w") == "kernel0.w" and natural_name("a.log_b", short=True) == "b"
    assert natural_name("coupling.b01") == "coupling.b01"
    assert natural_values(["k.log_v", "shift"], [np.log(2.0), -1.0], prefix="hyper.") == pytest.approx(
        {"hyper.k.v": 2.0, "hyper.shift": -1.0}
    )
