"""Bandwidth accounting of Ψ evaluations (issue 12, goal 5): how close the kernel MVMs come to the
machine's memory bandwidth.

Set-up: full satimage (specs/satimage-cv.yaml), 5-partition 0, mc-sep (``--sharing``), stored
kernel matrices.  Ψ and ∇Ψ are evaluated (``cv_criterion``, Seeger 2008 Sec. 4, 5.2) at the start
point θ0 (all class kernels equal: one merged GEMM per MVM) and then, warm-started, at θ1 with the
class bandwidths w_c spread over ×0.5 … ×2 (six distinct matrices, one column each, as after
learning).  Per evaluation it prints the MVM count (``CVEvaluation.mvm_count``), the kernel bytes
read per MVM, the time in those reads and the achieved bandwidth; beside them a plain memory
bandwidth measured in the same run (before and after the evaluations): a GEMV over a float64
matrix far larger than the caches (read bandwidth) and a large numpy copy (read + write).

Model of the bytes read (per representation call, counted where it happens by wrapping the
representation classes' ``mvm`` / ``rmvm`` for the duration of the run):
* a stored matrix M (``StoredGram``, the restricted M_J) times B with ≥ 2 columns, float64 or
  float32 without the compiled product: GEMM (or the tiled product) streams M once, ``nbytes``;
* a stored M times one column (BLAS symv), or a float32 M times at most
  ``compiled_symv.MAX_COLUMNS`` columns (the compiled product, Numba): one triangle,
  ``nbytes × (n + 1) / (2n)``;
* a stored cross block M_{I,J} (``MatrixCross``) times B, or its transpose: ``nbytes``.
Vectors (n × columns) are not counted: they are < 0.2 % of M at these sizes.  Computed blocks
(``GramCross``, used for test points only) are not reads and are reported apart.
``efficiency`` = achieved / GEMV bandwidth (goal ≥ 0.7 for stored kernels), by wall time and,
on a shared machine the steadier figure, by this thread's CPU time (``thread_time``: time the
process was not running counts in neither; meaningful with ``--blas-threads 1``, where BLAS runs
in the calling thread).  The folds run one after the other (``cv_criterion``'s serial engine, where a
learning run would size workers from the cores): the reference is one stream, and two folds reading
at once would each see half the machine's bandwidth, so per-call times would measure the sharing,
not the product.  The time counted is the representation call's wall time (BLAS plus the call's own
copies); the operator-level MVM time (with the variance scaling and the intercept's rank-one term) is printed beside it.

Usage: python bench/cv_bandwidth.py [--max-train N] [--sharing separate|semi|tied] [--blas-threads K]
Prints a table and a final JSON line.  About 2–3 minutes on 2 idle cores.
"""

from __future__ import annotations

import gpmodels  # noqa: F401  (first: its OpenBLAS setting must precede numpy's import)

# isort: split

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cv_common import Timed, blas_threads, new_clock, spec_problem  # noqa: E402
from smoke import SMOKE_HELP, skip_without_data  # noqa: E402

from gpmodels.data.splits import kfold_partition  # noqa: E402
from gpmodels.driver.build import build_learn_options, build_likelihood, build_prior  # noqa: E402
from gpmodels.inference.cv.criterion import cv_criterion  # noqa: E402
from gpmodels.kernels import compiled_symv  # noqa: E402
from gpmodels.kernels.blocked_gram import GramCross  # noqa: E402
from gpmodels.kernels.stored_gram import MatrixCross, StoredGram  # noqa: E402

SPEC = Path(__file__).resolve().parent.parent / "specs" / "satimage-cv.yaml"


def new_meter() -> dict:
    return {"bytes": 0.0, "seconds": 0.0, "cpu_seconds": 0.0, "calls": 0, "computed_seconds": 0.0}


def _read_bytes(rep, B, transpose=False) -> float:
    """Kernel bytes one call reads (the model of the module docstring)."""
    M = rep.M
    if isinstance(rep, StoredGram) and not transpose and rep.reads_one_triangle(B.shape[1]):
        n, passes = M.shape[0], -(-B.shape[1] // compiled_symv.MAX_COLUMNS)  # the float32 one: per 100 columns
        return passes * M.nbytes * (n + 1) / (2 * n)  # symv / compiled float32 product: one triangle a pass
    return float(M.nbytes)


@contextlib.contextmanager
def metered(meter: dict):
    """Count bytes and time of stored-kernel reads while inside (wraps the representation classes)."""
    saved = []

    def wrap(cls, name, transpose, stored):
        orig = getattr(cls, name)

        def call(self, B):
            t, c = time.perf_counter(), time.thread_time()
            out = orig(self, B)
            dt = time.perf_counter() - t
            if stored:
                meter["bytes"] += _read_bytes(self, B, transpose)
                meter["seconds"] += dt
                meter["cpu_seconds"] += time.thread_time() - c
                meter["calls"] += 1
            else:
                meter["computed_seconds"] += dt
            return out

        saved.append((cls, name, orig))
        setattr(cls, name, call)

    wrap(StoredGram, "mvm", False, True)
    wrap(MatrixCross, "mvm", False, True)
    wrap(MatrixCross, "rmvm", True, True)
    wrap(GramCross, "mvm", False, False)
    try:
        yield meter
    finally:
        for cls, name, orig in reversed(saved):
            setattr(cls, name, orig)


def plain_bandwidth(mib: int = 512, repeats: int = 5) -> dict:
    """Best-of-``repeats`` memory bandwidth (GB/s): GEMV over a float64 matrix of ``mib`` MiB (read;
    by wall time and by this thread's CPU time), and a numpy copy of ``mib`` MiB (read + write counted)."""
    n = int(np.sqrt(mib * 2**20 / 8))
    A = np.random.default_rng(0).standard_normal((n, n))
    x = np.ones(n)
    gemv, gemv_cpu, copy = [], [], []
    dst = np.empty_like(A)
    for _ in range(repeats):
        t, c = time.perf_counter(), time.thread_time()
        A @ x
        gemv.append(A.nbytes / (time.perf_counter() - t) / 1e9)
        gemv_cpu.append(A.nbytes / max(time.thread_time() - c, 1e-9) / 1e9)
        t = time.perf_counter()
        np.copyto(dst, A)
        copy.append(2 * A.nbytes / (time.perf_counter() - t) / 1e9)
    return {
        "gemv_GBps": max(gemv),
        "gemv_cpu_GBps": max(gemv_cpu),
        "copy_GBps": max(copy),
        "matrix_MiB": A.nbytes / 2**20,
    }


def spread_theta(op) -> np.ndarray:
    """θ0 with the class bandwidths log w_c moved by log(0.5 … 2) (distinct kernels, as after learning)."""
    theta, names = np.array(op.params, dtype=float), list(op.param_names)
    w_idx = [i for i, s in enumerate(names) if s.endswith(".w") or s.endswith("log_w")]
    theta[w_idx] += np.log(np.geomspace(0.5, 2.0, len(w_idx))) if len(w_idx) > 1 else 0.0
    return theta


def _distinct_kernels(op):
    """Distinct stored kernel matrices (GEMM groups) of a block-diagonal operator, maybe in an Intercept."""
    inner = getattr(op, "inner", op)
    return len(inner.rep_groups) if hasattr(inner, "rep_groups") else None


def evaluate(op, lik, Y, folds, cv_opts, theta, state, label, ref):
    """One Ψ evaluation at θ with its bandwidth figures."""
    meter, clock = new_meter(), new_clock()
    with metered(meter):
        op_t = Timed(op.with_params(theta), clock)
        ev = cv_criterion(op_t, lik, Y, folds, cv_opts, state=state)
    s = ev.summary()
    achieved = meter["bytes"] / max(meter["seconds"], 1e-12) / 1e9
    row = {
        "label": label,
        "psi": float(ev.psi),
        "ok": bool(ev.ok),
        "seconds": float(ev.seconds),
        "mvms": int(ev.mvm_count),
        "kernel_reads": meter["calls"],
        "kernel_MB_per_mvm": meter["bytes"] / max(ev.mvm_count, 1) / 1e6,
        "kernel_GB_read": meter["bytes"] / 1e9,
        "read_seconds": meter["seconds"],
        "operator_mvm_seconds": clock["mvm"],
        "grad_trace_seconds": float(ev.grad_trace_seconds),
        "restrict_seconds": s["restrict_seconds"],
        "achieved_GBps": achieved,
        "operator_level_GBps": meter["bytes"] / max(clock["mvm"], 1e-12) / 1e9,
        "read_cpu_seconds": meter["cpu_seconds"],
        "achieved_cpu_GBps": meter["bytes"] / max(meter["cpu_seconds"], 1e-12) / 1e9,
        "efficiency": achieved / ref,
        "distinct_kernels": _distinct_kernels(op_t._op),
    }
    return ev, row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max-train", type=int, default=None, help="subsample the training set (smoke runs)")
    p.add_argument("--sharing", default="separate", choices=["separate", "semi", "tied"])
    p.add_argument("--blas-threads", type=int, default=None, help="limit BLAS threads (threadpoolctl)")
    p.add_argument("--plain-mib", type=int, default=512, help="size of the plain-bandwidth matrix")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = p.parse_args(argv)
    if a.smoke:
        if skip_without_data("cv_bandwidth", "satimage"):
            return
        vars(a).update(max_train=200, plain_mib=8)
    spec, base, data, model = spec_problem(SPEC, a.max_train, sharing=a.sharing)
    lik, opts = build_likelihood(model), build_learn_options(spec.objective)
    C = data.n_classes
    Y = np.eye(C)[data.y_train]
    folds = kfold_partition(data.y_train.size, spec.objective.cv.folds, 0, y=data.y_train)
    with blas_threads(a.blas_threads):
        before = plain_bandwidth(a.plain_mib)
        op = build_prior(model, data.X_train, base).operator(data.X_train, C)
        print(
            f"satimage {data.y_train.size} train, {a.sharing}; plain bandwidth before: GEMV "
            f"{before['gemv_GBps']:.2f} GB/s, copy {before['copy_GBps']:.2f} GB/s ({before['matrix_MiB']:.0f} MiB)",
            flush=True,
        )
        ev0, r0 = evaluate(
            op, lik, Y, folds, opts.cv, np.array(op.params, float), None, "theta0 (cold)", before["gemv_GBps"]
        )
        ev1, r1 = evaluate(
            op, lik, Y, folds, opts.cv, spread_theta(op), ev0.state, "theta1 spread (warm)", before["gemv_GBps"]
        )
        after = plain_bandwidth(a.plain_mib)
    ref = 0.5 * (before["gemv_GBps"] + after["gemv_GBps"])
    ref_cpu = 0.5 * (before["gemv_cpu_GBps"] + after["gemv_cpu_GBps"])
    print(
        f"plain bandwidth after: GEMV {after['gemv_GBps']:.2f} GB/s, copy {after['copy_GBps']:.2f} GB/s; "
        f"reference (mean GEMV) {ref:.2f} GB/s; by CPU time: GEMV {before['gemv_cpu_GBps']:.2f} / "
        f"{after['gemv_cpu_GBps']:.2f} GB/s, reference {ref_cpu:.2f} GB/s"
    )
    print(
        f"{'evaluation':22s} {'s':>6s} {'MVMs':>5s} {'MB/MVM':>7s} {'GB read':>8s} {'read s':>7s} {'op MVM s':>8s} "
        f"{'GB/s':>6s} {'eff.':>5s} {'cpu s':>6s} {'GB/s':>6s} {'eff.':>5s} {'kernels':>7s}"
    )
    for r in (r0, r1):
        r["efficiency"] = r["achieved_GBps"] / ref
        r["efficiency_cpu"] = r["achieved_cpu_GBps"] / ref_cpu
        print(
            f"{r['label']:22s} {r['seconds']:6.1f} {r['mvms']:5d} {r['kernel_MB_per_mvm']:7.1f} "
            f"{r['kernel_GB_read']:8.2f} {r['read_seconds']:7.2f} {r['operator_mvm_seconds']:8.2f} "
            f"{r['achieved_GBps']:6.2f} {r['efficiency']:5.2f} {r['read_cpu_seconds']:6.1f} "
            f"{r['achieved_cpu_GBps']:6.2f} {r['efficiency_cpu']:5.2f} {r['distinct_kernels']!s:>7s}"
        )
    print(
        json.dumps(
            {
                "bench": "cv_bandwidth",
                "n_train": int(data.y_train.size),
                "sharing": a.sharing,
                "plain_before": before,
                "plain_after": after,
                "reference_GBps": ref,
                "reference_cpu_GBps": ref_cpu,
                "evaluations": [r0, r1],
            }
        )
    )


if __name__ == "__main__":
    main()
