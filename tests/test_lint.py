"""The linter configuration in pyproject.toml ([tool.ruff]) passes on the package, tests and benchmarks, and they
are laid out as `ruff format` lays them out (the `test` extra pins ruff's minor version, whose format style is
stable)."""

import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

PATHS = ["gpmodels", "tests", "bench", "setup.py"]


def _ruff() -> list[str]:
    """The ruff of this interpreter's environment (the pinned one of the `test` extra), else one on PATH."""
    for cmd in ([sys.executable, "-m", "ruff"], [shutil.which("ruff") or "ruff"]):
        try:
            if subprocess.run([*cmd, "--version"], capture_output=True, text=True).returncode == 0:
                return cmd
        except OSError:
            continue
    pytest.skip("ruff is not installed (pip install -e '.[test]' installs it)")


def test_ruff_check_passes():
    cmd = _ruff()
    proc = subprocess.run([*cmd, "check", *PATHS], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]


def test_ruff_format_leaves_the_tree_unchanged():
    proc = subprocess.run(
        [*_ruff(), "format", "--check", *PATHS], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, (
        "run `ruff format gpmodels tests bench setup.py`:\n" + proc.stdout[-5000:] + proc.stderr[-2000:]
    )
