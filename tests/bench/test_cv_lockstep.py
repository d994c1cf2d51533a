"""bench/cv_lockstep.py (issue 24) on a satimage subset: every way to run the folds gives Ψ at the same
points, up to the inexact inner solves the spec sets (the exact agreement at tight tolerances is
tests/inference/cv/test_stacked_folds.py's), and the yardstick's stack of copies is put back afterwards."""

import json
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))


def test_the_ways_to_run_the_folds_agree_on_psi_and_products(capsys):
    import cv_lockstep

    import gpmodels.inference.cv.stacked as cv_stacked

    cv_lockstep.main(["--max-train", "400"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    rows = out["rows"]
    assert {r["way"] for r in rows} == set(cv_lockstep.WAYS)
    for point in {r["point"] for r in rows}:
        at = [r for r in rows if r["point"] == point]
        assert max(r["psi"] for r in at) - min(r["psi"] for r in at) <= 1e-6 * abs(at[0]["psi"])
        assert max(r["mvms"] for r in at) <= 1.1 * min(r["mvms"] for r in at)
        assert all(r["grad_rel_diff"] <= 1e-3 for r in at)
    assert cv_stacked.Stacked is cv_lockstep.Stacked
