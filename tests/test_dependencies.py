"""The dependency promise of pyproject.toml: every gpmodels module imports with the optional packages absent
(cvxpy: reference solutions for the tests; matplotlib: the ``plots`` extra; networkx: read as it is, never
needed), the H-M^3 LP direction works without cvxpy, and a run or study without matplotlib succeeds,
skips its figures and says so in one line (messages, run.log, report.md), never with a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from conftest import toy_data_section

import gpmodels
from gpmodels.reports import PLOTS_SKIPPED

ROOT = Path(gpmodels.__file__).resolve().parent.parent
OPTIONAL = ("cvxpy", "matplotlib", "networkx")
#: the scripts run in a temporary folder and import this gpmodels
_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}

#: Put first in a fresh interpreter: ``import X`` fails for X in the modules named on the command line, as
#: if they were not installed.
_BLOCK = textwrap.dedent(r"""
    import sys

    class Absent:
        def __init__(self, names):
            self.names = names

        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in self.names:
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, Absent(set(sys.argv[1].split(","))))
""")

_IMPORT_ALL = _BLOCK + textwrap.dedent(r"""
    import importlib, pkgutil
    import gpmodels
    failed = []
    for info in pkgutil.walk_packages(gpmodels.__path__, "gpmodels."):
        try:
            importlib.import_module(info.name)
        except Exception as e:
            failed.append(f"{info.name}: {type(e).__name__}: {e}")
    assert not failed, failed
    import numpy as np
    from gpmodels.baselines.hm3 import HM3Options, fit_hm3
    from gpmodels.hierarchy import ClassTree
    from gpmodels.kernels import RBF
    tree = ClassTree([("root", "a"), ("root", "b"), ("a", "a1"), ("a", "a2")])
    X = np.random.default_rng(0).normal(size=(6, 2))
    Y = np.array([[1, 0, 1, 0], [1, 0, 0, 1], [0, 1, 0, 0]] * 2, dtype=bool)
    model = fit_hm3(RBF(w=0.5), X, Y, tree, HM3Options(direction="lp", max_passes=1))
    assert model.predict(X).shape == Y.shape
    assert not {"cvxpy", "matplotlib", "networkx"} & set(sys.modules)
    print("ok")
""")

_RUN = _BLOCK + textwrap.dedent(r"""
    from gpmodels.cli import main
    sys.exit(main(sys.argv[2:]))
""")


def test_the_base_install_names_no_optional_package():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    required = {d.split(">")[0].split("=")[0].split("[")[0].strip() for d in project["dependencies"]}
    assert not required & set(OPTIONAL), required & set(OPTIONAL)
    extras = project["optional-dependencies"]
    assert any(d.startswith("matplotlib") for d in extras["plots"])
    assert all(any(d.startswith(p) for d in extras["test"]) for p in OPTIONAL)  # the tests cover them all


def test_every_module_imports_and_lp_directions_run_without_the_optional_packages():
    out = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL, ",".join(OPTIONAL)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"  # and nothing else: no solver banner on stdout


def _without_matplotlib(tmp_path, *args):
    return subprocess.run(
        [sys.executable, "-c", _RUN, "matplotlib", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=_ENV,
    )


def test_a_run_and_a_study_without_matplotlib_skip_the_figures_and_say_so(tmp_path):
    data = toy_data_section(tmp_path, n=60, n_train=40, d=3, seed=1)
    model = {"kernel": {"type": "rbf", "w": 0.5}, "sharing": "tied", "variance": 2.0}
    (tmp_path / "run.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "r",
                "data": data,
                "model": model,
                "output": {"dir": str(tmp_path / "run")},
                "objective": {"type": "cv", "cv": {"folds": 3, "outer": {"max_iter": 2}}},
            }
        )
    )
    out = _without_matplotlib(tmp_path, "run", "run.yaml", "--no-progress")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr + out.stdout
    assert out.stdout.count(PLOTS_SKIPPED) == 1 and "pip install gpmodels[plots]" in PLOTS_SKIPPED
    folder = tmp_path / "run"
    assert not list(folder.glob("*.png"))
    assert PLOTS_SKIPPED in (folder / "run.log").read_text()
    assert f"## Plots\n\n{PLOTS_SKIPPED}\n" in (folder / "report.md").read_text()
    assert json.loads((folder / "metrics.json").read_text())["test_error"] < 0.5
    assert (folder / "model.npz").is_file() and (folder / "error_reject.csv").is_file()

    (tmp_path / "study.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "s",
                "data": data,
                "output": {"dir": str(tmp_path / "study")},
                "models": [{"name": f"v{v}", "model": {**model, "variance": v}} for v in (1.0, 4.0)],
            }
        )
    )
    out = _without_matplotlib(tmp_path, "study", "study.yaml", "--quiet")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout == "" and "Traceback" not in out.stderr
    study = tmp_path / "study"
    assert not list(study.rglob("*.png"))
    assert PLOTS_SKIPPED in (study / "report.md").read_text() and PLOTS_SKIPPED in (study / "run.log").read_text()
    assert PLOTS_SKIPPED in (study / "v1.0" / "report.md").read_text()


def test_a_plot_call_without_matplotlib_names_the_extra(tmp_path):
    script = _BLOCK + textwrap.dedent(r"""
        from gpmodels import reports
        from gpmodels.errors import OptionalDependencyError
        assert not reports.plots_available()
        try:
            reports.plot_traces({"Phi": [2.0, 1.0]}, "t.png")
        except OptionalDependencyError as exc:
            print(exc)
    """)
    out = subprocess.run(
        [sys.executable, "-c", script, "matplotlib"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=_ENV,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "pip install gpmodels[plots]" in out.stdout and not (tmp_path / "t.png").exists()


def test_to_networkx_without_networkx_names_what_to_install(tmp_path):
    script = _BLOCK + textwrap.dedent(r"""
        from gpmodels.errors import OptionalDependencyError
        from gpmodels.hierarchy import ClassTree
        try:
            ClassTree([("r", "a"), ("r", "b")]).to_networkx()
        except OptionalDependencyError as exc:
            print(exc)
    """)
    out = subprocess.run(
        [sys.executable, "-c", script, "networkx"], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_ENV
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "pip install networkx" in out.stdout
