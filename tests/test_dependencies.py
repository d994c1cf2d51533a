"""The dependency promise of pyproject.toml: every gpmodels module imports with cvxpy (an optional
extra: reference solutions for the tests) absent, and the H-M^3 LP direction works without it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import gpmodels

ROOT = Path(gpmodels.__file__).resolve().parent.parent

#: Runs in a fresh interpreter in which ``import cvxpy`` fails as if it were not installed.
_WITHOUT_CVXPY = textwrap.dedent(r"""
    import importlib, pkgutil, sys

    class NoCvxpy:
        def find_spec(self, name, path=None, target=None):
            if name == "cvxpy" or name.startswith("cvxpy."):
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, NoCvxpy())
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
    assert "cvxpy" not in sys.modules
    print("ok")
""")


def test_every_module_imports_and_lp_directions_run_without_cvxpy():
    out = subprocess.run([sys.executable, "-c", _WITHOUT_CVXPY], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"      # and nothing else: no solver banner on stdout
