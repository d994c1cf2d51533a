"""``cross_val_score(GPClassifier(), X, y, cv=5, n_jobs=2)`` against ``n_jobs=1``, side by side (issue 41).

Under joblib's parallelism the estimator's own engine takes what joblib leaves it
(:mod:`gpmodels.engine.outer`: in a loky worker the BLAS limit joblib set there, cpu_count // n_jobs), so
that the outer workers and the estimator's do not oversubscribe the cores; the goal is n_jobs=2 no slower
than n_jobs=1.  Each data set is scored both ways in one run, on the same folds and seeds (the scores
must agree), the two orders alternated over ``--repeats`` rounds, the fastest round of each kept.

Data: scikit-learn's bundled wine (178 points, 13 features, 3 classes) and digits-500 (a seeded
stratified sample of 500 of the 1797 digits, 64 pixels divided by 16, 10 classes).  The estimator:
``make_pipeline(StandardScaler(), GPClassifier(random_state=0))`` for wine, ``GPClassifier(random_state=0)``
for digits (its defaults: independent RBF GPs, w = 1 / Σ_j Var[x_j], hyperparameters by the 5-fold CV
criterion Ψ); ``cross_val_score`` with 5 stratified folds.  Also reported: the engine cores an estimator
gets inside a joblib worker of ``n_jobs=2`` (:func:`gpmodels.engine.outer.engine_cores`).

Times are wall-clock seconds on whatever machine runs it: the 1-minute load average before and after is
printed with them (a shared machine's figures are noisy; the ratio n_jobs=2 / n_jobs=1 is what counts).

``--smoke``: wine only, 60 points, 3 folds, ``objective='map'``, one round (seconds).

Usage: python bench/joblib_nesting.py [--smoke] [--repeats R] [--datasets wine,digits500]
Prints a table and a final JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.datasets import load_digits, load_wine
from sklearn.model_selection import StratifiedKFold, cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from gpmodels.engine.outer import engine_cores
from gpmodels.errors import ConvergenceWarning
from gpmodels.estimators import GPClassifier


def _data(name: str, smoke: bool):
    if name == "wine":
        X, y = load_wine(return_X_y=True)
        if smoke:
            X, _, y, _ = train_test_split(X, y, train_size=60, stratify=y, random_state=0)
        return X, y
    if name == "digits500":
        X, y = load_digits(return_X_y=True)
        X, _, y, _ = train_test_split(X / 16.0, y, train_size=500, stratify=y, random_state=0)
        return X, y
    raise SystemExit(f"unknown data set {name!r}; known: wine, digits500")


def _estimator(name: str, smoke: bool):
    est = GPClassifier(random_state=0, objective="map" if smoke else "cv")
    return make_pipeline(StandardScaler(), est) if name == "wine" else est


def _timed(name, X, y, n_jobs, smoke) -> tuple[float, np.ndarray]:
    folds = StratifiedKFold(3 if smoke else 5, shuffle=True, random_state=0)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        scores = cross_val_score(_estimator(name, smoke), X, y, cv=folds, n_jobs=n_jobs)
    return time.perf_counter() - t, scores


def _worker_cores(estimator) -> int:
    """The engine cores an estimator gets in a joblib worker (``estimator`` only travels there, so that
    the workers import what the timed runs unpickle before the clock starts)."""
    return engine_cores()


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="wine only, 60 points, 3 folds, objective='map'")
    p.add_argument("--repeats", type=int, default=2, help="rounds (orders alternated); the fastest kept")
    p.add_argument("--datasets", default="wine,digits500")
    args = p.parse_args(argv)
    names = ["wine"] if args.smoke else args.datasets.split(",")
    repeats = 1 if args.smoke else max(1, args.repeats)
    load_before = os.getloadavg()[0]
    probes = [_estimator(name, args.smoke) for name in names for _ in range(2)]
    worker_cores = sorted(set(Parallel(n_jobs=2)(delayed(_worker_cores)(est) for est in probes)))
    rows = {}
    for name in names:
        X, y = _data(name, args.smoke)
        seconds = {1: [], 2: []}
        scores = {}
        for r in range(repeats):
            for n_jobs in (1, 2) if r % 2 == 0 else (2, 1):
                s, sc = _timed(name, X, y, n_jobs, args.smoke)
                seconds[n_jobs].append(s)
                scores[n_jobs] = sc
        best = {k: min(v) for k, v in seconds.items()}
        rows[name] = {
            "n": int(y.size),
            "seconds_n_jobs_1": round(best[1], 2),
            "seconds_n_jobs_2": round(best[2], 2),
            "ratio_2_over_1": round(best[2] / best[1], 3),
            "accuracy": round(float(np.mean(scores[1])), 4),
            "scores_agree": bool(np.allclose(scores[1], scores[2])),
            "all_seconds": {str(k): [round(x, 2) for x in v] for k, v in seconds.items()},
        }
    load_after = os.getloadavg()[0]
    print(f"{'data':<10} {'n':>5} {'n_jobs=1 s':>11} {'n_jobs=2 s':>11} {'ratio':>7} {'accuracy':>9} agree")
    for name, r in rows.items():
        print(
            f"{name:<10} {r['n']:>5} {r['seconds_n_jobs_1']:>11.2f} {r['seconds_n_jobs_2']:>11.2f} "
            f"{r['ratio_2_over_1']:>7.3f} {r['accuracy']:>9.4f} {r['scores_agree']}"
        )
    print(
        f"engine cores inside a joblib worker of n_jobs=2: {worker_cores}; cores here: {len(os.sched_getaffinity(0))}"
    )
    print(f"load average (1 min) before / after: {load_before:.1f} / {load_after:.1f}")
    result = {
        "bench": "joblib_nesting",
        "smoke": args.smoke,
        "cores": len(os.sched_getaffinity(0)),
        "worker_engine_cores": worker_cores,
        "load_before": round(load_before, 1),
        "load_after": round(load_after, 1),
        "datasets": rows,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
