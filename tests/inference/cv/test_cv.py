"""The CV criterion Ψ (eq. 3) and its gradient (eq. 6): against central finite differences with
exact inner solves (App. C), Newton–CG against the exact variant, a non-flat operator, the App. B
fixed set, the structure of an evaluation (restrict once per fold, one grad_trace), failures.

Hooks for the structured priors (issue 3): flat operators go into FLAT_CASES (exact reference),
non-flat ones (ANOVA, coupled B / factor loadings) into NONFLAT_CASES (Newton–CG with tight
tolerances against finite differences of the same); each entry is a factory (X, C) -> operator.
"""

import numpy as np
import pytest
from conftest import toy_classification
from minimal_operator import DenseTestOperator
from oracles import cv_fd_gradient

from gpmodels.data.splits import kfold_partition
from gpmodels.engine.base import LocalEngine
from gpmodels.errors import InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.inference.cv.criterion import cv_criterion
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.cv.partition import check_partition
from gpmodels.inference.cv.state import CVState
from gpmodels.inference.cv.warm_start import scaled_start, unscaled_start
from gpmodels.inference.map.line_search import objective
from gpmodels.inference.map.newton_cg import NewtonOptions
from gpmodels.kernels.linear import Linear, Polynomial
from gpmodels.kernels.rbf import ARD, RBF
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.priors.anova import ANOVAPrior
from gpmodels.priors.coupled import CoupledPrior
from gpmodels.priors.independent import IndependentGP

TIGHT = NewtonOptions(max_iter=100, cg_max_iter=600, cg_tol=1e-14, cg_forcing=0.0, grad_tol=1e-12, phi_rtol=0.0)
EXACT = CVOptions(newton=TIGHT, solver="exact", fail_tol=1e-8)
CG_TIGHT = CVOptions(newton=TIGHT, k3=600, accumulation_tol=1e-13, solver="newton-cg", fail_tol=1e-8)
FD_STEP = 1e-5

FLAT_CASES = {
    "rbf-separate": lambda X, C: IndependentGP(RBF(0.7), "separate", [1.5, 3.0, 0.8][:C], 1.0).operator(X, C),
    "ard-semi": lambda X, C: IndependentGP(ARD([0.5, 2.0]), "semi", [2.0, 1.0, 4.0][:C], 2.0).operator(X, C),
    "linear-tied": lambda X, C: IndependentGP(Linear(), "tied", 0.7, 1.0).operator(X, C),
    "rbf-groups-learned-sigma2": lambda X, C: IndependentGP(
        RBF(0.4), None, [2.0, 0.5], 1.5, kernel_groups=[[0, 2], [1]], variance_groups=[[0], [1, 2]], learn_sigma2=True
    ).operator(X, C),
    "polynomial-separate-blocked": lambda X, C: IndependentGP(
        Polynomial(degree=2, scale=0.3, offset=1.0),
        "separate",
        0.5,
        1.0,
        representation=RepresentationConfig(kind="blocked", memory_mb=1e-3),
    ).operator(X, C),
    "rbf-no-intercept": lambda X, C: IndependentGP(RBF(1.2), "semi", 4.0, 0.0).operator(X, C),
}


def _dense_op(X, C):
    return DenseTestOperator.random(np.random.default_rng(3), X.shape[0], C)


def _tree3():
    """root -> {a, n1}, n1 -> {b, c}: unequal leaf depths; classes a, b, c."""
    return ClassTree([("root", "a"), ("root", "n1"), ("n1", "b"), ("n1", "c")], ["a", "b", "c"])


NONFLAT_CASES = {
    "dense-coupled-toy": _dense_op,  # couples classes and points; grad_trace by the generic FD default
    "anova-rbf-level": lambda X, C: ANOVAPrior(_tree3(), RBF(0.8), "level", [2.0, 0.7], 1.0).operator(X, C),
    "anova-linear-node-learned-sigma2": lambda X, C: ANOVAPrior(
        _tree3(), Linear(), "node", 0.9, 1.5, learn_sigma2=True
    ).operator(X, C),
    "coupled-rbf": lambda X, C: CoupledPrior(RBF(0.6), init="random", variance=1.5, sigma2=1.0, seed=2).operator(X, C),
    "loadings-ard-semi": lambda X, C: CoupledPrior(
        ARD([0.5, 1.5]), n_factors=2, sharing="semi", variance=[1.0, 2.0], sigma2=0.5, seed=1
    ).operator(X, C),
}


def _data(n=24, C=3, seed=0, q=3):
    X, y = toy_classification(n, C, d=2, seed=seed)
    return X, np.eye(C)[y], kfold_partition(n, q, seed=seed + 1, y=y)


@pytest.mark.parametrize("name", sorted(FLAT_CASES))
def test_gradient_matches_central_differences_with_exact_inner_solves(name):
    X, Y, folds = _data()
    op = FLAT_CASES[name](X, 3)
    ev = cv_criterion(op, Softmax(), Y, folds, EXACT)
    assert ev.ok, ev.message
    fd = cv_fd_gradient(op, Y, folds, EXACT, FD_STEP)
    np.testing.assert_allclose(ev.gradient, fd, rtol=2e-6, atol=2e-6 * np.abs(fd).max())


@pytest.mark.parametrize("name", sorted(FLAT_CASES))
def test_newton_cg_criterion_matches_the_exact_variant(name):
    X, Y, folds = _data(seed=4)
    op = FLAT_CASES[name](X, 3)
    a = cv_criterion(op, Softmax(), Y, folds, CG_TIGHT)
    b = cv_criterion(op, Softmax(), Y, folds, EXACT)
    assert a.ok and b.ok
    assert a.psi == pytest.approx(b.psi, rel=1e-11)
    np.testing.assert_allclose(a.gradient, b.gradient, rtol=1e-7, atol=1e-8 * np.abs(b.gradient).max())


@pytest.mark.parametrize("name", sorted(NONFLAT_CASES))
def test_gradient_of_a_non_flat_operator_matches_central_differences(name):
    X, Y, folds = _data(n=15, C=3)
    op = NONFLAT_CASES[name](X, 3)
    assert not op.is_class_diagonal
    ev = cv_criterion(op, Softmax(), Y, folds, CG_TIGHT)
    assert ev.ok, ev.message
    fd = cv_fd_gradient(op, Y, folds, CG_TIGHT, FD_STEP)
    np.testing.assert_allclose(ev.gradient, fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())
    with pytest.raises(InputError, match="flat"):
        cv_criterion(op, Softmax(), Y, folds, EXACT)


def _outlier_problem(kappa):
    X, y = toy_classification(30, 3, d=2, seed=2, spread=5.0)
    y = y.copy()
    y[[0, 1]] = (y[[0, 1]] + 1) % 3  # mislabelled points deep inside other classes
    lik = Softmax(kappa=kappa)
    op = IndependentGP(RBF(0.3), "separate", 5.0, 1.0).operator(X, 3)
    return op, lik, np.eye(3)[y], kfold_partition(30, 3, seed=5)


def test_app_b_fixed_components_do_not_bias_the_gradient(monkeypatch):
    """With κ = -1 the Newton factors fix the mislabelled points' true-class components; the
    accumulation solve must still use W = V V^T exactly (Sec. 5.2 has no g̃)."""
    op, lik, Y, folds = _outlier_problem(-1.0)
    ev = cv_criterion(op, lik, Y, folds, CG_TIGHT)
    ref = cv_criterion(op, lik, Y, folds, EXACT)
    assert ev.ok and ref.ok
    n_fixed = 0
    for I, alpha in zip(folds, ref.state.alphas):
        J = np.setdiff1d(np.arange(30), I)
        n_fixed += lik.hessian_factor(op.restrict(J).mvm(alpha), Y[J]).fixed.sum()
    assert n_fixed > 0, "the test needs a non-empty App. B set"
    np.testing.assert_allclose(ev.gradient, ref.gradient, rtol=1e-7, atol=1e-8 * np.abs(ref.gradient).max())
    # the masked factor (fixed components dropped from V) is measurably wrong: the check above can fail
    monkeypatch.setattr(type(lik), "exact_hessian_factor", lambda lk, uu, YY: lk.hessian_factor(uu, YY))
    masked = cv_criterion(op, lik, Y, folds, CG_TIGHT)
    assert np.abs(masked.gradient - ref.gradient).max() > 1e-4 * np.abs(ref.gradient).max()


class _Spy:
    """Wraps an operator and counts restrict / cross / grad_trace calls."""

    def __init__(self, op):
        self.op, self.calls = op, {"restrict": 0, "cross": 0, "grad_trace": 0}

    def __getattr__(self, name):
        attr = getattr(self.op, name)
        if name in self.calls:

            def counted(*a, **k):
                self.calls[name] += 1
                return attr(*a, **k)

            return counted
        return attr


def test_one_restrict_and_one_cross_block_per_fold_and_one_grad_trace_per_evaluation():
    """K̃_{J,I} is the transpose of the fold's one cross block K̃_{I,J} (``rmvm``), not a second copy."""
    X, Y, folds = _data(q=4)
    spy = _Spy(FLAT_CASES["ard-semi"](X, 3))
    ev = cv_criterion(spy, Softmax(), Y, folds, CG_TIGHT)
    assert ev.ok
    assert spy.calls == {"restrict": 4, "cross": 4, "grad_trace": 1}


def test_accumulation_is_independent_of_the_number_of_hyperparameters():
    """ARD with equal length-scales is the RBF kernel: same Ψ, same MVMs, d times the gradient entries."""
    X, Y, folds = _data()
    opts = CVOptions(newton=NewtonOptions(max_iter=20, cg_max_iter=40), k3=40)
    a = cv_criterion(IndependentGP(RBF(0.8), "semi", 2.0, 1.0).operator(X, 3), Softmax(), Y, folds, opts)
    b = cv_criterion(IndependentGP(ARD([0.8, 0.8]), "semi", 2.0, 1.0).operator(X, 3), Softmax(), Y, folds, opts)
    assert a.mvm_count == b.mvm_count and a.psi == pytest.approx(b.psi, rel=1e-12)
    assert b.gradient.size == a.gradient.size + 1
    assert b.gradient[:2].sum() == pytest.approx(a.gradient[0], rel=1e-9)  # d/dlog w = Σ_j d/dlog w_j


def test_warm_start_from_the_inner_state_saves_work():
    X, Y, folds = _data(n=45)
    op = FLAT_CASES["rbf-separate"](X, 3)
    opts = CVOptions(newton=NewtonOptions(max_iter=30, cg_max_iter=50, grad_tol=1e-8))
    cold = cv_criterion(op, Softmax(), Y, folds, opts)
    moved = op.with_params(op.params + 0.05)
    warm = cv_criterion(moved, Softmax(), Y, folds, opts, state=cold.state)
    again = cv_criterion(moved, Softmax(), Y, folds, opts)
    assert warm.ok and again.ok
    assert warm.psi == pytest.approx(again.psi, rel=1e-8)
    np.testing.assert_allclose(warm.gradient, again.gradient, rtol=1e-4, atol=1e-5 * np.abs(again.gradient).max())
    assert sum(f.newton_iterations for f in warm.folds) < sum(f.newton_iterations for f in again.folds)
    assert cold.state.betas is not None  # the accumulation CG starts from the previous solution too
    assert sum(f.accumulation_iterations for f in warm.folds) < sum(f.accumulation_iterations for f in again.folds)


def test_the_lowrank_preconditioner_subspaces_travel_with_the_inner_state(monkeypatch):
    """With ``lowrank`` every fold's eigensolver subspaces come back in the state and start the next
    evaluation's eigensolvers (2 products per Kronecker term, not 4); Ψ and ∇Ψ are unchanged
    (the preconditioner only moves CG, not what it converges to), and the bases survive
    a checkpoint's arrays."""
    import gpmodels.inference.map.deflation as pc

    X, Y, folds = _data(n=45)
    op = FLAT_CASES["rbf-separate"](X, 3)
    newton = NewtonOptions(
        max_iter=40, cg_max_iter=200, grad_tol=1e-10, cg_forcing=1e-3, preconditioner="lowrank", precond_rank=6
    )
    opts = CVOptions(newton=newton, accumulation_tol=1e-10, k3=200)
    first = cv_criterion(op, Softmax(), Y, folds, opts)
    J_sizes = [45 - I.size for I in folds]
    assert [b.shape[0] for b in first.state.bases] == J_sizes
    starts = []
    real = pc.block_randomized_eigh

    def spy(*a, **k):
        starts.extend(s is not None for s in k["starts"])
        return real(*a, **k)

    monkeypatch.setattr(pc, "block_randomized_eigh", spy)
    moved = op.with_params(op.params + 0.05)
    warm = cv_criterion(moved, Softmax(), Y, folds, opts, state=first.state)
    assert starts and all(starts)
    no_bases = CVState(first.state.alphas, first.state.betas)
    starts.clear()
    fresh = cv_criterion(moved, Softmax(), Y, folds, opts, state=no_bases)
    assert starts and not any(starts)
    assert warm.psi == pytest.approx(fresh.psi, rel=1e-9)
    np.testing.assert_allclose(warm.gradient, fresh.gradient, rtol=1e-5, atol=1e-7 * np.abs(fresh.gradient).max())
    back = CVState.from_arrays(warm.state.to_arrays())
    for a, b in zip(back.bases, warm.state.bases):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(InputError, match="bases"):
        CVState(first.state.alphas, None, tuple(b[:-1] for b in first.state.bases))


def test_an_evaluation_whose_inner_fits_do_not_converge_fails():
    X, Y, folds = _data()
    op = FLAT_CASES["rbf-separate"](X, 3)
    opts = CVOptions(newton=NewtonOptions(max_iter=1, cg_max_iter=2), fail_tol=1e-6)
    ev = cv_criterion(op, Softmax(), Y, folds, opts)
    assert not ev.ok and ev.gradient is None and ev.state is None
    assert len(ev.folds) == 1 and "did not converge" in ev.message  # aborted at the first fold
    full = cv_criterion(op, Softmax(), Y, folds, CVOptions(newton=opts.newton, fail_tol=1e-6, abort_on_failure=False))
    assert not full.ok and len(full.folds) == 3 and full.mean_grad_norm > 1e-6


def test_bad_partitions_and_states_are_refused():
    X, Y, folds = _data()
    op = FLAT_CASES["rbf-separate"](X, 3)
    with pytest.raises(InputError, match="partition"):
        cv_criterion(op, Softmax(), Y, [folds[0], folds[1], np.append(folds[2], folds[0][0])])
    with pytest.raises(InputError, match="partition"):
        check_partition([folds[0], folds[1]], 24)
    with pytest.raises(InputError, match="q >= 2"):
        check_partition([np.arange(24)], 24)
    with pytest.raises(InputError, match="one α per fold"):
        cv_criterion(op, Softmax(), Y, folds, state=CVState((np.zeros((16, 3)),)))
    with pytest.raises(InputError, match="shape"):
        cv_criterion(op, Softmax(), Y, folds, state=CVState(tuple(np.zeros((3, 3)) for _ in folds)))
    with pytest.raises(InputError, match="k3"):
        CVOptions(k3=0)
    with pytest.raises(InputError, match="solver"):
        CVOptions(solver="lanczos")
    with pytest.raises(InputError, match="warm_start must be a warm-start policy"):
        CVOptions(warm_start="better")  # a policy is a callable


def better_start(op_J, lik, Y_J, alpha0):
    """A warm-start policy: whichever of {α[J], 0} has the lower Φ_J (one MVM)."""
    a = lik.project_alpha(alpha0)
    phi_warm = objective(lik, Y_J, a, op_J.mvm(a))
    return (a if phi_warm < lik.value(np.zeros_like(a), Y_J) else None), 1


def test_warm_start_policy_picks_the_better_start_and_retries_cold():
    X, Y, folds = _data(n=45)
    op = FLAT_CASES["rbf-separate"](X, 3)
    newton = NewtonOptions(max_iter=30, cg_max_iter=50, grad_tol=1e-8)
    better = CVOptions(newton=newton, warm_start=better_start)
    good = cv_criterion(op, Softmax(), Y, folds, better)
    assert all(f.start == "cold" for f in good.folds)
    bad = CVState(tuple(40.0 * a for a in good.state.alphas))  # saturates the softmax: worse than α = 0
    ev = cv_criterion(op, Softmax(), Y, folds, better, state=bad)
    assert [f.start for f in ev.folds] == ["cold"] * 3 and ev.ok
    ev = cv_criterion(op, Softmax(), Y, folds, better, state=good.state)
    assert [f.start for f in ev.folds] == ["warm"] * 3 and ev.summary()["warm_starts"] == 3
    short = NewtonOptions(max_iter=6, cg_max_iter=50, grad_tol=1e-8)
    opts = CVOptions(newton=short, warm_start=unscaled_start, fail_tol=1e-4, retry_cold=False)
    assert not cv_criterion(op, Softmax(), Y, folds, opts, state=bad).ok
    retried = cv_criterion(
        op, Softmax(), Y, folds, CVOptions(newton=short, warm_start=unscaled_start, fail_tol=1e-4), state=bad
    )
    assert retried.ok and "warm+cold" in [f.start for f in retried.folds]
    assert retried.psi == pytest.approx(good.psi, rel=1e-5)  # refits converged to fail_tol


def test_scaled_warm_start_rescues_a_mis_scaled_state():
    """A state 40x too large (as after the variances shrank 40-fold): :func:`better_start` falls back to α = 0,
    ``scaled`` (the default) starts from α/40 by Φ_J along t α and needs fewer Newton iterations;
    both reach the same Ψ."""
    from gpmodels.inference.cv.warm_start import scaled_warm_start

    X, Y, folds = _data(n=45)
    op = FLAT_CASES["rbf-separate"](X, 3)
    newton = NewtonOptions(max_iter=30, cg_max_iter=50, grad_tol=1e-8)
    good = cv_criterion(op, Softmax(), Y, folds, CVOptions(newton=newton))
    bad = CVState(tuple(40.0 * a for a in good.state.alphas))
    assert CVOptions().warm_start is scaled_start
    scaled = cv_criterion(op, Softmax(), Y, folds, CVOptions(newton=newton), state=bad)
    cold = cv_criterion(op, Softmax(), Y, folds, CVOptions(newton=newton, warm_start=better_start), state=bad)
    assert [f.start for f in scaled.folds] == ["warm"] * 3 and [f.start for f in cold.folds] == ["cold"] * 3
    assert scaled.psi == pytest.approx(cold.psi, rel=1e-6)
    assert sum(f.newton_iterations for f in scaled.folds) < sum(f.newton_iterations for f in cold.folds)
    J = np.setdiff1d(np.arange(45), folds[0])
    start, t = scaled_warm_start(op.restrict(J), Softmax(), Y[J], bad.alphas[0])
    assert t == pytest.approx(1 / 40, rel=0.3)
    np.testing.assert_allclose(start, t * Softmax().project_alpha(bad.alphas[0]))


@pytest.mark.parametrize("name", ["rbf-separate", "ard-semi"])
def test_parallel_folds_are_bit_identical_to_the_sequential_loop(name):
    """Folds on a thread engine give the same Ψ, ∇Ψ, inner state and per-fold work as one after the other."""
    X, Y, folds = _data(n=40, q=4)
    op = FLAT_CASES[name](X, 3)
    base = CVOptions(newton=NewtonOptions(max_iter=20, cg_max_iter=30), k3=20)
    seq = cv_criterion(op, Softmax(), Y, folds, base)
    par = cv_criterion(op, Softmax(), Y, folds, base, engine=LocalEngine(threads=3))
    moved = op.with_params(op.params + 0.3)
    seq2 = cv_criterion(moved, Softmax(), Y, folds, base, state=seq.state)
    par2 = cv_criterion(moved, Softmax(), Y, folds, base, state=par.state, engine=LocalEngine(threads=4))
    for s, p in [(seq, par), (seq2, par2)]:
        assert s.ok and p.ok and s.psi == p.psi
        assert np.array_equal(s.gradient, p.gradient)
        for a, b in zip(s.state.alphas + s.state.betas, p.state.alphas + p.state.betas, strict=True):
            assert np.array_equal(a, b)
        assert [(f.newton_iterations, f.fit_mvms, f.accumulation_iterations, f.start) for f in s.folds] == [
            (f.newton_iterations, f.fit_mvms, f.accumulation_iterations, f.start) for f in p.folds
        ]


def test_parallel_folds_stop_like_the_sequential_loop_on_a_failure():
    X, Y, folds = _data()
    op = FLAT_CASES["rbf-separate"](X, 3)
    short = NewtonOptions(max_iter=1, cg_max_iter=2)
    ev = cv_criterion(op, Softmax(), Y, folds, CVOptions(newton=short, fail_tol=1e-6), engine=LocalEngine(threads=2))
    assert not ev.ok and ev.gradient is None and ev.state is None
    assert len(ev.folds) == 1 and "did not converge" in ev.message
    with pytest.raises(InputError, match="threads"):
        LocalEngine(threads=0)


def test_auto_method_picks_exact_on_small_flat_problems_and_newton_cg_otherwise():
    """|J| C = 16 · 3 favours App. C's factorisations, |J| C = 80 · 3 the MVMs; a non-flat prior
    always takes Newton–CG.  The choice is what ran: the same Ψ as the named method."""
    from gpmodels.inference.execution_plan import DEFAULT_RULES

    small_X, small_Y, small_folds = _data(n=24, q=3)  # |J| = 16
    big_X, big_Y, big_folds = _data(n=120, q=3)  # |J| = 80
    assert 16 * 3 <= DEFAULT_RULES.exact_max_size < 80 * 3
    auto = CVOptions(newton=TIGHT, solver="auto", fail_tol=1e-8, k3=600, accumulation_tol=1e-13)
    small = cv_criterion(FLAT_CASES["rbf-separate"](small_X, 3), Softmax(), small_Y, small_folds, auto)
    big = cv_criterion(FLAT_CASES["rbf-separate"](big_X, 3), Softmax(), big_Y, big_folds, auto)
    nonflat = cv_criterion(NONFLAT_CASES["anova-rbf-level"](small_X, 3), Softmax(), small_Y, small_folds, auto)
    assert (small.solver, big.solver, nonflat.solver) == ("exact", "newton-cg", "newton-cg")
    assert "<= 128" in small.plan.solver.reason and "flat prior" in nonflat.plan.solver.reason
    ref = cv_criterion(FLAT_CASES["rbf-separate"](small_X, 3), Softmax(), small_Y, small_folds, EXACT)
    assert small.psi == pytest.approx(ref.psi, rel=1e-10)
    assert all(f.accumulation_iterations == 0 for f in small.folds)  # no CG: the App. C solve
    assert all(f.accumulation_iterations > 0 for f in big.folds)
