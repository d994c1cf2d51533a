"""The linter configuration in pyproject.toml ([tool.ruff]) passes on the package, tests and benchmarks."""

import shutil
import subprocess
import sys

import pytest
from conftest import ROOT


def test_ruff_check_passes():
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(ROOT / ".venv" / "bin"))
    cmd = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    probe = subprocess.run([*cmd, "--version"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("ruff is not installed (pip install -e '.[test]' installs it)")
    proc = subprocess.run(
        [*cmd, "check", "gpmodels", "tests", "bench", "setup.py"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
