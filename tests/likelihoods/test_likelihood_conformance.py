"""Every likelihood: gradient and Hessian vs finite differences, W = V V^T, V g̃ = g, preconditioner."""

import importlib
import inspect
import pkgutil

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpmodels
from gpmodels.errors import InputError
from gpmodels.likelihoods.base import Likelihood
from gpmodels.likelihoods.diagonal import DiagonalLikelihood
from gpmodels.likelihoods.gaussian import Gaussian
from gpmodels.likelihoods.hinge import SmoothedHinge
from gpmodels.likelihoods.logistic import Logistic
from gpmodels.likelihoods.robust import Laplace, StudentT
from gpmodels.likelihoods.smoothed import VarianceSmoothed
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.testing import check_diagonal_likelihood, check_likelihood


@st.composite
def softmax_case(draw):
    n, C = draw(st.integers(1, 5)), draw(st.integers(2, 5))
    r = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    U = r.normal(scale=draw(st.sampled_from([0.1, 1.0, 3.0])), size=(n, C))
    if draw(st.booleans()):
        Y = np.eye(C)[r.integers(0, C, n)]
    else:
        Y = r.dirichlet(np.ones(C), size=n)
    return Softmax(), U, Y, r


log_uniform = st.floats(min_value=-1.5, max_value=1.5).map(lambda t: float(np.exp(t)))


@st.composite
def _single_latent(draw, make, labels):
    """(likelihood, U (n, 1), Y (n, 1), rng) with U spread over a few scales."""
    n = draw(st.integers(1, 6))
    r = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    lik = make(draw)
    U = r.normal(scale=draw(st.sampled_from([0.3, 1.0, 4.0])), size=(n, 1))
    if labels == "pm1":
        Y = r.choice([-1.0, 1.0], size=(n, 1))
    else:
        Y = U + r.standard_t(2.0, size=(n, 1)) * draw(st.sampled_from([0.1, 1.0, 5.0]))
    return lik, U, Y, r


def hinge_case():
    """Keep t = 1 - y u away from the kinks t = 0 and t = ε, where ℓ_ε'' jumps."""

    @st.composite
    def case(draw):
        lik, U, Y, r = draw(_single_latent(lambda d: SmoothedHinge(eps=d(st.sampled_from([0.05, 0.5]))), "pm1"))
        t = 1 - Y * U
        for kink in (0.0, lik.eps):
            near = np.abs(t - kink) < 1e-3
            U = np.where(near, U - Y * 3e-3, U)
            t = 1 - Y * U
        return lik, U, Y, r

    return case()


def smoothed_case():
    @st.composite
    def case(draw):
        base = draw(st.sampled_from(["logistic", "gaussian", "laplace", "student_t"]))
        make = {
            "logistic": lambda d: Logistic(),
            "gaussian": lambda d: Gaussian(d(log_uniform)),
            "laplace": lambda d: Laplace(d(log_uniform)),
            "student_t": lambda d: StudentT(d(st.sampled_from([1.5, 4.0, 20.0])), d(log_uniform)),
        }[base]
        lik, U, Y, r = draw(_single_latent(make, "pm1" if base == "logistic" else "real"))
        z = r.uniform(0.05, 2.0, size=U.shape)
        return VarianceSmoothed(lik, z), U, Y, r

    return case()


LIKELIHOOD_CASES = {
    Softmax: softmax_case,
    Logistic: lambda: _single_latent(lambda d: Logistic(), "pm1"),
    Gaussian: lambda: _single_latent(lambda d: Gaussian(d(log_uniform)), "real"),
    Laplace: lambda: _single_latent(lambda d: Laplace(d(log_uniform)), "real"),
    StudentT: lambda: _single_latent(
        lambda d: StudentT(d(st.sampled_from([1.5, 4.0, 20.0])), d(log_uniform), d(st.booleans())), "real"
    ),
    SmoothedHinge: hinge_case,
    VarianceSmoothed: smoothed_case,
}


def test_completeness_every_likelihood_is_registered():
    for mod in pkgutil.walk_packages(gpmodels.__path__, "gpmodels."):
        importlib.import_module(mod.name)
    concrete, stack = set(), [Likelihood]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if not inspect.isabstract(sub) and sub.__module__.startswith("gpmodels."):
                concrete.add(sub)
    missing = concrete - set(LIKELIHOOD_CASES)
    assert not missing, f"likelihoods without a conformance case: {missing}"


@pytest.mark.parametrize("cls", list(LIKELIHOOD_CASES), ids=lambda c: c.__name__)
def test_likelihood_conformance(cls):
    @given(LIKELIHOOD_CASES[cls]())
    def run(case):
        lik, U, Y, r = case
        check_likelihood(lik, U, Y, r)

    run()


@pytest.mark.parametrize(
    "cls", [c for c in LIKELIHOOD_CASES if issubclass(c, DiagonalLikelihood)], ids=lambda c: c.__name__
)
def test_diagonal_likelihood_hooks(cls):
    """∂², ∂³, ψ-derivatives, curvature vs Hessian and the super-Gaussian form G."""

    @given(LIKELIHOOD_CASES[cls]())
    def run(case):
        lik, U, Y, _ = case
        check_diagonal_likelihood(lik, U, Y)

    run()


def test_softmax_value_is_the_negative_log_likelihood():
    U = np.array([[1.0, 2.0, 0.5]])
    Y = np.array([[0.0, 1.0, 0.0]])
    p = np.exp(U) / np.exp(U).sum()
    assert Softmax().value(U, Y) == pytest.approx(-np.log(p[0, 1]))
    np.testing.assert_allclose(Softmax().predict(U), p)


def test_softmax_app_b_sets():
    """Components with log π < κ: I (y > 0) fixed to γ = -g; I0 (y = 0) zero warm start."""
    U = np.array([[0.0, 60.0, -5.0], [0.0, 0.0, 0.0]])
    Y = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    hf = Softmax(kappa=-20.0).hessian_factor(U, Y)
    assert hf.fixed.tolist() == [[True, False, False], [False, False, False]]
    assert hf.zero_start.tolist() == [[False, False, True], [False, False, False]]
    assert hf.fixed_alpha is not None and np.allclose(hf.fixed_alpha.sum(axis=1), 0.0)
    assert np.all(np.isfinite(hf.g_tilde(Softmax().gradient(U, Y))))
    assert np.all(hf.beta_init(np.ones_like(U))[0, 2] == 0.0)
    x = np.ones_like(U)
    assert np.all(hf.Vt(x)[hf.fixed] == 0.0)


def test_softmax_kappa_must_be_negative():
    with pytest.raises(InputError, match="kappa"):
        Softmax(kappa=1.0)


def test_softmax_refuses_targets_that_are_not_distributions():
    with pytest.raises(InputError, match="sums to"):
        Softmax().check_targets(np.array([[0.5, 0.6]]), 1, 2)
    with pytest.raises(InputError, match=">= 0"):
        Softmax().check_targets(np.array([[-0.5, 1.5]]), 1, 2)
