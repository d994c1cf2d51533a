"""The CV folds' refits one by one or in lockstep, at the same hyperparameters (issue 24): seconds, fold MVMs
and memory per Ψ evaluation of satimage mc-sep.

Set-up: full satimage (specs/satimage-cv.yaml: float32 stored matrices, intercept, the refits' k1 = 13,
k2 = 25, low-rank preconditioner of rank 32, k3 = 40), 5-partition 0.  Ψ and ∇Ψ (``cv_criterion``, Seeger
2008 Sec. 4, 5.2) are evaluated at the start θ0 (cold) and then, warm-started from θ0's state, at θ1 with
the class bandwidths spread over x0.5 ... x2 (six distinct matrices, as after learning; ``cv_bandwidth``'s
``spread_theta``).  A learning run's path of evaluations depends on round-off (bench/RESULTS.md, issue 24:
7 or 13 evaluations), so whole runs do not compare the ways to run the folds; these fixed points do.

The ways, each on the same two points:
- ``separate``: the folds one after the other in this process (``folds_per_fit`` 1, no engine);
- ``separate-2-workers``: the folds on 2 worker processes (the default engine on 2 cores), started
  before the timing as a learning run starts them once;
- ``lockstep-copies``: ``folds_per_fit`` 5 on the stack of the folds' restricted copies (App. D.2), the
  design before ``Stacked.restrictions``: one product per fold;
- ``lockstep``: ``folds_per_fit`` 5 as CV runs it, the folds' restrictions multiplied through K̃ (one
  product of K̃ with a column per fold).

Per way and point: seconds, the folds' MVMs, Ψ, the largest difference of ∇Ψ to ``separate`` relative to
its largest entry, and the peak of memory traced by ``tracemalloc`` in this
process during the evaluation (numpy's buffers included; none for the workers).  Ratios against
``separate``, ``separate-2-workers`` and ``lockstep-copies`` are printed, and a final JSON line.  The ways
do the same fits up to the order of sums, which CG's recurrences amplify: at the spec's inexact inner
solves (k2 = 25 steps, accumulation residual 0.01) Ψ, ∇Ψ and the MVMs may part slightly between ways.

Usage: python bench/cv_lockstep.py [--max-train N].  About 2 minutes on 2 idle cores.
"""

from __future__ import annotations

import gpmodels  # noqa: F401  (first: its OpenBLAS setting must precede numpy's import)

# isort: split

import argparse
import contextlib
import json
import sys
import time
import tracemalloc
from pathlib import Path

import attrs
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cv_bandwidth import SPEC, spread_theta  # noqa: E402
from cv_common import spec_problem  # noqa: E402
from smoke import SMOKE_HELP, skip_without_data  # noqa: E402

import gpmodels.inference.cv.stacked as cv_stacked  # noqa: E402
from gpmodels.data.splits import kfold_partition  # noqa: E402
from gpmodels.driver.build import build_learn_options, build_likelihood, build_prior  # noqa: E402
from gpmodels.engine.processes import ProcessEngine  # noqa: E402
from gpmodels.inference.cv.criterion import cv_criterion  # noqa: E402
from gpmodels.operators.stacked import Stacked  # noqa: E402

WAYS = ("separate", "separate-2-workers", "lockstep-copies", "lockstep")


class _CopiesStack(Stacked):
    """The stack of the folds' restricted copies where CV asks for their restrictions: the yardstick."""

    @classmethod
    def restrictions(cls, op, index_sets, order=None):
        return Stacked([op.restrict(J) for J in index_sets], order)


@contextlib.contextmanager
def _way(name: str):
    """(the engine, the folds per fit) of the way ``name``; the copies' stack in place for its duration."""
    if name == "separate-2-workers":
        with ProcessEngine(2) as engine:
            yield engine, 1
        return
    if name == "lockstep-copies":
        saved, cv_stacked.Stacked = cv_stacked.Stacked, _CopiesStack
        try:
            yield None, 5
        finally:
            cv_stacked.Stacked = saved
        return
    yield None, 5 if name == "lockstep" else 1


def _evaluate(op, lik, Y, folds, opts, state, engine):
    tracemalloc.start()
    t = time.perf_counter()
    ev = cv_criterion(op, lik, Y, folds, opts, state=state, engine=engine)
    seconds = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return ev, seconds, peak


def run_way(name, op, lik, Y, folds, cv_opts, thetas) -> list[dict]:
    rows, state = [], None
    with _way(name) as (engine, per_fit):
        opts = attrs.evolve(cv_opts, folds_per_fit=per_fit)
        if engine is not None:  # start the workers: a learning run pays this once
            cv_criterion(op, lik, Y, folds, opts, engine=engine, gradient=False)
        for label, theta in thetas:
            ev, seconds, peak = _evaluate(op.with_params(theta), lik, Y, folds, opts, state, engine)
            state = ev.state
            rows.append(
                {
                    "way": name,
                    "point": label,
                    "seconds": seconds,
                    "mvms": int(ev.mvm_count),
                    "psi": float(ev.psi),
                    "gradient": np.asarray(ev.gradient).tolist(),
                    "peak_traced_MiB": None if engine is not None else peak,
                }
            )
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max-train", type=int, default=None, help="subsample the training set (smoke runs)")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = p.parse_args(argv)
    if a.smoke:
        if skip_without_data("cv_lockstep", "satimage"):
            return
        vars(a).update(max_train=150)
    spec, base, data, model = spec_problem(SPEC, a.max_train)
    lik, opts = build_likelihood(model), build_learn_options(spec.objective)
    Y = np.eye(data.n_classes)[data.y_train]
    folds = kfold_partition(data.y_train.size, spec.objective.cv.folds, 0, y=data.y_train)
    op = build_prior(model, data.X_train, base).operator(data.X_train, data.n_classes)
    thetas = [("theta0 (cold)", np.array(op.params, float)), ("theta1 spread (warm)", spread_theta(op))]
    cv_criterion(op, lik, Y, folds, opts.cv, gradient=False)  # warm-up: compiled products, first allocations
    rows = [r for way in WAYS for r in run_way(way, op, lik, Y, folds, opts.cv, thetas)]
    ref = {(r["point"]): np.asarray(r["gradient"]) for r in rows if r["way"] == "separate"}
    by = {(r["way"], r["point"]): r for r in rows}
    print(f"satimage {data.y_train.size} train, mc-sep, 5 folds")
    print(f"{'way':20s} {'point':22s} {'s':>6s} {'MVMs':>5s} {'psi':>14s} {'grad diff':>9s} {'peak MiB':>8s}")
    for r in rows:
        g = np.asarray(r["gradient"])
        r["grad_rel_diff"] = float(np.abs(g - ref[r["point"]]).max() / np.abs(ref[r["point"]]).max())
        peak = "-" if r["peak_traced_MiB"] is None else f"{r['peak_traced_MiB']:.0f}"
        print(
            f"{r['way']:20s} {r['point']:22s} {r['seconds']:6.2f} {r['mvms']:5d} {r['psi']:14.6f} "
            f"{r['grad_rel_diff']:9.1e} {peak:>8s}"
        )
    ratios = {
        f"lockstep_over_{other}": sum(by["lockstep", t]["seconds"] for t, _ in thetas)
        / sum(by[other, t]["seconds"] for t, _ in thetas)
        for other in ("separate", "separate-2-workers", "lockstep-copies")
    }
    print("seconds of both points, lockstep over: " + ", ".join(f"{k[14:]} {v:.2f}" for k, v in ratios.items()))
    for r in rows:
        del r["gradient"]
    print(json.dumps({"bench": "cv_lockstep", "n_train": int(data.y_train.size), "rows": rows, **ratios}))


if __name__ == "__main__":
    main()
