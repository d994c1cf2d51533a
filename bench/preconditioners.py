"""CG steps of the hierarchical Newton systems: the App. B diagonal preconditioner vs the per-point
block preconditioner vs the low-rank (deflation) preconditioners with the diagonal or with the
per-point blocks for the rest (gpmodels/inference/preconditioners.py).

Seeger 2008 (Sec. 3, 5.1.1) names a better preconditioner for the hierarchical system (5) as future
work.  Two measurements on news20 with the settings of specs/news20-hier.yaml (ANOVA prior, linear
kernel, v = 40, sigma2 = 0.01) and, for reference, specs/news20-flat.yaml:

1. Identical systems: the Newton systems (I + V^T K̃ V) β = V^T u - g̃ at the iterates of an exact
   Newton path (each step solved to 1e-10, pair line search), each solved from β = 0 by PCG with
   every preconditioner; CG steps to relative residual 1e-6 (``--tol``; cap 2000).
2. Whole Newton-CG fits at the spec's settings (k1 = 30, k2 = 50): Newton iterations, total CG steps,
   MVMs, time, and the final Φ (all must agree).

Usage: python bench/preconditioners.py [--subset small] [--ranks 2,8] [--systems 4] [--tol 1e-6]
Prints tables and a final JSON line.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import attrs
import numpy as np
from cv_common import timed_newton_cg
from smoke import SMOKE_HELP, skip_without_data  # noqa: E402

from gpmodels.driver.build import build_likelihood, build_newton_options, build_prior
from gpmodels.driver.build_data import build_data, build_tree
from gpmodels.driver.loader import load_spec
from gpmodels.inference.map.line_search import NewtonPoint, objective, pair_line_search
from gpmodels.inference.map.preconditioners import make_preconditioner
from gpmodels.linalg.arrays import HOST
from gpmodels.linalg.cg import cg

ROOT = Path(__file__).resolve().parent.parent


def _spec(name, subset):
    spec, base = load_spec(ROOT / "specs" / f"{name}.yaml")
    return attrs.evolve(spec, data=attrs.evolve(spec.data, subset=subset)), base


def _system(op, lik, Y, alpha, u):
    g = lik.gradient(u, Y)
    hf = lik.hessian_factor(u, Y)
    rhs = hf.Vt(u) - hf.g_tilde(g)
    if hf.fixed_alpha is not None:
        rhs -= hf.Vt(op.mvm(hf.fixed_alpha))
    return hf, rhs, (lambda x: x + hf.Vt(op.mvm(hf.V(x))))


def newton_path(op, lik, Y, n_systems, exact_pc):
    """Iterates of Newton's method with (nearly) exact directions: (α, u) at each system."""
    n, C = op.n_points, op.n_classes
    alpha, u = np.zeros((n, C)), np.zeros((n, C))
    out = []
    for _ in range(n_systems):
        out.append((alpha.copy(), u.copy()))
        hf, rhs, A = _system(op, lik, Y, alpha, u)
        beta = cg(A, rhs, precondition=exact_pc.inverse(hf).on(HOST, hf), tol=1e-10, max_iter=3000).x
        new = hf.V(beta) + (hf.fixed_alpha if hf.fixed_alpha is not None else 0.0)
        s = new - alpha
        st = op.mvm(s)
        ls = pair_line_search(lik, Y, NewtonPoint(alpha, u, objective(lik, Y, alpha, u), lik.gradient(u, Y)), s, st)
        alpha, u = alpha + ls.step * s, u + ls.step * st
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--subset", default=None, choices=[None, "small"])
    ap.add_argument("--ranks", default="2,8")
    ap.add_argument("--systems", type=int, default=4)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = ap.parse_args()
    if a.smoke:
        if skip_without_data("preconditioners", "news20"):
            return
        vars(a).update(subset="small", ranks="2", systems=1, tol=1e-2)
    ranks = [int(r) for r in a.ranks.split(",")]
    hspec, base = _spec("news20-hier", a.subset)
    fspec, _ = _spec("news20-flat", a.subset)
    data = build_data(hspec, base)
    if a.smoke:  # 20 points per class
        keep = np.concatenate([np.flatnonzero(data.y_train == c)[:20] for c in range(data.n_classes)])
        data = attrs.evolve(data, X_train=data.X_train[keep], y_train=data.y_train[keep])
    tree = build_tree(hspec, data, base)
    C = data.n_classes
    Y = np.eye(C)[data.y_train]
    lik = build_likelihood(hspec.model)
    ops = {
        "hier": build_prior(hspec.model, data.X_train, base, tree=tree).operator(data.X_train, C),
        "flat": build_prior(fspec.model, data.X_train, base).operator(data.X_train, C),
    }
    kinds = [("diagonal", None), ("block", None)] + [(kind, r) for r in ranks for kind in ("lowrank", "lowrank_block")]
    if a.smoke:  # one preconditioner of each family, short fits: the bench's code paths in seconds
        kinds = [("diagonal", None), ("lowrank", ranks[0])]
    label = {k: (k[0] if k[1] is None else f"{k[0]}{k[1]}") for k in kinds}
    print(
        f"news20{'-' + a.subset if a.subset else ''}: n = {data.y_train.size}, C = {C}, P = {tree.n_nodes}", flush=True
    )
    result = {"bench": "preconditioners", "subset": a.subset, "systems": {}, "fits": {}}
    for prior, op in ops.items():
        # ------------------------------------------------------------ 1. identical systems
        t = time.perf_counter()
        pcs = {k: make_preconditioner(k[0], op, rank=k[1] or 8) for k in kinds}
        setup = time.perf_counter() - t
        path = newton_path(op, lik, Y, a.systems, pcs[("lowrank", max(ranks))])
        table = {label[k]: [] for k in kinds}
        for alpha, u in path:
            hf, rhs, A = _system(op, lik, Y, alpha, u)
            for k in kinds:
                res = cg(A, rhs, precondition=pcs[k].inverse(hf).on(HOST, hf), tol=a.tol, max_iter=2000)
                table[label[k]].append(int(res.iterations[0]))  # one system: its CG steps
        print(
            f"\n[{prior}] CG steps per Newton system to relative residual {a.tol:g} (from beta = 0; systems "
            f"1..{a.systems} of an exact Newton path; preconditioner set-up {setup:.1f} s for all kinds):"
        )
        for k in kinds:
            print(f"    {label[k]:16s} {table[label[k]]}  total {sum(table[label[k]])}", flush=True)
        result["systems"][prior] = table
        # ------------------------------------------------------------ 2. whole fits
        print(f"[{prior}] Newton-CG fits at the spec's settings:")
        base_opts = build_newton_options(hspec.objective)
        if a.smoke:
            base_opts = attrs.evolve(base_opts, max_iter=2)
        for k in kinds:
            opts = attrs.evolve(base_opts, preconditioner=k[0], precond_rank=k[1] or 8)
            res, fit = timed_newton_cg(op, lik, Y, opts)
            result["fits"][f"{prior}_{label[k]}"] = fit
            d, dt, dc = res.diagnostics, fit["seconds"], fit["cpu_seconds"]
            print(
                f"    {label[k]:16s} {dt:6.1f} s (CPU {dc:6.1f} s)  {d.iterations:2d} Newton its  "
                f"{sum(d.cg_iterations):4d} CG steps  {d.mvm_count:4d} MVMs  Phi = {res.phi:.8f}  ({d.message})",
                flush=True,
            )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
