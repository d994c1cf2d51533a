"""The Dask engine's overhead and exactness (issue 13): DaskGram on a 2-worker LocalCluster against the
in-process StoredGram, side by side in one run.

Data: a seeded synthetic set of Gaussian clusters: C = 10 class centres drawn N(0, 0.16 I) in d = 20
dimensions, n training points (default 20 000) and n/10 test points, each its class centre plus
N(0, I) noise (classes drawn uniformly).  Model: independent GPs with one RBF kernel for all classes
(tied sharing: one n x n matrix, one GEMM with C columns per MVM), w = 1/d, v = 10.

Measured:
  * seconds per MVM K V (V of shape (n, C)) in-process (StoredGram, BLAS on every core of this
    machine: OPENBLAS_NUM_THREADS unset or --blas-threads) and through Dask (2 worker processes, 1
    thread each, the matrix held in 2 row blocks on the workers); ratio = dask_mvm_overhead (goal <= 1.3);
  * the MAP fit (Newton–CG, default options) through both: Φ relative difference (goal <= 1e-10),
    whether the test predictions are identical, Newton iterations, MVMs and seconds.

Prints a table and a final JSON line {"bench": "dask_overhead", ..., "dask_mvm_overhead", "dask_fit_rel_diff"}.

Usage: python bench/dask_overhead.py [--n 20000] [--repeats 10] [--no-fit]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from smoke import SMOKE_HELP  # noqa: E402


def synthetic(n: int, n_test: int, C: int = 10, d: int = 20, seed: int = 0):
    r = np.random.default_rng(seed)
    centres = r.normal(scale=0.4, size=(C, d))
    y = r.integers(0, C, size=n + n_test)
    X = centres[y] + r.normal(size=(n + n_test, d))
    return X[:n], y[:n], X[n:], y[n:]


def mvm_seconds(op, V, repeats: int) -> float:
    op.mvm(V)  # warm-up (the first Dask MVM waits for the blocks to be built)
    t = time.perf_counter()
    for _ in range(repeats):
        op.mvm(V)
    return (time.perf_counter() - t) / repeats


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--no-fit", action="store_true", help="MVM timings only")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = p.parse_args()
    if args.smoke:
        vars(args).update(n=400, repeats=2, no_fit=True)

    from gpmodels.engine import EngineConfig, open_engine
    from gpmodels.inference.map.model import fit_map
    from gpmodels.kernels import RBF, RepresentationConfig
    from gpmodels.likelihoods.softmax import Softmax
    from gpmodels.operators.blockdiag import BlockDiagonal
    from gpmodels.validation import labels_to_targets

    C, d = 10, 20
    X, y, Xt, yt = synthetic(args.n, args.n // 10, C, d)
    Y = labels_to_targets(y, C)
    kernel, lik = RBF(w=1.0 / d), Softmax()
    V = np.random.default_rng(1).normal(size=(args.n, C))
    rows, out = (
        [],
        {
            "bench": "dask_overhead",
            "n": args.n,
            "C": C,
            "d": d,
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
            "load_before": os.getloadavg(),
        },
    )

    t = time.perf_counter()
    local = BlockDiagonal.from_sharing(X, kernel, C, "tied", 10.0, RepresentationConfig(kind="stored"))
    build_local = time.perf_counter() - t
    s_local = mvm_seconds(local, V, args.repeats)
    cfg = EngineConfig(type="dask", n_workers=2, threads_per_worker=1, processes=True)
    with open_engine(cfg) as engine:
        t = time.perf_counter()
        rep = engine.representation(RepresentationConfig(kind="stored"))
        dist = BlockDiagonal.from_sharing(X, kernel, C, "tied", 10.0, rep)
        dist.mvm(V[:, :1].repeat(C, axis=1))  # wait for the blocks
        build_dask = time.perf_counter() - t
        s_dask = mvm_seconds(dist, V, args.repeats)
        ref = local.mvm(V)
        mvm_rel = float(np.max(np.abs(dist.mvm(V) - ref)) / np.max(np.abs(ref)))
        rows.append(("in-process StoredGram", build_local, s_local, None, None, None, None))
        rows.append(("Dask 2 workers", build_dask, s_dask, None, None, None, None))
        out.update(
            {
                "seconds_per_mvm_local": s_local,
                "seconds_per_mvm_dask": s_dask,
                "dask_mvm_overhead": s_dask / s_local,
                "mvm_rel_diff": mvm_rel,
                "build_seconds_local": build_local,
                "build_seconds_dask": build_dask,
            }
        )
        if not args.no_fit:
            fits = {}
            for name, op in (("local", local), ("dask", dist)):
                t = time.perf_counter()
                m = fit_map(op, lik, Y)
                fits[name] = (m, time.perf_counter() - t)
            (ma, ta), (mb, tb) = fits["local"], fits["dask"]
            pa, pb = ma.predict(Xt), mb.predict(Xt)
            rel = abs(mb.result.phi - ma.result.phi) / abs(ma.result.phi)
            out.update(
                {
                    "phi_local": ma.result.phi,
                    "phi_dask": mb.result.phi,
                    "dask_fit_rel_diff": rel,
                    "identical_predictions": bool(np.array_equal(pa, pb)),
                    "fit_seconds_local": ta,
                    "fit_seconds_dask": tb,
                    "newton_local": ma.result.diagnostics.iterations,
                    "newton_dask": mb.result.diagnostics.iterations,
                    "mvms_local": ma.result.diagnostics.mvm_count,
                    "mvms_dask": mb.result.diagnostics.mvm_count,
                    "test_error": float(np.mean(pa != yt)),
                }
            )
            rows[0] = rows[0][:3] + (ta, ma.result.diagnostics.mvm_count, ma.result.phi, float(np.mean(pa != yt)))
            rows[1] = rows[1][:3] + (tb, mb.result.diagnostics.mvm_count, mb.result.phi, float(np.mean(pb != yt)))
    out["load_after"] = os.getloadavg()
    print(f"n = {args.n}, C = {C}, d = {d}, RBF tied; load {out['load_before'][0]:.2f} -> {out['load_after'][0]:.2f}")
    print(f"{'engine':24s} {'build s':>8s} {'s/MVM':>8s} {'fit s':>8s} {'MVMs':>6s} {'Φ':>18s} {'test err':>8s}")

    def f(v, fmt):
        return format(v, fmt) if v is not None else "-"

    for name, b, s, ft, mv, phi, err in rows:
        print(
            f"{name:24s} {b:8.2f} {s:8.4f} {f(ft, '8.1f'):>8s} {f(mv, 'd'):>6s} {f(phi, '.12g'):>18s} "
            f"{f(err, '.4f'):>8s}"
        )
    print(
        f"dask_mvm_overhead = {out['dask_mvm_overhead']:.3f}, MVM rel. diff = {out['mvm_rel_diff']:.2e}"
        + (
            f", dask_fit_rel_diff = {out['dask_fit_rel_diff']:.2e}, identical predictions: "
            f"{out['identical_predictions']}"
            if "dask_fit_rel_diff" in out
            else ""
        )
    )
    print(json.dumps(out))


if __name__ == "__main__":  # the worker processes of the LocalCluster re-import this file
    main()
