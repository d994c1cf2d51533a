"""A fixed CV workload timed against a yardstick of plain products measured in the same run: Ψ and ∇Ψ of
satimage mc-sep at three fixed points, so that a slower host CV path shows without a whole learning run.

Set-up: specs/satimage-cv.yaml (float32 stored matrices, intercept, k1 = 13, k2 = 25, low-rank
preconditioner of rank 32, k3 = 40), the training set cut to ``--max-train`` points (default 1500; 300
with ``--smoke``), 5-partition 0, mc-sep.  Ψ and ∇Ψ (``cv_criterion``, Seeger 2008 Sec. 4, 5.2) are
evaluated, folds one after the other in this process, at θ0 (the spec's start, cold), θ1 (the class
bandwidths spread over x0.5 ... x2, warm from θ0: six distinct matrices, as after learning) and θ2 (θ1
with every bandwidth x1.25, warm from θ1).  The points are fixed, so the counts (fold MVMs, Newton
iterations) are the same on every machine; a learning run's path of evaluations depends on round-off
(bench/RESULTS.md), which is why this bench does not learn.

Yardstick: the same number of products as the evaluations' fold MVMs, each a float64 GEMM of a
fixed dense fold-sized matrix (4/5 of the points) with C columns, timed before and after the evaluations
(best of three batches each, the mean of both); ``over_yardstick`` = the evaluations' seconds over the
yardstick's: the CV path's cost per product, in units of a plain product on this machine;
``cpu_over_yardstick`` the same by this process's CPU time (all its threads), the steadier figure on a
shared machine, where the wall seconds count the time other processes held the cores.  A rising ratio
is a slower host path (more work per product, or products that stopped reading one triangle of float32).

Prints one row per evaluation and a final JSON line.  About 30 s on 2 idle cores; ``--smoke``: a few
seconds.

Usage: python bench/cv_timing.py [--smoke] [--max-train N] [--blas-threads K]
"""

from __future__ import annotations

import gpmodels  # noqa: F401  (first: its OpenBLAS setting must precede numpy's import)

# isort: split

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cv_bandwidth import SPEC, spread_theta  # noqa: E402
from cv_common import blas_threads, spec_problem  # noqa: E402

from gpmodels.data.splits import kfold_partition  # noqa: E402
from gpmodels.driver.build import build_learn_options, build_likelihood, build_prior  # noqa: E402
from gpmodels.inference.cv.criterion import cv_criterion  # noqa: E402

MAX_TRAIN, SMOKE_TRAIN = 1500, 300
#: products per timed batch of the yardstick
YARD_BATCH = 20


def points(op) -> list[tuple[str, np.ndarray]]:
    """The three fixed points of the module docstring, as (label, θ)."""
    theta1 = spread_theta(op)
    theta2 = theta1.copy()
    names = list(op.param_names)
    w_idx = [i for i, s in enumerate(names) if s.endswith(".w") or s.endswith("log_w")]
    theta2[w_idx] += np.log(1.25)
    return [("theta0 (cold)", np.array(op.params, float)), ("theta1 spread", theta1), ("theta2 shifted", theta2)]


def yardstick_seconds_per_product(n: int, columns: int, rng: np.random.Generator) -> tuple[float, float]:
    """(wall, CPU) seconds of one float64 GEMM of an n x n matrix with ``columns`` columns: the best of
    three batches each."""
    A = rng.standard_normal((n, n))
    A = A + A.T
    B = rng.standard_normal((n, columns))
    A @ B  # first touch
    wall = cpu = np.inf
    for _ in range(3):
        t, c = time.perf_counter(), time.process_time()
        for _ in range(YARD_BATCH):
            A @ B
        wall = min(wall, (time.perf_counter() - t) / YARD_BATCH)
        cpu = min(cpu, (time.process_time() - c) / YARD_BATCH)
    return wall, cpu


def evaluate(op, lik, Y, folds, cv_opts) -> list[dict]:
    """Ψ and ∇Ψ at the fixed points, each warm-started from the one before; a row of figures each."""
    rows, state = [], None
    for label, theta in points(op):
        t, c = time.perf_counter(), time.process_time()
        ev = cv_criterion(op.with_params(theta), lik, Y, folds, cv_opts, state=state)
        seconds, cpu = time.perf_counter() - t, time.process_time() - c
        if not ev.ok:
            raise RuntimeError(f"the evaluation at {label} failed: {ev.message}")
        state = ev.state
        s = ev.summary()
        rows.append(
            {
                "point": label,
                "seconds": seconds,
                "cpu_seconds": cpu,
                "mvms": int(ev.mvm_count),
                "newton_iterations": int(s["newton_iterations"]),
                "grad_trace_seconds": float(ev.grad_trace_seconds),
                "psi": float(ev.psi),
                "gradient_norm": float(np.linalg.norm(ev.gradient)),
            }
        )
    return rows


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--smoke", action="store_true", help=f"{SMOKE_TRAIN} training points: a few seconds")
    p.add_argument("--max-train", type=int, default=None, help=f"training points (default {MAX_TRAIN})")
    p.add_argument("--blas-threads", type=int, default=None, help="limit BLAS threads (threadpoolctl)")
    a = p.parse_args(argv)
    max_train = a.max_train or (SMOKE_TRAIN if a.smoke else MAX_TRAIN)
    spec, base, data, model = spec_problem(SPEC, max_train, sharing="separate")
    lik, opts = build_likelihood(model), build_learn_options(spec.objective)
    C = data.n_classes
    Y = np.eye(C)[data.y_train]
    folds = kfold_partition(data.y_train.size, spec.objective.cv.folds, 0, y=data.y_train)
    op = build_prior(model, data.X_train, base).operator(data.X_train, C)
    rng = np.random.default_rng(0)
    n_fold = data.y_train.size - data.y_train.size // len(folds)
    with blas_threads(a.blas_threads):
        cv_criterion(op, lik, Y, folds, opts.cv, gradient=False)  # warm-up: compiled products, first allocations
        before = yardstick_seconds_per_product(n_fold, C, rng)
        rows = evaluate(op, lik, Y, folds, opts.cv)
        after = yardstick_seconds_per_product(n_fold, C, rng)
        threads = {d["internal_api"]: d["num_threads"] for d in threadpool_info()}
    per_product, per_product_cpu = 0.5 * (before[0] + after[0]), 0.5 * (before[1] + after[1])
    seconds, cpu = sum(r["seconds"] for r in rows), sum(r["cpu_seconds"] for r in rows)
    mvms = sum(r["mvms"] for r in rows)
    print(f"satimage {data.y_train.size} train, mc-sep, 5 folds in this process; BLAS threads {threads}")
    print(f"{'point':16s} {'s':>7s} {'cpu s':>7s} {'MVMs':>5s} {'Newton':>6s} {'trace s':>7s} {'psi':>14s}")
    for r in rows:
        print(
            f"{r['point']:16s} {r['seconds']:7.3f} {r['cpu_seconds']:7.3f} {r['mvms']:5d} {r['newton_iterations']:6d} "
            f"{r['grad_trace_seconds']:7.3f} {r['psi']:14.6f}"
        )
    out = {
        "bench": "cv_timing",
        "smoke": bool(a.smoke),
        "n_train": int(data.y_train.size),
        "evaluations": rows,
        "seconds": seconds,
        "mvms": int(mvms),
        "seconds_per_evaluation": seconds / len(rows),
        "seconds_per_mvm": seconds / max(mvms, 1),
        "grad_trace_share": sum(r["grad_trace_seconds"] for r in rows) / seconds,
        "yardstick_seconds_per_product": per_product,
        "yardstick_cpu_seconds_per_product": per_product_cpu,
        "yardstick_before_after": [before[0], after[0]],
        "over_yardstick": seconds / (mvms * per_product),
        "cpu_seconds": cpu,
        "cpu_over_yardstick": cpu / (mvms * max(per_product_cpu, 1e-9)),
        "blas_threads": threads,
    }
    print(
        f"{len(rows)} evaluations {seconds:.2f} s, {mvms} fold MVMs ({1e3 * out['seconds_per_mvm']:.2f} ms each); "
        f"yardstick GEMM {1e3 * per_product:.3f} ms per product (n = {n_fold}, {C} columns): "
        f"{out['over_yardstick']:.2f} x the yardstick ({out['cpu_over_yardstick']:.2f} x by CPU time)"
    )
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
