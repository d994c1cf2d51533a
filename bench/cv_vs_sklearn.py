"""CV hyperparameter learning against scikit-learn's GaussianProcessClassifier with
marginal-likelihood learning, on satimage and on scikit-learn's bundled digits, in one run.

Both learn the hyperparameters of RBF kernels v exp(-(w/2)||x - x'||^2) plus a constant σ² (the
intercept prior, fixed), started at v = 10, w = 1 / Σ_j Var[x_j]:
- gpmodels: the joint softmax model, learned by the 5-fold CV criterion Ψ (Seeger 2008, Sec. 4;
  settings of specs/satimage-cv.yaml: k1 = 13, k2 = 25, k3 = 40, final fit k1 = 30, k2 = 50, kernel
  matrices stored in float32 with float64 sums),
  ``--method`` mc-sep (default: v_c, w_c per class, 2C hyperparameters) | mc-semi | mc-tied;
  then the final fit and prediction.
- scikit-learn: one-vs-rest binary Laplace GPs (its only multi-class mode), each maximising its
  Laplace-approximate marginal likelihood over (log v, log length-scale) with L-BFGS-B (its
  default optimiser, no restarts): 2C hyperparameters as well.
Timed: learning + final fit (kernel construction included) for both; then test errors.

σ² = 16 on satimage (Sec. 6.2), 4 on digits (the paper's value for the USPS digits, Sec. 6.3).
digits: 1797 images (8 x 8, values 0..16), 10 classes, a stratified 2/3 - 1/3 train/test split
with seed 0.  Needs scikit-learn (a core dependency) and, for satimage, ../shared/data.

Usage: python bench/cv_vs_sklearn.py [--datasets satimage,digits] [--method mc-sep[,mc-tied,...]]
       [--max-train N (satimage subsample)] [--blas-threads K] [--cores N]
       [--score-patience P]
scikit-learn runs once per data set, so several methods are compared against the same fit.
The folds of a Ψ evaluation run on the auto engine, sized from the usable cores (``--cores N``
pins the process to N of them first, ``bench/pin_cores.py``).  Prints a table and a final
JSON line with the time ratio (scikit-learn / gpmodels) and both test errors per data set and
method, and the 1-minute load average before and after each timed part (the machine may be shared).
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
from cv_common import blas_threads, learn_and_evaluate  # noqa: E402
from smoke import SMOKE_HELP, skip_without_data  # noqa: E402

from gpmodels.data.datasets import Dataset  # noqa: E402
from gpmodels.data.scaling import auto_rbf_w  # noqa: E402
from gpmodels.data.splits import kfold_partition, train_test_split  # noqa: E402
from gpmodels.driver.build import build_learn_options, build_representation  # noqa: E402
from gpmodels.driver.build_data import build_data  # noqa: E402
from gpmodels.driver.loader import load_spec  # noqa: E402
from gpmodels.kernels.rbf import RBF  # noqa: E402
from gpmodels.kernels.representations import RepresentationConfig  # noqa: E402
from gpmodels.likelihoods.softmax import Softmax  # noqa: E402
from gpmodels.priors.independent import IndependentGP  # noqa: E402

SPEC = Path(__file__).resolve().parent.parent / "specs" / "satimage-cv.yaml"
SHARING = {"mc-sep": "separate", "mc-semi": "semi", "mc-tied": "tied"}


def load(name: str, max_train: int | None):
    if name == "satimage":
        spec, base = load_spec(SPEC)
        if max_train:
            spec = attrs.evolve(spec, data=attrs.evolve(spec.data, max_train=max_train))
        return build_data(spec, base), 16.0
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    tr, te = train_test_split(y.size, 1 / 3, 0, y=y)
    return Dataset(
        "digits", X[tr].astype(float), y[tr], X[te].astype(float), y[te], tuple(str(c) for c in range(10)), None
    ), 4.0


def run_sklearn(data, v0, w0, sigma2):
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF as SkRBF
    from sklearn.gaussian_process.kernels import ConstantKernel

    kernel = ConstantKernel(v0, (1e-6, 1e6)) * SkRBF(1.0 / np.sqrt(w0), (1e-4, 1e7)) + ConstantKernel(sigma2, "fixed")
    gpc = GaussianProcessClassifier(kernel=kernel, random_state=0)
    t = time.perf_counter()
    gpc.fit(data.X_train, data.y_train)
    fit_s = time.perf_counter() - t
    err = float(np.mean(gpc.predict(data.X_test) != data.y_test))
    kernels = (
        [str(e.kernel_) for e in gpc.base_estimator_.estimators_]
        if hasattr(gpc.base_estimator_, "estimators_")
        else [str(gpc.kernel_)]
    )
    return {"seconds": fit_s, "test_error": err, "kernels": kernels}


def _options(spec, score_patience: int | None):
    options = build_learn_options(spec.objective)
    if score_patience is not None:
        options = attrs.evolve(options, outer=attrs.evolve(options.outer, score_patience=score_patience))
    return options


def _run_ours(data, folds, sigma2, method, options, name, representation=None):
    w0, v0 = auto_rbf_w(data.X_train), 10.0
    prior = IndependentGP(RBF(w0), SHARING[method], v0, sigma2, representation=representation or RepresentationConfig())
    load0 = os.getloadavg()[0]
    t = time.perf_counter()
    ours = learn_and_evaluate(
        prior, Softmax(), data, folds, options, label=f"[{name} {method}]", say=lambda s: print(s, flush=True)
    )
    ours["seconds"] = time.perf_counter() - t
    ours["load"] = [load0, os.getloadavg()[0]]
    print(
        f"gpmodels {method} (5-fold CV learning + final fit): {ours['seconds']:.1f} s, test error "
        f"{100 * ours['test_error']:.2f} % ({ours['evaluations']} evaluations, {ours['failed_evaluations']} "
        f"failed, {ours['outer_iterations']} outer iterations; load {ours['load'][0]:.1f} -> {ours['load'][1]:.1f})",
        flush=True,
    )
    return ours


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default="satimage,digits")
    p.add_argument("--method", default="mc-sep", help="comma-separated: " + ", ".join(sorted(SHARING)))
    p.add_argument("--max-train", type=int, default=None, help="satimage: subsample the training set")
    p.add_argument("--blas-threads", type=int, default=None, help="limit BLAS threads for both (threadpoolctl)")
    p.add_argument("--cores", type=int, default=None, help="pin to N of the usable cores first (default: all)")
    p.add_argument("--score-patience", type=int, default=None, help="outer stop on held-out errors (default: spec)")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = p.parse_args(argv)
    if a.smoke:
        if skip_without_data("cv_vs_sklearn", "satimage"):
            return
        vars(a).update(datasets="satimage", method="mc-tied", max_train=80)
    methods = [m.strip() for m in a.method.split(",") if m.strip()]
    if not methods or any(m not in SHARING for m in methods):
        p.error(f"--method must list some of {sorted(SHARING)}; got {a.method!r}")
    spec, _ = load_spec(SPEC)
    options = _options(spec, a.score_patience)
    out = {}
    with blas_threads(a.blas_threads):
        for name in [d.strip() for d in a.datasets.split(",") if d.strip()]:
            data, sigma2 = load(name, a.max_train)
            w0 = auto_rbf_w(data.X_train)
            print(
                f"{name}: {data.y_train.size} train, {data.y_test.size} test, {data.n_classes} classes, "
                f"{data.X_train.shape[1]} features; start v = 10, w = {w0:.4g}, sigma2 = {sigma2}",
                flush=True,
            )
            folds = kfold_partition(data.y_train.size, spec.objective.cv.folds, 0, y=data.y_train)
            representation = build_representation(spec.model)  # the spec's storage (float32)
            ours = {m: _run_ours(data, folds, sigma2, m, options, name, representation) for m in methods}
            load0 = os.getloadavg()[0]
            sk = run_sklearn(data, 10.0, w0, sigma2)
            sk["load"] = [load0, os.getloadavg()[0]]
            print(
                f"scikit-learn GaussianProcessClassifier (one-vs-rest, marginal likelihood, L-BFGS-B): "
                f"{sk['seconds']:.1f} s, test error {100 * sk['test_error']:.2f} % "
                f"(load {sk['load'][0]:.1f} -> {sk['load'][1]:.1f})",
                flush=True,
            )
            for m, r in ours.items():
                ratio = sk["seconds"] / r["seconds"]
                print(
                    f"time ratio scikit-learn / gpmodels {m}: {ratio:.1f}x (goal >= 10x at a test error <= "
                    "scikit-learn's + 0.3 points)\n",
                    flush=True,
                )
                out[f"{name} {m}"] = {
                    "data": name,
                    "method": m,
                    "n_train": int(data.y_train.size),
                    "n_test": int(data.y_test.size),
                    "gpmodels_seconds": r["seconds"],
                    "gpmodels_test_error": r["test_error"],
                    "gpmodels_evaluations": r["evaluations"],
                    "gpmodels_failed_evaluations": r["failed_evaluations"],
                    "gpmodels_outer_iterations": r["outer_iterations"],
                    "gpmodels_mvm_share": r["mvm_share"],
                    "gpmodels_load": r["load"],
                    "sklearn_seconds": sk["seconds"],
                    "sklearn_test_error": sk["test_error"],
                    "sklearn_load": sk["load"],
                    "time_ratio": ratio,
                    "gpmodels_hyperparameters": r["hyperparameters"],
                    "sklearn_kernels": sk["kernels"],
                }
    print(f"{'data':18s} {'gpmodels s':>11s} {'err %':>6s} {'sklearn s':>10s} {'err %':>6s} {'ratio':>6s}")
    for key, r in out.items():
        print(
            f"{key:18s} {r['gpmodels_seconds']:11.1f} {100 * r['gpmodels_test_error']:6.2f} "
            f"{r['sklearn_seconds']:10.1f} "
            f"{100 * r['sklearn_test_error']:6.2f} {r['time_ratio']:6.1f}"
        )
    print(
        json.dumps(
            {
                "bench": "cv_vs_sklearn",
                "methods": methods,
                "max_train": a.max_train,
                "cores": len(os.sched_getaffinity(0)),
                "results": out,
            }
        )
    )


if __name__ == "__main__":
    main()
