"""``k1 + k2`` and ``k1 * k2`` whichever kernel module a program imports first.

The operators live on :class:`~gpmodels.kernels.base.Kernel`; what they build (KernelSum,
KernelProduct) is declared by :mod:`gpmodels.kernels.composite` when it is imported, which the package
``gpmodels/kernels/__init__.py`` does before any module in it runs.  Each case starts a fresh
interpreter that imports one kernel module and nothing else of gpmodels, then composes.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import gpmodels
import gpmodels.kernels.base as base
from gpmodels.errors import GPModelsError, InputError
from gpmodels.kernels import RBF, Constant, KernelProduct, KernelSum

ROOT = Path(gpmodels.__file__).resolve().parent.parent

#: one kernel module as the only gpmodels import, and two kernels of it
ENTRY_POINTS = {
    "gpmodels.kernels.rbf": "from gpmodels.kernels.rbf import RBF as K; a, b = K(1.0), K(2.0)",
    "gpmodels.kernels.matern": "from gpmodels.kernels.matern import Matern as K; a, b = K(1.0), K(2.0)",
    "gpmodels.kernels.constant": "from gpmodels.kernels.constant import Constant as K; a, b = K(1.0), K(2.0)",
}

_COMPOSE = """
s, p, n = a + b, a * b, 2.0 * a + 0
print(type(s).__name__, type(p).__name__, type(n).__name__, len(s.terms), len(p.terms))
"""


@pytest.mark.parametrize("module", sorted(ENTRY_POINTS))
def test_kernels_compose_when_only_one_kernel_module_is_imported(module):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", ENTRY_POINTS[module] + _COMPOSE],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["KernelSum", "KernelProduct", "KernelProduct", "2", "2"]


def test_the_operators_build_what_composite_declares():
    a, b = RBF(1.0), RBF(2.0)
    assert isinstance(a + b, KernelSum) and (a + b).terms == (a, b)
    assert isinstance(a * b, KernelProduct) and (a * b).terms == (a, b)
    left, right = 3.0 * a, a * 3.0
    assert left.terms[1] is a and right.terms[0] is a
    assert isinstance(left.terms[0], Constant) and left.terms[0].key() == right.terms[1].key()
    assert sum([a, b]).terms == (a, b) and (0 + a) is a
    with pytest.raises(InputError, match="a kernel \\+ str"):
        a + "x"


def test_an_undeclared_composition_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(base, "_COMPOSITIONS", {})
    with pytest.raises(GPModelsError, match="gpmodels.kernels.composite"):
        RBF(1.0) + RBF(2.0)
    with pytest.raises(InputError, match="'\\+' or '\\*'"):
        base.define_composition("-", lambda a, b: a)
