"""Laplace marginal-likelihood learning: ``GPClassifier(objective="laplace")`` against scikit-learn's
``GaussianProcessClassifier`` (ML-II) on satimage-800 and digits-500 (issue 26, goal 2).

Data: satimage (``../shared/data``; a seeded stratified sample of 800 training points, the 2000 given test
points) and scikit-learn's bundled digits (a seeded stratified sample of 500, the other 1297 as test).
Both start from the same hyperparameters, the gpmodels defaults: RBF exp(-(w/2)||x - x'||²) with
w = 1 / Σ_j Var[x_j] of the training inputs, variance 1, intercept variance σ² = 1 (fixed).

- gpmodels: ``GPClassifier(objective="laplace", random_state=seed)``: one softmax model over all classes,
  separate (w, v) per class, the Laplace approximation of the marginal likelihood (Williams & Barber 1998)
  maximised by the package's quasi-Newton optimiser, then α̂ at the learned values.
- scikit-learn: ``GaussianProcessClassifier(ConstantKernel(1) * RBF(1/sqrt(w)) + ConstantKernel(1, fixed))``:
  one-vs-rest binary Laplace GPs, each (v, ℓ) by L-BFGS-B on its Laplace marginal likelihood.

Timed: ``fit``, by wall clock and by the process's CPU time (the latter is the steadier figure on a
machine shared with other jobs; BLAS threads as set by the environment, e.g. OPENBLAS_NUM_THREADS=1;
gpmodels' exact Laplace path and its final fit run on one BLAS thread whatever the setting).
Scored on the test points: error and log loss.  Prints a table and one JSON line.

Usage: python bench/laplace_vs_sklearn.py [--datasets satimage,digits] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF as SkRBF
from sklearn.gaussian_process.kernels import ConstantKernel
from sklearn.model_selection import train_test_split
from smoke import SMOKE_HELP  # noqa: E402

from gpmodels.data import load_dataset
from gpmodels.data.scaling import auto_rbf_w
from gpmodels.estimators import GPClassifier
from gpmodels.scoring.metrics import error, log_loss


def _data(name: str, seed: int, n_train: int | None = None):
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return train_test_split(X, y, train_size=n_train or 500, random_state=seed, stratify=y)
    d = load_dataset("satimage")
    X_train, _, y_train, _ = train_test_split(
        d.X_train, d.y_train, train_size=n_train or 800, random_state=seed, stratify=d.y_train
    )
    return X_train, d.X_test, y_train, d.y_test


def _fit(est, X, y, X_test, y_test) -> dict:
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # either optimiser may stop at its iteration limit
        est.fit(X, y)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    P = est.predict_proba(X_test)
    codes = np.searchsorted(est.classes_, y_test)
    return {
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "error": error(P, codes),
        "log_loss": log_loss(P, codes),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="satimage,digits")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-train", type=int, default=None, help="training points (default: digits 500, satimage 800)")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(datasets="digits", n_train=60)
    out = {"blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default")}
    print(f"{'data':10} {'method':10} {'wall s':>8} {'cpu s':>8} {'error':>7} {'log loss':>9}")
    for name in args.datasets.split(","):
        X_train, X_test, y_train, y_test = _data(name, args.seed, args.n_train)
        w0 = auto_rbf_w(X_train)
        ours = GPClassifier(objective="laplace", random_state=args.seed)
        kernel = ConstantKernel(1.0, (1e-6, 1e6)) * SkRBF(1.0 / np.sqrt(w0), (1e-4, 1e7)) + ConstantKernel(1.0, "fixed")
        theirs = GaussianProcessClassifier(kernel=kernel, random_state=args.seed)
        for method, est in (("gpmodels", ours), ("sklearn", theirs)):
            r = _fit(est, X_train, y_train, X_test, y_test)
            out[f"{name}_{method}"] = r
            print(
                f"{name:10} {method:10} {r['wall_seconds']:8.1f} {r['cpu_seconds']:8.1f} {100 * r['error']:6.2f}% "
                f"{r['log_loss']:9.4f}",
                flush=True,
            )
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
