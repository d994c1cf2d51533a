"""Runners of the max-margin objectives (``objective.type``: ``crammer_singer``, ``hm3``).

``crammer_singer`` fits the multiclass SVM on a single-label data set and reports the test error
and prec of its scores (it has no probabilities), the objective, the duality gap and the solver's
counters.  ``hm3`` takes a hierarchical multilabel set (enron_corr, *_FUN) or a single-label set
with a hierarchy (news20, imclef07a), whose labels become root-to-leaf paths; it reports the
multilabel scores (``test_zero_one``, ``test_delta``, ``test_htilde_*``, micro and per-level
P/R/F1) and, for single-label data, ``test_error`` of the best single path, the score the softmax
models report on the same data.  ``compare: [svm, hsvm]`` adds the per-node baselines' scores and
times under ``svm_*`` / ``hsvm_*``.  Both save their model (kinds ``crammer_singer`` and ``hm3`` of
:mod:`gpmodels.persistence`: support patterns and dual variables, no pickle), so ``gpmodels predict``
reads it; a Crammer–Singer fit on a precomputed Gram matrix saves none (no kernel function).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from gpmodels.baselines.crammer_singer.solver import fit_crammer_singer
from gpmodels.baselines.hm3.inference import best_labelings, best_single_paths
from gpmodels.baselines.hm3.node_svms import fit_node_svms
from gpmodels.baselines.hm3.solver import fit_hm3
from gpmodels.data.multilabel_sets import MultilabelDataset
from gpmodels.driver.outcome import RunOutcome
from gpmodels.driver.runners.common import prepare_kernel
from gpmodels.driver.sections.spec import Spec
from gpmodels.errors import SpecError
from gpmodels.persistence import save_crammer_singer_model, save_hm3_model
from gpmodels.scoring import metrics as M
from gpmodels.scoring.hierarchical_prf import hierarchical_prf
from gpmodels.scoring.multilabel import multilabel_report, paths_to_multilabels

__all__ = ["run_crammer_singer", "run_hm3"]


def run_crammer_singer(spec: Spec, data, base_dir: Path | None, say) -> RunOutcome:
    """Crammer–Singer multiclass SVM (Crammer & Singer 2001)."""
    if isinstance(data, MultilabelDataset):
        raise SpecError(
            f"crammer_singer needs a single-label data set; {data.name!r} is multilabel (use hm3)", "objective.type"
        )
    problem = prepare_kernel(spec, data, base_dir)
    resolved, kernel = problem.resolved, problem.kernel
    opts = resolved.objective.crammer_singer.options()
    t = time.perf_counter()
    with say.bar(None, "Crammer-Singer: rounds") as bar:  # the rounds that make updates are not known ahead
        model = fit_crammer_singer(
            kernel,
            data.X_train,
            data.y_train,
            opts,
            n_classes=data.n_classes,
            on_iteration=lambda rec: bar.step(max_psi=rec["max_psi"], gap=rec["gap"]),
        )
    fit_seconds = time.perf_counter() - t
    r = model.result
    say(
        f"fit: {r.updates} updates in {r.rounds} rounds, {fit_seconds:.2f} s, {r.stats['n_support']} support patterns, "
        f"dual {r.dual:.6g}, gap {r.gap:.3g} ({r.message})"
    )
    t = time.perf_counter()
    S = model.decision_function(data.X_test)
    predict_seconds = time.perf_counter() - t
    metrics = _crammer_singer_metrics(r, S, data, fit_seconds, predict_seconds, spec.evaluation.train_scores)
    say(
        f"test error {100 * metrics['test_error']:.2f} %, mean reciprocal rank of the true class (prec) "
        f"{metrics['test_prec']:.4f}"
    )

    def save(folder: Path):
        return save_crammer_singer_model(
            folder,
            model,
            data.classes,
            data.scaler,
            zero_based=data.zero_based,
            positive_class=data.positive_class,
            inputs=data.input_format,
        )

    return RunOutcome(metrics, None, r.as_dict(), resolved, save=None if model.kernel is None else save)


def _crammer_singer_metrics(r, S, data, fit_seconds: float, predict_seconds: float, train_scores: bool) -> dict:
    """A Crammer–Singer run's metrics: test scores, timings, the solver's result and its statistics."""
    metrics = {
        "test_error": float(np.mean(np.argmax(S, axis=1) != data.y_test)),
        "test_prec": M.prec(S, data.y_test),
        "fit_seconds": fit_seconds,
        "predict_seconds": predict_seconds,
        "updates": r.updates,
        "rounds": r.rounds,
        "dual_objective": r.dual_objective,
        "primal": r.primal,
        "dual": r.dual,
        "duality_gap": r.gap,
        "max_psi": r.max_psi,
        "converged": r.converged,
        **{k: v for k, v in r.stats.items()},
    }
    if train_scores:
        metrics["train_error"] = float(np.mean(np.argmax(r.F, axis=1) != data.y_train))
    return metrics


def run_hm3(spec: Spec, data, base_dir: Path | None, say) -> RunOutcome:
    """H-M^3 on a multilabel set, or on a single-label set with a hierarchy (labels as paths)."""
    single = not isinstance(data, MultilabelDataset)  # single-label: the labels become root-to-leaf paths
    problem = prepare_kernel(spec, data, base_dir, with_tree=single)  # the spec's data.hierarchy, else the set's
    resolved, kernel = problem.resolved, problem.kernel
    h = resolved.objective.hm3
    tree, Ytr, Yte = _hm3_targets(data, problem.tree, single)
    opts = h.options(seed=spec.seed)
    t = time.perf_counter()
    with say.bar(None, "H-M^3: passes") as bar:
        model = fit_hm3(
            kernel,
            data.X_train,
            Ytr,
            tree,
            opts,
            callback=lambda rec: bar.goto(rec["pass"], gap=rec["gap"], dual=rec["dual"]),
        )
    fit_seconds = time.perf_counter() - t
    r = model.result
    say(
        f"fit: {r.passes} passes, {r.csga_steps} CSGA steps, {fit_seconds:.2f} s, dual {r.dual:.6g}, "
        f"relative gap {r.gap / max(abs(r.primal), 1e-300):.3g} ({r.message})"
    )
    G = model.edge_scores(data.X_test)
    U = best_labelings(G, tree, consistent=True)[0]
    metrics = _hm3_metrics(model, G, U, tree, Yte, data.y_test if single else None, fit_seconds)
    say(
        f"test ℓ0/1 {100 * metrics['test_zero_one']:.1f} %, ℓΔ {metrics['test_delta']:.3f}, "
        f"F1 {100 * metrics['test_f1']:.1f} %"
        + (f", single-path error {100 * metrics['test_error']:.2f} %" if single else "")
    )
    _compare(h, kernel, data, Ytr, Yte, tree, metrics, say)

    def save(folder: Path):
        return save_hm3_model(
            folder,
            model,
            () if not single else data.classes,
            getattr(data, "scaler", None),
            zero_based=getattr(data, "zero_based", None),
            inputs=getattr(data, "input_format", None),
        )

    return RunOutcome(metrics, None, r.as_dict(), resolved, save=save)


def _hm3_targets(data, tree, single: bool):
    """The class tree and the training and test label matrices of an H-M^3 run: a multilabel set's own, or a
    single-label set's labels as root-to-leaf paths of the spec's (or the set's) hierarchy."""
    if not single:
        return data.tree, data.Y_train, data.Y_test
    if tree is None:
        raise SpecError(
            f"hm3 needs a class hierarchy; data set {data.name!r} has none: set data.hierarchy "
            "(or use enron_corr, a *_FUN set, news20 or imclef07a)",
            "data.hierarchy",
        )
    return tree, paths_to_multilabels(data.y_train, tree), paths_to_multilabels(data.y_test, tree)


def _hm3_metrics(model, G, U, tree, Yte, y_test, fit_seconds: float) -> dict:
    """An H-M^3 run's metrics: the multilabel losses of the consistent labelings U, the solver's result and, for a
    single-label set (``y_test`` given), the error and hierarchical P / R / F1 of the best single paths."""
    r = model.result
    metrics = {f"test_{k}": v for k, v in multilabel_report(Yte, U, tree).items()}
    metrics.update(
        {
            "fit_seconds": fit_seconds,
            "passes": r.passes,
            "csga_steps": r.csga_steps,
            "dual": r.dual,
            "primal": r.primal,
            "duality_gap": r.gap,
            "converged": r.converged,
            "n_support": int(model.support_.size),
        }
    )
    if y_test is not None:
        y_path = best_single_paths(G, tree)
        metrics["test_error"] = float(np.mean(y_path != y_test))
        hier = hierarchical_prf(y_test, y_path, tree)
        metrics.update({"test_hier_precision": hier["hP"], "test_hier_recall": hier["hR"], "test_hier_f1": hier["hF"]})
    return metrics


def _compare(h, kernel, data, Ytr, Yte, tree, metrics: dict, say) -> None:
    """The per-node baselines of ``hm3.compare`` on the same data, their scores under ``svm_*`` / ``hsvm_*``."""
    for name in h.compare:
        t = time.perf_counter()
        base = fit_node_svms(kernel, data.X_train, Ytr, tree, C=h.C, mode="flat" if name == "svm" else "hierarchical")
        secs = time.perf_counter() - t
        Ub = base.predict(data.X_test)
        metrics.update({f"{name}_{k}": v for k, v in multilabel_report(Yte, Ub, tree).items()})
        metrics[f"{name}_fit_seconds"] = secs
        say(
            f"{name}: ℓ0/1 {100 * metrics[f'{name}_zero_one']:.1f} %, ℓΔ {metrics[f'{name}_delta']:.3f}, "
            f"F1 {100 * metrics[f'{name}_f1']:.1f} %, {secs:.2f} s"
        )
