"""Uncertain targets by EM (Seeger 2008, Sec. 7.4.2): E-step, monotone criterion, reduction to the
plain fit, flat and ANOVA priors, and clear errors for bad pseudo-targets."""

import numpy as np
import pytest
from conftest import toy_classification
from scipy.special import softmax

from gpmodels.errors import HierarchyError, InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.inference.map.em import EMOptions, fit_em
from gpmodels.inference.map.newton_cg import NewtonOptions, newton_cg
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.likelihoods.uncertain import PseudoTargets, coarsen_labels
from gpmodels.priors import ANOVAPrior, IndependentGP

EDGES = [
    ("root", "a"),
    ("root", "b"),
    ("root", "c"),
    ("a", "a1"),
    ("a", "a2"),
    ("a2", "a21"),
    ("a2", "a22"),
    ("b", "b1"),
    ("b", "b2"),
]


def _setup(n=45, seed=0):
    tree = ClassTree(EDGES)
    X, y = toy_classification(n, tree.n_classes, d=3, seed=seed, spread=2.5)
    return tree, X, y


def test_e_step_and_log_likelihood_by_brute_force(rng):
    tree, _, _ = _setup()
    names = ["a", "a21", "root", "b", "a2", "c"]
    ps = PseudoTargets.from_names(tree, names)
    U = rng.normal(size=(6, tree.n_classes)) * 3
    pi = softmax(U, axis=1)
    q = ps.e_step(U)
    ll = 0.0
    for i, name in enumerate(names):
        below = set(range(tree.n_classes)) if name == "root" else set(tree.leaves_below(tree.index(name)).tolist())
        w = np.array([pi[i, c] if c in below else 0.0 for c in range(tree.n_classes)])
        np.testing.assert_allclose(q[i], w / w.sum(), atol=1e-12)
        ll += np.log(w.sum())
    assert ps.log_likelihood(U) == pytest.approx(ll, rel=1e-12)
    assert ps.certain.tolist() == [False, True, False, False, False, True]
    assert ps.names() == names


@pytest.mark.parametrize("prior", ["flat", "anova"])
def test_em_criterion_never_decreases_and_the_fit_uses_the_coarse_labels(prior):
    tree, X, y = _setup()
    op = (
        IndependentGP(RBF(0.4), "tied", 3.0, 1.0)
        if prior == "flat"
        else ANOVAPrior(tree, RBF(0.4), "level", 2.0, sigma2=1.0)
    ).operator(X, tree.n_classes)
    ps = coarsen_labels(tree, y, fraction=0.6, levels_up=1, seed=1)
    assert not ps.certain.all()
    res = fit_em(op, ps, EMOptions(max_iter=40, rtol=1e-9, newton=NewtonOptions(grad_tol=1e-8)))
    trace = np.asarray(res.trace)
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:])), np.diff(trace)
    assert res.iterations >= 2 and len(res.m_steps) == res.iterations
    # q is consistent with the pseudo-targets: zero outside L_ỹ, one-hot where the target is certain
    assert np.all(res.q[~ps.mask] == 0.0)
    np.testing.assert_allclose(res.q[ps.certain], np.eye(tree.n_classes)[y[ps.certain]], atol=1e-12)
    # at convergence α is a fixed point: the M-step optimum for the final q
    if res.converged:
        g = Softmax().gradient(res.model.result.u, res.q)
        assert np.linalg.norm(res.alpha + g) / np.sqrt(X.shape[0]) < 1e-3
    # the coarse labels still carry information: better than chance on the training points
    assert np.mean(res.model.predict(X) == y) > 0.6


def test_em_with_all_targets_at_leaves_is_the_plain_fit():
    tree, X, y = _setup()
    op = ANOVAPrior(tree, RBF(0.4), "subtree", 2.0, sigma2=1.0).operator(X, tree.n_classes)
    opts = NewtonOptions(grad_tol=1e-9)
    plain = newton_cg(op, Softmax(), np.eye(tree.n_classes)[y], opts)
    res = fit_em(op, PseudoTargets.from_labels(tree, y), EMOptions(newton=opts))
    assert res.iterations == 1 and res.converged
    np.testing.assert_array_equal(res.alpha, plain.alpha)
    assert -res.trace[-1] == pytest.approx(plain.phi, rel=1e-12)


def test_unlabelled_points_under_the_root_are_allowed():
    tree, X, y = _setup(30)
    nodes = tree.leaves[y].copy()
    nodes[::3] = -1
    op = IndependentGP(RBF(0.4), "tied", 3.0, 1.0).operator(X, tree.n_classes)
    res = fit_em(op, PseudoTargets(tree, nodes), EMOptions(max_iter=5))
    assert np.all(np.diff(res.trace) >= -1e-9 * np.abs(np.asarray(res.trace[1:])))


def test_bad_pseudo_targets_are_refused_with_clear_errors():
    tree, X, y = _setup(12)
    with pytest.raises(HierarchyError, match="'zz' is not a node of the hierarchy"):
        PseudoTargets.from_names(tree, ["a", "zz"])
    with pytest.raises(InputError, match="1-D array"):
        PseudoTargets(tree, np.zeros((2, 2), dtype=int))
    with pytest.raises(InputError, match="node indices must be integers"):
        PseudoTargets(tree, np.array([0.0, 1.0]))
    with pytest.raises(InputError, match=r"allowed: -1 \(the root\) or 0..8"):
        PseudoTargets(tree, np.array([0, 9]))
    with pytest.raises(InputError, match="must not be empty"):
        PseudoTargets(tree, np.array([], dtype=int))
    op = IndependentGP(RBF(0.4), "tied", 3.0).operator(X, tree.n_classes)
    with pytest.raises(InputError, match="there are 3 pseudo-targets but the operator has 12 points"):
        fit_em(op, PseudoTargets(tree, np.array([0, 1, 2])))
    small = ClassTree([("r", "u"), ("r", "v")])
    with pytest.raises(InputError, match="tree has 2 leaves but the operator 6 classes"):
        fit_em(op, PseudoTargets(small, np.zeros(12, dtype=int)))
    with pytest.raises(InputError, match="fraction must lie"):
        coarsen_labels(tree, y, 1.5)
