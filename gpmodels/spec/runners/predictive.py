"""Test-set probabilities of the MAP runners (``map``, ``cv``) by the spec's ``evaluation.predictive``.

``plugin``: p(y | u_*) at the latent mean u_* = K̃_{*,.} α̂ (Seeger 2008, Sec. 2).  ``laplace``: the
likelihood averaged over the Laplace latent predictive N(μ_*, Σ_*) (Rasmussen & Williams 2006,
eq. 3.40 / 3.43; :func:`gpmodels.inference.map.predictive.laplace_predict_proba`), Σ_* by
``evaluation.predictive_latent`` (``exact`` batched CG, or Lanczos of rank ``predictive_rank``),
``predictive_samples`` Monte Carlo draws seeded by the spec's ``seed``.  With ``laplace`` the
plug-in scores are recorded beside it (``plugin_test_*``), and the seconds of both.
"""

from __future__ import annotations

import time

import numpy as np

from gpmodels.inference.map.predictive import laplace_predict_proba
from gpmodels.scoring.calibration import calibration_report
from gpmodels.scoring.metrics import error
from gpmodels.spec.sections import Spec

__all__ = ["predict_test_set"]


def predict_test_set(spec: Spec, model, X_test, y_test, say) -> tuple[np.ndarray, dict]:
    """(probabilities (m, C), metrics) of a fitted MAP model on the test set (module docstring)."""
    ev = spec.evaluation
    t = time.perf_counter()
    plugin = model.predict_proba(X_test)
    plugin_s = time.perf_counter() - t
    if ev.predictive == "plugin":
        return plugin, {"predictive": "plugin", "plugin_seconds": plugin_s}
    t = time.perf_counter()
    P, pred = laplace_predict_proba(model, X_test, latent=ev.predictive_latent,
                                    rank=ev.predictive_rank if ev.predictive_latent == "lanczos" else None,
                                    n_samples=ev.predictive_samples, random_state=spec.seed)
    seconds = time.perf_counter() - t
    say(f"Laplace predictive ({ev.predictive_latent}{f', rank {pred.rank}' if pred.rank else ''}, "
        f"{ev.predictive_samples} samples): {pred.matvecs} MVM columns, {seconds:.2f} s "
        f"(plug-in {plugin_s:.3f} s)")
    metrics = {"predictive": "laplace", "predictive_latent": ev.predictive_latent, "predictive_seconds": seconds,
               "plugin_seconds": plugin_s, "predictive_matvecs": int(pred.matvecs),
               "predictive_converged": bool(pred.converged)}
    if y_test is not None and len(y_test):
        scores = calibration_report(plugin, y_test)
        metrics.update({f"plugin_test_{k}": v for k, v in scores.items()})
        metrics["plugin_test_error"] = error(plugin, y_test)
    return P, metrics
