"""svmlight parsing: scikit-learn's compiled ``load_svmlight_file`` (with our checks after it) against
our line parser, on news20 written as svmlight text (1-based indices, as libsvm writes it).

Both engines of :func:`gpmodels.data.svmlight.parse_svmlight` are timed --repeats times, alternately
(the machine may be shared), and the medians reported; the matrices (after the index-base rule of
:func:`gpmodels.data.svmlight.svmlight_matrix`) and labels must be identical bit for bit, or the
script exits 1 — the reason to keep scikit-learn's parser as the default when it is importable.

Usage: python bench/svmlight_parser.py [--repeats 3] [--subset small]
Needs scikit-learn and ../shared/data.  Prints a table and a final JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from smoke import SMOKE_HELP, skip_without_data  # noqa: E402

from gpmodels.data.datasets import load_dataset
from gpmodels.data.svmlight import parse_svmlight, svmlight_matrix


def write_svmlight(path: Path, X, y) -> None:
    """1-based svmlight text with repr-exact values (our own writer: no scikit-learn on this side)."""
    X = X.tocsr()
    with open(path, "w") as fh:
        for i in range(X.shape[0]):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            items = " ".join(f"{j + 1}:{v!r}" for j, v in zip(X.indices[lo:hi].tolist(), X.data[lo:hi].tolist()))
            fh.write(f"{int(y[i])} {items}\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--subset", default=None, choices=(None, "small"))
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = ap.parse_args(argv)
    if args.smoke:
        if skip_without_data("svmlight_parser", "news20"):
            return
        vars(args).update(subset="small", repeats=1)
    ds = load_dataset("news20", subset=args.subset)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "news20_train.svm"
        write_svmlight(path, ds.X_train, ds.y_train)
        size_mb = path.stat().st_size / 2**20
        times = {"sklearn": [], "python": []}
        results = {}
        for _ in range(args.repeats):
            for engine in times:
                t = time.perf_counter()
                raw = parse_svmlight(path, engine=engine)
                X, y = svmlight_matrix(raw, zero_based=False)
                times[engine].append(time.perf_counter() - t)
                results[engine] = (X, y)
    (Xs, ys), (Xp, yp) = results["sklearn"], results["python"]
    identical = (
        Xs.shape == Xp.shape
        and np.array_equal(Xs.indptr, Xp.indptr)
        and np.array_equal(Xs.indices, Xp.indices)
        and np.array_equal(Xs.data, Xp.data)
        and ys.dtype == yp.dtype
        and np.array_equal(ys, yp)
    )
    med = {k: statistics.median(v) for k, v in times.items()}
    print(
        f"news20{'-' + args.subset if args.subset else ''} train as svmlight: {Xp.shape[0]} rows, {Xp.shape[1]} "
        f"features, {Xp.nnz} non-zeros, {size_mb:.1f} MB"
    )
    print(f"{'engine':<10}{'median s':>10}")
    for k, v in med.items():
        print(f"{k:<10}{v:>10.3f}")
    print(f"speed-up {med['python'] / med['sklearn']:.2f}x; identical: {identical}")
    print(
        json.dumps(
            {
                "rows": Xp.shape[0],
                "nnz": int(Xp.nnz),
                "seconds": med,
                "speedup": med["python"] / med["sklearn"],
                "identical": bool(identical),
            }
        )
    )
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
