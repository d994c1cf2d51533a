"""bench/device_calls.py (issue 24) on the CI namespace: both placements of CG give the same fits; CG on the host
moves an array each way per CG step, and solving on the device moves fewer arrays than CG steps where CG takes
many steps per Newton iteration (``wide``; on ``fold``, about three steps per iteration, the per-iteration
transfers of x, K̃ V β and the preconditioner's set-up outweigh the steps'); CV folds refitted as one lockstep, the
same fits, move fewer arrays than the folds one by one."""

import json
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
pytest.importorskip("array_api_compat")


def test_device_cg_moves_fewer_arrays_than_the_host_placement_with_the_same_steps(capsys):
    import device_calls

    assert device_calls.main(["--backend", "numpy", "--scale", "0.03", "--repeat", "1"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    rows = {(r["problem"], r["placement"]): r for r in out["rows"]}
    for problem in set(device_calls.PROBLEMS) - {"folds"}:
        host, dev = rows[problem, "host-cg"], rows[problem, "device-cg"]
        assert (host["cg_steps"], host["mvms"]) == (dev["cg_steps"], dev["mvms"])
        assert host["downloads"] >= host["cg_steps"] and host["uploads"] >= host["cg_steps"]
    wide = rows["wide", "device-cg"]  # many CG steps per Newton iteration: fewer transfers than steps
    assert wide["downloads"] < wide["cg_steps"] and wide["uploads"] < wide["cg_steps"]
    separate = rows["folds", "separate"]  # five refits, alone or stacked (copies, or views through K̃)
    for stacked in (rows["folds", "stacked-copies"], rows["folds", "stacked"]):
        assert (stacked["newton"], stacked["cg_steps"]) == (separate["newton"], separate["cg_steps"])  # their own fits
        assert stacked["downloads"] < separate["downloads"]  # one product per stacked step, not one per fold
    assert out["device_cg_min_entries"] == device_calls.DEFAULT_RULES.device_cg_min_entries
