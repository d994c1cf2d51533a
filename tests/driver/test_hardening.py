"""Hardening of the driver against hostile or careless input (issue 15): no code run from a file
unless the user allows its module, bounded YAML and messages, messages that never quote a file,
names that are not paths, bounded sizes, report folders checked, locked and cleared before the
work, checkpoint writes that may fail, studies past a failing model.  Every case goes through the
CLI and checks the exit code, a message fragment and that no traceback is printed."""

import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import toy_data_section
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpmodels.cli import main
from gpmodels.driver.loader import load_any_spec, load_spec, read_yaml, spec_from_dict
from gpmodels.driver.output import LOCK_FILE, claim_output
from gpmodels.driver.run import run_spec
from gpmodels.errors import InputError, OutputError, SpecError

SECRET = "root:$6$SECRETHASHSECRETHASH:19000:0:99999:7:::"


def _spec(tmp_path, name="toy", **objective):
    return {
        "name": name,
        "data": toy_data_section(tmp_path, n=90, n_train=60, d=4, seed=0, label_offset=1),
        "model": {"kernel": {"type": "rbf", "w": "auto"}, "variance": 5.0, "sigma2": 4.0},
        "objective": {"newton": {"max_iter": 20, "cg_max_iter": 30}, **objective},
        "output": {"dir": str(tmp_path / "out")},
    }


def _write(path, d):
    path.write_text(yaml.safe_dump(d) if isinstance(d, dict) else d)
    return path


def _cli(capsys, *argv) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


@pytest.fixture
def evil_module(tmp_path, monkeypatch):
    """A module on sys.path that leaves a marker file when imported, and its builder's path."""
    marker = tmp_path / "imported.marker"
    (tmp_path / "evil_prior_mod.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n\ndef build(ctx):\n    raise SystemExit('called')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "evil_prior_mod:build", marker
    sys.modules.pop("evil_prior_mod", None)


# ------------------------------------------------------------------ 1. no code run from a file
def test_a_spec_naming_a_module_imports_nothing_without_allow_import(tmp_path, capsys, evil_module):
    path, marker = evil_module
    d = _spec(tmp_path)
    d["model"]["prior"] = path
    p = _write(tmp_path / "spec.yaml", d)
    for cmd in (["validate", p], ["run", p, "--quiet"]):
        code, err = _cli(capsys, *cmd)
        assert code == 2 and "needs --allow-import evil_prior_mod" in err and "model.prior" in err
        assert not marker.exists()
    with pytest.raises(SpecError, match="needs --allow-import"):
        run_spec(load_spec(p)[0], quiet=True)
    assert not marker.exists() and "evil_prior_mod" not in sys.modules
    # the opt-in imports it (validate checks that the builder is callable)
    code, err = _cli(capsys, "validate", p, "--allow-import", "evil_prior_mod")
    assert code == 0 and marker.exists()


def test_allow_import_is_per_module(tmp_path, capsys, evil_module):
    path, marker = evil_module
    d = _spec(tmp_path)
    d["model"]["prior"] = path
    p = _write(tmp_path / "spec.yaml", d)
    for other in ("evil", "evil_prior_mod_x", "os"):  # neither a prefix of the name nor its parent package
        code, err = _cli(capsys, "validate", p, "--allow-import", other)
        assert code == 2 and "needs --allow-import evil_prior_mod" in err and not marker.exists()
    for stdlib in ("this:s", "sys:exit", "builtins:input", "os.path:join"):
        d["model"]["prior"] = stdlib
        code, err = _cli(capsys, "validate", _write(tmp_path / "spec.yaml", d))
        assert code == 2 and "names a Python module" in err
    with pytest.raises(SystemExit):  # not a module name
        main(["validate", str(p), "--allow-import", "../x"])
    capsys.readouterr()


def test_a_model_folder_naming_a_module_runs_no_code_at_predict(tmp_path, capsys, evil_module):
    path, marker = evil_module
    assert main(["run", str(_write(tmp_path / "spec.yaml", _spec(tmp_path))), "--quiet"]) == 0
    resolved = yaml.safe_load((tmp_path / "out" / "spec.resolved.yaml").read_text())
    resolved["model"]["prior"] = path
    _write(tmp_path / "out" / "spec.resolved.yaml", resolved)
    code, err = _cli(capsys, "predict", tmp_path / "out", tmp_path / "test.npz")
    assert code == 2 and "needs --allow-import evil_prior_mod" in err and not marker.exists()


# ------------------------------------------------------------------ 2. bounded YAML and messages
def test_an_alias_bomb_fails_fast_with_a_clear_message(tmp_path, capsys):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, "
        f"*a{i - 1}, *a{i - 1}, *a{i - 1}]"
        for i in range(1, 12)
    ]
    p = _write(tmp_path / "bomb.yaml", "\n".join(lines) + "\nname: *a11\n")
    t = time.perf_counter()
    code, err = _cli(capsys, "validate", p)
    assert code == 2 and "expands to more than" in err and len(err) < 1000
    assert time.perf_counter() - t < 10
    p = _write(tmp_path / "loop.yaml", "name: &a [*a]\n")  # a recursive document
    code, err = _cli(capsys, "validate", p)
    assert code == 2 and "expands to more than" in err


def test_messages_quote_values_bounded(tmp_path, capsys):
    d = _spec(tmp_path)
    d["name"] = ["x" * 100] * 1000  # a large value in a string field
    code, err = _cli(capsys, "validate", _write(tmp_path / "spec.yaml", d))
    assert code == 2 and "name: must be a string" in err and len(err) < 1000
    d = _spec(tmp_path)
    d["model"]["prior"] = "y" * 50_000
    code, err = _cli(capsys, "validate", _write(tmp_path / "spec.yaml", d))
    assert code == 2 and "unknown prior" in err and len(err) < 2000


# ------------------------------------------------------------------ 3. messages never quote a file
@pytest.mark.parametrize(
    "content, fragment",
    [
        (SECRET + "\n", "unknown key that is not a key name (46 characters)"),  # a shadow line parses as a mapping key
        ("SECRETHASH and more words\n", "mapping of keys to values; got str (25 characters)"),
        (SECRET + "\nbin:x:1:1:bin:/bin:/sbin/nologin\n", "not valid YAML at line 2, column 1: a key without ':'"),
        ("name: x\n  bad: [" + SECRET + "\n", "not valid YAML at line"),
        (b"\x89PNG\r\n\x1a\n\x00\x00" + SECRET.encode(), "binary data"),
        (b"\xff\xfe" + SECRET.encode(), "binary data"),
        ("key: !!python/object/apply:os.system ['" + SECRET + "']\n", "not valid YAML"),
        ("x: " + "9" * 5000 + "\n", "cannot be converted"),
        ("[" * 5000 + "]" * 5000 + "\n", "not valid YAML"),
    ],
)
def test_unreadable_specs_are_described_never_quoted(tmp_path, capsys, content, fragment):
    p = tmp_path / "spec.yaml"
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    for cmd in (["validate", p], ["run", p], ["study", p]):
        code, err = _cli(capsys, *cmd)
        assert code == 2 and fragment in err, err
        assert "SECRETHASH" not in err and "nologin" not in err


def test_unreadable_files_are_described(tmp_path, capsys):
    code, err = _cli(capsys, "validate", tmp_path)
    assert code == 2 and "not a regular file" in err
    code, err = _cli(capsys, "validate", tmp_path / "missing.yaml")
    assert code == 2 and "not found" in err
    big = tmp_path / "big.yaml"
    big.write_bytes(b"# " + b"x" * (5 * 1024 * 1024))
    code, err = _cli(capsys, "validate", big)
    assert code == 2 and "a spec is at most" in err
    with pytest.raises(SpecError, match="line 2, column"):
        read_yaml(_write(tmp_path / "s.yaml", "a: 1\n b: [\n"))


def test_a_model_folder_spec_is_never_quoted_at_predict(tmp_path, capsys):
    assert main(["run", str(_write(tmp_path / "spec.yaml", _spec(tmp_path))), "--quiet"]) == 0
    (tmp_path / "out" / "spec.resolved.yaml").write_text(SECRET + "\n")
    code, err = _cli(capsys, "predict", tmp_path / "out", tmp_path / "test.npz")
    assert code == 2 and "SECRETHASH" not in err and "spec.resolved.yaml" in err


# ------------------------------------------------------------------ 4. names are names
@pytest.mark.parametrize("name", ["../../escape", "a/b", "/abs", ".hidden", "..", "a..b", "", "x" * 101, "a\nb"])
def test_names_are_not_paths(tmp_path, capsys, name):
    d = _spec(tmp_path)
    d["name"] = name
    del d["output"]
    code, err = _cli(capsys, "validate", _write(tmp_path / "spec.yaml", d))
    assert code == 2 and "name: must be a name of letters, digits" in err
    study = {"name": "st", "data": d["data"], "models": [{"name": name, "model": d["model"]}]}
    code, err = _cli(capsys, "validate", _write(tmp_path / "study.yaml", study))
    assert code == 2 and "models[0].name: must be a name" in err
    study["name"], study["models"][0]["name"] = name, "ok"
    code, err = _cli(capsys, "validate", _write(tmp_path / "study.yaml", study))
    assert code == 2 and "name: must be a name" in err
    assert not (tmp_path.parent / "escape").exists()


def test_good_names_pass():
    for name in ("satimage-cv", "run_1", "v1.2", "A", "0"):
        spec_from_dict({"name": name, "data": {"dataset": "satimage"}, "model": {"kernel": {"type": "linear"}}})


# ------------------------------------------------------------------ 5. sizes bounded before allocating
@pytest.mark.parametrize(
    "section, key, value, message",
    [
        ("objective.laplace", "n_probes", 10**12, "objective.laplace.n_probes: must be an integer in [1, 100000]"),
        ("objective.newton", "precond_rank", 10**9, "objective.newton.precond_rank: must be an integer in [1, 100000]"),
        ("model.representation", "rank", 10**9, "model.representation.rank: must be an integer in [1, 100000]"),
        (
            "model.representation",
            "memory_mb",
            1e15,
            "model.representation.memory_mb: must be a number x with 0 < x <= 1048576",
        ),
    ],
)
def test_sizes_from_spec_keys_are_bounded(tmp_path, capsys, section, key, value, message):
    d = _spec(tmp_path, **({"type": "laplace"} if "laplace" in section else {}))
    if "laplace" in section:
        del d["objective"]["newton"]
    target = d
    for part in section.split("."):
        target = target.setdefault(part, {})
    target[key] = value
    code, err = _cli(capsys, "validate", _write(tmp_path / "spec.yaml", d))
    assert code == 2 and message in err


# ------------------------------------------------------------------ 6. report folders
def test_a_bad_out_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    p = _write(tmp_path / "spec.yaml", _spec(tmp_path))
    from gpmodels.driver import run as run_module

    def no_data(*a, **k):
        raise AssertionError("the data were loaded before the folder was checked")

    monkeypatch.setattr(run_module, "build_data", no_data)
    (tmp_path / "afile").write_text("x")
    code, err = _cli(capsys, "run", p, "--quiet", "--out", tmp_path / "afile")
    assert code == 2 and "is an existing file, not a folder" in err
    code, err = _cli(capsys, "run", p, "--quiet", "--out", tmp_path / "afile" / "sub")
    assert code == 2 and "cannot be created" in err
    code, err = _cli(capsys, "run", p, "--quiet", "--out", "bad\x00path")
    assert code == 2 and "not a valid path" in err
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        try:
            code, err = _cli(capsys, "run", p, "--quiet", "--out", ro)
            assert code == 2 and "not writable" in err
        finally:
            ro.chmod(0o700)


def test_another_runs_folder_is_refused_and_force_clears_its_artefacts(tmp_path, capsys):
    d = _spec(tmp_path)
    assert main(["run", str(_write(tmp_path / "a.yaml", d)), "--quiet"]) == 0
    out = tmp_path / "out"
    assert (out / "model.npz").is_file() and json.loads((out / "run.json").read_text())["status"] == "finished"
    cs = _spec(tmp_path, name="cs", type="crammer_singer")  # another run, another kind of model
    del cs["objective"]["newton"]
    code, err = _cli(capsys, "run", _write(tmp_path / "b.yaml", cs), "--quiet")
    assert code == 2 and "holds the report of another run ('toy'" in err and "--force" in err
    assert (out / "model.npz").is_file()  # refused: nothing touched
    (out / "notes.txt").write_text("mine")
    code, err = _cli(capsys, "run", tmp_path / "b.yaml", "--quiet", "--force")
    assert code == 0
    assert (out / "notes.txt").read_text() == "mine"
    assert json.loads((out / "metrics.json").read_text())["name"] == "cs"
    with np.load(out / "model.npz") as z:
        assert str(z["kind"]) == "crammer_singer"  # the stale MAP model was cleared, the new one saved
    (out / "model.npz").unlink()  # a run's report without its model
    code, err = _cli(capsys, "predict", out, tmp_path / "test.npz")
    assert code == 2 and "saved no model.npz" in err and "'cs'" in err


def test_the_same_spec_again_clears_stale_artefacts(tmp_path):
    d = _spec(tmp_path)
    p = _write(tmp_path / "a.yaml", d)
    assert main(["run", str(p), "--quiet"]) == 0
    (tmp_path / "out" / "trace_Old.png").write_bytes(b"old plot")
    assert main(["run", str(p), "--quiet"]) == 0
    assert not (tmp_path / "out" / "trace_Old.png").exists()


def test_a_folder_with_an_old_report_but_no_identity_needs_force(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "model.npz").write_bytes(b"old")
    p = _write(tmp_path / "a.yaml", _spec(tmp_path))
    code, err = _cli(capsys, "run", p, "--quiet")
    assert code == 2 and "without a run identity (model.npz)" in err
    assert main(["run", str(p), "--quiet", "--force"]) == 0


def test_a_locked_folder_is_refused_and_a_stale_lock_taken_over(tmp_path, capsys):
    import socket
    import subprocess

    p = _write(tmp_path / "a.yaml", _spec(tmp_path))
    (tmp_path / "out").mkdir()
    lock = tmp_path / "out" / LOCK_FILE
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock.write_text(json.dumps({"pid": live.pid, "host": socket.gethostname()}))
        code, err = _cli(capsys, "run", p, "--quiet")
        assert code == 2 and f"in use by another gpmodels run (process {live.pid})" in err
    finally:
        live.kill()
        live.wait()
    assert main(["run", str(p), "--quiet"]) == 0  # the process is gone: a stale lock
    assert not lock.exists()


def test_claim_output_in_python(tmp_path):
    ident = {"name": "a", "spec_sha256": "1" * 64}
    with claim_output(tmp_path / "f", ident):
        with pytest.raises(OutputError, match="in use by another"):
            # a second claim from another (live) process is what is refused; simulate it by the parent's pid
            (tmp_path / "f" / LOCK_FILE).write_text(
                json.dumps({"pid": os.getppid(), "host": __import__("socket").gethostname()})
            )
            claim_output(tmp_path / "f", ident)
    assert not (tmp_path / "f" / LOCK_FILE).exists()


# ------------------------------------------------------------------ 7. checkpoint writes that fail
def test_a_failing_checkpoint_write_warns_and_the_run_goes_on(tmp_path, monkeypatch):
    from gpmodels.optimize import driver as learn  # the outer optimiser writes every checkpoint

    real, calls = learn.write_checkpoint, []

    def flaky(path, state, identity, *a, **k):
        calls.append(state.iteration)
        if len(calls) > 1:
            raise OSError(28, "No space left on device", str(path))
        return real(path, state, identity, *a, **k)

    monkeypatch.setattr(learn, "write_checkpoint", flaky)
    d = _spec(tmp_path, type="cv", cv={"folds": 3, "outer": {"max_iter": 3}, "newton": {"max_iter": 5}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metrics = run_spec(spec_from_dict(d), quiet=True)
    assert metrics["test_error"] < 0.5 and len(calls) > 1
    assert not caught  # no raw Python warning (under quiet: nothing printed), the run's log keeps it
    text = (Path(d["output"]["dir"]) / "run.log").read_text()
    assert "warning: cannot write the checkpoint" in text and "No space left on device" in text
    assert "the last good checkpoint there: the one of outer iteration 0" in text


# ------------------------------------------------------------------ 8. studies
def test_a_study_goes_on_past_a_failing_model(tmp_path, capsys):
    d = _spec(tmp_path)
    study = {
        "name": "st",
        "data": d["data"],
        "models": [
            {"name": "first", "model": d["model"], "objective": {"newton": {"max_iter": 10}}},
            {
                "name": "broken",
                "model": {**d["model"], "kernel": {"type": "precomputed", "gram": str(tmp_path / "g.npy")}},
            },
            {"name": "last", "model": d["model"], "objective": {"newton": {"max_iter": 10}}},
        ],
    }
    np.save(tmp_path / "g.npy", np.eye(3))  # too small for the data: the model fails at run time
    p = _write(tmp_path / "study.yaml", study)
    code, err = _cli(capsys, "study", p, "--out", tmp_path / "st", "--quiet")
    assert code == 1 and "model 'broken' failed" in err and "1 of 3 models failed (broken)" in err
    table = (tmp_path / "st" / "study.md").read_text()
    assert "| broken | failed |" in table and "| first | ok |" in table and "| last | ok |" in table
    assert (tmp_path / "st" / "report.md").is_file() and (tmp_path / "st" / "last" / "metrics.json").is_file()
    rows = json.loads((tmp_path / "st" / "study.json").read_text())["rows"]
    assert rows[1]["status"] == "failed" and 0 < len(rows[1]["error"]) <= 210


def test_run_and_study_say_which_command_a_spec_needs(tmp_path, capsys):
    d = _spec(tmp_path)
    model = _write(tmp_path / "model.yaml", d)
    study = _write(
        tmp_path / "study.yaml", {"name": "st", "data": d["data"], "models": [{"name": "m", "model": d["model"]}]}
    )
    code, err = _cli(capsys, "study", model)
    expected = f"is a model spec (a `model` section, no `models` list); run it with `gpmodels run {model}`"
    assert code == 2 and expected in err
    code, err = _cli(capsys, "run", study)
    assert code == 2 and f"is a study spec (it lists `models`); run it with `gpmodels study {study}`" in err


# ------------------------------------------------------------------ property: the spec loader never crashes
_yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["name", "data", "model", "objective", "models", "kernel", "type", "w", "path", "prior", "x"]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=80, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=400))
def test_random_bytes_give_a_spec_or_a_spec_error(tmp_path, raw):
    p = tmp_path / "random.yaml"
    p.write_bytes(raw)
    try:
        load_any_spec(p)
    except SpecError as exc:
        assert len(str(exc)) < 3000
    except InputError:  # a spec naming files that do not exist etc.
        pass


@settings(max_examples=80, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_yaml_values)
def test_random_yaml_gives_a_spec_or_a_spec_error(tmp_path, data):
    p = tmp_path / "random.yaml"
    p.write_text(yaml.safe_dump(data))
    try:
        load_any_spec(p)
    except SpecError as exc:
        assert len(str(exc)) < 3000


@pytest.mark.parametrize("content", [b"", SECRET.encode(), "npz", "object"])
def test_an_unreadable_gram_file_is_bad_input(tmp_path, capsys, content):
    g = tmp_path / "g.npy"
    if content == "npz":
        np.savez(g.with_suffix(""), G=np.eye(3))
        g.with_suffix(".npz").rename(g)
    elif content == "object":
        np.save(g, np.array([{"a": 1}] * 3, dtype=object), allow_pickle=True)
    else:
        g.write_bytes(content)
    d = _spec(tmp_path)
    d["model"]["kernel"] = {"type": "precomputed", "gram": str(g)}
    code, err = _cli(capsys, "run", _write(tmp_path / "spec.yaml", d), "--quiet")
    assert code == 2 and "model.kernel.gram" in err and "cannot be read as a .npy Gram matrix" in err
    assert "SECRETHASH" not in err


def test_predict_checks_its_out_file_first(tmp_path, capsys):
    assert main(["run", str(_write(tmp_path / "spec.yaml", _spec(tmp_path))), "--quiet"]) == 0
    for out, message in ((tmp_path, "is a folder"), (tmp_path / "no" / "p.csv", "does not exist")):
        code, err = _cli(capsys, "predict", tmp_path / "out", tmp_path / "test.npz", "--out", out)
        assert code == 2 and message in err
    assert main(["predict", str(tmp_path / "out"), str(tmp_path / "test.npz"), "--out", str(tmp_path / "p.csv")]) == 0


@pytest.mark.parametrize("content", [b"", "truncated", "object"])
def test_an_unreadable_data_file_is_bad_input(tmp_path, capsys, content):
    d = _spec(tmp_path)
    train = tmp_path / "train.npz"
    if content == "truncated":
        train.write_bytes(train.read_bytes()[:200])
    elif content == "object":
        np.savez(train, X=np.array([{"a": 1}] * 3, dtype=object), y=np.arange(3))
    else:
        train.write_bytes(content)
    code, err = _cli(capsys, "run", _write(tmp_path / "spec.yaml", d), "--quiet")
    assert code == 2 and "data.path" in err and str(train) in err, err
    assert any(what in err for what in ("is empty", "not a readable .npz", "dtype object")), err
