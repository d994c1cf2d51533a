"""Learning a class coupling B / factor loadings by the CV criterion Ψ (Seeger 2008, Sec. 7.4.1) on satimage.

Three models, learned by the same ∇Ψ = grad_trace(E, F) machinery on the same 5-partition, then
refit on all training data and scored on the test set:

  tied      independent GPs, one RBF kernel and one variance for all classes (2 hyperparameters);
  coupled   K(B) = (B ⊗ I) K (Bᵀ ⊗ I) with a square B started at the identity (= the tied model),
            so Ψ can only go down from tied's starting point; C² + 2 hyperparameters;
  loadings  B of size C x p (p = --factors, seeded random contrasts orthogonal to 1), p latent
            processes.  (p = 3 on a 300-point subsample: the first Ψ evaluation failed, the inner
            fits not converging with two contrast directions of zero prior variance.)

Set-up as specs/satimage-cv.yaml (RBF, w started at 1 / Σ_j Var[x_j], v = 10, σ² = 16 fixed,
learning k1 = 13, k2 = 25, k3 = 40; final fit k1 = 30, k2 = 50), on a stratified subsample of
--max-train training points (default 1500) to keep the C² + 2 hyperparameters affordable.
Prints per model Ψ at the start and at the end, the outer iterations, evaluations, learning
time, test error and log-loss, the learned B B^T as a correlation matrix, and a final JSON line.

Usage: python bench/coupling_cv.py [--max-train 1500] [--factors 4] [--max-iter 30]
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
from cv_common import learn_and_evaluate  # noqa: E402
from smoke import SMOKE_HELP, skip_without_data  # noqa: E402

from gpmodels.data.splits import kfold_partition  # noqa: E402
from gpmodels.driver.build import build_learn_options, build_likelihood, resolve_model  # noqa: E402
from gpmodels.driver.build_data import build_data  # noqa: E402
from gpmodels.driver.loader import load_spec  # noqa: E402
from gpmodels.kernels.rbf import RBF  # noqa: E402
from gpmodels.priors.coupled import CoupledPrior  # noqa: E402
from gpmodels.priors.independent import IndependentGP  # noqa: E402

SPEC = Path(__file__).resolve().parent.parent / "specs" / "satimage-cv.yaml"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-train", type=int, default=1500)
    ap.add_argument("--factors", type=int, default=4)
    ap.add_argument("--max-iter", type=int, default=30)
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = ap.parse_args(argv)
    if args.smoke:
        if skip_without_data("coupling_cv", "satimage"):
            return
        vars(args).update(max_train=150, factors=2, max_iter=2)

    spec, base = load_spec(SPEC)
    cv = spec.objective.cv
    cv = attrs.evolve(cv, outer=attrs.evolve(cv.outer, max_iter=args.max_iter), checkpoint=False)
    spec = attrs.evolve(
        spec, data=attrs.evolve(spec.data, max_train=args.max_train), objective=attrs.evolve(spec.objective, cv=cv)
    )
    data = build_data(spec, base)
    model = resolve_model(spec.model, data.X_train)
    w, v, s2 = float(model.kernel.w), float(model.variance), float(model.sigma2)
    C = data.n_classes
    likelihood = build_likelihood(model)
    options = build_learn_options(spec.objective)
    folds = kfold_partition(data.y_train.size, spec.objective.cv.folds, 0, y=data.y_train)
    print(f"satimage: {data.y_train.size} train, {data.y_test.size} test, C = {C}; w0 = {w:.3g}, v0 = {v}, σ² = {s2}")

    priors = {
        "tied": IndependentGP(RBF(w), "tied", v, s2),
        "coupled": CoupledPrior(RBF(w), init="identity", variance=v, sigma2=s2),
        "loadings": CoupledPrior(RBF(w), n_factors=args.factors, init="random", variance=v, sigma2=s2, seed=0),
    }
    rows = {}
    for name, prior in priors.items():
        n_hyp = prior.operator(data.X_train[:5], C).params.size
        t = time.perf_counter()
        r = learn_and_evaluate(prior, likelihood, data, folds, options, say=lambda s: None, label=name)
        r.update({"hyperparameter_count": n_hyp, "wall_seconds": time.perf_counter() - t})
        rows[name] = r
        hist = r.pop("history")
        r["psi_start"], r["psi_end"] = hist[0], hist[-1]
        print(
            f"{name:9s} {n_hyp:3d} hyp.: Ψ {hist[0]:.5g} -> {hist[-1]:.5g} in {r['outer_iterations']} iterations, "
            f"{r['evaluations']} evaluations ({r['failed_evaluations']} failed), learning "
            f"{r['learning_seconds']:.1f} s; "
            f"test error {100 * r['test_error']:.2f} %, log-loss {r['test_log_loss']:.4f}",
            flush=True,
        )
        if name != "tied":
            hyp = r["hyperparameters"]
            B = np.array(
                [[hyp[f"B[{c},{j}]"] for j in range(C if name == "coupled" else args.factors)] for c in range(C)]
            )
            S = B @ B.T
            d = np.sqrt(np.diag(S))
            print("  learned class correlation B Bᵀ / (d dᵀ):")
            for row in S / np.outer(d, d):
                print("   " + " ".join(f"{x:6.2f}" for x in row))
    print(
        json.dumps(
            {
                "bench": "coupling_cv",
                "max_train": args.max_train,
                "factors": args.factors,
                "results": {k: {kk: vv for kk, vv in r.items() if kk != "hyperparameters"} for k, r in rows.items()},
            },
            default=float,
        )
    )


if __name__ == "__main__":
    main()
