import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

TESTS = Path(__file__).resolve().parent
"""The tests folder (shared helpers, fixtures in data/)."""
ROOT = TESTS.parent
"""The repository root."""

settings.register_profile("default", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("thorough", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("GPMODELS_HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def toy_classification(n=40, C=3, d=2, seed=0, spread=2.0):
    """Gaussian blobs: class c centred at a random point; labels 0..C-1, every class present."""
    r = np.random.default_rng(seed)
    centres = r.normal(scale=spread, size=(C, d))
    y = np.arange(n) % C
    X = centres[y] + r.normal(size=(n, d))
    return X, y
