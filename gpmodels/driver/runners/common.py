"""What the runners share: :func:`prepare` (the spec and the data -> the :class:`Problem` an objective
fits; :func:`prepare_kernel` -> the :class:`KernelProblem` of the max-margin objectives, from the same
resolved spec and class tree), the targets and test scores of the likelihoods, the test-set predictive
of MAP models, and the checkpoints, messages and metrics of hyperparameter learning by Ψ.

``evaluation.predictive`` (:func:`predict_test_set`): ``plugin`` is p(y | u_*) at the latent mean
u_* = K̃_{*,.} α̂ (Seeger 2008, Sec. 2); ``laplace`` averages the likelihood over the Laplace latent
predictive N(μ_*, Σ_*) (Rasmussen & Williams 2006, eq. 3.40 / 3.43;
:func:`gpmodels.inference.map.predictive.laplace_predict_proba`), Σ_* by
``evaluation.predictive_latent`` (``exact`` batched CG, or Lanczos of rank ``predictive_rank``),
``predictive_samples`` Monte Carlo draws seeded by the spec's ``seed``.  With ``laplace`` the
plug-in scores are recorded beside it (``plugin_test_*``), and the seconds of both.
"""

from __future__ import annotations

import time
from pathlib import Path

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.data.datasets import Dataset
from gpmodels.driver.build import build_binary_operator, build_kernel, build_likelihood, build_operator, resolve_model
from gpmodels.driver.build_data import build_pseudo_targets, build_tree, tree_needed_by
from gpmodels.driver.sections.spec import Spec
from gpmodels.errors import SpecError
from gpmodels.hierarchy import ClassTree
from gpmodels.inference.cv.learn import Checkpointing
from gpmodels.inference.cv.one_vs_rest import check_one_vs_rest
from gpmodels.inference.map.predictive import laplace_predict_proba
from gpmodels.kernels.base import Kernel
from gpmodels.operators.base import Operator
from gpmodels.optimize.checkpoint import digest_array
from gpmodels.scoring.calibration import calibration_report
from gpmodels.scoring.metrics import error
from gpmodels.validation import labels_to_targets

__all__ = [
    "Problem",
    "prepare",
    "KernelProblem",
    "prepare_kernel",
    "resolve",
    "targets",
    "evaluate",
    "predict_test_set",
    "learning_checkpoint",
    "checkpoint_identity",
    "iteration_reporter",
    "learning_metrics",
]


@attrs.frozen
class Problem:
    """What an objective fits, built from a spec and its data by :func:`prepare`.

    ``targets``: one-hot rows (n, C) for the softmax, y = ±1 (n, 1) for a binary likelihood, y (n, 1)
    for regression; the :class:`~gpmodels.likelihoods.uncertain.PseudoTargets` of ``em``; the class
    labels (n,) of ``one_vs_rest``, whose tasks make their own binary targets.
    """

    resolved: Spec  # the spec with `w: auto` and registered user priors resolved (spec.resolved.yaml)
    operator: Operator  # the prior's K̃; for one_vs_rest the operator of every binary task
    likelihood: object
    targets: object
    tree: ClassTree | None  # the class tree, when the model uses one
    build_seconds: float  # building the operator (kernel matrices included)


def prepare(spec: Spec, data: Dataset, base_dir: Path | None = None, *, engine=None) -> Problem:
    """The :class:`Problem` of ``spec`` on ``data``: the resolved spec, the prior's operator (on
    ``engine``), the likelihood, the targets and the class tree.  The tree is built for the priors that
    may use one (the structured built-ins, user priors), not for the flat default."""
    resolved = resolve(spec, data)
    o = spec.objective
    tree = None
    if not spec.model.builtin_prior or tree_needed_by(spec) is not None:
        tree = build_tree(spec, data, base_dir)
    likelihood = build_likelihood(resolved.model)
    t = time.perf_counter()
    if o.type == "one_vs_rest":
        op = build_binary_operator(resolved, data.X_train, base_dir, engine=engine)
    else:
        op = build_operator(
            resolved.model,
            data.X_train,
            data.n_classes,
            base_dir,
            tree=tree,
            engine=engine,
            learn_sigma2=o.type == "cv" and o.cv.learn_sigma2,
        )
    build_seconds = time.perf_counter() - t
    if o.type == "em":
        Y = build_pseudo_targets(spec, data, tree, base_dir)
    elif o.type == "one_vs_rest":
        Y, _ = check_one_vs_rest(op, labels_to_targets(data.y_train, data.n_classes))
    else:
        Y = targets(likelihood, data, spec.model.likelihood)
    return Problem(resolved, op, likelihood, Y, tree, build_seconds)


def resolve(spec: Spec, data: Dataset) -> Spec:
    """The spec with ``w: auto`` and registered user priors resolved on the training inputs: what
    ``spec.resolved.yaml`` records and every runner fits."""
    return attrs.evolve(spec, model=resolve_model(spec.model, data.X_train))


@attrs.frozen
class KernelProblem:
    """What a max-margin objective (Crammer–Singer, H-M^3) fits, built by :func:`prepare_kernel`: the
    resolved spec, the kernel function (the solvers compute their own kernel rows, so no GP operator
    is built) and the class tree of the spec's ``data.hierarchy`` or the data set (None when not
    asked for or when there is none)."""

    resolved: Spec
    kernel: Kernel
    tree: ClassTree | None


def prepare_kernel(
    spec: Spec, data: Dataset, base_dir: Path | None = None, *, with_tree: bool = False
) -> KernelProblem:
    """The :class:`KernelProblem` of ``spec`` on ``data``: the spec resolved as :func:`prepare` resolves
    it, the class tree built as it builds one (``with_tree``), and the model's kernel."""
    resolved = resolve(spec, data)
    tree = build_tree(spec, data, base_dir) if with_tree else None
    return KernelProblem(resolved, build_kernel(resolved.model.kernel, data.X_train, base_dir), tree)


def targets(lik, data: Dataset, model_likelihood: str) -> np.ndarray:
    """By the likelihood's ``target_encoding``: distributions (one-hot, (n, C)); signed binary labels
    y = ±1 (n, 1); real values (regression, (n, 1))."""
    if lik.target_encoding == "distribution":
        return labels_to_targets(data.y_train, data.n_classes)
    if lik.target_encoding == "real":
        return np.asarray(data.y_train, dtype=np.float64)[:, None]
    if data.n_classes != 2:
        raise SpecError(
            f"likelihood {model_likelihood!r} is binary but the data have {data.n_classes} classes; "
            f"set data.positive_class for a one-vs-rest task",
            "model.likelihood",
        )
    return (2.0 * data.y_train - 1.0)[:, None]


def evaluate(lik, latent: np.ndarray, data: Dataset):
    """(metrics, probabilities or None) on the test set from latent test values."""
    if lik.target_encoding == "real":
        pred = lik.predict(latent)[:, 0]
        r = pred - np.asarray(data.y_test, dtype=np.float64)
        return {"test_rmse": float(np.sqrt(np.mean(r**2))), "test_mae": float(np.mean(np.abs(r)))}, None
    return {}, lik.predict(latent)


def predict_test_set(spec: Spec, model, X_test, y_test, say) -> tuple[np.ndarray, dict]:
    """(probabilities (m, C), metrics) of a fitted MAP model on the test set (module docstring)."""
    ev = spec.evaluation
    t = time.perf_counter()
    plugin = model.predict_proba(X_test)
    plugin_s = time.perf_counter() - t
    if ev.predictive == "plugin":
        return plugin, {"predictive": "plugin", "plugin_seconds": plugin_s}
    t = time.perf_counter()
    P, pred = laplace_predict_proba(
        model,
        X_test,
        latent=ev.predictive_latent,
        rank=ev.predictive_rank if ev.predictive_latent == "lanczos" else None,
        n_samples=ev.predictive_samples,
        random_state=spec.seed,
    )
    seconds = time.perf_counter() - t
    say(
        f"Laplace predictive ({ev.predictive_latent}{f', rank {pred.rank}' if pred.rank else ''}, "
        f"{ev.predictive_samples} samples): {pred.matvecs} MVM columns, {seconds:.2f} s "
        f"(plug-in {plugin_s:.3f} s)"
    )
    metrics = {
        "predictive": "laplace",
        "predictive_latent": ev.predictive_latent,
        "predictive_seconds": seconds,
        "plugin_seconds": plugin_s,
        "predictive_matvecs": int(pred.matvecs),
        "predictive_converged": bool(pred.converged),
    }
    if y_test is not None and len(y_test):
        scores = calibration_report(plugin, y_test)
        metrics.update({f"plugin_test_{k}": v for k, v in scores.items()})
        metrics["plugin_test_error"] = error(plugin, y_test)
    return P, metrics


# ---------------------------------------------------------------- learning by the CV criterion Ψ
def _data_digest(X, y) -> dict:
    if sp.issparse(X):
        x = [digest_array(X.data), digest_array(X.indices), digest_array(X.indptr)]
    else:
        x = digest_array(np.asarray(X))
    return {"X": x, "y": digest_array(np.asarray(y))}


def checkpoint_identity(resolved: Spec, data: Dataset) -> dict:
    """What a checkpoint must match: the learning-relevant spec and the training data."""
    d = resolved.to_dict()
    cv = {k: v for k, v in d["objective"]["cv"].items() if k not in ("checkpoint", "resume")}
    return {
        "seed": d["seed"],
        "data": d["data"],
        "model": d["model"],
        "solver": d["objective"]["solver"],
        "cv": cv,
        "train": _data_digest(data.X_train, data.y_train),
    }


def learning_checkpoint(resolved: Spec, data: Dataset) -> Checkpointing | None:
    """With ``objective.cv.checkpoint``: ``checkpoint.npz`` in the report folder, resumed from when
    ``resume: auto`` and its identity (:func:`checkpoint_identity`) matches; else None."""
    c = resolved.objective.cv
    if not c.checkpoint:
        return None
    return Checkpointing(
        Path(resolved.output.dir) / "checkpoint.npz",
        resume=c.resume == "auto",
        identity=checkpoint_identity(resolved, data),
    )


def iteration_reporter(say, bar, prefix=""):
    """``on_iteration`` of the learner: a message per outer iteration and the bar moved to it."""

    def report(rec):
        bar.outer(rec)
        say(
            f"{prefix}iteration {rec.iteration}: Ψ = {rec.value:.6g}, max|∇Ψ| = {rec.grad_norm:.3g}, "
            f"{rec.evaluations} evaluation{'s' if rec.evaluations != 1 else ''} ({rec.failed} failed), "
            f"{rec.seconds:.1f} s"
        )

    return report


def learning_metrics(results, prefix="") -> dict:
    """Outer iterations, evaluations, failures and learning time summed over ``results``; the mean Ψ
    evaluation's seconds and the folds refitted together."""
    out = {}
    for r in results:
        st = r.outer
        for key, value in (
            ("outer_iterations", st.iteration),
            ("evaluations", st.evaluations),
            ("failed_evaluations", st.failed),
            ("learning_seconds", st.elapsed),
        ):
            out[f"{prefix}{key}"] = out.get(f"{prefix}{key}", 0) + value
    evals = [e for r in results for e in r.evaluations]
    out[f"{prefix}psi_evaluation_seconds"] = float(np.mean([e.seconds for e in evals])) if evals else None
    # the folds refitted together (``objective.cv.folds_per_fit``, ``auto`` resolved per evaluation)
    out[f"{prefix}folds_per_fit"] = max((e.summary.get("folds_per_fit", 1) for e in evals), default=None)
    out[f"{prefix}learning_converged"] = all(r.converged for r in results)
    return out
