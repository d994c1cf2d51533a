"""Default ``GPClassifier().fit`` against scikit-learn's default ``GaussianProcessClassifier`` on digits-500.

Both estimators at their defaults, in one run, on the same data: scikit-learn's bundled digits (1797
images, 8 x 8 pixels valued 0..16, 10 classes), a seeded stratified sample of 500 training points
(``--seed``, default 0) and the other 1297 points as the test set; run on the raw pixels and on the
pixels divided by 16 (values in [0, 1]).  On the raw pixels scikit-learn's default kernel 1.0 * RBF(1.0)
starts where every off-diagonal kernel value is about 0 (squared distances of several hundred), its
marginal likelihood is flat there and it stays at uniform probabilities; gpmodels' default w = 1 / Σ_j
Var[x_j] follows the scale of the inputs.

- gpmodels: ``GPClassifier(random_state=seed)``: independent GPs per class (separate RBF kernels, w
  from 1 / Σ_j Var[x_j], variance 1, intercept variance 1), hyperparameters learned by the 5-fold
  CV criterion Ψ (Seeger 2008, Sec. 4), softmax likelihood, α̂ by Newton–CG.
- scikit-learn: ``GaussianProcessClassifier(random_state=seed)``: one-vs-rest binary Laplace GPs with
  1.0 * RBF(1.0), each maximising its Laplace-approximate marginal likelihood by L-BFGS-B.

Timed: ``fit`` (learning and the final fit).  Scored on the test points: error, log loss and the
multi-class Brier score (1/m) Σ_j ||p_j - e_{y_j}||² (``gpmodels.scoring``).  Prints one JSON line per
input scaling, with the 1-minute load average before and after (the machine may be shared).

``--blas-threads K`` limits the BLAS threads of both (threadpoolctl) for the whole run: on a shared
machine whose cores are busy, OpenBLAS threads that wait for each other can make one BLAS call many
times slower than the same call on one thread.

Usage: python bench/estimator_digits.py [--seed S] [--n-train N] [--blas-threads K]
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
from sklearn.model_selection import train_test_split
from smoke import SMOKE_HELP  # noqa: E402
from threadpoolctl import threadpool_limits

from gpmodels.estimators import GPClassifier
from gpmodels.scoring.calibration import brier_score
from gpmodels.scoring.metrics import error, log_loss


def _scores(est, X_test, y_test, seconds: float) -> dict:
    P = est.predict_proba(X_test)
    codes = np.searchsorted(est.classes_, y_test)
    return {
        "seconds": round(seconds, 3),
        "error": error(P, codes),
        "log_loss": log_loss(P, codes),
        "brier": brier_score(P, codes),
    }


def _timed_fit(est, X, y) -> float:
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's L-BFGS-B may stop at its iteration limit
        est.fit(X, y)
    return time.perf_counter() - t


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-train", type=int, default=500)
    parser.add_argument("--blas-threads", type=int, default=None)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(n_train=120)
    with threadpool_limits(args.blas_threads):
        return _run(args)


def _run(args) -> list[dict]:
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, train_size=args.n_train, random_state=args.seed, stratify=y
    )
    results = []
    for scaling, factor in (("raw", 1.0), ("unit", 1.0 / 16.0)):
        ours = GPClassifier(random_state=args.seed)
        peer = GaussianProcessClassifier(random_state=args.seed)
        Xtr, Xte = X_train * factor, X_test * factor
        result = {
            "benchmark": "estimator_digits",
            "inputs": scaling,
            "blas_threads": args.blas_threads,
            "n_train": int(y_train.size),
            "n_test": int(y_test.size),
            "seed": args.seed,
            "load_before": round(os.getloadavg()[0], 2),
            "gpmodels": _scores(ours, Xte, y_test, _timed_fit(ours, Xtr, y_train)),
            "sklearn": _scores(peer, Xte, y_test, _timed_fit(peer, Xtr, y_train)),
            "load_after": round(os.getloadavg()[0], 2),
        }
        result["gpmodels_better_on_all"] = all(
            result["gpmodels"][k] < result["sklearn"][k] for k in ("error", "log_loss", "brier")
        )
        print(json.dumps(result), flush=True)
        results.append(result)
    return results


if __name__ == "__main__":
    main()
