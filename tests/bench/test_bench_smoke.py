"""Every benchmark runs end to end at a tiny size: each ``bench/*.py`` with a ``__main__`` (found, not listed, so
a new benchmark is covered when it lands) runs as ``python bench/NAME.py --smoke`` in a fresh process and a
scratch folder (with the shared data when present), exits 0 and ends its output with its JSON line.
Helper modules without a main are not run.  The runs are started together, as many at a time as this process
has cores (each is a process of its own), and each test reads its bench's run."""

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import ROOT, SHARED_DATA

from gpmodels.linalg.blas_threads import usable_cores

BENCH = ROOT / "bench"
SMOKE_TIMEOUT_S = 300


def _benches() -> list[str]:
    return sorted(p.name for p in BENCH.glob("*.py") if "__main__" in p.read_text(encoding="utf-8"))


def test_the_benches_are_found():
    assert {"mvm.py", "satimage_map.py"} <= set(_benches())


def _smoke(name: str) -> subprocess.CompletedProcess:
    """``python bench/NAME.py --smoke`` in a scratch folder of its own."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if SHARED_DATA.is_dir():  # the scratch folder has no ../shared/data beside it
        env["GPMODELS_DATA"] = str(SHARED_DATA)
    with tempfile.TemporaryDirectory() as scratch:
        return subprocess.run(
            [sys.executable, str(BENCH / name), "--smoke"],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            timeout=SMOKE_TIMEOUT_S,
        )


@pytest.fixture(scope="module")
def smoke_runs():
    """Every bench's smoke run, started together on this process's cores: name -> future of its run."""
    with ThreadPoolExecutor(max_workers=max(1, usable_cores())) as pool:
        yield {name: pool.submit(_smoke, name) for name in _benches()}


@pytest.mark.parametrize("name", _benches())
def test_the_bench_runs_in_smoke_mode(name, smoke_runs):
    done = smoke_runs[name].result()
    assert done.returncode == 0, (
        f"{name} --smoke exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines, f"{name} --smoke printed nothing"
    assert isinstance(json.loads(lines[-1]), dict), f"{name} --smoke's last line is not a JSON object: {lines[-1]}"
