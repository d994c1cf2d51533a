"""Progress bars and messages: bars on stderr only when the driver asks, nothing at all with
--quiet, silent library calls, and the same results with and without bars."""

import json

import numpy as np
import pytest
from conftest import SHARED_DATA, toy_classification, toy_data_section, write_spec

from gpmodels import progress
from gpmodels.cli import main
from gpmodels.driver.loader import spec_from_dict
from gpmodels.driver.run import run_spec
from gpmodels.inference.map.newton_cg import NewtonOptions, newton_cg
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.persistence import load_arrays
from gpmodels.progress import Console
from gpmodels.validation import labels_to_targets


@pytest.fixture(autouse=True)
def _newton_bars_at_once(monkeypatch):
    """The toy fits take milliseconds: their Newton bars show at once here, not after NEWTON_DELAY."""
    monkeypatch.setattr(progress, "NEWTON_DELAY", 0.0)


def _data(tmp_path):
    return toy_data_section(tmp_path, n=90, n_train=60, d=3, seed=3, spread=2.5)


def _spec(tmp_path, out, objective=None):
    return {
        "name": "bars",
        "seed": 1,
        "data": _data(tmp_path),
        "model": {"kernel": {"type": "rbf", "w": "auto"}, "sharing": "semi", "variance": 2.0, "sigma2": 1.0},
        "objective": objective or {"newton": {"max_iter": 30, "cg_max_iter": 40}},
        "output": {"dir": str(tmp_path / out)},
    }


CV = {
    "type": "cv",
    "newton": {"max_iter": 30, "cg_max_iter": 40},
    "cv": {"folds": 3, "newton": {"max_iter": 20, "cg_max_iter": 30}, "outer": {"max_iter": 2}, "checkpoint": False},
}


def _same_results(a, b):
    ma, mb = (json.loads((d / "metrics.json").read_text()) for d in (a, b))
    # timings and the provenance of the run (when and by which command line it ran) are not results
    timing = {k for k in ma if k.endswith("seconds")} | {"started_at", "command"}
    assert {k: v for k, v in ma.items() if k not in timing} == {k: v for k, v in mb.items() if k not in timing}
    (_, xa), (_, xb) = load_arrays(a), load_arrays(b)
    assert set(xa) == set(xb) and all(np.array_equal(xa[k], xb[k]) for k in xa)


@pytest.mark.parametrize("objective, bar", [(None, "Newton"), (CV, "CV outer iterations")])
def test_run_draws_bars_on_stderr_and_quiet_prints_nothing(tmp_path, capfd, monkeypatch, objective, bar):
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)  # bars are drawn on a terminal only
    with_bars = write_spec(tmp_path, _spec(tmp_path, "on", objective), "on.yaml")
    assert main(["run", str(with_bars)]) == 0
    out, err = capfd.readouterr()
    assert f"[bars] {bar}:   0%|" in err and "\r" in err  # a tqdm bar, labelled, out of its iteration limit
    assert "[bars] test error" in out and "%|" not in out  # messages stay on stdout
    if objective is not None:
        assert "Ψ=" in err and "final fit: Newton" in err
    else:
        assert "Φ=" in err
    quiet = write_spec(tmp_path, _spec(tmp_path, "off", objective), "off.yaml")
    assert main(["run", str(quiet), "--quiet"]) == 0
    assert capfd.readouterr() == ("", "")
    _same_results(tmp_path / "on", tmp_path / "off")


def test_no_progress_keeps_the_messages(tmp_path, capfd):
    assert main(["run", str(write_spec(tmp_path, _spec(tmp_path, "o"))), "--no-progress"]) == 0
    out, err = capfd.readouterr()
    assert "[bars] fit:" in out and err == ""


def test_one_vs_rest_shows_a_bar_per_class(tmp_path, capfd):
    d = _spec(tmp_path, "o", {**CV, "type": "one_vs_rest"})
    d["model"]["sharing"] = "tied"
    assert main(["run", str(write_spec(tmp_path, d))]) == 0
    err = capfd.readouterr().err
    assert all(f"class {c}: CV outer iterations" in err and f"class {c}: final fit" in err for c in range(3))


def test_study_bar_over_rows_and_quiet_study(tmp_path, capfd):
    study = {
        "name": "st",
        "data": _data(tmp_path),
        "models": [
            {"name": "tied", "model": {"kernel": {"type": "rbf", "w": 0.3}, "sharing": "tied"}},
            {"name": "lin", "model": {"kernel": {"type": "linear"}, "sigma2": 1.0}},
        ],
        "output": {"dir": str(tmp_path / "study")},
    }
    p = write_spec(tmp_path, study, "study.yaml")
    assert main(["study", str(p)]) == 0
    out, err = capfd.readouterr()
    assert "[st] models" in err and "2/2" in err and "model=lin" in err
    assert "| tied |" in out and "[st] report:" in out
    study["output"]["dir"] = str(tmp_path / "quiet")
    assert main(["study", str(write_spec(tmp_path, study, "study.yaml")), "--quiet"]) == 0
    assert capfd.readouterr() == ("", "")
    a = json.loads((tmp_path / "study" / "study.json").read_text())["rows"]
    b = json.loads((tmp_path / "quiet" / "study.json").read_text())["rows"]
    assert [r["test_error"] for r in a] == [r["test_error"] for r in b]


def test_library_calls_are_silent(tmp_path, capfd):
    from gpmodels.kernels.rbf import RBF
    from gpmodels.priors.independent import IndependentGP

    X, y = toy_classification(30, 3, d=2, seed=0)
    op = IndependentGP(RBF(0.5), "tied", 2.0, 1.0).operator(X, 3)
    steps = []
    res = newton_cg(op, Softmax(), labels_to_targets(y, 3), NewtonOptions(), on_iteration=steps.append)
    assert [s.iteration for s in steps] == list(range(res.diagnostics.iterations + 1))
    assert [s.phi for s in steps] == pytest.approx(list(res.diagnostics.phi))
    # run_spec shows bars only when asked, and never under quiet
    run_spec(spec_from_dict(_spec(tmp_path, "lib")), quiet=True, progress=True)
    Console()("not shown")  # the default console shows nothing
    with Console().bar(10, "nothing") as bar:
        bar.step(x=1.0)
        assert not bar.active
    assert capfd.readouterr() == ("", "")
    run_spec(spec_from_dict(_spec(tmp_path, "lib")))
    out, err = capfd.readouterr()
    assert "[bars] fit:" in out and err == ""


def test_console_bar_moves_and_formats(capfd):
    say = Console("p", messages=True, bars=True)
    with say.bar(4, "work", leave=True) as bar:
        assert bar.active
        bar.goto(2, psi=1.234567891)
        say("between")
        bar.step()
    out, err = capfd.readouterr()
    assert "[p] between" in out and "3/4" in err and "psi=1.23457" in err


@pytest.mark.parametrize("objective, bar", [(None, "Newton"), (CV, "CV outer iterations")])
def test_progress_off_a_terminal_is_plain_lines(tmp_path, capfd, monkeypatch, objective, bar):
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: False)  # a log file or a pipe
    assert main(["run", str(write_spec(tmp_path, _spec(tmp_path, "plain", objective)))]) == 0
    out, err = capfd.readouterr()
    assert "%|" not in err and "\r" not in err and "it/s" not in err  # no bar redraws in a log file
    lines = err.splitlines()
    assert lines and all(line.startswith("[bars] ") for line in lines)
    assert any(line.startswith(f"[bars] {bar} 0/") for line in lines)  # the first state at once, out of the limit
    assert ("Φ=" if objective is None else "Ψ=") in err
    assert "[bars] test error" in out


def test_plain_lines_are_at_most_one_per_interval(capfd, monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    say = Console("p", bars=True, terminal=False, interval=5.0)
    with say.bar(None, "EM") as bar:  # open-ended
        assert bar.active
        for i in range(1, 30):
            clock[0] += 1.0
            bar.goto(i, Φ=float(i))
    err = capfd.readouterr().err.splitlines()
    assert err == [
        "[p] EM 1 Φ=1 (1 s)",
        "[p] EM 6 Φ=6 (6 s)",
        "[p] EM 11 Φ=11 (11 s)",
        "[p] EM 16 Φ=16 (16 s)",
        "[p] EM 21 Φ=21 (21 s)",
        "[p] EM 26 Φ=26 (26 s)",
        "[p] EM 29 Φ=29 (29 s)",
    ]  # every 5 s, and the last state at close
    with Console(bars=True, terminal=False).bar(3, "x") as bar:
        pass  # never moved: nothing shown
    assert capfd.readouterr().err == ""


def test_a_bar_over_a_limit_estimates_the_time_left_and_a_delayed_bar_waits(capfd, monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    say = Console("p", bars=True, terminal=False, interval=0.0)
    with say.bar(20, "outer") as bar:
        for i in (1, 2, 5):
            clock[0] = 30.0 * i
            bar.goto(i, Ψ=1.5)
    err = capfd.readouterr().err.splitlines()
    assert err == [
        "[p] outer 1/20 Ψ=1.5 (30 s, at most about 9 min 30 s left)",
        "[p] outer 2/20 Ψ=1.5 (1 min 00 s, at most about 9 min 00 s left)",
        "[p] outer 5/20 Ψ=1.5 (2 min 30 s, at most about 7 min 30 s left)",
    ]
    monkeypatch.setattr(progress, "NEWTON_DELAY", 3.0)
    clock[0] = 0.0
    with say.newton_bar(30, "Newton") as bar:  # a fit of 2 s shows nothing
        clock[0] = 2.0
        bar.goto(4, Φ=1.0)
    assert capfd.readouterr().err == ""
    clock[0] = 0.0
    with say.newton_bar(30, "Newton") as bar:  # one of 4 s shows from its third second on
        for t, i in ((2.0, 1), (3.2, 2), (4.0, 3)):
            clock[0] = t
            bar.goto(i, Φ=1.0)
    assert capfd.readouterr().err.splitlines()[0].startswith("[p] Newton 2/30 Φ=1 (3 s, at most")


def test_messages_go_to_the_gpmodels_logger(caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="gpmodels"):
        Console("p", messages=False)("hello")
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [("gpmodels", logging.INFO, "[p] hello")]


@pytest.mark.parametrize(
    "objective, bar",
    [
        ({"type": "laplace", "laplace": {"learn_max_iter": 4}}, "Laplace MLM: outer iterations"),
        ({"type": "vb", "vb": {"learn_max_iter": 3}}, "VB: outer iterations"),
    ],
)
def test_laplace_and_vb_learning_show_progress(tmp_path, capfd, monkeypatch, objective, bar):
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: False)
    d = _spec(tmp_path, "lv", objective)
    d["data"]["positive_class"] = "1"
    d["model"].update(likelihood="logistic", sharing="tied")
    assert main(["run", str(write_spec(tmp_path, d))]) == 0
    err = capfd.readouterr().err
    assert f"[bars] {bar} 0/" in err and "%|" not in err


HIER = "root\tg\nroot\tc3\ng\tc1\ng\tc2\nc3\tc31\nc3\tc32\n"  # leaves c1, c2, c31, c32


def _tree_spec(tmp_path, objective):
    X, y = toy_classification(80, 4, d=4, seed=0, spread=3.0)
    names = np.array(["c1", "c2", "c31", "c32"])[y]
    np.savez(tmp_path / "ttrain.npz", X=X[:56], y=names[:56])
    np.savez(tmp_path / "ttest.npz", X=X[56:], y=names[56:])
    (tmp_path / "h.tsv").write_text(HIER)
    return {
        "name": "bars",
        "data": {
            "path": str(tmp_path / "ttrain.npz"),
            "test_path": str(tmp_path / "ttest.npz"),
            "hierarchy": str(tmp_path / "h.tsv"),
        },
        "model": {"prior": "anova", "kernel": {"type": "rbf", "w": 0.2}, "sharing": "level", "variance": 3.0},
        "objective": objective,
        "output": {"dir": str(tmp_path / "t")},
    }


def _enron_spec(tmp_path):
    shared = SHARED_DATA
    if not (shared / "enron_corr").is_dir():
        pytest.skip("../shared/data not present")
    return {
        "name": "bars",
        "data": {
            "dataset": "enron_corr",
            "root": str(shared),
            "scaling": "unit_norm",
            "max_train": 120,
            "max_test": 30,
        },
        "model": {"kernel": {"type": "linear"}},
        "objective": {"type": "hm3", "hm3": {"max_passes": 4, "chunk_size": 30}},
        "output": {"dir": str(tmp_path / "e")},
    }


def _kernels_spec(tmp_path, solver):
    d = _spec(tmp_path, "k", {"type": "mkl", "mkl": {"solver": solver, "max_iter": 30}})
    d["data"]["positive_class"] = "1"
    d["model"] = {"kernels": [{"type": "rbf", "w": 0.3}, {"type": "linear"}], "likelihood": "logistic"}
    return d


@pytest.mark.parametrize(
    "make, label",
    [
        (lambda p: _tree_spec(p, {"type": "em", "em": {"max_iter": 3}}), "EM iterations"),
        (_enron_spec, "H-M^3: passes"),
        (lambda p: _spec(p, "cs", {"type": "crammer_singer"}), "Crammer-Singer: rounds"),
        (lambda p: _kernels_spec(p, "algorithm1"), "mkl by algorithm1: outer iterations"),
        (lambda p: _kernels_spec(p, "alternating"), "mkl by alternating: outer iterations"),
    ],
    ids=["em", "hm3", "crammer_singer", "mkl-algorithm1", "mkl-alternating"],
)
def test_em_baselines_and_mkl_solvers_show_progress(tmp_path, capfd, monkeypatch, make, label):
    """Off a terminal: plain lines `[name] label n[/total] key=value`, the first at once and the last state."""
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: False)
    d = make(tmp_path)
    d["data"]["pseudo_targets"] = {"fraction": 0.5, "levels_up": 1} if d["objective"]["type"] == "em" else None
    if d["data"]["pseudo_targets"] is None:
        del d["data"]["pseudo_targets"]
    assert main(["run", str(write_spec(tmp_path, d))]) == 0
    err = capfd.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith(f"[bars] {label} ")]
    assert lines, err[-2000:]
    assert "\r" not in err and "%|" not in err
    assert int(lines[-1].split()[len(label.split()) + 1].split("/")[0]) >= 1  # moved past 0
    quiet = tmp_path / "quiet.yaml"
    d["output"]["dir"] = str(tmp_path / "q")
    write_spec(tmp_path, d, quiet.name)
    assert main(["run", str(quiet), "--quiet"]) == 0
    assert capfd.readouterr() == ("", "")
