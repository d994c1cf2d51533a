"""The ``cuda`` extra is optional: without array-api-compat and PyTorch every module imports, the
CPU runs as before, and asking for ``device: cuda`` is a DeviceError naming what is missing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import gpmodels

ROOT = Path(gpmodels.__file__).resolve().parent.parent

_WITHOUT_EXTRA = textwrap.dedent(r"""
    import importlib, pkgutil, sys

    BLOCKED = ("array_api_compat", "array_api_strict", "torch", "cupy")

    class NoExtra:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, NoExtra())
    import gpmodels
    for info in pkgutil.walk_packages(gpmodels.__path__, "gpmodels."):
        importlib.import_module(info.name)
    import numpy as np
    from gpmodels.errors import DeviceError
    from gpmodels.kernels.rbf import RBF
    from gpmodels.kernels.representations import RepresentationConfig
    from gpmodels.kernels.stored_gram import StoredGram
    X = np.random.default_rng(0).normal(size=(8, 2))
    rep = RepresentationConfig(device="auto").build(X, RBF(1.0))
    assert isinstance(rep, StoredGram) and "array-api-compat is not installed" in rep.choice.device, rep.choice
    try:
        RepresentationConfig(device="cuda").build(X, RBF(1.0))
    except DeviceError as exc:
        assert "array-api-compat is not installed" in str(exc) and "gpmodels[cuda]" in str(exc), exc
    else:
        raise AssertionError("device cuda ran without the extra")
    assert not any(m.split(".")[0] in BLOCKED for m in sys.modules)
    print("ok")
""")


def test_every_module_imports_and_cuda_is_refused_by_name_without_the_extra():
    out = subprocess.run([sys.executable, "-c", _WITHOUT_EXTRA], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"
