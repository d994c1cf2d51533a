"""How users ask for a device: `model.representation.device` in specs and `--device` on `run` and
`study`.  Without a usable GPU (CI), `cuda` is exit 2 with a message naming what is missing, before
any work, and `auto` runs on the CPU and says so in metrics.json and in each matrix's choice."""

import json

import numpy as np
import pytest
from conftest import toy_classification, write_spec

from gpmodels.cli import main
from gpmodels.kernels.device.backend import cuda_status

pytestmark = pytest.mark.skipif(cuda_status() is None, reason="a GPU is usable here: cuda would run")


def _spec(tmp_path, n=60):
    X, y = toy_classification(n, 3, d=3, seed=3, spread=2.5)
    m = 2 * n // 3
    np.savez(tmp_path / "train.npz", X=X[:m], y=y[:m])
    np.savez(tmp_path / "test.npz", X=X[m:], y=y[m:])
    return {"name": "dev", "seed": 1,
            "data": {"path": str(tmp_path / "train.npz"), "test_path": str(tmp_path / "test.npz")},
            "model": {"kernel": {"type": "rbf", "w": "auto"}, "sharing": "separate", "variance": 2.0, "sigma2": 1.0},
            "objective": {"newton": {"max_iter": 20, "cg_max_iter": 30}},
            "output": {"dir": str(tmp_path / "out")}}


def test_run_with_device_cuda_and_no_gpu_exits_2_naming_what_is_missing(tmp_path, capsys):
    p = write_spec(tmp_path, _spec(tmp_path))
    assert main(["run", str(p), "--device", "cuda", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "device 'cuda' was asked for but cannot be used" in err and cuda_status() in err
    assert not (tmp_path / "out" / "metrics.json").exists()


def test_the_spec_key_asks_for_the_device_as_the_option_does(tmp_path, capsys):
    spec = _spec(tmp_path)
    spec["model"]["representation"] = {"device": "cuda"}
    assert main(["run", str(write_spec(tmp_path, spec)), "--quiet"]) == 2
    assert "device 'cuda'" in capsys.readouterr().err
    spec["model"]["representation"] = {"device": "gpu"}
    assert main(["validate", str(write_spec(tmp_path, spec))]) == 2
    assert "model.representation.device" in capsys.readouterr().err


def test_run_with_device_auto_runs_on_the_cpu_and_records_why(tmp_path):
    p = write_spec(tmp_path, _spec(tmp_path))
    assert main(["run", str(p), "--device", "auto", "--quiet"]) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["device"] == f"cpu (auto: {cuda_status()})"
    reps = json.loads((tmp_path / "out" / "diagnostics.json").read_text())["representations"]
    assert reps and all(r["device"].startswith("cpu (device auto: ") for r in reps)
    assert main(["run", str(p), "--device", "cpu", "--quiet", "--force"]) == 0
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["device"] == "cpu"


def test_study_with_device_cuda_and_no_gpu_exits_2(tmp_path, capsys):
    one = _spec(tmp_path)
    study = {"name": "devstudy", "data": one["data"], "output": {"dir": str(tmp_path / "study")},
             "models": [{"name": "a", "model": one["model"], "objective": one["objective"]}]}
    p = write_spec(tmp_path, study, "study.yaml")
    assert main(["study", str(p), "--device", "cuda", "--quiet"]) == 2
    assert "device 'cuda' was asked for but cannot be used" in capsys.readouterr().err
    assert not (tmp_path / "study").exists()
