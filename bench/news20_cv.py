"""CV learning of the ANOVA prior's level variances on 20 Newsgroups against the fixed values (issue 12, goal 4).

Runs specs/news20-hier.yaml (ANOVA class-tree prior, H1: one variance per level, all at v = 40,
σ² = 0.01, linear kernel on unit-norm rows; Seeger 2008 Sec. 3, 6.1) and specs/news20-hier-cv.yaml
(the same model with the level variances learned by 5-fold CV, Sec. 4, started at v = 40) through
the spec driver (``run_spec``, as ``gpmodels run`` does), on the same data: the full set by
default (11314 train / 7532 test, C = 20), ``--subset small`` for 2000 / 1000.  Prints, for both,
the wall time (the CV row: learning and final fit), test accuracy, taxo-loss and parent accuracy
(argmax and Bayes-rule decisions), the learned variances, and a final JSON line.  Goal: the CV run
in ≤ 10 minutes with scores at least as good as the fixed values.

Usage: python bench/news20_cv.py [--subset small] [--out DIR] [--blas-threads K] [--max-iter N] [--resume]
       [--reuse-fixed] [--start-variance V]
(``--out``: report folders DIR/fixed and DIR/cv, default runs/news20-cv-bench; without ``--resume``
the CV learning starts afresh, so that its time is the whole learning.)
"""

from __future__ import annotations

import gpmodels  # noqa: F401  (first: its OpenBLAS setting must precede numpy's import)

# isort: split

import argparse
import json
import sys
import time
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cv_common import blas_threads  # noqa: E402
from smoke import SMOKE_HELP, skip_without_data  # noqa: E402

from gpmodels.driver.loader import load_spec  # noqa: E402
from gpmodels.driver.run import run_spec  # noqa: E402
from gpmodels.errors import GPModelsError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SCORES = ("test_acc", "test_taxo_argmax", "test_taxo_expected_loss", "test_pacc_argmax", "test_pacc_expected_loss")
HIGHER_IS_BETTER = {
    "test_acc": True,
    "test_taxo_argmax": False,
    "test_taxo_expected_loss": False,
    "test_pacc_argmax": True,
    "test_pacc_expected_loss": True,
}


def _spec(name, a):
    spec, base = load_spec(ROOT / "specs" / f"{name}.yaml")
    spec = attrs.evolve(spec, data=attrs.evolve(spec.data, subset=a.subset, max_train=a.max_train))
    if spec.objective.type == "cv":
        if a.start_variance is not None:
            spec = attrs.evolve(spec, model=attrs.evolve(spec.model, variance=a.start_variance))
        cv = spec.objective.cv
        cv = attrs.evolve(cv, resume="auto" if a.resume else "never")
        if a.max_iter:
            cv = attrs.evolve(cv, outer=attrs.evolve(cv.outer, max_iter=a.max_iter))
        spec = attrs.evolve(spec, objective=attrs.evolve(spec.objective, cv=cv))
    return spec, base


def _run(name, a, out):
    spec, base = _spec(name, a)
    t = time.perf_counter()
    m = run_spec(spec, base, out, quiet=not a.verbose, force=True, command=f"bench/news20_cv.py ({name})")
    m["bench_wall_seconds"] = time.perf_counter() - t
    return m


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--subset", default=None, choices=[None, "small"], help="news20 subset (default: the full set)")
    p.add_argument("--out", default=str(ROOT / "runs" / "news20-cv-bench"), help="report folders DIR/fixed, DIR/cv")
    p.add_argument("--blas-threads", type=int, default=None, help="limit BLAS threads (threadpoolctl)")
    p.add_argument("--max-iter", type=int, default=None, help="override objective.cv.outer.max_iter")
    p.add_argument("--max-train", type=int, default=None, help="a stratified subsample of the training points")
    p.add_argument("--start-variance", type=float, default=None, help="start of the learned level variances")
    p.add_argument("--resume", action="store_true", help="continue the CV learning from its checkpoint")
    p.add_argument("--verbose", action="store_true", help="the driver's messages")
    p.add_argument("--reuse-fixed", action="store_true", help="read DIR/fixed/metrics.json if present")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = p.parse_args(argv)
    if a.smoke:
        if skip_without_data("news20_cv", "news20"):
            return
        vars(a).update(subset="small", max_iter=1, max_train=300, out="news20-cv-smoke")
    with blas_threads(a.blas_threads):
        done = Path(a.out) / "fixed" / "metrics.json"
        try:
            if a.reuse_fixed and done.is_file():
                fixed = json.loads(done.read_text())
                fixed.setdefault("bench_wall_seconds", fixed["total_seconds"])
            else:
                fixed = _run("news20-hier", a, Path(a.out) / "fixed")
            learned = _run("news20-hier-cv", a, Path(a.out) / "cv")
        except GPModelsError as e:
            print(f"news20_cv: a run did not finish, no figures: {e}", file=sys.stderr)
            return 1
    print(f"news20 ({fixed['n_train']} train, {fixed['n_test']} test, C = {fixed['n_classes']}), ANOVA prior, H1")
    print(f"{'':26s} {'fixed v = 40':>13s} {'CV-learned':>11s}")
    print(f"{'wall seconds':26s} {fixed['bench_wall_seconds']:13.1f} {learned['bench_wall_seconds']:11.1f}")
    print(
        f"{'  learning / final fit s':26s} {'-':>13s} {learned['learning_seconds']:5.0f} / "
        f"{learned['final_fit_seconds']:4.0f}"
    )
    print(
        f"{'  outer its / evals (fail)':26s} {'-':>13s} {learned['outer_iterations']:3d} / "
        f"{learned['evaluations']:2d} ({learned['failed_evaluations']})"
    )
    better = {}
    for k in SCORES:
        f, c = fixed[k], learned[k]
        better[k] = bool(c >= f if HIGHER_IS_BETTER[k] else c <= f)
        print(f"{k:26s} {f:13.4f} {c:11.4f}  {'ok' if better[k] else 'worse'}")
    hyper = {k: v for k, v in learned.items() if k.startswith("hyper.")}
    print("learned: " + ", ".join(f"{k[6:]} = {v:.4g}" for k, v in hyper.items()))
    print(
        json.dumps(
            {
                "bench": "news20_cv",
                "subset": a.subset,
                "n_train": fixed["n_train"],
                "fixed": {k: fixed[k] for k in (*SCORES, "bench_wall_seconds")},
                "cv": {
                    k: learned[k]
                    for k in (
                        *SCORES,
                        "bench_wall_seconds",
                        "learning_seconds",
                        "final_fit_seconds",
                        "outer_iterations",
                        "evaluations",
                        "failed_evaluations",
                        "psi_start",
                        "psi_learned",
                    )
                },
                "learned": hyper,
                "scores_at_least_as_good": better,
                "cv_within_10_minutes": learned["bench_wall_seconds"] <= 600,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
