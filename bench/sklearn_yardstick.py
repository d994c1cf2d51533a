"""A yardstick of the machine's speed for the CV benchmarks: one scikit-learn GPC fit at fixed values.

``sklearn_fixed_fit_seconds`` times one ``GaussianProcessClassifier(optimizer=None)`` fit (one binary
Laplace GP per class, one-vs-rest, dense Cholesky) on the given training data with the start kernel
of Seeger 2008 Sec. 6.2 as scikit-learn spells it: ConstantKernel(v) * RBF(1 / sqrt(w)) +
ConstantKernel(σ²), all fixed (the same peer as bench/satimage_map.py).  Measured in the same run
as a learning time, the ratio learning / yardstick is comparable across machines and loads
(issue 12, goal 2: ≤ 2 on full satimage mc-sep).  Needs scikit-learn.
"""

from __future__ import annotations

import gpmodels  # noqa: F401  (first: its OpenBLAS setting must precede numpy's import)

# isort: split

import time

import numpy as np


def sklearn_fixed_fit_seconds(X, y, *, v: float, w: float, sigma2: float) -> dict:
    """Wall and process CPU seconds of one fixed-hyperparameter scikit-learn GPC fit on (X, y), with its settings."""
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    kernel = ConstantKernel(float(v), "fixed") * RBF(
        length_scale=1.0 / np.sqrt(w), length_scale_bounds="fixed"
    ) + ConstantKernel(float(sigma2), "fixed")
    gpc = GaussianProcessClassifier(kernel=kernel, optimizer=None)
    t, c = time.perf_counter(), time.process_time()
    gpc.fit(X, y)
    seconds, cpu = time.perf_counter() - t, time.process_time() - c
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "n_train": int(len(y)),
        "v": float(v),
        "w": float(w),
        "sigma2": float(sigma2),
    }
