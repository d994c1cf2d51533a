"""Scale bench: MAP fits (Softmax, Newton–CG, Seeger 2008 Alg. 1) as n grows, per kernel representation.

Synthetic rows (``data = synthetic``): RBF kernel v exp(-(w/2)||x - x'||^2) tied over C = 10 classes
(one n x n matrix), v = 5, intercept σ² = 1, w = 1 / Σ_j Var[x_j] (= 1/25).  Generator, seeded:
class centres μ_c ~ N(0, 0.5^2 I_20) (seed 0), labels y_i = i mod 10, x_i = μ_{y_i} + N(0, I_20)
(seed 1 + n for the training set, seed 2 for 5000 test points): the classes overlap, so the test
error lies between 0 and chance (0.9).  Default rows: n = 10 000, 20 000, 40 000, 60 000 with
``stored-float32`` and n = 200 000 with ``lowrank`` (rank 200, incomplete Cholesky, Sec. 7.4.3).

Real-data rows: ``news20`` (full 11 314 / 7 532 split, specs/news20-flat.yaml without ``subset``:
linear kernel on unit-norm counts, ``features``) and ``imclef07a`` (specs/imclef07a-hier.yaml as it
stands: ANOVA class-tree prior, RBF, 8 subtree kernels, 2000 training points, ``auto``).

Every row runs in a fresh subprocess, so its peak resident memory (ru_maxrss of that process) is its
own.  Per row: fit seconds (kernel build + Newton–CG), MVMs of the fit, seconds per MVM (median of
3 MVMs with (n, C) right-hand sides timed after the fit), peak RSS, test error.  ``engine`` is
``local`` (the in-process engine) for these rows; ``--dask-n`` (default 20 000, 0: none) adds a row
run by bench/dask_overhead.py (its own generator; Dask on a 2-worker LocalCluster against the
in-process StoredGram in the same run), which gives ``dask_mvm_overhead`` and ``dask_fit_rel_diff``.

Usage: python bench/scale.py [--n 10000 20000 ...] [--representations stored-float32 lowrank ...]
       [--real news20 imclef07a | --real none] [--memory-gb G] [--dask-n N] [--cores N]
Prints a table and a final JSON line.

``--cores N`` pins this process to N of its usable cores before any row starts (``bench/pin_cores.py``);
the rows' processes inherit the pinning, and each row runs inside an auto engine
(:mod:`gpmodels.engine.auto`), which limits the BLAS (and so the threaded float32 products) to the
cores of the mask: ``--cores 2`` and ``--cores 16`` on one machine compare 2 and 16 cores.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pin_cores import pin_from_argv  # noqa: E402

if __name__ == "__main__":
    pin_from_argv()  # --cores N: before numpy starts the BLAS threads and before any row process starts

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import attrs  # noqa: E402
import numpy as np  # noqa: E402
from smoke import SMOKE_HELP  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
C, D, SPREAD, N_TEST = 10, 20, 0.5, 5000
DEFAULT_N = (10_000, 20_000, 40_000, 60_000, 200_000)
#: representation names of --representations -> RepresentationConfig keywords
REPRESENTATIONS = {
    "auto": {"kind": "auto"},
    "stored-float64": {"kind": "stored", "dtype": "float64"},
    "stored-float32": {"kind": "stored", "dtype": "float32"},
    "blocked": {"kind": "blocked"},
    "lowrank": {"kind": "lowrank", "rank": 200, "tol": 0.0},
    "features": {"kind": "features"},
}
#: Newton–CG settings of every row: k1, k2, per-point RMS gradient 1e-4, low-rank deflation preconditioner
#: (its randomised eigensolver MVMs are in fit_seconds but not in mvms; at n = 3000 it halves the MVMs)
NEWTON = {"max_iter": 20, "cg_max_iter": 30, "grad_tol": 1e-4, "preconditioner": "lowrank"}


def synthetic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n points of the generator in the module docstring: labels i mod C, x = μ_y + N(0, I)."""
    centres = np.random.default_rng(0).normal(scale=SPREAD, size=(C, D))
    y = np.arange(n) % C
    return centres[y] + np.random.default_rng(seed).normal(size=(n, D)), y


def _synthetic_problem(n: int, cfg):
    from gpmodels import RBF, Softmax
    from gpmodels.priors.independent import IndependentGP

    X, y = synthetic(n, 1 + n)
    Xt, yt = synthetic(N_TEST, 2)
    w = 1.0 / float(np.sum(np.var(X, axis=0)))
    prior = IndependentGP(RBF(w), "tied", 5.0, 1.0, representation=cfg)
    return (lambda: prior.operator(X, C)), Softmax(), X, y, Xt, yt, C


def _spec_problem(name: str, cfg_kw: dict | None):
    from gpmodels.driver.build import build_likelihood, build_operator, resolve_model
    from gpmodels.driver.build_data import build_data, build_tree
    from gpmodels.driver.loader import load_spec

    spec, base = load_spec(ROOT / "specs" / {"news20": "news20-flat.yaml", "imclef07a": "imclef07a-hier.yaml"}[name])
    if name == "news20":
        spec = attrs.evolve(spec, data=attrs.evolve(spec.data, subset=None))
    model = spec.model
    if cfg_kw is not None:
        model = attrs.evolve(model, representation=attrs.evolve(model.representation, **cfg_kw))
    data = build_data(spec, base)
    model = resolve_model(model, data.X_train)
    tree = build_tree(spec, data, base)
    build = lambda: build_operator(model, data.X_train, data.n_classes, base, tree=tree)  # noqa: E731
    return build, build_likelihood(model), data.X_train, data.y_train, data.X_test, data.y_test, data.n_classes


def _peak_gib() -> float:
    """Peak resident memory of this process (ru_maxrss, KiB on Linux) in GiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run_row(row: dict) -> dict:
    """One row in this process: build, fit, time MVMs, predict; peak RSS of this process."""
    from gpmodels.engine.auto import AutoEngine
    from gpmodels.kernels.representations import RepresentationConfig

    kw = dict(REPRESENTATIONS[row["representation"]])
    if row.get("memory_gb") and kw["kind"] == "auto":
        kw["memory_gb"] = row["memory_gb"]
    if row["data"] == "synthetic":
        build, lik, X, y, Xt, yt, nc = _synthetic_problem(row["n"], RepresentationConfig(**kw))
    else:
        build, lik, X, y, Xt, yt, nc = _spec_problem(row["data"], kw)
    with AutoEngine() as engine:  # the BLAS (and the float32 products' threads) limited to the usable cores
        return _fit_row(row, build, lik, X, y, Xt, yt, nc, engine.cores)


def _fit_row(row: dict, build, lik, X, y, Xt, yt, nc: int, cores: int) -> dict:
    from gpmodels import metrics as M
    from gpmodels.driver.build import representation_choices
    from gpmodels.inference.map.newton_cg import NewtonOptions, newton_cg
    from gpmodels.validation import labels_to_targets

    t0 = time.perf_counter()
    op = build()
    build_s = time.perf_counter() - t0
    print(f"PROGRESS build {build_s:.1f} s, peak RSS {_peak_gib():.2f} GiB", file=sys.stderr, flush=True)

    def progress(step):  # a row that times out still reports how far it came
        print(
            f"PROGRESS Newton iteration {step.iteration}: {step.mvm_count} MVMs, {time.perf_counter() - t0:.1f} s, "
            f"grad RMS {step.grad_rms:.3g}, peak RSS {_peak_gib():.2f} GiB",
            file=sys.stderr,
            flush=True,
        )

    res = newton_cg(op, lik, labels_to_targets(y, nc), NewtonOptions(**NEWTON), on_iteration=progress)
    fit_s = time.perf_counter() - t0
    V = np.random.default_rng(0).normal(size=(X.shape[0], nc))
    times = []
    for _ in range(3):
        t = time.perf_counter()
        op.mvm(V)
        times.append(time.perf_counter() - t)
    err = M.error(lik.predict(op.cross_test(Xt).mvm(res.alpha)), yt)
    labels = sorted({c["label"] for c in representation_choices(op)}) or [row["representation"]]
    d = res.diagnostics
    return {
        "n": int(X.shape[0]),
        "data": row["data"],
        "representation": "+".join(labels),
        "engine": "local",
        "cores": cores,
        "fit_seconds": round(fit_s, 2),
        "mvms": int(d.mvm_count),
        "seconds_per_mvm": float(np.median(times)),
        "peak_rss_gib": _peak_gib(),
        "test_error": float(err),
        "_build_seconds": round(build_s, 2),
        "_newton_iterations": int(d.iterations),
        "_converged": bool(d.converged),
        "_phi": float(res.phi),
    }


def _in_subprocess(row: dict, timeout: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--row", json.dumps(row)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        last = [ln[9:] for ln in err.splitlines() if ln.startswith("PROGRESS ")][-2:]
        return row | {"engine": "local", "error": f"timed out after {timeout:.0f} s ({'; '.join(last)})"}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("ROW ")]
    if out.returncode != 0 or not lines:
        tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or [f"exit {out.returncode}"]
        return row | {"engine": "local", "error": tail[0]}
    return json.loads(lines[-1][4:])


def _rows(a) -> list[dict]:
    rows = []
    for n in a.n:
        for r in a.representations or (["lowrank"] if n > 60_000 else ["stored-float32"]):
            rows.append({"n": n, "data": "synthetic", "representation": r, "memory_gb": a.memory_gb})
    for name in a.real:
        rep = "features" if name == "news20" else "auto"
        rows.append({"n": None, "data": name, "representation": rep, "memory_gb": a.memory_gb})
    return rows


def _print_row(r: dict) -> None:
    if "error" in r:
        print(f"{r['data']:>10} {str(r['n']):>7} {r['representation']:>15}  FAILED: {r['error']}", flush=True)
        return
    print(
        f"{r['data']:>10} {r['n']:>7} {r['representation']:>15} {r['engine']:>6} {r['fit_seconds']:>8.1f} "
        f"{r['_build_seconds']:>7.1f} {r['mvms']:>5} {r['seconds_per_mvm']:>8.4f} {r['peak_rss_gib']:>6.2f} "
        f"{100 * r['test_error']:>6.2f} {r['_newton_iterations']:>3} {'yes' if r['_converged'] else 'no':>4}",
        flush=True,
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, nargs="*", default=list(DEFAULT_N), help="synthetic training sizes")
    p.add_argument(
        "--representations",
        nargs="*",
        choices=sorted(REPRESENTATIONS),
        default=None,
        help="representations of the synthetic rows (default: stored-float32; lowrank above 60 000)",
    )
    p.add_argument("--real", nargs="*", default=["news20", "imclef07a"], choices=["news20", "imclef07a", "none"])
    p.add_argument("--memory-gb", type=float, default=None, help="budget of `auto` rows (default: the machine's)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per row")
    p.add_argument(
        "--dask-n",
        type=int,
        default=20_000,
        help="n of the Dask row (bench/dask_overhead.py in a subprocess; 0: no Dask row)",
    )
    p.add_argument("--cores", type=int, default=None, help="pin to N of the usable cores first (default: all)")
    p.add_argument("--row", help=argparse.SUPPRESS)
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = p.parse_args(argv)
    if a.smoke:
        vars(a).update(n=[400], real=[], dask_n=0, timeout=120.0)
    if a.row:
        print("ROW " + json.dumps(run_row(json.loads(a.row))), flush=True)
        return
    a.real = [r for r in a.real if r != "none"]
    print(
        f"{'data':>10} {'n':>7} {'representation':>15} {'engine':>6} {'fit_s':>8} {'build_s':>7} {'MVMs':>5} "
        f"{'s/MVM':>8} {'RSS GiB':>6} {'err %':>6} {'it':>3} {'conv':>4}",
        flush=True,
    )
    results = []
    for row in _rows(a):
        r = _in_subprocess(row, a.timeout)
        _print_row(r)
        results.append(r)
    keys = (
        "n",
        "data",
        "representation",
        "engine",
        "cores",
        "fit_seconds",
        "mvms",
        "seconds_per_mvm",
        "peak_rss_gib",
        "test_error",
    )
    rows = [{k: r.get(k) for k in keys} | ({"error": r["error"]} if "error" in r else {}) for r in results]
    dask = _dask_row(a.dask_n, a.timeout) if a.dask_n > 0 else {}
    if dask:
        rows.append({k: dask.get(k) for k in keys} | ({"error": dask["error"]} if "error" in dask else {}))
    print(
        json.dumps(
            {
                "bench": "scale",
                "cores": len(os.sched_getaffinity(0)),
                "rows": rows,
                "dask_mvm_overhead": dask.get("dask_mvm_overhead"),
                "dask_fit_rel_diff": dask.get("dask_fit_rel_diff"),
            }
        )
    )


def _dask_row(n: int, timeout: float) -> dict:
    """The Dask row: ``bench/dask_overhead.py --n n`` in a subprocess (its own generator, tied RBF,
    C = 10, d = 20; 2-worker LocalCluster against the in-process StoredGram in the same run), read
    from its final JSON line.  Peak RSS is not given: the matrix lives in the worker processes."""
    cmd = [sys.executable, str(ROOT / "bench" / "dask_overhead.py"), "--n", str(n)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        row = {
            "n": n,
            "data": "synthetic-dask",
            "representation": "dask",
            "engine": "dask",
            "error": f"dask_overhead.py gave no result: {type(exc).__name__}",
        }
        print(f"{'synthetic-dask':>10} {n:>7} {'dask':>15} {'dask':>6}  {row['error']}", flush=True)
        return row
    row = {
        "n": n,
        "data": "synthetic-dask",
        "representation": "dask",
        "engine": "dask",
        "fit_seconds": out.get("fit_seconds_dask"),
        "mvms": out.get("mvms_dask"),
        "seconds_per_mvm": out["seconds_per_mvm_dask"],
        "peak_rss_gib": None,
        "test_error": out.get("test_error"),
        "dask_mvm_overhead": out["dask_mvm_overhead"],
        "dask_fit_rel_diff": out.get("dask_fit_rel_diff"),
    }
    print(
        f"{'synthetic-dask':>10} {n:>7} {'dask':>15} {'dask':>6} fit {row['fit_seconds'] or float('nan'):.1f} s, "
        f"{row['seconds_per_mvm']:.4f} s/MVM, overhead {row['dask_mvm_overhead']:.3f} vs in-process, "
        f"Φ rel. diff {row['dask_fit_rel_diff'] or float('nan'):.2e}",
        flush=True,
    )
    return row


if __name__ == "__main__":
    main()
