"""The CV criterion on float32-stored kernel matrices (issue 12): Ψ and ∇Ψ against float64 storage.

Tolerances.  float32 storage rounds every entry of M once, |δM_ab| <= 2^-24 |M_ab| (≈ 6e-8
relative), and every product accumulates in float64 (``kernels/mixed_precision.py``), so the
float32 criterion is the float64 criterion of a matrix perturbed by δM.  Ψ and ∇Ψ are smooth in M
(the fits α̂_J(K̃_J), the held-out u_I = K̃_IJ α̂_J, the accumulation solves), so both move by
O(2^-24 · κ) with κ a condition factor of the inner problems (≈ 10-100 here).  We allow 2e-6
relative for Ψ (30 times 2^-24) and 2e-5 of the gradient's max-norm for ∇Ψ (the gradient goes
through one more derivative).  The inner solves are tight (1e-12), so their own error is far
below that.  Measured on these problems: Ψ 5e-9 to 1.6e-8 relative, ∇Ψ 4e-8 to 1.2e-7 of its
max-norm (flat, ANOVA, coupled).

float32 storage is an option (``model.representation: {kind: stored, dtype: float32}``), not the
CV default: it halves the memory, but the float64 accumulation converts tiles, and a one-column
product (separate kernels) took 0.89 ms against 0.38 ms for float64 dsymv at n = 1600 (1 thread).

Finite differences on float32 storage need a larger step than on float64: Ψ(θ ± h) each see their
own rounding of M, an error of ~2^-24 κ |Ψ| / h in the quotient.  With h = 1e-3 that is ~1e-4
relative, and the O(h^2) truncation error ~1e-6; the check allows 1e-3 of the gradient's max-norm.
"""

import numpy as np
import pytest
from conftest import toy_classification
from oracles import cv_fd_gradient

from gpmodels.data.splits import kfold_partition
from gpmodels.hierarchy import ClassTree
from gpmodels.inference.cv.criterion import cv_criterion
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.map.newton_cg import NewtonOptions
from gpmodels.kernels.rbf import RBF
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.priors.anova import ANOVAPrior
from gpmodels.priors.coupled import CoupledPrior
from gpmodels.priors.independent import IndependentGP

TIGHT = CVOptions(
    newton=NewtonOptions(max_iter=100, cg_max_iter=600, cg_tol=1e-14, cg_forcing=0.0, grad_tol=1e-12, phi_rtol=0.0),
    k3=600,
    accumulation_tol=1e-13,
    fail_tol=1e-8,
)
FLOAT32 = RepresentationConfig(kind="stored", dtype="float32")
FLOAT64 = RepresentationConfig(kind="stored", dtype="float64")
FD_STEP = 1e-3


def _tree3():
    return ClassTree([("root", "a"), ("root", "n1"), ("n1", "b"), ("n1", "c")], ["a", "b", "c"])


CASES = {
    "flat-rbf-separate": lambda rep: IndependentGP(RBF(0.7), "separate", [1.5, 3.0, 0.8], 1.0, representation=rep),
    "anova-rbf-level": lambda rep: ANOVAPrior(_tree3(), RBF(0.8), "level", [2.0, 0.7], 1.0, representation=rep),
    "coupled-rbf": lambda rep: CoupledPrior(
        RBF(0.6), init="random", variance=1.5, sigma2=1.0, seed=2, representation=rep
    ),
}


def _data(n=30, C=3, seed=0):
    X, y = toy_classification(n, C, d=2, seed=seed)
    return X, np.eye(C)[y], kfold_partition(n, 3, seed=seed + 1, y=y)


def _stored_dtypes(op):
    """The storage dtypes of the stored matrices under ``op`` (it must hold at least one)."""
    found, stack = set(), [op]
    while stack:
        o = stack.pop()
        for rep in getattr(o, "_rep_list", ()):
            found.add(rep.M.dtype.name)
        stack.extend(x for x in (getattr(o, "inner", None), getattr(o, "base", None)) if x is not None)
    return found


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_storage_gives_psi_and_gradient_of_float64_within_the_rounding_tolerance(name):
    X, Y, folds = _data()
    op32, op64 = CASES[name](FLOAT32).operator(X, 3), CASES[name](FLOAT64).operator(X, 3)
    assert _stored_dtypes(op32) == {"float32"} and _stored_dtypes(op64) == {"float64"}
    a = cv_criterion(op32, Softmax(), Y, folds, TIGHT)
    b = cv_criterion(op64, Softmax(), Y, folds, TIGHT)
    assert a.ok and b.ok, (a.message, b.message)
    assert a.psi == pytest.approx(b.psi, rel=2e-6)
    assert a.psi != b.psi  # the float32 run did round M
    np.testing.assert_allclose(a.gradient, b.gradient, rtol=0, atol=2e-5 * np.abs(b.gradient).max())


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_gradient_matches_central_differences(name):
    X, Y, folds = _data(n=24, seed=3)
    op = CASES[name](FLOAT32).operator(X, 3)
    ev = cv_criterion(op, Softmax(), Y, folds, TIGHT)
    assert ev.ok, ev.message
    fd = cv_fd_gradient(op, Y, folds, TIGHT, FD_STEP)
    np.testing.assert_allclose(ev.gradient, fd, rtol=0, atol=1e-3 * np.abs(fd).max())
