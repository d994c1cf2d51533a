"""Comparison study of the unifying-paper objectives (Nickisch & Seeger 2011), one table.

Robust regression: scikit-learn's diabetes (442 points, 10 features; inputs and targets
standardised with training statistics; 70/30 split, seed 0) with outliers injected into 10 % of
the *training* targets (± U(5, 10) standard deviations); test targets are clean.  Likelihoods
Gaussian, Laplace, Student-t (ν = 4) × methods:
  MAP+CV  MAP fit with (w, v, noise/scale) chosen on a 3x3x3 grid by 5-fold CV of the validation
          mean absolute error (robust to the outliers in the validation folds);
  MLM     hyperparameters by maximising the marginal likelihood: exact for Gaussian, the Laplace
          approximation for Student-t (exact path; W < 0 at outliers), n/a for the Laplace
          likelihood (W = 0 almost everywhere: the Laplace approximation does not exist);
  VB      hyperparameters by minimising φ_VB (double loop).
Binary classification: scikit-learn's breast_cancer (569 points, 30 features, standardised,
stratified 70/30 split) and satimage class "4" (damp grey soil) vs the rest (1000 training points
stratified from the 4435, the given 2000 test points; standardised).  Methods:
  MAP+CV      logistic MAP with (w, v) on a 3x3 grid by 5-fold CV of the log-loss;
  Laplace-ML  (w, v) by maximising the Laplace approximation (exact path);
  VB          (w, v) by minimising φ_VB;
  MKL         kernel weights θ of K_θ = Σ θ_m K_m (RBF at w = 0.25/d, 1/d, 4/d and linear) by
              Algorithm 1, logistic loss, λ = 1, p = 1;
  joint MAP   the same kernels, Algorithm 1 on φ_MAP (log|K_θ| bounded by its tangent).
Single-kernel models use v exp(-(w/2)||x - x'||²) from w = 1/d, v = 1 (+ an intercept of variance
1 for classification).  Every method predicts with its latent mean u_* = K_{*,.} α (plug-in σ(u_*)
for the log-loss).  Times are the learning + fitting times of each row.

Needs scikit-learn (data only) and ../shared/data.  Usage: python bench/unifying_study.py [--quick]
Prints one table and a final JSON line.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time

import numpy as np
from smoke import SMOKE_HELP  # noqa: E402

from gpmodels import metrics as M
from gpmodels.data import load_dataset
from gpmodels.data.scaling import scale_features
from gpmodels.data.splits import kfold_partition, subsample, train_test_split
from gpmodels.hyperparameters import natural_values
from gpmodels.inference.map.newton_cg import NewtonOptions, newton_cg
from gpmodels.inference.marginal.laplace import LaplaceOptions, laplace_mlm, learn_laplace
from gpmodels.inference.marginal.vb import learn_vb, vb_criterion
from gpmodels.inference.mkl.algorithms import MKLOptions, algorithm1
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods import Gaussian, Laplace, Logistic, StudentT
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.intercept import Intercept
from gpmodels.operators.sum import Sum
from gpmodels.optimize.driver import outer_options

MAP_OPTS = NewtonOptions(max_iter=60, cg_max_iter=300, grad_tol=1e-7, phi_rtol=1e-12)


#: outer iterations of the learners, the --quick subsample, the diabetes and breast-cancer points (--smoke: tiny)
SIZES = {"outer_iter": 60, "quick_train": 300, "quick_test": 500, "small_train": None}


def rbf_op(X, w, v, sigma2):
    op = BlockDiagonal.from_sharing(X, RBF(w), 1, "tied", v)
    return Intercept(op, sigma2) if sigma2 > 0 else op


def describe(op, lik):
    return natural_values(
        tuple(op.param_names) + tuple(lik.param_names), np.concatenate([op.params, lik.params]), short=True
    )


def fmt_hyper(d):
    return ", ".join(f"{k}={v:.3g}" for k, v in d.items())


# ---------------------------------------------------------------------- data
def regression_data(seed=0):
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    tr, te = train_test_split(y.size, 0.3, seed)
    tr, te = tr[: SIZES["small_train"]], te[: SIZES["small_train"]]
    Xtr, Xte = scale_features("standardize", X[tr], X[te])
    mu, sd = y[tr].mean(), y[tr].std()
    ytr, yte = (y[tr] - mu) / sd, (y[te] - mu) / sd
    r = np.random.default_rng(seed)
    out = r.choice(ytr.size, size=int(round(0.1 * ytr.size)), replace=False)
    ytr = ytr.copy()
    ytr[out] += r.choice([-1.0, 1.0], size=out.size) * r.uniform(5.0, 10.0, size=out.size)
    return Xtr, ytr, Xte, yte


def classification_sets(quick):
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    tr, te = train_test_split(y.size, 0.3, 0, y=y)
    tr, te = tr[: SIZES["small_train"]], te[: SIZES["small_train"]]
    Xtr, Xte = scale_features("standardize", X[tr], X[te])
    sets = [("breast_cancer", Xtr, np.where(y[tr] == 1, 1.0, -1.0), Xte, np.where(y[te] == 1, 1.0, -1.0))]
    d = load_dataset("satimage")
    pos = d.classes.index("4")
    n = SIZES["quick_train"] if quick else 1000
    keep = subsample(d.y_train.size, n, 0, y=d.y_train)
    tkeep = subsample(d.y_test.size, SIZES["quick_test"], 1, y=d.y_test) if quick else np.arange(d.y_test.size)
    Xs, Xst = scale_features("standardize", d.X_train[keep], d.X_test[tkeep])
    sets.append(
        (
            "satimage 4-vs-rest",
            Xs,
            np.where(d.y_train[keep] == pos, 1.0, -1.0),
            Xst,
            np.where(d.y_test[tkeep] == pos, 1.0, -1.0),
        )
    )
    return sets


# ---------------------------------------------------------------------- methods
def cv_map(X, y, grid, make, score, q=5):
    """Grid search by q-fold CV; returns the best grid point."""
    folds = kfold_partition(y.size, q, 0, y=(y > 0).astype(int) if set(np.unique(y)) <= {-1.0, 1.0} else None)
    best, best_s = None, np.inf
    for point in grid:
        s = 0.0
        for I in folds:
            J = np.setdiff1d(np.arange(y.size), I)
            op, lik = make(X[J], *point)
            res = newton_cg(op, lik, y[J], MAP_OPTS)
            s += score(lik, op.cross_test(X[I]).mvm(res.alpha), y[I])
        if s < best_s:
            best, best_s = point, s
    return best


def regression_rows(quick):
    Xtr, ytr, Xte, yte = regression_data()
    d = Xtr.shape[1]
    rows = []
    liks = {"gaussian": lambda s: Gaussian(s), "laplace": lambda s: Laplace(s), "student_t": lambda s: StudentT(4.0, s)}
    scales = {"gaussian": (0.05, 0.2, 0.8), "laplace": (0.1, 0.3, 0.9), "student_t": (0.1, 0.3, 0.9)}
    for name, mk in liks.items():
        for method in ("MAP+CV", "MLM", "VB"):
            t = time.perf_counter()
            if method == "MAP+CV":
                grid = list(itertools.product(np.array([0.25, 1.0, 4.0]) / d, (0.5, 2.0, 8.0), scales[name]))
                if quick:
                    grid = grid[::3]
                w, v, s = cv_map(
                    Xtr,
                    ytr,
                    grid,
                    lambda X, w, v, s, mk=mk: (rbf_op(X, w, v, 0.0), mk(s)),
                    lambda lik, u, y: float(np.mean(np.abs(u[:, 0] - y))),
                )
                op, lik = rbf_op(Xtr, w, v, 0.0), mk(s)
                alpha = newton_cg(op, lik, ytr, MAP_OPTS).alpha
                extra = {}
            elif method == "MLM" and name == "laplace":
                rows.append(
                    {
                        "task": "regression",
                        "data": "diabetes+outliers",
                        "likelihood": name,
                        "method": method,
                        "note": "n/a: the Laplace approximation needs W > 0; W = 0 a.e. for this likelihood",
                    }
                )
                continue
            elif method == "MLM" and name == "student_t":
                _, op, lik = learn_laplace(
                    rbf_op(Xtr, 1.0 / d, 1.0, 0.0),
                    mk(0.3),
                    ytr,
                    LaplaceOptions(path="exact"),
                    outer=outer_options(SIZES["outer_iter"]),
                )
                res = laplace_mlm(op, lik, ytr, LaplaceOptions(path="exact"))
                alpha, extra = res.mode.alpha, {"log_marginal": res.log_marginal}
            else:  # VB; for the Gaussian this is the exact MLM, the same numbers as the MLM row
                _, op, lik = learn_vb(
                    rbf_op(Xtr, 1.0 / d, 1.0, 0.0), mk(0.3), ytr, outer=outer_options(SIZES["outer_iter"])
                )
                res = vb_criterion(op, lik, ytr, gradient=False)
                alpha, extra = res.alpha, {"phi_vb": res.phi}
            seconds = time.perf_counter() - t
            u = op.cross_test(Xte).mvm(alpha)[:, 0]
            rows.append(
                {
                    "task": "regression",
                    "data": "diabetes+outliers",
                    "likelihood": name,
                    "method": method,
                    "rmse": float(np.sqrt(np.mean((u - yte) ** 2))),
                    "mae": float(np.mean(np.abs(u - yte))),
                    "learned": describe(op, lik),
                    "seconds": seconds,
                    **extra,
                }
            )
            print_row(rows[-1])
    return rows


def logloss_score(lik, u, y):
    return float(np.sum(np.logaddexp(0.0, -y * u[:, 0])))


def classification_rows(quick):
    rows = []
    for dname, Xtr, ytr, Xte, yte in classification_sets(quick):
        d = Xtr.shape[1]
        for method in ("MAP+CV", "Laplace-ML", "VB", "MKL", "joint MAP"):
            t = time.perf_counter()
            extra = {}
            if method == "MAP+CV":
                grid = list(itertools.product(np.array([0.25, 1.0, 4.0]) / d, (1.0, 4.0, 16.0)))
                w, v = cv_map(Xtr, ytr, grid, lambda X, w, v: (rbf_op(X, w, v, 1.0), Logistic()), logloss_score)
                op, lik = rbf_op(Xtr, w, v, 1.0), Logistic()
                alpha = newton_cg(op, lik, ytr, MAP_OPTS).alpha
            elif method == "Laplace-ML":
                _, op, lik = learn_laplace(
                    rbf_op(Xtr, 1.0 / d, 1.0, 1.0),
                    Logistic(),
                    ytr,
                    LaplaceOptions(path="exact"),
                    outer=outer_options(SIZES["outer_iter"]),
                )
                res = laplace_mlm(op, lik, ytr, LaplaceOptions(path="exact"), gradient=False)
                alpha, extra = res.mode.alpha, {"log_marginal": res.log_marginal}
            elif method == "VB":
                _, op, lik = learn_vb(
                    rbf_op(Xtr, 1.0 / d, 1.0, 1.0), Logistic(), ytr, outer=outer_options(SIZES["outer_iter"])
                )
                res = vb_criterion(op, lik, ytr, gradient=False)
                alpha, extra = res.alpha, {"phi_vb": res.phi}
            else:
                ks = [RBF(0.25 / d), RBF(1.0 / d), RBF(4.0 / d), Linear()]
                op = Sum([BlockDiagonal.from_sharing(Xtr, k, 1, "tied", 1.0) for k in ks])
                lik = Logistic()
                crit = "mkl" if method == "MKL" else "joint_map"
                res = algorithm1(op, lik, ytr, MKLOptions(criterion=crit, lam=1.0, p=1.0, tol=1e-10, max_iter=200))
                op, alpha = op.with_weights(res.theta), res.alpha
                extra = {"criterion": res.criterion, "outer_iterations": res.iterations}
            seconds = time.perf_counter() - t
            u = op.cross_test(Xte).mvm(alpha)
            P = lik.predict(u)
            labels = (yte > 0).astype(int)
            learned = (
                {f"θ{m}": float(th) for m, th in enumerate(op.weights)} if isinstance(op, Sum) else describe(op, lik)
            )
            rows.append(
                {
                    "task": "classification",
                    "data": dname,
                    "likelihood": "logistic",
                    "method": method,
                    "error": M.error(P, labels),
                    "log_loss": M.log_loss(P, labels),
                    "learned": learned,
                    "seconds": seconds,
                    **extra,
                }
            )
            print_row(rows[-1])
    return rows


HEADER = (
    f"{'data':<20} {'likelihood':<10} {'method':<11} {'err/RMSE':>9} {'logloss/MAE':>11} {'time s':>7}  "
    f"learned hyperparameters / kernel weights"
)


def print_row(r):
    if "note" in r:
        print(
            f"{r['data']:<20} {r['likelihood']:<10} {r['method']:<11} {'—':>9} {'—':>11} {'—':>7}  {r['note']}",
            flush=True,
        )
        return
    a, b = (r["error"], r["log_loss"]) if r["task"] == "classification" else (r["rmse"], r["mae"])
    print(
        f"{r['data']:<20} {r['likelihood']:<10} {r['method']:<11} {a:>9.4f} {b:>11.4f} {r['seconds']:>7.2f}  "
        f"{fmt_hyper(r['learned'])}",
        flush=True,
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smaller satimage subsample and CV grid (smoke run)")
    p.add_argument("--skip-regression", action="store_true")
    p.add_argument("--skip-classification", action="store_true")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = p.parse_args(argv)
    if a.smoke:
        vars(a).update(quick=True)
        SIZES.update(outer_iter=3, quick_train=60, quick_test=60, small_train=60)
    print(HEADER)
    rows = []
    if not a.skip_regression:
        rows += regression_rows(a.quick)
    if not a.skip_classification:
        rows += classification_rows(a.quick)
    print(json.dumps({"benchmark": "unifying_study", "quick": a.quick, "rows": rows}))


if __name__ == "__main__":
    main()
