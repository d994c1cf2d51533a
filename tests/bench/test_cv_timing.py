"""bench/cv_timing.py --smoke: the fixed CV workload runs, its final JSON line has the figures a regression is
read from (no timing is asserted: tests never depend on the machine's speed)."""

import json
import sys

import numpy as np
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

KEYS = {
    "bench",
    "smoke",
    "n_train",
    "evaluations",
    "seconds",
    "cpu_seconds",
    "mvms",
    "seconds_per_evaluation",
    "seconds_per_mvm",
    "grad_trace_share",
    "yardstick_seconds_per_product",
    "yardstick_cpu_seconds_per_product",
    "yardstick_before_after",
    "over_yardstick",
    "cpu_over_yardstick",
    "blas_threads",
}
ROW_KEYS = {
    "point",
    "seconds",
    "cpu_seconds",
    "mvms",
    "newton_iterations",
    "grad_trace_seconds",
    "psi",
    "gradient_norm",
}


def test_smoke_run_prints_its_figures_as_json(capsys):
    import cv_timing

    returned = cv_timing.main(["--smoke"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(out) == KEYS
    assert out == json.loads(json.dumps(returned))
    assert out["bench"] == "cv_timing" and out["smoke"] is True and out["n_train"] == cv_timing.SMOKE_TRAIN
    rows = out["evaluations"]
    assert [r["point"] for r in rows] == ["theta0 (cold)", "theta1 spread", "theta2 shifted"]
    assert all(set(r) == ROW_KEYS for r in rows)
    assert all(r["mvms"] > 0 and r["newton_iterations"] > 0 and np.isfinite(r["psi"]) for r in rows)
    assert out["mvms"] == sum(r["mvms"] for r in rows)
    assert out["over_yardstick"] > 0 and out["cpu_over_yardstick"] > 0
