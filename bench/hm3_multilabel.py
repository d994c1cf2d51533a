"""H-M^3 against the per-node SVM and H-SVM baselines (Rousu et al. 2006, Table 2 and 3) on enron_corr
and FunCat derisi_FUN, the objective-vs-time curves for iteration limits 1, 10 and 50 (Fig. 3), and
dynamic programming against LP direction finding (Fig. 3's LIPSOL curve, here HiGHS through scipy).

All methods use C = 1 as in the paper.  enron_corr: linear kernel on unit-norm binary word vectors;
derisi_FUN (numeric, standardised): RBF kernel with w = 1/d.  H-M^3 is trained with ℓ_Δ and with
ℓ_H̃-subtree, each until the relative duality gap is below --gap-tol or --hm3-seconds have passed.
Scores: ℓ_0/1 (%), ℓ_Δ, ℓ_H̃ (uniform / sibling / subtree), micro P / R / F1 (%) and per-level
P / R / F1, training time.

Usage: python bench/hm3_multilabel.py [--sets enron_corr derisi_FUN] [--hm3-seconds 120] [--curve-seconds 40]
       [--skip-curves] [--skip-table]
Needs ../shared/data.  Prints tables and a final JSON line.
"""

from __future__ import annotations

import argparse
import json
import time

from smoke import SMOKE_HELP, skip_without_data  # noqa: E402

from gpmodels.baselines.hm3.node_svms import fit_node_svms
from gpmodels.baselines.hm3.solver import HM3Options, fit_hm3
from gpmodels.data.multilabel_sets import load_multilabel
from gpmodels.data.scaling import scale_features
from gpmodels.kernels import RBF, Linear
from gpmodels.scoring.multilabel import multilabel_report

COLS = ["zero_one", "delta", "htilde_uniform", "htilde_sibling", "htilde_subtree", "precision", "recall", "f1"]


def _row(name, rep, secs):
    return (
        f"{name:<16}{100 * rep['zero_one']:>7.1f}{rep['delta']:>8.3f}{rep['htilde_uniform']:>8.3f}"
        f"{rep['htilde_sibling']:>8.3f}{rep['htilde_subtree']:>8.3f}{100 * rep['precision']:>7.1f}"
        f"{100 * rep['recall']:>7.1f}{100 * rep['f1']:>7.1f}{secs:>9.1f}"
    )


def run_set(name, a):
    d = load_multilabel(name, validation="drop")
    if name == "enron_corr":
        X, Xt = scale_features("unit_norm", d.X_train, d.X_test)
        kern = Linear()
    else:
        X, Xt = d.X_train, d.X_test
        kern = RBF(w=1.0 / X.shape[1])
    tree, Y, Yt = d.tree, d.Y_train, d.Y_test
    res = {}
    print(f"\n{name}: {X.shape[0]} train, {Xt.shape[0]} test, {tree.n_nodes} nodes, depth {int(tree.depth.max())}")
    print(
        f"{'method':<16}{'l0/1%':>7}{'lD':>8}{'lH~uni':>8}{'lH~sib':>8}{'lH~sub':>8}"
        f"{'P%':>7}{'R%':>7}{'F1%':>7}{'train s':>9}"
    )
    for mode, label in (("flat", "SVM"), ("hierarchical", "H-SVM")):
        t = time.perf_counter()
        s = fit_node_svms(kern, X, Y, tree, C=1.0, mode=mode)
        secs = time.perf_counter() - t
        rep = multilabel_report(Yt, s.predict(Xt), tree)
        res[label] = {**rep, "seconds": secs}
        print(_row(label, rep, secs))
    for loss, scaling, label in (("delta", "uniform", "H-M3-lD"), ("htilde", "subtree", "H-M3-lH~")):
        t = time.perf_counter()
        m = fit_hm3(
            kern,
            X,
            Y,
            tree,
            HM3Options(
                C=1.0,
                loss=loss,
                scaling=scaling,
                iteration_limit=10,
                gap_tol=a.gap_tol,
                max_passes=100000,
                max_seconds=a.hm3_seconds,
            ),
        )
        secs = time.perf_counter() - t
        rep = multilabel_report(Yt, m.predict(Xt), tree)
        r = m.result
        res[label] = {**rep, "seconds": secs, "rel_gap": r.gap / r.primal, "passes": r.passes}
        print(_row(label, rep, secs) + f"   (rel. gap {r.gap / r.primal:.3f}, {r.passes} passes)")
    print("per-level P / R / F1 (%):")
    for label, rep in res.items():
        lv = "  ".join(
            f"L{k}: {100 * rep[f'level{k}_precision']:.0f}/{100 * rep[f'level{k}_recall']:.0f}/"
            f"{100 * rep[f'level{k}_f1']:.0f}"
            for k in range(1, int(tree.depth.max()) + 1)
        )
        print(f"  {label:<10} {lv}")
    return res, (kern, X, Y, tree)


def curves(kern, X, Y, tree, a):
    out = {}
    print(f"\nobjective vs time on enron_corr (dual objective; {a.curve_seconds:.0f} s each)")
    for label, opts in [
        (
            f"DP, limit {lim}",
            HM3Options(iteration_limit=lim, max_seconds=a.curve_seconds, gap_tol=1e-4, max_passes=100000),
        )
        for lim in (1, 10, 50)
    ] + [
        (
            "LP (HiGHS), limit 1",
            HM3Options(
                iteration_limit=1,
                direction="lp",
                max_seconds=a.curve_seconds,
                gap_tol=1e-4,
                chunk_size=50,
                max_passes=100000,
            ),
        )
    ]:
        m = fit_hm3(kern, X, Y, tree, opts)
        tr = [(rec["seconds"], rec["dual"], rec["gap"] / max(rec["primal"], 1e-300)) for rec in m.result.trace]
        out[label] = tr
        marks = [t for t in (1, 2, 5, 10, 20, 40, 80) if t <= a.curve_seconds]
        vals = []
        for t in marks:
            before = [d for s, d, _ in tr if s <= t]
            vals.append(before[-1] if before else float("nan"))
        print(
            f"  {label:<22}"
            + "  ".join(f"{t:>3}s: {v:>9.2f}" for t, v in zip(marks, vals))
            + f"   final rel. gap {tr[-1][2]:.3f}"
        )
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", nargs="+", default=["enron_corr", "derisi_FUN"])
    ap.add_argument("--hm3-seconds", type=float, default=120.0)
    ap.add_argument("--curve-seconds", type=float, default=40.0)
    ap.add_argument("--gap-tol", type=float, default=0.01)
    ap.add_argument("--skip-curves", action="store_true")
    ap.add_argument("--skip-table", action="store_true", help="only the enron_corr curves")
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = ap.parse_args()
    if a.smoke:
        if skip_without_data("hm3_multilabel", "enron_corr"):
            return
        vars(a).update(sets=["enron_corr"], hm3_seconds=2.0, curve_seconds=1.0, skip_curves=True)
    out = {}
    enron = None
    for name in a.sets:
        if a.skip_table:
            if name == "enron_corr":
                d = load_multilabel(name)
                X, _ = scale_features("unit_norm", d.X_train, d.X_test)
                enron = (Linear(), X, d.Y_train, d.tree)
            continue
        out[name], ctx = run_set(name, a)
        if name == "enron_corr":
            enron = ctx
    if enron is not None and not a.skip_curves:
        out["curves_enron"] = curves(*enron, a)
    print(json.dumps(out, default=float))


if __name__ == "__main__":
    main()
