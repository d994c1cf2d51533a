"""A learned model that cannot be trusted says so (issue 42, item 5): hyperparameters at a bound of their box,
a final fit that did not converge, a training fit worse than the start's; and ``learning_criterion`` is defined
at the hyperparameters the estimator returns."""

import warnings

import attrs
import numpy as np
import pytest
from conftest import toy_classification

from gpmodels.estimators import GPClassifier
from gpmodels.estimators.learners import CV
from gpmodels.inference.cv.learn import LearnOptions
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions
from gpmodels.kernels import RBF
from gpmodels.optimize.outcome import LearningOutcome, assess_learning, at_bounds
from gpmodels.priors.independent import IndependentGP


def test_at_bounds_names_each_parameter_at_either_side_in_natural_units():
    names = ("kernel0.log_w", "log_variance0", "shape")
    bounds = np.array([[-3.0, 3.0], [-15.0, 15.0], [0.0, 1.0]])
    found = at_bounds(names, [3.0, -15.0 + 1e-9, 0.5], bounds)
    assert len(found) == 2
    assert "kernel0.w = 20.09 ended at its upper bound 20.09" in found[0]
    assert "variance0" in found[1] and "lower bound" in found[1]
    assert at_bounds(names, [0.0, 0.0, 0.5], bounds) == ()
    assert at_bounds(names, [0.0, 0.0, 0.5], np.tile([-np.inf, np.inf], (3, 1))) == ()


def _fit(learner=None, solver="newton-cg", **kw):
    X, y = toy_classification(60, 3, d=2, seed=2)
    est = GPClassifier(prior=IndependentGP(RBF(0.5), "tied", 1.0, 1.0), random_state=0, solver=solver, **kw)
    if learner is not None:
        est.set_params(objective=learner)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    return est, [str(w.message) for w in caught if "may be broken" in str(w.message)]


def test_a_trusted_learning_has_no_problems_and_no_warning():
    est, broken = _fit()
    assert est.learning_outcome_ == LearningOutcome() and est.learning_outcome_.ok and not broken


def test_a_variance_learned_into_its_bound_is_named_in_a_warning():
    options = attrs.evolve(LearnOptions(), upper=0.5)  # every hyperparameter at most e^0.5
    est, broken = _fit(CV(options))
    assert not est.learning_outcome_.ok
    assert any("variance0" in p and "upper bound" in p for p in est.learning_outcome_.problems)
    assert len(broken) == 1 and "variance0" in broken[0]
    assert est.learning_outcome_.as_dict()["learning_ok"] is False


def test_a_final_fit_that_did_not_converge_is_reported_with_its_cause():
    est, broken = _fit(solver=NewtonCG(NewtonOptions(max_iter=1, cg_max_iter=2)))
    assert any("final fit" in p and "did not converge" in p for p in est.learning_outcome_.problems)
    assert broken and "did not converge" in broken[0]


def test_a_learned_fit_worse_than_the_start_is_named():
    X, y = toy_classification(40, 2, d=2, seed=1)
    from gpmodels.inference.map.model import fit_map
    from gpmodels.likelihoods.softmax import Softmax

    Y = np.eye(2)[y]
    good = fit_map(IndependentGP(RBF(0.5), "tied", 4.0, 1.0).operator(X, 2), Softmax(), Y, NewtonCG())
    poor = fit_map(
        IndependentGP(RBF(0.5), "tied", 1e-3, 1.0).operator(X, 2), Softmax(), Y, NewtonCG(NewtonOptions(max_iter=1))
    )
    outcome = assess_learning(("log_variance0",), [np.log(1e-3)], [[-np.inf, np.inf]], poor, Y, start=good)
    assert any("worse than the start" in p for p in outcome.problems)
    assert assess_learning(("log_variance0",), [np.log(4.0)], [[-np.inf, np.inf]], good, Y, start=poor).ok


@pytest.mark.parametrize("upper", [15.0, 0.5])
def test_learning_criterion_is_defined_at_the_learned_hyperparameters(upper):
    est, _ = _fit(CV(attrs.evolve(LearnOptions(), upper=upper)))
    value = est.learning_criterion()
    assert np.isfinite(value)
    assert value == pytest.approx(est.learning_result_.psi, rel=1e-3)


def test_variances_have_declared_scale_free_bounds():
    """log v_j in log(variance_bounds / m̄_j), m̄_j the mean kernel diagonal: an RBF (m̄ = 1) gets the declared
    bounds themselves, a linear kernel on inputs 100 times larger the same room in v·m̄."""
    from gpmodels.kernels import Linear
    from gpmodels.operators.blockdiag import VARIANCE_BOUNDS

    X, _ = toy_classification(30, 3, d=2, seed=0)
    rbf = IndependentGP(RBF(0.5), "semi").operator(X, 3)
    np.testing.assert_allclose(rbf.param_bounds[-3:], np.log([VARIANCE_BOUNDS] * 3))
    for scale in (1.0, 100.0):
        op = IndependentGP(Linear(), "tied", variance_bounds=(1e-2, 1e3)).operator(X * scale, 3)
        m = np.mean(np.sum((X * scale) ** 2, axis=1))
        np.testing.assert_allclose(op.param_bounds[-1], np.log([1e-2 / m, 1e3 / m]))


def test_learning_keeps_a_variance_inside_its_declared_bounds_and_names_it():
    est = GPClassifier(prior=IndependentGP(RBF(0.5), "tied", 1.0, variance_bounds=(0.5, 2.0)), random_state=0)
    X, y = toy_classification(60, 3, d=2, seed=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    v = est.learned_hyperparameters_["variance0"]  # unbounded, CV learns v = 9.8 here
    assert v == pytest.approx(2.0, rel=1e-9)
    assert any("variance0 = 2 ended at its upper bound 2" in p for p in est.learning_outcome_.problems)
    assert any("variance0 = 2 ended at its upper bound" in str(w.message) for w in caught)
    assert est.get_params()["prior__variance_bounds"] == (0.5, 2.0)


@pytest.mark.parametrize("bounds", [(2.0, 1.0), (0.0, 1.0), (1.0,), "wide", (1.0, np.inf)])
def test_bad_variance_bounds_are_refused_with_what_is_allowed(bounds):
    from gpmodels.errors import InputError

    with pytest.raises(InputError, match="variance_bounds must be a list of 2 entries, in ascending order"):
        IndependentGP(RBF(0.5), variance_bounds=bounds)


def test_a_start_outside_the_declared_bounds_names_them():
    from gpmodels.errors import InputError

    est = GPClassifier(prior=IndependentGP(RBF(0.5), "tied", 10.0, variance_bounds=(0.5, 2.0)), random_state=0)
    X, y = toy_classification(40, 3, d=2, seed=2)
    with pytest.raises(InputError, match="variance_bounds"):
        est.fit(X, y)
