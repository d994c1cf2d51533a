"""Calibration of plug-in vs Laplace-predictive probabilities at learned hyperparameters (issue 14).

For each data set: learn the hyperparameters of the joint softmax model (RBF kernels v exp(-(w/2)
||x - x'||²) plus the fixed intercept variance σ², started at v = 10, w = 1 / Σ_j Var[x_j]) by the
5-fold CV criterion Ψ (``--learner cv``: Seeger 2008, Sec. 4; the Ψ settings of specs/satimage-cv.yaml)
or the Laplace marginal likelihood (``--learner laplace``: R&W Sec. 3.5, exact path), at most
``--learn-iter`` outer iterations, on a stratified subsample of ``--learn-n`` training points (the
learned values are printed and stored); fit α̂ at them on the whole training set (Newton–CG, k1 = 30,
k2 = 50); then score on the test set
- ``plugin``: softmax(u_*) at the latent mean u_* = K̃_{*,.} α̂;
- ``laplace-lanczos-<k>``: softmax averaged over N(μ_*, Σ_*) (R&W eq. 3.40 / 3.43) with Σ_* from a
  rank-k Lanczos (LOVE) basis of I + VᵀK̃V, ``--samples`` Monte Carlo draws (seed 0);
- ``laplace-exact``: Σ_* by batched CG (tolerance 1e-10), on the first ``--exact-n`` test points
  only when the full test set would take too long (the plug-in and Lanczos scores of the same points
  are then given as well, ``*@exact-subset``).
Scores: Brier (multiclass, in [0, 2]), top-label ECE (15 equal-width bins), log loss, test error;
the seconds of each predictive (plug-in seconds beside them).

Data: satimage (specs/satimage-cv.yaml data: 4435 train, 2000 test, σ² = 16) and scikit-learn's
digits (stratified 2/3 - 1/3 split with seed 0, σ² = 4; like bench/cv_vs_sklearn.py).

Usage: python bench/calibration.py [--datasets satimage,digits] [--learner cv] [--sharing tied] [--learn-n 800]
       [--learn-iter 12] [--ranks 256,1024] [--exact-n 200] [--samples 2000]
Prints a table and a final JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import attrs
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cv_vs_sklearn import load  # noqa: E402
from smoke import SMOKE_HELP  # noqa: E402

from gpmodels.data.scaling import auto_rbf_w  # noqa: E402
from gpmodels.data.splits import kfold_partition, subsample  # noqa: E402
from gpmodels.driver.build import build_learn_options  # noqa: E402
from gpmodels.driver.loader import load_spec  # noqa: E402
from gpmodels.hyperparameters import natural_values  # noqa: E402
from gpmodels.inference.cv.learn import learn_hyperparameters  # noqa: E402
from gpmodels.inference.map.model import fit_map  # noqa: E402
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions  # noqa: E402
from gpmodels.inference.map.predictive import latent_predictive, predictive_proba  # noqa: E402
from gpmodels.inference.marginal.laplace import LaplaceOptions, learn_laplace  # noqa: E402
from gpmodels.kernels.rbf import RBF  # noqa: E402
from gpmodels.likelihoods.softmax import Softmax  # noqa: E402
from gpmodels.optimize.lbfgs import OuterOptions  # noqa: E402
from gpmodels.priors.independent import IndependentGP  # noqa: E402
from gpmodels.scoring.calibration import calibration_report  # noqa: E402
from gpmodels.scoring.metrics import error  # noqa: E402
from gpmodels.validation import labels_to_targets  # noqa: E402

SPEC = Path(__file__).resolve().parent.parent / "specs" / "satimage-cv.yaml"


def learn(data, sigma2, sharing, learn_n, learn_iter, learner, say):
    """(names, θ, seconds, converged) learned on a stratified subsample of ``learn_n`` training points by
    the 5-fold CV criterion Ψ (``cv``) or the Laplace marginal likelihood (``laplace``, exact path)."""
    keep = subsample(data.y_train.size, min(learn_n, data.y_train.size), 0, y=data.y_train)
    X, y = data.X_train[keep], data.y_train[keep]
    C = data.n_classes
    op = IndependentGP(RBF(auto_rbf_w(data.X_train)), sharing, 10.0, sigma2).operator(X, C)
    Y = labels_to_targets(y, C)
    t = time.perf_counter()
    if learner == "laplace":
        res, _, _ = learn_laplace(
            op,
            Softmax(),
            Y,
            LaplaceOptions(seed=0),
            outer=OuterOptions(max_iter=learn_iter),
            on_iteration=lambda r: say(f"  iteration {r.iteration}: -log q = {r.value:.6g}"),
        )
        names, theta, converged, message, iterations = res.names, res.x, res.converged, res.message, res.iterations
    else:
        spec, _ = load_spec(SPEC)
        options = build_learn_options(spec.objective)
        options = attrs.evolve(options, outer=attrs.evolve(options.outer, max_iter=learn_iter))
        folds = kfold_partition(y.size, 5, 0, y=y)
        res = learn_hyperparameters(
            op,
            Softmax(),
            Y,
            folds,
            options,
            on_iteration=lambda r: say(f"  iteration {r.iteration}: Ψ = {r.value:.6g}"),
        )
        names, theta, converged, message, iterations = (
            res.names,
            res.theta,
            res.converged,
            res.message,
            res.outer.iteration,
        )
    seconds = time.perf_counter() - t
    say(
        f"  learned by {learner} on {y.size} points in {seconds:.1f} s, {iterations} iterations ({message}): "
        f"{natural_values(names, theta)}"
    )
    return names, np.asarray(theta), seconds, converged


def score(P, y) -> dict:
    return {**calibration_report(P, y), "error": error(P, y)}


def evaluate(model, data, ranks, exact_n, samples, say) -> dict:
    lik, Xt, yt = model.likelihood, data.X_test, data.y_test
    out = {}
    t = time.perf_counter()
    plugin = model.predict_proba(Xt)
    plugin_s = time.perf_counter() - t
    out["plugin"] = {**score(plugin, yt), "seconds": plugin_s}
    sub = slice(0, min(exact_n, yt.size)) if exact_n else slice(0, yt.size)
    partial = sub.stop < yt.size
    for k in ranks:
        t = time.perf_counter()
        pred = latent_predictive(model, Xt, method="lanczos", rank=k, random_state=0)
        P = predictive_proba(pred, lik, n_samples=samples, random_state=0)
        s = time.perf_counter() - t
        out[f"laplace-lanczos-{k}"] = {**score(P, yt), "seconds": s, "rank": pred.rank, "exact": pred.converged}
        if partial:
            out[f"laplace-lanczos-{k}@exact-subset"] = score(P[sub], yt[sub])
        say(f"  lanczos rank {pred.rank}: {s:.1f} s")
    if exact_n != 0:
        t = time.perf_counter()
        pred = latent_predictive(model, Xt[sub], method="exact", tol=1e-10)
        P = predictive_proba(pred, lik, n_samples=samples, random_state=0)
        s = time.perf_counter() - t
        out["laplace-exact"] = {**score(P, yt[sub]), "seconds": s, "n_test": sub.stop, "converged": pred.converged}
        if partial:
            out["plugin@exact-subset"] = score(plugin[sub], yt[sub])
        say(f"  exact on {sub.stop} test points: {s:.1f} s")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default="satimage,digits")
    p.add_argument("--sharing", default="tied", choices=("tied", "semi", "separate"))
    p.add_argument(
        "--learner",
        default="cv",
        choices=("cv", "laplace"),
        help="learn by the CV criterion or the Laplace marginal likelihood",
    )
    p.add_argument("--learn-n", type=int, default=800, help="stratified training subsample for learning")
    p.add_argument("--learn-iter", type=int, default=12, help="outer iterations of CV learning at most")
    p.add_argument("--ranks", default="256,1024", help="Lanczos ranks of the Laplace predictive")
    p.add_argument("--exact-n", type=int, default=200, help="test points for the exact predictive (0: none)")
    p.add_argument("--samples", type=int, default=2000, help="Monte Carlo samples per test point")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = p.parse_args(argv)
    if a.smoke:
        vars(a).update(datasets="digits", learn_n=120, learn_iter=2, ranks="8", exact_n=2, samples=50)
    ranks = [int(r) for r in a.ranks.split(",") if r.strip()]
    results = {}
    for name in [d.strip() for d in a.datasets.split(",") if d.strip()]:
        data, sigma2 = load(name, None)
        print(f"{name}: {data.y_train.size} train, {data.y_test.size} test, {data.n_classes} classes", flush=True)
        names, theta, learn_s, learn_ok = learn(
            data, sigma2, a.sharing, a.learn_n, a.learn_iter, a.learner, lambda s: print(s, flush=True)
        )
        op = IndependentGP(RBF(1.0), a.sharing, 1.0, sigma2).operator(data.X_train, data.n_classes).with_params(theta)
        t = time.perf_counter()
        model = fit_map(
            op,
            Softmax(),
            labels_to_targets(data.y_train, data.n_classes),
            NewtonCG(NewtonOptions(max_iter=30, cg_max_iter=50)),
        )
        fit_s = time.perf_counter() - t
        print(
            f"  final fit on {data.y_train.size} points: {fit_s:.1f} s ({model.result.diagnostics.message})", flush=True
        )
        scores = evaluate(model, data, ranks, a.exact_n, a.samples, lambda s: print(s, flush=True))
        results[name] = {
            "n_train": int(data.y_train.size),
            "n_test": int(data.y_test.size),
            "learn_n": min(a.learn_n, int(data.y_train.size)),
            "learn_seconds": learn_s,
            "learn_converged": bool(learn_ok),
            "fit_seconds": fit_s,
            "hyperparameters": natural_values(names, theta),
            "scores": scores,
        }
        print(f"  {'predictive':32s} {'brier':>7s} {'ece':>7s} {'logloss':>8s} {'err %':>6s} {'seconds':>8s}")
        for key, r in scores.items():
            print(
                f"  {key:32s} {r['brier']:7.4f} {r['ece']:7.4f} {r['log_loss']:8.4f} {100 * r['error']:6.2f} "
                f"{r.get('seconds', float('nan')):8.2f}",
                flush=True,
            )
    print(
        json.dumps(
            {
                "bench": "calibration",
                "learner": a.learner,
                "sharing": a.sharing,
                "learn_n": a.learn_n,
                "learn_iter": a.learn_iter,
                "samples": a.samples,
                "results": results,
            },
            default=float,
        )
    )


if __name__ == "__main__":
    main()
