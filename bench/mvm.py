"""MVM efficiency of the block-diagonal operator against bare GEMMs, and the sparse linear kernel
with row- vs column-contiguous right-hand sides (Seeger 2008, App. D.1 and D.3).

Efficiency = (time of the bare numpy GEMMs that the MVM must do, on pre-laid-out contiguous
inputs) / (time of ``BlockDiagonal.mvm``), measured interleaved in one run; each time is the best
of the repeats (CPU-bound code: noise from other processes only ever adds time).
"Bare" means: tied/semi -> one GEMM (n, n) @ (n, C k); separate -> C GEMMs (n, n) @ (n, k), each
with its own stored matrix.  The goal is efficiency >= 0.95: the operator adds only O(nCk) work.

Usage: python bench/mvm.py [--n 4000] [--C 10] [--repeats 15] [--smoke]
Prints a table and a final JSON line (key ``gemm_efficiency``: the smallest over the cases).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import scipy.sparse as sp

from gpmodels.data.datasets import find_data_root
from gpmodels.errors import DataError
from gpmodels.kernels.feature_gram import FeatureGram
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.rbf import RBF
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.operators.blockdiag import BlockDiagonal


def _best_pair(f, g, repeats):
    """Interleaved timings of f and g; returns (best f, best g) and their medians."""
    tf, tg = [], []
    f(), g()  # warm-up
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        tf.append(time.perf_counter() - t)
        t = time.perf_counter()
        g()
        tg.append(time.perf_counter() - t)
    return min(tf), min(tg), statistics.median(tf), statistics.median(tg)


def block_diagonal_case(X, C, k, sharing, repeats, rng):
    n = X.shape[0]
    if sharing == "separate":
        kernels = [RBF(0.05 * (1 + 0.1 * c)) for c in range(C)]  # distinct: C stored matrices
        op = BlockDiagonal(X, kernels, np.arange(C), np.linspace(1, 2, C), np.arange(C), RepresentationConfig("stored"))
    else:
        op = BlockDiagonal.from_sharing(
            X, RBF(0.05), C, sharing, 1.5 if sharing == "tied" else np.linspace(1, 2, C), RepresentationConfig("stored")
        )
    V = rng.normal(size=(n, C, k))
    mats = [r.M for r in op._rep_list]
    if sharing == "separate":
        blocks = [np.ascontiguousarray(V[:, c, :]) for c in range(C)]

        def bare():
            return [M @ B for M, B in zip(mats, blocks)]
    else:
        B = V.reshape(n, C * k)

        def bare():
            return mats[0] @ B

    t_op, t_bare, med_op, med_bare = _best_pair(lambda: op.mvm(V), bare, repeats)
    return {
        "case": f"stored {sharing}",
        "n": n,
        "C": C,
        "k": k,
        "mvm_s": t_op,
        "gemm_s": t_bare,
        "efficiency": t_bare / t_op,
        "efficiency_of_medians": med_bare / med_op,
    }


def sparse_case(X, m, repeats, rng):
    """X (X^T B) with B row-contiguous (one sparse-times-dense product over all columns: every
    nonzero of X updates a contiguous row of B, App. D.3) against B column-contiguous, where each
    column is a separate pair of sparse products that re-reads X (what column order forces)."""
    rep = FeatureGram(X, Linear())
    XT = rep._X2T
    Bc = np.ascontiguousarray(rng.normal(size=(X.shape[0], m)))
    Bf = np.asfortranarray(Bc)

    def by_columns():
        out = np.empty_like(Bf)
        for j in range(m):
            out[:, j] = X @ (XT @ Bf[:, j])
        return out

    t_row, t_col, _, _ = _best_pair(lambda: rep.mvm(Bc), by_columns, repeats)
    return {
        "case": "sparse linear X (X^T B)",
        "n": X.shape[0],
        "d": X.shape[1],
        "nnz": int(X.nnz),
        "columns": m,
        "row_contiguous_s": t_row,
        "column_contiguous_s": t_col,
        "speedup_row_vs_column": t_col / t_row,
    }


def _sparse_inputs(rng, smoke):
    if smoke:
        return sp.random(300, 3000, density=0.005, format="csr", random_state=0), "synthetic sparse"
    try:
        root = find_data_root()
        X = sp.load_npz(root / "news20" / "X_train.npz").astype(np.float64).tocsr()
        norms = np.sqrt(X.multiply(X).sum(axis=1)).A1
        return sp.diags(1 / np.maximum(norms, 1e-12)) @ X, "news20 train (unit-norm rows)"
    except DataError:
        X = sp.random(4000, 30000, density=0.005, format="csr", random_state=0)
        return X, "synthetic sparse"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=4000)
    p.add_argument("--C", type=int, default=10)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--smoke", "--quick", action="store_true", help="n = 300, 2 repeats, synthetic sparse inputs")
    a = p.parse_args(argv)
    n, repeats = (300, 2) if a.smoke else (a.n, a.repeats)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 20))
    rows = []
    for k in (1, 8):
        for sharing in ("tied", "semi", "separate"):
            rows.append(block_diagonal_case(X, a.C, k, sharing, repeats, rng))
            r = rows[-1]
            print(
                f"{r['case']:<18} n={n} C={a.C} k={k}:  mvm {1e3 * r['mvm_s']:8.2f} ms   bare GEMM "
                f"{1e3 * r['gemm_s']:8.2f} ms   efficiency {r['efficiency']:.3f} "
                f"(of medians {r['efficiency_of_medians']:.3f})",
                flush=True,
            )
    Xs, source = _sparse_inputs(rng, a.smoke)
    sparse_rows = []
    for m in (a.C, a.C * 8):
        s = sparse_case(Xs, m, repeats, rng)
        sparse_rows.append(s)
        print(
            f"{s['case']} on {source}, {s['columns']} columns: row-contiguous {1e3 * s['row_contiguous_s']:.1f} ms, "
            f"column-contiguous {1e3 * s['column_contiguous_s']:.1f} ms, speed-up {s['speedup_row_vs_column']:.2f}x",
            flush=True,
        )
    summary = {
        "bench": "mvm",
        "gemm_efficiency": min(r["efficiency"] for r in rows),
        "gemm_efficiency_by_case": {f"{r['case']} k={r['k']}": round(r["efficiency"], 4) for r in rows},
        "sparse_row_vs_column_speedup": {str(s["columns"]): round(s["speedup_row_vs_column"], 3) for s in sparse_rows},
        "sparse_source": source,
        "n": n,
        "C": a.C,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
