"""bench/gpu.py runs end to end on a CI namespace with tiny sizes, so that a GPU session only has to
run it: every job's row, the copy bandwidth, and the final JSON line with the issue's keys."""

import json
import sys
from pathlib import Path

import pytest
from conftest import needs_shared_data

pytest.importorskip("array_api_compat")
BENCH = Path(__file__).resolve().parents[2] / "bench"


@needs_shared_data("satimage")
def test_gpu_bench_runs_end_to_end_on_the_numpy_namespace(capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    sys.modules.pop("gpu", None)
    import gpu

    result = gpu.main(
        [
            "--namespace",
            "numpy",
            "--n",
            "300",
            "--satimage-max-train",
            "120",
            "--satimage-max-iter",
            "1",
            "--check-n",
            "150",
            "--imclef-max-train",
            "200",
            "--copy-gib",
            "0.02",
            "--no-gpytorch",
            "--tile-mb",
            "0.5",
        ],
        say=lambda s: None,
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == json.loads(json.dumps(result, default=float))
    assert result["bench"] == "gpu" and result["device"] == "cpu (numpy)" and result["copy_bandwidth_tbps"] > 0
    rows = {r["job"]: r for r in result["rows"]}
    assert sorted(rows) == [
        "float32-product",
        "float64-vs-cpu",
        "imclef07a-anova",
        "recomputed-product",
        "satimage-mc-sep",
        "scale-300",
    ]
    for r in rows.values():
        assert "error" not in r, r
        assert set(gpu.ROW_KEYS) <= set(r) and r["library"] == "gpmodels" and r["seconds"] > 0
    assert rows["scale-300"]["n"] == 300 and rows["scale-300"]["C"] == 10 and 0 <= rows["scale-300"]["test_error"] < 0.9
    assert rows["satimage-mc-sep"]["n"] == 120 and rows["satimage-mc-sep"]["mvms"] > 0
    assert rows["imclef07a-anova"]["n"] == 200 and rows["imclef07a-anova"]["mvms"] > 0
    assert result["float64_phi_rel_diff"] < 1e-9 and result["float64_identical_predictions"]
    assert 0 < result["float32_product_over_copy"]
