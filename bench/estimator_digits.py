"""Default ``GPClassifier().fit`` against scikit-learn's default ``GaussianProcessClassifier`` on digits-500.

Both estimators at their defaults, in one run, on the same data: scikit-learn's bundled digits (1797
images, 8 x 8 pixels valued 0..16, 10 classes, no scaling), a seeded stratified sample of 500
training points (``--seed``, default 0) and the other 1297 points as the test set.

- gpmodels: ``GPClassifier(random_state=seed)``: independent GPs per class (separate RBF kernels, w
  from 1 / Σ_j Var[x_j], variance 1, intercept variance 1), hyperparameters learned by the 5-fold
  CV criterion Ψ (Seeger 2008, Sec. 4), softmax likelihood, α̂ by Newton–CG.
- scikit-learn: ``GaussianProcessClassifier(random_state=seed)``: one-vs-rest binary Laplace GPs with
  1.0 * RBF(1.0), each maximising its Laplace-approximate marginal likelihood by L-BFGS-B.

Timed: ``fit`` (learning and the final fit).  Scored on the test points: error, log loss and the
multi-class Brier score (1/m) Σ_j ||p_j - e_{y_j}||² (``gpmodels.scoring``).  Prints one JSON line.

Usage: python bench/estimator_digits.py [--seed S] [--n-train N]
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

from gpmodels.estimators import GPClassifier
from gpmodels.scoring.calibration import brier_score
from gpmodels.scoring.metrics import error, log_loss


def _scores(est, X_test, y_test, seconds: float) -> dict:
    P = est.predict_proba(X_test)
    codes = np.searchsorted(est.classes_, y_test)
    return {"seconds": round(seconds, 3), "error": error(P, codes), "log_loss": log_loss(P, codes),
            "brier": brier_score(P, codes)}


def _timed_fit(est, X, y) -> float:
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's L-BFGS-B may stop at its iteration limit
        est.fit(X, y)
    return time.perf_counter() - t


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-train", type=int, default=500)
    args = parser.parse_args(argv)
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=args.n_train, random_state=args.seed,
                                                        stratify=y)
    ours = GPClassifier(random_state=args.seed)
    peer = GaussianProcessClassifier(random_state=args.seed)
    result = {"benchmark": "estimator_digits", "n_train": int(y_train.size), "n_test": int(y_test.size),
              "seed": args.seed, "load_before": round(os.getloadavg()[0], 2),
              "gpmodels": _scores(ours, X_test, y_test, _timed_fit(ours, X_train, y_train)),
              "sklearn": _scores(peer, X_test, y_test, _timed_fit(peer, X_train, y_train)),
              "load_after": round(os.getloadavg()[0], 2)}
    result["gpmodels_better_on_all"] = all(result["gpmodels"][k] < result["sklearn"][k]
                                           for k in ("error", "log_loss", "brier"))
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
