"""How users ask for a device: `model.representation.device` in specs and `--device` on `run` and
`study`.  Without a usable GPU (CI), `cuda` is exit 2 with a message naming what is missing, before
any work, and `auto` runs on the CPU and says so in metrics.json and in each matrix's choice."""

import json

import pytest
from conftest import toy_data_section, write_spec

from gpmodels.cli import main
from gpmodels.kernels.device.backend import cuda_status

no_gpu = pytest.mark.skipif(cuda_status() is None, reason="a GPU is usable here: cuda would run")


def _spec(tmp_path, n=60):
    return {
        "name": "dev",
        "seed": 1,
        "data": toy_data_section(tmp_path, n=n, n_train=2 * n // 3, d=3, seed=3, spread=2.5),
        "model": {"kernel": {"type": "rbf", "w": "auto"}, "sharing": "separate", "variance": 2.0, "sigma2": 1.0},
        "objective": {"newton": {"max_iter": 20, "cg_max_iter": 30}},
        "output": {"dir": str(tmp_path / "out")},
    }


@no_gpu
def test_run_with_device_cuda_and_no_gpu_exits_2_naming_what_is_missing(tmp_path, capsys):
    p = write_spec(tmp_path, _spec(tmp_path))
    assert main(["run", str(p), "--device", "cuda", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "device 'cuda' was asked for but cannot be used" in err and cuda_status() in err
    assert not (tmp_path / "out" / "metrics.json").exists()


@no_gpu
def test_the_spec_key_asks_for_the_device_as_the_option_does(tmp_path, capsys):
    spec = _spec(tmp_path)
    spec["model"]["representation"] = {"device": "cuda"}
    assert main(["run", str(write_spec(tmp_path, spec)), "--quiet"]) == 2
    assert "device 'cuda'" in capsys.readouterr().err
    spec["model"]["representation"] = {"device": "gpu"}
    assert main(["validate", str(write_spec(tmp_path, spec))]) == 2
    assert "model.representation.device" in capsys.readouterr().err


@no_gpu
def test_run_with_device_auto_runs_on_the_cpu_and_records_why(tmp_path):
    p = write_spec(tmp_path, _spec(tmp_path))
    assert main(["run", str(p), "--device", "auto", "--quiet"]) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["device"] == f"cpu (auto: {cuda_status()})"
    reps = json.loads((tmp_path / "out" / "diagnostics.json").read_text())["representations"]
    assert reps and all(r["device"].startswith("cpu (device auto: ") for r in reps)
    assert main(["run", str(p), "--device", "cpu", "--quiet", "--force"]) == 0
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["device"] == "cpu"


@no_gpu
def test_study_with_device_cuda_and_no_gpu_exits_2(tmp_path, capsys):
    one = _spec(tmp_path)
    study = {
        "name": "devstudy",
        "data": one["data"],
        "output": {"dir": str(tmp_path / "study")},
        "models": [{"name": "a", "model": one["model"], "objective": one["objective"]}],
    }
    p = write_spec(tmp_path, study, "study.yaml")
    assert main(["study", str(p), "--device", "cuda", "--quiet"]) == 2
    assert "device 'cuda' was asked for but cannot be used" in capsys.readouterr().err
    assert not (tmp_path / "study").exists()


@pytest.mark.parametrize("objective", ["map", "cv"])
def test_run_on_the_gpu_goes_through_the_device_and_scores_as_the_cpu_run(tmp_path, gpu_label, objective):
    spec = _spec(tmp_path)
    if objective == "cv":
        spec["objective"] = {
            "type": "cv",
            "newton": {"max_iter": 30, "cg_max_iter": 40},
            "cv": {
                "folds": 3,
                "newton": {"max_iter": 20, "cg_max_iter": 30, "grad_tol": 1e-6},
                "outer": {"max_iter": 2},
                "checkpoint": False,
            },
        }
    p = write_spec(tmp_path, spec)
    assert main(["run", str(p), "--quiet", "--device", "cpu", "--out", str(tmp_path / "cpu")]) == 0
    assert main(["run", str(p), "--quiet", "--device", "cuda", "--out", str(tmp_path / "gpu")]) == 0
    cpu, gpu = (json.loads((tmp_path / d / "metrics.json").read_text()) for d in ("cpu", "gpu"))
    assert cpu["device"] == "cpu" and gpu["device"].startswith(gpu_label)
    assert gpu["test_error"] == cpu["test_error"]
    assert gpu["test_log_loss"] == pytest.approx(cpu["test_log_loss"], rel=1e-8)
    reps = json.loads((tmp_path / "gpu" / "diagnostics.json").read_text()).get("representations")
    if objective == "map":
        assert reps and all(r["device"].startswith(gpu_label) for r in reps)
    else:  # `folds_per_fit: auto`: the folds refitted together on the device, one by one on the host
        assert (cpu["folds_per_fit"], gpu["folds_per_fit"]) == (1, 3)
    log = (tmp_path / "gpu" / "run.log").read_text()
    assert f"engine: auto (kernel matrices on {gpu_label}" in log


def test_a_gpu_run_refuses_dask_workers_and_forked_workers(tmp_path, stand_in_gpu, capsys):
    spec = _spec(tmp_path)
    spec["engine"] = {"type": "dask"}
    assert main(["run", str(write_spec(tmp_path, spec)), "--quiet", "--device", "cuda"]) == 2
    assert "cannot be held by Dask workers: engine.type dask" in capsys.readouterr().err
    spec["engine"] = {"type": "processes", "start_method": "fork"}
    assert main(["run", str(write_spec(tmp_path, spec)), "--quiet", "--device", "cuda", "--force"]) == 2
    assert "a forked worker cannot use the CUDA context" in capsys.readouterr().err


def test_a_gpu_run_with_cv_folds_on_worker_processes_scores_as_the_local_run(tmp_path, stand_in_gpu):
    """The folds' kernel matrices in worker processes (the stand-in's numpy backend forks; PyTorch's spawns)."""
    spec = _spec(tmp_path)
    spec["objective"] = {
        "type": "cv",
        "cv": {
            "folds": 3,
            "newton": {"max_iter": 20, "cg_max_iter": 30},
            "outer": {"max_iter": 1},
            "checkpoint": False,
            "folds_per_fit": 1,  # a job per fold (on a device `auto` makes them one job)
        },
    }
    runs = {}
    for engine in ("local", "processes"):
        spec["engine"] = {"type": engine, "n_workers": 2, "blas_threads": 1}
        out = tmp_path / engine
        assert main(["run", str(write_spec(tmp_path, spec)), "--quiet", "--device", "cuda", "--out", str(out)]) == 0
        runs[engine] = json.loads((out / "metrics.json").read_text())
    assert (
        "engine: processes (kernel matrices on cuda:0 (numpy stand-in)"
        in (tmp_path / "processes" / "run.log").read_text()
    )
    assert runs["processes"]["test_log_loss"] == runs["local"]["test_log_loss"]
