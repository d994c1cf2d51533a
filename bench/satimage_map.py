"""MAP fit of specs/satimage-map.yaml against scikit-learn's GaussianProcessClassifier, in one run.

Both fit the same model class at the same fixed hyperparameters: an RBF kernel
v exp(-(w/2)||x - x'||^2) with v = 10, w = 1 / Σ_j Var[x_j], plus a constant kernel σ² = 16 (the
intercept prior).  gpmodels fits the joint softmax model by Newton–CG (Seeger 2008, Alg. 1);
scikit-learn fits one binary Laplace GP per class (one-vs-rest, its only multi-class mode) with
``optimizer=None``.  Reported: fit times (kernel construction included for both) and their ratio,
both test errors, our MVMs, and the MVMs our Newton–CG needed to come within a relative Φ gap of
1e-6 of the exact solution (exact Newton, App. C, run here as the reference).

Needs scikit-learn (a core dependency) and ../shared/data.
Usage: python bench/satimage_map.py [--max-train N] [--skip-exact]
Prints a table and a final JSON line.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import attrs
import numpy as np
from cv_common import spec_problem
from smoke import SMOKE_HELP, skip_without_data  # noqa: E402

from gpmodels import metrics as M
from gpmodels.driver.build import build_likelihood, build_newton_options, build_prior
from gpmodels.inference.map.exact_newton import exact_newton
from gpmodels.inference.map.newton_cg import NewtonOptions, newton_cg
from gpmodels.validation import labels_to_targets

SPEC = Path(__file__).resolve().parent.parent / "specs" / "satimage-map.yaml"


def mvms_to_gap(diag, phi_star: float, gap: float) -> int | None:
    """Cumulative MVMs when (Φ_k - Φ*) / |Φ*| first fell to ``gap``; None if never."""
    for phi, mvm in zip(diag.phi, diag.mvm_trace):
        if (phi - phi_star) / abs(phi_star) <= gap:
            return mvm
    return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max-train", type=int, default=None, help="subsample the training set (smoke runs)")
    p.add_argument("--skip-exact", action="store_true", help="skip the exact-Newton reference")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = p.parse_args(argv)
    if a.smoke:
        if skip_without_data("satimage_map", "satimage"):
            return
        vars(a).update(max_train=200, skip_exact=True)
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF as SkRBF
    from sklearn.gaussian_process.kernels import ConstantKernel

    spec, base, data, model_spec = spec_problem(SPEC, a.max_train)
    w, v, s2 = model_spec.kernel.w, float(model_spec.variance), model_spec.sigma2
    C = data.n_classes
    Y = labels_to_targets(data.y_train, C)
    lik = build_likelihood(model_spec)
    print(
        f"satimage: {data.y_train.size} train, {data.y_test.size} test; v = {v}, w = {w:.6g}, sigma2 = {s2}", flush=True
    )

    # --- gpmodels: kernel construction + Newton-CG, as `gpmodels run` does
    t0 = time.perf_counter()
    op = build_prior(model_spec, data.X_train, base).operator(data.X_train, C)
    res = newton_cg(op, lik, Y, build_newton_options(spec.objective))
    ours_fit = time.perf_counter() - t0
    P = lik.predict(op.cross_test(data.X_test).mvm(res.alpha))
    ours_err = M.error(P, data.y_test)
    d = res.diagnostics
    print(
        f"gpmodels Newton-CG: fit {ours_fit:.2f} s, {d.iterations} Newton iterations, {d.mvm_count} MVMs, "
        f"test error {100 * ours_err:.2f} %",
        flush=True,
    )

    # --- exact reference and the MVMs to a 1e-6 relative gap
    phi_star = mvm_gap = exact_s = None
    if not a.skip_exact:
        t = time.perf_counter()
        ex = exact_newton(op, lik, Y, NewtonOptions(max_iter=50, grad_tol=1e-10, phi_rtol=0.0))
        exact_s = time.perf_counter() - t
        phi_star = ex.phi
        tight = newton_cg(op, lik, Y, attrs.evolve(build_newton_options(spec.objective), grad_tol=1e-9, phi_rtol=0.0))
        mvm_gap = mvms_to_gap(tight.diagnostics, phi_star, 1e-6)
        print(
            f"exact Newton (App. C): {exact_s:.1f} s, Phi* = {phi_star:.10g}; Newton-CG at the default settings ends "
            f"at relative gap {(res.phi - phi_star) / abs(phi_star):.2e}; MVMs to reach 1e-6: {mvm_gap}",
            flush=True,
        )

    # --- scikit-learn: one-vs-rest binary Laplace GPs, fixed hyperparameters
    kern = ConstantKernel(v, "fixed") * SkRBF(
        length_scale=1.0 / np.sqrt(w), length_scale_bounds="fixed"
    ) + ConstantKernel(s2, "fixed")
    gpc = GaussianProcessClassifier(kernel=kern, optimizer=None)
    t = time.perf_counter()
    gpc.fit(data.X_train, data.y_train)
    sk_fit = time.perf_counter() - t
    sk_err = float(np.mean(gpc.predict(data.X_test) != data.y_test))
    print(
        f"scikit-learn GaussianProcessClassifier (one-vs-rest Laplace, optimizer=None): fit {sk_fit:.2f} s, "
        f"test error {100 * sk_err:.2f} %",
        flush=True,
    )
    ratio = sk_fit / ours_fit
    print(f"fit-time ratio scikit-learn / gpmodels: {ratio:.1f}x (goal >= 10x at <= its test error)", flush=True)
    print(
        json.dumps(
            {
                "bench": "satimage_map",
                "n_train": int(data.y_train.size),
                "n_test": int(data.y_test.size),
                "gpmodels_fit_seconds": ours_fit,
                "gpmodels_test_error": ours_err,
                "gpmodels_mvms": d.mvm_count,
                "gpmodels_newton_iterations": d.iterations,
                "sklearn_fit_seconds": sk_fit,
                "sklearn_test_error": sk_err,
                "fit_time_ratio": ratio,
                "mvms_to_1e-6_gap": mvm_gap,
                "phi_exact": phi_star,
                "phi_newton_cg": res.phi,
                "exact_newton_seconds": exact_s,
            }
        )
    )


if __name__ == "__main__":
    main()
