"""A likelihood that inference has never heard of works in CV and Laplace without editing inference.

``Delegating`` forwards the whole likelihood protocol, hooks included, to a Softmax it holds (it is
*not* a Softmax subclass): every criterion must give the Softmax's numbers exactly.  ``Minimal``
defines only the abstract methods, and its factor hides the softmax structure, so every hook runs
its generic default (exact Hessian factor = the Newton factor, third-derivative traces by central
differences, the dense exact Laplace path, per-point values row by row): the same numbers up to
those approximations.
"""

import numpy as np
import pytest
from opaque_factor import OpaqueFactor

from gpmodels.inference.cv.criterion import cv_criterion
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.map.newton_cg import NewtonOptions
from gpmodels.inference.marginal.laplace import LaplaceOptions, laplace_mlm
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.base import Likelihood
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.intercept import Intercept

TIGHT = NewtonOptions(max_iter=100, cg_max_iter=600, cg_tol=1e-14, cg_forcing=0.0, grad_tol=1e-12, phi_rtol=0.0)
CV = CVOptions(newton=TIGHT, k3=600, accumulation_tol=1e-13, fail_tol=1e-8)


class _HeldSoftmax(Likelihood):
    """The methods every likelihood defines, forwarded to a held Softmax (not a Softmax subclass)."""

    def __init__(self):
        self.inner = Softmax()

    def value(self, U, Y):
        return self.inner.value(U, Y)

    def gradient(self, U, Y):
        return self.inner.gradient(U, Y)

    def predict(self, U):
        return self.inner.predict(U)

    def project_alpha(self, alpha):
        return self.inner.project_alpha(alpha)


class Delegating(_HeldSoftmax):
    """Every method of the protocol forwarded to the held Softmax."""

    def hessian_factor(self, U, Y):
        return self.inner.hessian_factor(U, Y)

    def exact_hessian_factor(self, U, Y):
        return self.inner.exact_hessian_factor(U, Y)

    def trace_hessian_derivative(self, U, Y, S):
        return self.inner.trace_hessian_derivative(U, Y, S)

    def value_per_point(self, U, Y):
        return self.inner.value_per_point(U, Y)


class Minimal(_HeldSoftmax):
    """Only the abstract methods (and the softmax's projection onto ran W); an opaque Hessian factor."""

    def hessian_factor(self, U, Y):
        return OpaqueFactor(self.inner.hessian_factor(U, Y))


def _problem(n=18, C=3, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 2))
    Y = np.eye(C)[r.integers(0, C, size=n)]
    op = Intercept(BlockDiagonal.from_sharing(X, RBF(0.8), C, "separate", [1.0, 2.0, 1.5]), 0.3, learn=True)
    folds = [np.arange(k, n, 3) for k in range(3)]
    return op, Y, folds


def test_delegating_likelihood_gives_the_softmax_numbers_exactly():
    op, Y, folds = _problem()
    ref, new = cv_criterion(op, Softmax(), Y, folds, CV), cv_criterion(op, Delegating(), Y, folds, CV)
    assert ref.ok and new.ok
    assert new.psi == ref.psi
    np.testing.assert_array_equal(new.gradient, ref.gradient)
    for path in ("exact", "mvm"):
        opts = LaplaceOptions(path=path, n_probes=8)
        a, b = laplace_mlm(op, Softmax(), Y, opts), laplace_mlm(op, Delegating(), Y, opts)
        assert b.log_marginal == a.log_marginal
        np.testing.assert_array_equal(b.gradient, a.gradient)


def test_minimal_likelihood_runs_on_the_generic_defaults():
    op, Y, folds = _problem()
    ref, new = cv_criterion(op, Softmax(), Y, folds, CV), cv_criterion(op, Minimal(), Y, folds, CV)
    assert ref.ok and new.ok
    assert new.psi == pytest.approx(ref.psi, rel=1e-12)
    np.testing.assert_allclose(new.gradient, ref.gradient, rtol=1e-9, atol=1e-12)
    a, b = laplace_mlm(op, Softmax(), Y, LaplaceOptions()), laplace_mlm(op, Minimal(), Y, LaplaceOptions())
    assert b.log_marginal == pytest.approx(a.log_marginal, rel=1e-10)  # dense path against R&W Alg. 3.3
    np.testing.assert_allclose(b.gradient, a.gradient, rtol=1e-6, atol=1e-8)  # s2 by central differences
    U = op.mvm(np.random.default_rng(1).normal(size=Y.shape))
    np.testing.assert_allclose(Minimal().value_per_point(U, Y), Softmax().value_per_point(U, Y), rtol=1e-13)
