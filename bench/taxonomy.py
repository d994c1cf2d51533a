"""Many classes in a taxonomy: the synthetic WIPO-alpha sections and CLINC150 (Seeger NIPS 2007, Sec. 6.2; issue 40).

1. Synthetic sections (``gpmodels.data.taxonomy``) from D's size (n = 1140, C = 160, P = 187) to B's (n = 9794,
   C = 1172, P = 1319): ``--sizes D 0.5 B`` (a preset or t in [0, 1] between them).  Linear kernel on unit-norm
   sparse bag-of-words, F1 (flat, one v) and H1 (ANOVA, one v per level), v = 5 and σ² = 0.01 as the paper
   starts.  Per model: the final fit with the paper's settings (F1: k1 = 25, k2 = 12; H1: k1 = 30, k2 = 17) and
   one CV evaluation's time per fold (F1: k1 = 8, k2 = 4, k3 = 15; H1: k1 = 10, k2 = 4, k3 = 25; 5 folds, from
   α = 0, one fold after the other in this process, so a cold fold: the paper's folds were warm-started), their
   MVMs, the process's peak resident memory, and the ratio to Table 2's seconds (sizes D and B only); X in the
   feature form, stored as ``--dtype`` (float64; float32 halves the bytes the products stream).  Test
   scores of the final fits (acc, prec, pacc and taxo by their Bayes rules, hierarchical F1, log loss) beside
   peers on the same data: LinearSVC, LogisticRegression and, when ``hiclass`` is installed (the ``bench``
   extra), HiClass's local classifier per parent node (LogisticRegression at every parent).  ``--learn N``
   first learns F1's and H1's variances by the CV criterion (the default stopping rules, at most N outer
   iterations), prints every outer iteration, and scores the learned ones.
2. ``--clinc``: CLINC150 end to end — specs/clinc150-flat-cv.yaml and specs/clinc150-hier-cv.yaml (CV-learned
   flat and per-level ANOVA variances on the specs' tf-idf rows, learning + final fit timed) against LinearSVC,
   LogisticRegression and LinearSVC + CalibratedClassifierCV on the same rows, and LinearSVC and
   LogisticRegression on unit-norm counts (the paper's representation, where LinearSVC does best).  The goals
   (issue 40): ANOVA accuracy >= the better LinearSVC's, log loss below the calibrated SVM's, taxo-loss and
   parent accuracy better than the flat model's, learning + final fit <= 10 minutes.

Times are wall clock on whatever else the machine runs: the header prints the load average (``uptime``); compare
ratios and MVM counts rather than seconds on a shared machine.  ``--smoke``: a tiny taxonomy and a small CLINC150
run with one outer iteration, in seconds (the bench test).  Prints tables and a final JSON line.

Usage: python bench/taxonomy.py [--sizes D 0.5 B] [--priors F1 H1] [--folds-timed K] [--no-final] [--dtype float32]
       [--learn N] [--clinc [--clinc-subset small]] [--no-peers] [--smoke]
"""

from __future__ import annotations

import gpmodels  # noqa: F401  (first: its OpenBLAS setting must precede numpy's import)

# isort: split

import argparse
import json
import os
import resource
import sys
import time
from operator import itemgetter
from pathlib import Path

import attrs
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpmodels import metrics as M  # noqa: E402
from gpmodels.data.scaling import scale_features  # noqa: E402
from gpmodels.data.splits import kfold_partition  # noqa: E402
from gpmodels.data.taxonomy import WIPO_SECTIONS, TaxonomySize, synthetic_taxonomy, taxonomy_size  # noqa: E402
from gpmodels.driver.build import build_learn_options, build_likelihood, build_prior, cv_partition  # noqa: E402
from gpmodels.driver.build_data import build_data, build_tree  # noqa: E402
from gpmodels.driver.loader import load_spec  # noqa: E402
from gpmodels.hierarchy import ClassTree  # noqa: E402
from gpmodels.inference.cv.criterion import cv_criterion, planned  # noqa: E402
from gpmodels.inference.cv.fold import evaluate_fold  # noqa: E402
from gpmodels.inference.cv.learn import LearnOptions, fit_learned, learn_hyperparameters  # noqa: E402
from gpmodels.inference.cv.options import CVOptions  # noqa: E402
from gpmodels.inference.cv.partition import fold_tasks  # noqa: E402
from gpmodels.inference.map.newton import NewtonOptions  # noqa: E402
from gpmodels.inference.map.newton_cg import newton_cg  # noqa: E402
from gpmodels.kernels.linear import Linear  # noqa: E402
from gpmodels.kernels.representations import RepresentationConfig  # noqa: E402
from gpmodels.likelihoods.softmax import Softmax  # noqa: E402
from gpmodels.priors.anova import ANOVAPrior  # noqa: E402
from gpmodels.priors.independent import IndependentGP  # noqa: E402
from gpmodels.scoring.decisions import max_expected_parent_accuracy, min_expected_taxo  # noqa: E402
from gpmodels.scoring.hierarchical_prf import hierarchical_prf  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: Seeger NIPS 2007, Sec. 6.2: (k1, k2) of the final fit and (k1, k2, k3) of a CV fold, per method
PAPER_SETTINGS = {"F1": {"final": (25, 12), "fold": (8, 4, 15)}, "H1": {"final": (30, 17), "fold": (10, 4, 25)}}
#: Table 2: seconds of the final fit and of one CV fold, on one 2.33 GHz core of 2007
TABLE2 = {
    "D": {"F1": {"final": 56.3, "fold": 9.32}, "H1": {"final": 118.5, "fold": 20.2}},
    "B": {"F1": {"final": 3751.0, "fold": 873.0}, "H1": {"final": 8657.0, "fold": 1720.0}},
}
SMOKE_SIZE = TaxonomySize(90, (3, 8, 30))


def _peak_rss_gib() -> float:
    """Peak resident memory of this process so far (ru_maxrss, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _prior(name: str, tree: ClassTree, variance: float, dtype: str):
    """F1 or H1 (Sec. 6.2) with the linear kernel in its feature form, X stored as ``dtype``."""
    rep = RepresentationConfig(kind="features", dtype=dtype)
    if name == "F1":
        return IndependentGP(Linear(), sharing="tied", variance=variance, sigma2=0.01, representation=rep)
    return ANOVAPrior(tree, Linear(), sharing="level", variance=variance, sigma2=0.01, representation=rep)


def scores_of(P, y, tree: ClassTree) -> dict:
    """acc, prec, pacc and taxo by their Bayes rules (Sec. 6.2, footnote 8), hierarchical F1, log loss."""
    y_taxo = min_expected_taxo(P, tree)
    return {
        "acc": M.accuracy(P, y),
        "prec": M.prec(P, y),
        "pacc": M.parent_accuracy(max_expected_parent_accuracy(P, tree), y, tree),
        "taxo": M.taxo_loss(y_taxo, y, tree),
        "hier_f1": hierarchical_prf(y, y_taxo, tree)["hF"],
        "log_loss": M.log_loss(P, y),
    }


def _decision_scores(S, y, tree: ClassTree) -> dict:
    """Scores of a peer without probabilities: argmax decisions, ranks by the decision values."""
    pred = np.argmax(S, axis=1)
    return {
        "acc": float(np.mean(pred == y)),
        "prec": M.prec(S - S.min(axis=1, keepdims=True), y),
        "pacc": M.parent_accuracy(pred, y, tree),
        "taxo": M.taxo_loss(pred, y, tree),
        "hier_f1": hierarchical_prf(y, pred, tree)["hF"],
        "log_loss": None,
    }


def _timed(fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def peers(
    Xtr, ytr, Xte, yte, tree: ClassTree, *, calibrated: bool = False, hiclass: bool = True, logistic: bool = True
) -> dict:
    """LinearSVC, LogisticRegression (and LinearSVC + CalibratedClassifierCV, HiClass) on the same data."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    out = {}
    svc, t = _timed(lambda: LinearSVC(C=1.0).fit(Xtr, ytr))
    out["LinearSVC"] = {**_decision_scores(svc.decision_function(Xte), yte, tree), "fit_seconds": t}
    if logistic:
        lr, t = _timed(lambda: LogisticRegression(C=10.0, max_iter=300).fit(Xtr, ytr))
        out["LogisticRegression"] = {**scores_of(lr.predict_proba(Xte), yte, tree), "fit_seconds": t}
    if calibrated:
        cal, t = _timed(lambda: CalibratedClassifierCV(LinearSVC(C=1.0), cv=3).fit(Xtr, ytr))
        out["LinearSVC+Calibrated"] = {**scores_of(cal.predict_proba(Xte), yte, tree), "fit_seconds": t}
    if hiclass:
        try:
            from hiclass import LocalClassifierPerParentNode
        except ImportError:
            return out
        paths = np.array([[tree.nodes[p] for p in tree.path(int(leaf))] for leaf in tree.leaves])
        clf = LocalClassifierPerParentNode(local_classifier=LogisticRegression(C=10.0, max_iter=300), n_jobs=1)
        _, t = _timed(lambda: clf.fit(Xtr, paths[ytr]))
        leaf_of = {name: c for c, name in enumerate(tree.classes)}
        pred = np.array([leaf_of.get(row[-1], -1) for row in clf.predict(Xte)])
        pred = np.where(pred < 0, 0, pred)  # a prediction that stops above the leaves counts as leaf 0's
        out["HiClass-LCPN"] = {**_decision_scores(np.eye(tree.n_classes)[pred], yte, tree), "fit_seconds": t}
        out["HiClass-LCPN"]["prec"] = None  # ranks need scores for every leaf, which LCPN does not give
    return out


def _section(size_arg: str, smoke: bool):
    if smoke:
        return "smoke", SMOKE_SIZE
    try:
        t = float(size_arg)
    except ValueError:
        return size_arg, taxonomy_size(size_arg)
    return f"t={t:g}", taxonomy_size(t)


def _fold_time(op, lik, Y, folds, k: tuple, timed: int) -> dict:
    """One CV fold's mean seconds and MVMs: over the whole Ψ evaluation (``timed`` = the folds), else over the
    first ``timed`` folds alone, each refit, held out and accumulated as the evaluation would (its plan)."""
    k1, k2, k3 = k
    opts = CVOptions(newton=NewtonOptions(max_iter=k1, cg_max_iter=k2), k3=k3, fail_tol=1e6)
    if timed >= len(folds):
        ev, t = _timed(cv_criterion, op, lik, Y, folds, opts)
        return {
            "fold_seconds": t / len(folds),
            "fold_mvms": ev.mvm_count / len(folds),
            "psi": ev.psi,
            "timed": len(folds),
        }
    plan, opts = planned(op, lik, folds, opts)
    tasks = fold_tasks(folds, op.n_points, op.n_classes, None)
    runs = [_timed(evaluate_fold, tasks[j], op, lik, Y, opts, True, plan) for j in range(timed)]
    mvms = [r.fit_mvms + r.accumulation_mvms for r, _ in runs]
    return {"fold_seconds": sum(t for _, t in runs) / timed, "fold_mvms": sum(mvms) / timed, "timed": timed}


def _learned(op, lik, Y, folds, k_fold, k_final, iters: int):
    k1, k2, k3 = k_fold
    opts = LearnOptions(
        cv=CVOptions(newton=NewtonOptions(max_iter=k1, cg_max_iter=k2), k3=k3, fail_tol=1e6),
        outer=attrs.evolve(LearnOptions().outer, max_iter=iters),  # its stopping rules, at most iters
        final=NewtonOptions(max_iter=k_final[0], cg_max_iter=k_final[1]),
    )

    def progress(r):
        print(
            f"  learning: outer iteration {r.iteration}, Ψ = {r.value:.6g}, max|∇Ψ| = {r.grad_norm:.3g}, "
            f"{r.evaluations} evaluation(s) in {r.seconds:.1f} s, {r.elapsed:.1f} s in all, log variances "
            f"{np.round(r.x, 3).tolist()}",
            flush=True,
        )

    res, t = _timed(learn_hyperparameters, op, lik, Y, folds, opts, on_iteration=progress)
    model, tf = _timed(fit_learned, res, lik, Y, opts)
    return model, {
        "learning_seconds": t,
        "final_fit_seconds": tf,
        "learned": res.hyperparameters(),
        "evaluations": len(res.evaluations),
        "learning_converged": bool(res.converged),
        "learning_message": res.message,
    }


def run_section(size_arg: str, a) -> dict:
    label, size = _section(size_arg, a.smoke)
    kw = {"vocab": 3000, "terms_per_doc": 30, "topic_terms": 100} if a.smoke else {}
    data, t_gen = _timed(lambda: synthetic_taxonomy(size, seed=a.seed, **kw))
    Xtr, _ = scale_features("unit_norm", data.X_train)
    Xte, _ = scale_features("unit_norm", data.X_test)
    tree, lik = data.tree, Softmax()
    Y = np.eye(tree.n_classes)[data.y_train]
    folds = kfold_partition(size.n, 5, a.seed, y=data.y_train)
    print(
        f"\n== section {label}: n = {size.n}, C = {size.n_classes}, P = {size.n_nodes}, {Xtr.shape[1]} terms, "
        f"{Xtr.nnz / size.n:.0f} per document; generated in {t_gen:.1f} s",
        flush=True,
    )
    out = {"label": label, "n": size.n, "C": size.n_classes, "P": size.n_nodes, "models": {}}
    paper = TABLE2.get(size_arg) if not a.smoke else None
    for name in a.priors:
        op = _prior(name, tree, a.variance, a.dtype).operator(Xtr, tree.n_classes)
        k = PAPER_SETTINGS[name]
        rec = _fold_time(op, lik, Y, folds, k["fold"], a.folds_timed) if a.folds_timed else {}
        if not a.no_final:
            final = NewtonOptions(max_iter=k["final"][0], cg_max_iter=k["final"][1])
            res, t = _timed(newton_cg, op, lik, Y, final)
            rec.update(final_seconds=t, final_mvms=res.diagnostics.mvm_count, final_converged=res.diagnostics.converged)
            P = lik.predict(op.cross_test(Xte).mvm(res.alpha))
            rec["scores"] = scores_of(P, data.y_test, tree)
        if a.learn:
            model, learned = _learned(op, lik, Y, folds, k["fold"], k["final"], a.learn)
            rec.update(learned)
            rec["learned_scores"] = scores_of(model.predict_proba(Xte), data.y_test, tree)
            print(
                f"{name} CV learning: {rec['learning_seconds']:.1f} s, {rec['evaluations']} Ψ evaluations "
                f"({rec['learning_message']}); final fit {rec['final_fit_seconds']:.1f} s; learned {rec['learned']}",
                flush=True,
            )
        rec["peak_rss_gib"] = _peak_rss_gib()
        parts = []
        for what, label in (("final", "final fit"), ("fold", "one CV fold")):
            if f"{what}_seconds" not in rec:
                continue
            line = f"{label} {rec[f'{what}_seconds']:.1f} s ({rec[f'{what}_mvms']:.0f} MVMs)"
            if what == "fold" and rec["timed"] < len(folds):
                line += f", mean of the first {rec['timed']} of {len(folds)} folds"
            if paper:
                rec[f"{what}_ratio_to_table2"] = paper[name][what] / rec[f"{what}_seconds"]
                line += f", Table 2 {paper[name][what]:g} s: {rec[f'{what}_ratio_to_table2']:.1f}x faster"
            parts.append(line)
        out["models"][name] = rec
        print(f"{name}: {'; '.join(parts)}; peak RSS {rec['peak_rss_gib']:.2f} GiB", flush=True)
    if not a.no_peers:
        out["peers"] = peers(Xtr, data.y_train, Xte, data.y_test, tree, hiclass=not a.smoke, logistic=not a.smoke)
    _score_table(out)
    return out


def _score_table(out: dict) -> None:
    rows = [(f"{n} (v = start)", r["scores"]) for n, r in out["models"].items() if "scores" in r]
    rows += [(f"{n} (CV-learned)", r["learned_scores"]) for n, r in out["models"].items() if "learned_scores" in r]
    rows += list(out.get("peers", {}).items())
    print(f"{'model':26s} {'acc':>6s} {'prec':>6s} {'pacc':>6s} {'taxo':>6s} {'hF1':>6s} {'logloss':>8s} {'fit s':>7s}")
    for name, s in rows:

        def f(key, width=6, s=s):
            return f"{s[key]:{width}.3f}" if s.get(key) is not None else " " * (width - 1) + "-"

        print(
            f"{name:26s} {f('acc')} {f('prec')} {f('pacc')} {f('taxo')} {f('hier_f1')} {f('log_loss', 8)} "
            f"{f('fit_seconds', 7)}"
        )


def _clinc_spec(name: str, a):
    spec, base = load_spec(ROOT / "specs" / f"{name}.yaml")
    if a.clinc_subset and not a.smoke:
        spec = attrs.evolve(spec, data=attrs.evolve(spec.data, subset=a.clinc_subset))
    if a.smoke:
        spec = attrs.evolve(spec, data=attrs.evolve(spec.data, subset="small", max_train=450, max_test=300))
        cv = spec.objective.cv
        cv = attrs.evolve(
            cv,
            folds=3,
            fail_tol=1e6,  # a smoke run's short refits do not converge; it checks that the path runs
            newton=attrs.evolve(cv.newton, max_iter=3, cg_max_iter=10),
            outer=attrs.evolve(cv.outer, max_iter=1, max_evaluations=2),
        )
        newton = attrs.evolve(spec.objective.newton, max_iter=3, cg_max_iter=10)
        spec = attrs.evolve(spec, objective=attrs.evolve(spec.objective, cv=cv, newton=newton))
    return spec, base


def run_clinc(a) -> dict:
    """The two CLINC150 specs' models learned and fitted (as ``gpmodels run`` does), against the SVM peers."""
    out = {"models": {}}
    for label, name in (("flat (F1, CV)", "clinc150-flat-cv"), ("ANOVA (H1, CV)", "clinc150-hier-cv")):
        spec, base = _clinc_spec(name, a)
        data = build_data(spec, base)
        tree = build_tree(spec, data, base)
        C = data.n_classes
        op = build_prior(spec.model, data.X_train, base, tree=tree).operator(data.X_train, C)
        lik, opts = build_likelihood(spec.model), build_learn_options(spec.objective)
        Y = np.eye(C)[data.y_train]
        folds = cv_partition(spec, data.y_train)
        res, t = _timed(learn_hyperparameters, op, lik, Y, folds, opts)
        model, tf = _timed(fit_learned, res, lik, Y, opts)
        rec = {
            **scores_of(model.predict_proba(data.X_test), data.y_test, tree),
            "learning_seconds": t,
            "final_fit_seconds": tf,
            "fit_seconds": t + tf,
            "learned": res.hyperparameters(),
            "outer_iterations": res.outer.iteration,
            "evaluations": len(res.evaluations),
            "fold_mvms": int(sum(e.mvms for e in res.evaluations)),
            "final_fit_mvms": model.result.diagnostics.mvm_count,
            "peak_rss_gib": _peak_rss_gib(),
        }
        out["models"][label] = rec
        print(
            f"CLINC150 {label}: learning {t:.1f} s ({rec['evaluations']} Ψ evaluations, {rec['fold_mvms']} fold MVMs), "
            f"final fit {tf:.1f} s ({rec['final_fit_mvms']} MVMs), learned {rec['learned']}",
            flush=True,
        )
    out["peers"] = peers(
        data.X_train,
        data.y_train,
        data.X_test,
        data.y_test,
        tree,
        calibrated=not a.smoke,
        hiclass=False,
        logistic=not a.smoke,
    )
    if spec.data.scaling != "unit_norm":  # the peers also on the paper's representation, where LinearSVC does best
        counts = build_data(attrs.evolve(spec, data=attrs.evolve(spec.data, scaling="unit_norm")), base)
        unit = peers(
            counts.X_train, counts.y_train, counts.X_test, counts.y_test, tree, hiclass=False, logistic=not a.smoke
        )
        out["peers"].update({f"{name} (unit_norm)": rec for name, rec in unit.items()})
    print(f"\n== CLINC150 ({data.name}): n = {data.y_train.size}, {data.y_test.size} test, C = {C}, P = {tree.n_nodes}")
    _score_table({"models": {}, "peers": {**out["models"], **out["peers"]}})
    h, f = out["models"]["ANOVA (H1, CV)"], out["models"]["flat (F1, CV)"]
    svc = max(
        (rec for name, rec in out["peers"].items() if name.startswith("LinearSVC") and "+" not in name),
        key=itemgetter("acc"),
    )
    cal = out["peers"].get("LinearSVC+Calibrated")  # not in a smoke run (its 3 x 150 sigmoid fits take long)
    out["goals"] = {
        "anova_acc_ge_linearsvc": h["acc"] >= svc["acc"],
        "anova_logloss_below_calibrated_svc": None if cal is None else h["log_loss"] < cal["log_loss"],
        "anova_taxo_below_flat": h["taxo"] < f["taxo"],
        "anova_pacc_above_flat": h["pacc"] > f["pacc"],
        "anova_learning_plus_fit_le_600s": h["fit_seconds"] <= 600.0,
    }
    said = {True: "met", False: "NOT met", None: "not measured"}
    print("goals:", ", ".join(f"{k} {said[v]}" for k, v in out["goals"].items()), flush=True)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", nargs="*", default=["D"], help="D, B or t in [0, 1] between them (default: D)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variance", type=float, default=5.0, help="v of every class / level (the paper's start: 5)")
    p.add_argument("--learn", type=int, default=0, help="also learn F1/H1 variances by this many outer iterations")
    p.add_argument("--clinc", action="store_true", help="CLINC150 end to end (CV-learned flat and ANOVA, peers)")
    p.add_argument("--clinc-subset", default=None, choices=["small"], help="CLINC150's small subset (3000 / 1500)")
    p.add_argument("--no-peers", action="store_true", help="skip LinearSVC / LogisticRegression / HiClass")
    p.add_argument("--priors", nargs="+", default=["F1", "H1"], choices=["F1", "H1"], help="the priors to fit")
    p.add_argument(
        "--folds-timed", type=int, default=5, help="time the whole CV evaluation (5), its first K folds, or none (0)"
    )
    p.add_argument("--no-final", action="store_true", help="skip the final fits (and their test scores)")
    p.add_argument(
        "--dtype",
        default="float64",
        choices=["float64", "float32"],
        help="storage of the synthetic sections' X, X^T and intermediate (sums in float64 either way)",
    )
    p.add_argument("--smoke", action="store_true", help="a tiny taxonomy and a small CLINC150 run, in seconds")
    a = p.parse_args(argv)
    load = os.getloadavg()
    print(
        f"bench/taxonomy.py: load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores; "
        f"sizes {a.sizes}; WIPO presets {dict((k, attrs.astuple(v)) for k, v in WIPO_SECTIONS.items())}",
        flush=True,
    )
    result = {"bench": "taxonomy", "load_average": load, "smoke": a.smoke, "sections": []}
    for size in a.sizes[:1] if a.smoke else a.sizes:
        result["sections"].append(run_section(size, a))
    if a.clinc or a.smoke:
        if (ROOT.parent / "shared" / "data" / "clinc150").is_dir() or os.environ.get("GPMODELS_DATA"):
            result["clinc150"] = run_clinc(a)
        else:
            print("CLINC150: no ../shared/data/clinc150 here; skipped", flush=True)
    result["peak_rss_gib"] = _peak_rss_gib()
    print(json.dumps(result, default=float))


if __name__ == "__main__":
    main()
