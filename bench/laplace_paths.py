"""Laplace MLM: the exact (Cholesky) path against the MVM-only path, side by side as n grows.

Binary logistic on satimage (class "4", damp grey soil, vs the rest; standardised inputs) at
n = 500, 1000, 2000, 4000 training points, and the 6-class softmax (R&W Alg. 3.3) at n = 500,
1000, 2000, with an RBF kernel v exp(-(w/2)||x - x'||²) (+ σ² intercept) at fixed hyperparameters.
Each row: the time of log q and its gradient by each path (the posterior mode, shared by both
paths, is found once first and reused as a warm start, so the times are those of the paths), and
the MVM path's error against the exact path: |Δ log q| / |log q| and ||Δ∇|| / ||∇||, with
32 Rademacher probes (seed 0) and CG to a relative residual of 1e-8.

Needs ../shared/data.  Usage: python bench/laplace_paths.py [--sizes 500 1000] [--probes 32]
Prints a table and a final JSON line.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from smoke import SMOKE_HELP, skip_without_data  # noqa: E402

from gpmodels.data import load_dataset
from gpmodels.data.scaling import scale_features
from gpmodels.data.splits import subsample
from gpmodels.inference.marginal.laplace import LaplaceOptions, laplace_mlm
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods import Logistic, Softmax
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.intercept import Intercept


def run_row(op, lik, Y, probes):
    t = time.perf_counter()
    mode = laplace_mlm(op, lik, Y, LaplaceOptions(path="exact"), gradient=False).mode
    mode_s = time.perf_counter() - t
    out = {}
    for path in ("exact", "mvm"):
        t = time.perf_counter()
        res = laplace_mlm(op, lik, Y, LaplaceOptions(path=path, n_probes=probes, cg_tol=1e-8), alpha0=mode.alpha)
        out[path] = (res, time.perf_counter() - t)
    ex, mv = out["exact"][0], out["mvm"][0]
    return {
        "mode_seconds": mode_s,
        "exact_seconds": out["exact"][1],
        "mvm_seconds": out["mvm"][1],
        "log_q": ex.log_marginal,
        "rel_err_log_q": abs(mv.log_marginal - ex.log_marginal) / abs(ex.log_marginal),
        "rel_err_logdet": abs(mv.logdet_B - ex.logdet_B) / abs(ex.logdet_B),
        "rel_err_grad": float(np.linalg.norm(mv.gradient - ex.gradient) / np.linalg.norm(ex.gradient)),
        "mvm_count": mv.mvm_count,
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="*", default=[500, 1000, 2000, 4000])
    p.add_argument("--softmax-sizes", type=int, nargs="*", default=[500, 1000, 2000])
    p.add_argument("--probes", type=int, default=32)
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = p.parse_args(argv)
    if a.smoke:
        if skip_without_data("laplace_paths", "satimage"):
            return
        vars(a).update(sizes=[120], softmax_sizes=[80], probes=4)
    d = load_dataset("satimage")
    rows = []
    print(
        f"{'model':<9} {'n':>5} {'exact s':>8} {'mvm s':>8} {'ratio':>6} {'log q':>11} {'rel.err log q':>13} "
        f"{'rel.err log|B|':>14} {'rel.err grad':>12} {'MVMs':>6}"
    )
    for model, sizes in (("logistic", a.sizes), ("softmax", a.softmax_sizes)):
        for n in sizes:
            keep = subsample(d.y_train.size, n, 0, y=d.y_train)
            X, _ = scale_features("standardize", d.X_train[keep])
            y = d.y_train[keep]
            if model == "logistic":
                pos = d.classes.index("4")
                op = Intercept(BlockDiagonal.from_sharing(X, RBF(0.05), 1, "tied", 4.0), 1.0)
                lik, Y = Logistic(), np.where(y == pos, 1.0, -1.0)
            else:
                op = Intercept(BlockDiagonal.from_sharing(X, RBF(0.05), d.n_classes, "tied", 4.0), 1.0)
                lik, Y = Softmax(), np.eye(d.n_classes)[y]
            r = {"model": model, "n": n, **run_row(op, lik, Y, a.probes)}
            rows.append(r)
            print(
                f"{model:<9} {n:>5} {r['exact_seconds']:>8.2f} {r['mvm_seconds']:>8.2f} "
                f"{r['exact_seconds'] / r['mvm_seconds']:>6.2f} {r['log_q']:>11.2f} {r['rel_err_log_q']:>13.2e} "
                f"{r['rel_err_logdet']:>14.2e} {r['rel_err_grad']:>12.2e} {r['mvm_count']:>6}",
                flush=True,
            )
    print(json.dumps({"benchmark": "laplace_paths", "probes": a.probes, "rows": rows}))


if __name__ == "__main__":
    main()
