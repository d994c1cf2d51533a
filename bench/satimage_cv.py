"""The satimage study of Seeger 2008, Sec. 6.2: CV hyperparameter learning for mc-sep, mc-semi,
mc-tied and one-vs-rest, averaged over random 5-partitions of the training set.

Set-up from specs/satimage-cv.yaml: RBF kernels started at v = 10, w = 1 / Σ_j Var[x_j],
σ² = 16 fixed, 5-fold Ψ, k1 = 13, k2 = 25, k3 = 40 while learning, k1 = 30, k2 = 50 for the final
fit.  Partition p uses the stratified 5-partition with seed p; all methods share it.  1rest uses
tied sharing inside each binary model (2 hyperparameters per class, 12 in all, as in the paper).

Paper (10 partitions): test error mc-sep 7.95 %, 1rest 8.00 %, mc-semi 8.10 %, mc-tied 8.35 %.

Per method and partition it prints the test error, the learning time, the number of Ψ evaluations
(and failed ones), the time per evaluation and the share of the learning + final-fit wall time
spent in kernel MVMs (incl. cross blocks), derivative traces (grad_trace), restricting /
cross-block copies and kernel construction; then means over partitions and a final JSON line.

A yardstick measured in the same run, one scikit-learn ``GaussianProcessClassifier(optimizer=None)``
fit on the same training data at the start kernel (bench/sklearn_yardstick.py), gives each row's
``learn_over_sklearn_fixed_fit`` = learning seconds / yardstick seconds (issue 12, goal 2: ≤ 2).

The whole protocol, resumable (issue 12, goal 3):
    python bench/satimage_cv.py --partitions 10 --methods all --out runs/satimage-protocol
stores every finished (method, partition) row as JSON in the folder and checkpoints the CV
learning of the row in progress (bench/cv_protocol.py); the same command again skips finished rows
and resumes the interrupted one; a folder of another configuration (spec, --max-train,
--max-iter) is refused.  The table is computed from all stored rows of the selected methods and
partitions.  A row resumed from its checkpoint has bit-identical hyperparameters and test error (the
test in tests/bench), but its timings count only the resuming process (``resumed_from`` says so).
``--no-yardstick`` skips the scikit-learn fit (rows then have no ratio).

Usage: python bench/satimage_cv.py [--partitions 3] [--first-partition 0] [--methods mc-sep,mc-semi,mc-tied,1rest|all]
       [--max-train N] [--max-iter N] [--blas-threads K] [--cores N] [--out DIR]
The default is 3 partitions, all methods, all 4435 training points, nothing stored.

Parallelism: every row runs on one auto engine (:mod:`gpmodels.engine.auto`), which sizes its
workers and their BLAS threads from the cores this process may use; ``--cores N`` pins the process
to N of them first (``bench/pin_cores.py``), so that ``--cores 2`` and ``--cores 16`` on one 16-core
machine compare 2 and 16 cores in one command.  Each row reports ``cpu_seconds`` (this process and
its finished workers) and ``cpu_over_wall`` (CPU seconds over the wall seconds of learning + final fit:
how many cores were busy on average), and the final JSON line the cores and the engine.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pin_cores import pin_from_argv  # noqa: E402

if __name__ == "__main__":
    pin_from_argv()  # --cores N: before numpy starts the BLAS threads and before any worker is started

import gpmodels  # noqa: E402, F401  (before numpy: its OpenBLAS setting must precede numpy's import)

# isort: split

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import attrs  # noqa: E402
import numpy as np  # noqa: E402
from cv_common import blas_threads, cpu_seconds, learn_and_evaluate  # noqa: E402
from cv_protocol import RowStore, mean_sd_table  # noqa: E402
from sklearn_yardstick import sklearn_fixed_fit_seconds  # noqa: E402
from smoke import SMOKE_HELP, skip_without_data  # noqa: E402

from gpmodels.data.splits import kfold_partition  # noqa: E402
from gpmodels.driver.build import build_learn_options, build_likelihood, build_prior, resolve_kernel  # noqa: E402
from gpmodels.driver.build_data import build_data  # noqa: E402
from gpmodels.driver.loader import load_spec  # noqa: E402
from gpmodels.driver.runners.common import checkpoint_identity  # noqa: E402
from gpmodels.engine.auto import AutoEngine  # noqa: E402
from gpmodels.optimize.checkpoint import digest_array  # noqa: E402

SPEC = Path(__file__).resolve().parent.parent / "specs" / "satimage-cv.yaml"
#: method -> (overrides of the spec's `model` section, one-vs-rest?).  A structured prior (ANOVA,
#: coupling B / factor loadings) is one more entry here, e.g. {"prior": "coupled", ...}.
METHODS = {
    "mc-sep": ({"sharing": "separate"}, False),
    "mc-semi": ({"sharing": "semi"}, False),
    "mc-tied": ({"sharing": "tied"}, False),
    "1rest": ({"sharing": "tied"}, True),
}
PAPER = {"mc-sep": 7.95, "mc-semi": 8.10, "mc-tied": 8.35, "1rest": 8.00}  # Seeger 2008, Sec. 6.2 (%)
YARD_KEY = "learn_over_sklearn_fixed_fit"
MEAN_KEYS = (
    "learning_seconds",
    "cpu_over_wall",
    "seconds_per_evaluation",
    "evaluations",
    "failed_evaluations",
    "mvm_share",
    "grad_trace_share",
    "restrict_share",
    "kernel_build_share",
    "final_fit_seconds",
    "learn_over_sklearn_fixed_fit",
    "cpu_seconds",
    "cpu_over_sklearn_fixed_fit_cpu",
)


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--first-partition", type=int, default=0, help="seed of the first partition")
    p.add_argument("--partitions", type=int, default=3, help="random 5-partitions (seeds 0..P-1); paper: 10")
    p.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated subset of {list(METHODS)}, or all")
    p.add_argument("--max-train", type=int, default=None, help="subsample the training set (smoke runs)")
    p.add_argument("--max-iter", type=int, default=None, help="override objective.cv.outer.max_iter")
    p.add_argument("--blas-threads", type=int, default=None, help="limit BLAS threads (threadpoolctl)")
    p.add_argument(
        "--cores",
        type=int,
        default=None,
        help="pin to N of the usable cores first (the engine sizes from them; default: all)",
    )
    p.add_argument("--no-yardstick", action="store_true", help="skip the scikit-learn yardstick (no ratio)")
    p.add_argument("--out", default=None, help="folder of the resumable protocol (rows + checkpoints)")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = p.parse_args(argv)
    if a.smoke:
        vars(a).update(partitions=1, methods="mc-tied", max_train=150, max_iter=2, no_yardstick=True)
    a.methods = list(METHODS) if a.methods.strip() == "all" else [m.strip() for m in a.methods.split(",") if m.strip()]
    unknown = [m for m in a.methods if m not in METHODS]
    if unknown:
        p.error(f"unknown methods {unknown}; choose from {list(METHODS)} or all")
    return a


def setup(a):
    """The spec (with the command line's overrides, kernel resolved), data, likelihood and options."""
    spec, base = load_spec(SPEC)
    if a.max_train:
        spec = attrs.evolve(spec, data=attrs.evolve(spec.data, max_train=a.max_train))
    if a.max_iter:
        cv = spec.objective.cv
        cv = attrs.evolve(cv, outer=attrs.evolve(cv.outer, max_iter=a.max_iter))
        spec = attrs.evolve(spec, objective=attrs.evolve(spec.objective, cv=cv))
    data = build_data(spec, base)
    model = attrs.evolve(spec.model, kernel=resolve_kernel(spec.model.kernel, data.X_train))
    resolved = attrs.evolve(spec, model=model)
    config = {
        "bench": "satimage_cv",
        "identity": checkpoint_identity(resolved, data),
        "objective": resolved.to_dict()["objective"],
    }
    return spec, base, data, model, build_likelihood(model), build_learn_options(spec.objective), config


def row_line(m, part, r):
    return (
        f"{m:8s} partition {part}: test error {100 * r['test_error']:.2f} %, learning {r['learning_seconds']:.0f} s "
        f"({r['outer_iterations']} iterations, {r['evaluations']} evaluations, {r['failed_evaluations']} failed, "
        f"{r['seconds_per_evaluation']:.1f} s each), final fit {r['final_fit_seconds']:.1f} s, "
        + (f"CPU / wall {r['cpu_over_wall']:.2f} on {r['cores']} cores, " if "cpu_over_wall" in r else "")
        + f"fold work {r['fold_work_seconds']:.0f} s (summed over folds), "
        f"MVM share (this process) {100 * r['mvm_share']:.0f} %, grad_trace {100 * r['grad_trace_share']:.0f} %, "
        f"restrict/cross copies {100 * r['restrict_share']:.0f} %, kernel build {100 * r['kernel_build_share']:.0f} %"
        + (
            f"; learning / yardstick {r[YARD_KEY]:.1f} (CPU time, learning + final fit: "
            f"{r['cpu_over_sklearn_fixed_fit_cpu']:.1f})"
            if YARD_KEY in r
            else ""
        )
    )


def run_rows(a, say):
    """Every selected (partition, method) row: read from the store or computed (and stored)."""
    spec, base, data, model, likelihood, options, config = setup(a)
    say(
        f"satimage: {data.y_train.size} train, {data.y_test.size} test, {data.n_classes} classes; start v = "
        f"{model.variance}, w = {model.kernel.w:.4g}, sigma2 = {model.sigma2}; {a.partitions} partition(s); "
        f"methods {a.methods}" + (f"; rows in {a.out}" if a.out else "")
    )
    store = RowStore(a.out, config) if a.out else None
    rows, yard, yard_cpu = {m: [] for m in a.methods}, None, None
    with blas_threads(a.blas_threads), AutoEngine() as engine:
        say(f"engine: {engine!r} (usable cores {sorted(os.sched_getaffinity(0))})")
        for part in range(a.first_partition, a.first_partition + a.partitions):
            folds = kfold_partition(data.y_train.size, spec.objective.cv.folds, part, y=data.y_train)
            folds_digest = digest_array(np.concatenate([*folds, [f.size for f in folds]]))  # the folds and their sizes
            for m in a.methods:
                r = store.get(m, part, folds_digest) if store else None
                if r is not None:
                    say(f"{m:8s} partition {part}: stored row, test error {100 * r['test_error']:.2f} %")
                    rows[m].append(r)
                    continue
                if yard is None and not a.no_yardstick:  # measured once, before the first row this run computes
                    ys = sklearn_fixed_fit_seconds(
                        data.X_train, data.y_train, v=model.variance, w=model.kernel.w, sigma2=model.sigma2
                    )
                    yard, yard_cpu = ys["seconds"], ys["cpu_seconds"]
                    say(
                        f"yardstick: one scikit-learn GaussianProcessClassifier(optimizer=None) fit at the start "
                        f"kernel {yard:.1f} s ({yard_cpu:.1f} s CPU)"
                    )
                overrides, ovr = METHODS[m]
                prior = build_prior(attrs.evolve(model, **overrides), data.X_train, base)
                kw = dict(one_vs_rest=ovr, label=f"[{m} p{part}]", say=say, engine=engine)
                cpu = cpu_seconds()
                r = learn_and_evaluate(
                    prior,
                    likelihood,
                    data,
                    folds,
                    options,
                    checkpoint=store.checkpoint(m, part, config) if store else None,
                    **kw,
                )
                engine.close()  # join the workers, so that their CPU time is counted
                r["cpu_seconds"] = cpu_seconds() - cpu  # learning + final fit + test prediction, fold workers too
                r["cpu_over_wall"] = r["cpu_seconds"] / max(r["learning_seconds"] + r["final_fit_seconds"], 1e-9)
                r["cores"] = engine.cores
                if yard is not None:
                    r.update(
                        learn_over_sklearn_fixed_fit=r["learning_seconds"] / yard,
                        sklearn_fixed_fit_seconds=yard,
                        cpu_over_sklearn_fixed_fit_cpu=r["cpu_seconds"] / yard_cpu,
                    )
                r = store.put(m, part, r, folds_digest) if store else {**r, "partition": part}
                rows[m].append(r)
                say(row_line(m, part, r))
    return data, rows, (yard, yard_cpu)


def main(argv=None, say=None):
    """Run (or resume) the selected rows, print the table and the final JSON line; returns the JSON dict."""
    say = say or (lambda s: print(s, flush=True))
    a = parse(argv)
    if a.smoke and skip_without_data("satimage_cv", "satimage"):
        return {}
    t_all = time.perf_counter()
    data, rows, (yard, yard_cpu) = run_rows(a, say)
    summary = mean_sd_table(rows, MEAN_KEYS)
    say(
        f"\n{'method':8s} {'test error %':>14s} {'paper %':>8s} {'n':>3s} {'learning s':>11s} {'learn/yard':>10s} "
        f"{'s/eval':>7s} {'evals':>6s} {'failed':>6s} {'MVM share':>9s}"
    )
    for m, s in summary.items():
        s["paper"] = PAPER.get(m)
        say(
            f"{m:8s} {s['test_error_mean']:8.2f} ±{s['test_error_std']:4.2f} {PAPER[m]:8.2f} "
            f"{len(s['test_errors']):3d} {s['learning_seconds']:11.0f} {s.get(YARD_KEY, float('nan')):10.1f} "
            f"{s['seconds_per_evaluation']:7.1f} {s['evaluations']:6.1f} {s['failed_evaluations']:6.1f} "
            f"{100 * s['mvm_share']:8.0f}%"
        )
    out = {
        "bench": "satimage_cv",
        "partitions": a.partitions,
        "first_partition": a.first_partition,
        "cores": len(os.sched_getaffinity(0)),
        "n_train": int(data.y_train.size),
        "n_test": int(data.y_test.size),
        "total_seconds": time.perf_counter() - t_all,
        "sklearn_fixed_fit_seconds": yard,
        "sklearn_fixed_fit_cpu_seconds": yard_cpu,
        "methods": summary,
        "hyperparameters": {m: [r["hyperparameters"] for r in rows[m]] for m in a.methods},
    }
    say(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
