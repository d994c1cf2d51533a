"""The command line (issue 14, items 3 and 8): --version, python -m gpmodels, --help with examples, exit
codes and environment variables, --set overrides, --fresh, Ctrl-C (exit 130, checkpoint kept), and the
provenance of every run (metrics.json, study.json, run.log)."""

import datetime
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
from conftest import ROOT, toy_classification, toy_data_section, write_spec

from gpmodels.cli import main
from gpmodels.driver.output import read_identity
from gpmodels.driver.overrides import apply_overrides, parse_override
from gpmodels.errors import SpecError

COMMANDS = ("run", "validate", "study", "predict", "spec-reference")


def _spec(tmp_path, objective=None, n=90):
    return {
        "name": "cli",
        "seed": 1,
        "data": toy_data_section(tmp_path, n=n, n_train=2 * n // 3, d=3, seed=3, spread=2.5),
        "model": {"kernel": {"type": "rbf", "w": "auto"}, "sharing": "semi", "variance": 2.0, "sigma2": 1.0},
        "objective": objective or {"newton": {"max_iter": 20, "cg_max_iter": 30}},
        "output": {"dir": str(tmp_path / "out")},
    }


def _cv(max_iter=2):
    return {
        "type": "cv",
        "newton": {"max_iter": 30, "cg_max_iter": 40},
        "cv": {
            "folds": 3,
            "newton": {"max_iter": 20, "cg_max_iter": 30, "grad_tol": 1e-6},
            "outer": {"max_iter": max_iter},
        },
    }


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


# --- --version, python -m gpmodels, --help ---------------------------------------------------------------


def test_version_prints_the_package_version(capsys, monkeypatch):
    import gpmodels
    from gpmodels.driver import run as run_module

    with pytest.raises(SystemExit) as ex:
        main(["--version"])
    assert ex.value.code == 0
    assert capsys.readouterr().out.strip() == f"gpmodels {run_module.package_version()}"

    from importlib import metadata

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)  # not installed: the package's own __version__
    assert run_module.package_version() == gpmodels.__version__


def test_python_dash_m_gpmodels_is_the_same_program(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "gpmodels", "--version"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.startswith("gpmodels ")
    p = write_spec(tmp_path, _spec(tmp_path))
    done = subprocess.run(
        [sys.executable, "-m", "gpmodels", "validate", str(p)],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip() == f"{p}: valid"
    done = subprocess.run(
        [sys.executable, "-m", "gpmodels", "validate", str(p), "--set", "model.kernl.w=1"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2 and "model.kernl" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("command", (None,) + COMMANDS)
def test_help_has_examples_exit_codes_and_environment(command, capsys):
    with pytest.raises(SystemExit) as ex:
        main(["--help"] if command is None else [command, "--help"])
    assert ex.value.code == 0
    text = capsys.readouterr().out
    assert "examples:" in text and ("gpmodels " + (command or "run")) in text
    assert "exit codes:" in text and all(f"  {c} " in text for c in ("0", "1", "2", "130"))
    assert "environment variables:" in text and "GPMODELS_DEBUG" in text and "GPMODELS_DATA" in text
    if command in ("run", "validate", "study"):
        assert "--set KEY.PATH=VALUE" in text
    assert ("--fresh" in text) == (command == "run")


def test_every_environment_variable_the_package_reads_is_documented(capsys):
    import re

    read = set()
    for path in (ROOT / "gpmodels").rglob("*.py"):
        read |= set(re.findall(r"os\.environ(?:\.get)?[\[(]\"(\w+)\"", path.read_text(encoding="utf-8")))
    assert read
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert all(name in text for name in read), read


# --- --set --------------------------------------------------------------------------------------------------


def test_overrides_parse_values_as_yaml_and_name_list_entries():
    assert parse_override("objective.cv.folds=3") == (("objective", "cv", "folds"), 3)
    assert parse_override("a.b=[1, 2]")[1] == [1, 2] and parse_override("a=true")[1] is True
    assert parse_override("a=1e-3")[1] == 1e-3 and parse_override("a=text")[1] == "text"  # YAML 1.1: '1e-3' a str
    assert parse_override("a=")[1] is None and parse_override("a=x=y")[1] == "x=y"
    assert parse_override("models[1].name=b")[0] == ("models", "1", "name")
    data = {"model": {"variance": 1.0}, "models": [{"name": "a"}, {"name": "b"}]}
    new = apply_overrides(data, ["model.variance=3", "models.1.name=c", "model.kernel.w=0.5", "model.variance=4"])
    assert new == {"model": {"variance": 4, "kernel": {"w": 0.5}}, "models": [{"name": "a"}, {"name": "c"}]}
    assert data["model"] == {"variance": 1.0}  # the original is not changed
    for bad, where in (
        ("novalue", "--set"),
        ("a..b=1", "--set"),
        ("models.5.name=x", "models.5"),
        ("model.variance.x=1", "model.variance"),
        ("models.x.name=1", "models.x"),
    ):
        with pytest.raises(SpecError) as ex:
            apply_overrides(data, [bad])
        assert ex.value.path == where


def test_set_overrides_a_key_before_validation_and_is_recorded(tmp_path, capsys):
    p = write_spec(tmp_path, _spec(tmp_path))
    argv = [
        "run",
        str(p),
        "--quiet",
        "--set",
        "model.variance=3.5",
        "--set",
        "objective.newton.max_iter=7",
        "--set",
        "model.kernel.w=0.25",
    ]
    assert main(argv) == 0
    resolved = yaml.safe_load((tmp_path / "out" / "spec.resolved.yaml").read_text())
    assert resolved["model"]["variance"] == 3.5 and resolved["objective"]["newton"]["max_iter"] == 7
    assert resolved["model"]["kernel"]["w"] == 0.25
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["newton_iterations"] <= 7
    assert yaml.safe_load(p.read_text())["model"]["variance"] == 2.0  # the file is untouched
    # the override is part of the spec: another value is another run
    assert main(["run", str(p), "--quiet", "--set", "model.variance=2.5"]) == 2
    assert "holds the report of another run" in capsys.readouterr().err


def test_a_bad_override_is_the_same_spec_error_as_in_the_file(tmp_path, capsys):
    d = _spec(tmp_path)
    p = write_spec(tmp_path, d)
    for command in ("run", "validate"):
        assert main([command, str(p), "--set", "model.kernel.ww=1"]) == 2
        from_set = capsys.readouterr().err
        d2 = json.loads(json.dumps(d))
        d2["model"]["kernel"]["ww"] = 1
        assert main([command, str(write_spec(tmp_path, d2, "bad.yaml"))]) == 2
        assert capsys.readouterr().err == from_set and "did you mean 'w'" in from_set
    assert main(["validate", str(p), "--set", "objective.newton.max_iter=-1"]) == 2
    assert "objective.newton.max_iter" in capsys.readouterr().err
    assert main(["run", str(p), "--set", "oops"]) == 2
    assert "key.path=value" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # refused before any work


def test_set_reaches_the_models_of_a_study(tmp_path, capsys):
    d = _spec(tmp_path)
    study = {
        "name": "st",
        "data": d["data"],
        "output": {"dir": str(tmp_path / "st")},
        "models": [
            {"name": "a", "model": d["model"], "objective": d["objective"]},
            {"name": "b", "model": d["model"], "objective": d["objective"]},
        ],
    }
    p = write_spec(tmp_path, study, "study.yaml")
    assert "&id" in p.read_text()  # the models share one `model` by a YAML alias: an override changes one
    assert main(["validate", str(p), "--set", "models.1.model.variance=0"]) == 2
    assert "models[1].model.variance" in capsys.readouterr().err
    assert main(["study", str(p), "--quiet", "--set", "models[1].model.variance=4.0", "--set", "seed=2"]) == 0
    resolved = yaml.safe_load((tmp_path / "st" / "b" / "spec.resolved.yaml").read_text())
    assert resolved["model"]["variance"] == 4.0 and resolved["seed"] == 2


# --- --fresh ------------------------------------------------------------------------------------------------


def test_fresh_ignores_and_replaces_the_checkpoint(tmp_path, capsys):
    p = write_spec(tmp_path, _spec(tmp_path, _cv(max_iter=2)))
    out = tmp_path / "out"
    assert main(["run", str(p), "--quiet"]) == 0
    first = json.loads((out / "metrics.json").read_text())
    assert main(["run", str(p), "--quiet"]) == 0  # without --fresh: resumed
    assert json.loads((out / "metrics.json").read_text())["resumed_from_iteration"] == 2
    (out / "checkpoint.npz").write_bytes(b"\x00" * 100)  # a corrupt checkpoint stops a resuming run
    assert main(["run", str(p), "--quiet"]) == 2
    assert "--fresh" in capsys.readouterr().err  # the message says how to start afresh
    assert main(["run", str(p), "--quiet", "--fresh"]) == 0
    again = json.loads((out / "metrics.json").read_text())
    assert again["resumed_from_iteration"] is None and again["psi_learned"] == first["psi_learned"]
    assert (out / "checkpoint.npz").stat().st_size > 100  # replaced by this run's
    assert yaml.safe_load((out / "spec.resolved.yaml").read_text())["objective"]["cv"]["resume"] == "never"
    assert main(["run", str(p), "--quiet"]) == 0  # and the new checkpoint resumes
    assert json.loads((out / "metrics.json").read_text())["resumed_from_iteration"] == 2


# --- Ctrl-C -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "study", "validate"])
def test_ctrl_c_exits_130_without_traceback_and_keeps_the_checkpoint(tmp_path, monkeypatch, capsys, command):
    from gpmodels import cli
    from gpmodels.driver import run as run_module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setitem(run_module.RUNNERS, "map", interrupted)
    monkeypatch.setattr(cli, "_validate", interrupted)
    d = _spec(tmp_path)
    if command == "study":
        d = {"name": "st", "data": d["data"], "output": d["output"], "models": [{"name": "m", "model": d["model"]}]}
    out = tmp_path / "out" / ("m" if command == "study" else "")
    out.mkdir(parents=True)
    (out / "checkpoint.npz").write_bytes(b"kept")
    assert main([command, str(write_spec(tmp_path, d))]) == 130
    err = capsys.readouterr().err
    assert err.strip().endswith("gpmodels: interrupted") and "Traceback" not in err
    assert (out / "checkpoint.npz").read_bytes() == b"kept"
    if command == "run":
        assert "interrupted" in (out / "run.log").read_text()
        assert read_identity(out)["status"] == "interrupted"


def test_sigint_during_cv_learning_exits_130_and_the_checkpoint_resumes(tmp_path):
    p = write_spec(tmp_path, _spec(tmp_path, _cv(max_iter=6), n=240))
    ckpt = tmp_path / "out" / "checkpoint.npz"
    cmd = [sys.executable, "-m", "gpmodels", "run", str(p), "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path)
    try:
        deadline = time.monotonic() + 240
        while not ckpt.is_file() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().endswith("gpmodels: interrupted") and "Traceback" not in err
    assert ckpt.is_file() and not (tmp_path / "out" / "metrics.json").exists()
    assert "interrupted" in (tmp_path / "out" / "run.log").read_text()
    assert read_identity(tmp_path / "out")["status"] == "interrupted"
    done = subprocess.run(cmd + ["--quiet"], capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=400)
    assert done.returncode == 0, done.stderr
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["command"] == f"python -m gpmodels run {p} --no-progress --quiet"
    assert metrics["resumed_from_iteration"] is not None and metrics["resumed_from_iteration"] >= 0


# --- provenance ---------------------------------------------------------------------------------------------


def test_metrics_record_version_time_command_and_spec_digest(tmp_path, capsys):
    from gpmodels.driver.loader import load_spec
    from gpmodels.driver.run import package_version, run_spec

    p = write_spec(tmp_path, _spec(tmp_path))
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    assert main(["run", str(p), "--no-progress"]) == 0
    shown = capsys.readouterr().out
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    started = datetime.datetime.fromisoformat(m["started_at"])
    assert started.utcoffset() == datetime.timedelta(0) and before <= started <= before + datetime.timedelta(60)
    assert m["gpmodels_version"] == package_version()
    assert m["command"] == f"gpmodels run {p} --no-progress"
    assert m["spec_sha256"] == read_identity(tmp_path / "out")["spec_sha256"]
    log = (tmp_path / "out" / "run.log").read_text()
    assert "command: gpmodels run" in log and "\r" not in log
    for line in shown.splitlines():  # every message shown is in the log
        assert line in log
    spec, base = load_spec(p)
    api = run_spec(spec, base, tmp_path / "api", quiet=True)
    assert api["command"] == "python" and api["spec_sha256"] == m["spec_sha256"]
    assert "test error" in (tmp_path / "api" / "run.log").read_text()  # logged also when quiet


def test_run_log_holds_messages_not_progress_bars(tmp_path, capsys, monkeypatch):
    from gpmodels import progress

    monkeypatch.setattr(progress, "NEWTON_DELAY", 0.0)  # the toy fit's bar shows at once
    p = write_spec(tmp_path, _spec(tmp_path))
    assert main(["run", str(p)]) == 0  # bars on
    assert "Newton" in capsys.readouterr().err
    log = (tmp_path / "out" / "run.log").read_text()
    assert "\r" not in log and "it/s" not in log and "test error" in log


def test_a_study_records_provenance_and_a_log(tmp_path, capsys):
    d = _spec(tmp_path)
    study = {
        "name": "st",
        "data": d["data"],
        "output": {"dir": str(tmp_path / "st")},
        "models": [
            {"name": "good", "model": d["model"]},
            {
                "name": "bad",
                "model": d["model"],
                "objective": {
                    "type": "cv",
                    "cv": {"newton": {"max_iter": 1}, "fail_tol": 1e-12, "folds": 3, "checkpoint": False},
                },
            },
        ],
    }
    p = write_spec(tmp_path, study, "study.yaml")
    assert main(["study", str(p), "--quiet"]) == 1
    capsys.readouterr()
    s = json.loads((tmp_path / "st" / "study.json").read_text())
    assert s["command"] == f"gpmodels study {p} --quiet" and s["gpmodels_version"]
    assert s["spec_sha256"] == read_identity(tmp_path / "st")["spec_sha256"]
    datetime.datetime.fromisoformat(s["started_at"])
    log = (tmp_path / "st" / "run.log").read_text()
    assert "model 'bad' failed" in log and "model 2/2: bad" in log
    good = json.loads((tmp_path / "st" / "good" / "metrics.json").read_text())
    assert good["command"] == s["command"] and (tmp_path / "st" / "good" / "run.log").is_file()


# --- the OpenBLAS setting: the command's, not the package's ------------------------------------------
def test_importing_gpmodels_changes_nothing_in_the_environment():
    code = "import os; before = dict(os.environ); import gpmodels; print(dict(os.environ) == before)"
    env = {k: v for k, v in _env().items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.strip() == "True", done.stderr


def test_configure_openblas_runs_the_program_with_the_short_spin_once():
    code = (
        "import os, gpmodels; print('start'); gpmodels.configure_openblas(); "
        "print(os.environ['OPENBLAS_THREAD_TIMEOUT'])"
    )
    env = {k: v for k, v in _env().items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert lines[-1] == "4" and lines.count("4") == 1 and 1 <= lines.count("start") <= 2  # 2: restarted once
    kept = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "OPENBLAS_THREAD_TIMEOUT": "7"},
    )
    assert kept.stdout.split() == ["start", "7"], kept.stderr


def test_predict_into_a_closed_pipe_stops_quietly(tmp_path):
    """`gpmodels predict ... | head -1`: the reader goes away; no "run failed", no traceback, exit 141
    (128 + SIGPIPE) as a Unix tool stopped by the closed pipe."""
    assert main(["run", str(write_spec(tmp_path, _spec(tmp_path))), "--quiet"]) == 0
    X, _ = toy_classification(6000, 3, d=3, seed=4)  # ~300 KB of table: more than a pipe holds
    np.savez(tmp_path / "new.npz", X=X)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpmodels", "predict", str(tmp_path / "out"), str(tmp_path / "new.npz")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        cwd=tmp_path,
    )
    assert proc.stdout.readline().startswith(b"row,prediction")
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "failed" not in err and "Traceback" not in err and "Broken pipe" not in err
