"""CV learning end to end on small data: Ψ decreases, the final fit predicts, one-vs-rest learns
one set of hyperparameters per binary task; bad input is refused."""

import numpy as np
import pytest
from conftest import toy_classification

from gpmodels import metrics as M
from gpmodels.data.splits import kfold_partition
from gpmodels.errors import InputError
from gpmodels.inference.cv.learn import Checkpointing, LearnOptions, fit_learned, learn_hyperparameters
from gpmodels.inference.cv.one_vs_rest import binary_targets, learn_one_vs_rest
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.optimize.lbfgs import OuterOptions
from gpmodels.priors.independent import IndependentGP

OPTIONS = LearnOptions(
    cv=CVOptions(newton=NewtonOptions(max_iter=20, cg_max_iter=40, grad_tol=1e-6)), outer=OuterOptions(max_iter=8)
)


def _split(n=90, C=3, seed=0, spread=1.5):
    X, y = toy_classification(n, C, d=2, seed=seed, spread=spread)
    return X[: 2 * n // 3], y[: 2 * n // 3], X[2 * n // 3 :], y[2 * n // 3 :]


def test_learning_decreases_psi_and_the_final_fit_predicts():
    X, y, Xt, yt = _split()
    op = IndependentGP(RBF(5.0), "separate", 0.5, 1.0).operator(X, 3)  # a poor start: too rough, too small
    folds = kfold_partition(y.size, 5, seed=1, y=y)
    records = []
    res = learn_hyperparameters(op, Softmax(), np.eye(3)[y], folds, OPTIONS, on_iteration=records.append)
    values = [r.value for r in res.history]
    assert [r.iteration for r in records] == list(range(len(values)))
    assert all(b < a for a, b in zip(values, values[1:]))
    assert values[-1] < 0.9 * values[0]
    assert res.outer.iteration >= 2 and res.names == op.param_names
    assert set(res.hyperparameters()) == {"kernel0.w", "kernel1.w", "kernel2.w", "variance0", "variance1", "variance2"}
    rec = res.history[-1]
    assert rec.info["mvms"] > 0 and rec.seconds >= 0 and rec.elapsed >= rec.seconds
    model = fit_learned(res, Softmax(), np.eye(3)[y], OPTIONS)
    start = fit_learned(attrs_like(res, op), Softmax(), np.eye(3)[y], OPTIONS)
    assert model.result.converged
    P, P0 = model.predict_proba(Xt), start.predict_proba(Xt)
    assert M.log_loss(P, yt) < M.log_loss(P0, yt)  # the learned hyperparameters predict better


def attrs_like(res, op):
    """The same result object pointing at the starting operator (for the comparison above)."""
    import attrs

    return attrs.evolve(res, operator=op)


def test_one_vs_rest_learns_each_binary_task(tmp_path):
    X, y, Xt, yt = _split(n=75, spread=5.0)
    op2 = IndependentGP(RBF(1.0), "tied", 1.0, 1.0).operator(X, 2)
    folds = kfold_partition(y.size, 3, seed=2, y=y)
    opts = LearnOptions(cv=OPTIONS.cv, outer=OuterOptions(max_iter=3))
    seen = []
    model = learn_one_vs_rest(
        op2,
        Softmax(),
        np.eye(3)[y],
        folds,
        opts,
        checkpoint=Checkpointing(tmp_path / "ck.npz"),
        on_iteration=lambda c, rec: seen.append((c, rec.iteration)),
    )
    assert len(model.models) == 3 and {c for c, _ in seen} == {0, 1, 2}
    thetas = np.array([r.theta for r in model.learned])
    assert thetas.shape == (3, 2) and np.unique(np.round(thetas, 6), axis=0).shape[0] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck-class0.npz", "ck-class1.npz", "ck-class2.npz"]
    S, P = model.predict_scores(Xt), model.predict_proba(Xt)
    np.testing.assert_allclose(S[:, 1], model.models[1].predict_proba(Xt)[:, 0])  # P̂_c(+1 | x)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.predict(Xt), np.argmax(S, axis=1))
    assert M.error(P, yt) < 0.15  # linear logistic regression: 0.04 on this split
    np.testing.assert_array_equal(binary_targets([0, 2, 1], 2), [[0, 1], [1, 0], [0, 1]])


def test_bad_input_is_refused():
    X, y, _, _ = _split()
    op = IndependentGP(RBF(1.0), "tied", 1.0, 1.0).operator(X, 3)
    folds = kfold_partition(y.size, 3, seed=0)
    Y = np.eye(3)[y]
    with pytest.raises(InputError, match="outside the bounds"):
        learn_hyperparameters(op, Softmax(), Y, folds, LearnOptions(lower=1.0, upper=5.0))
    with pytest.raises(InputError, match="lower < upper"):
        LearnOptions(lower=2.0, upper=1.0)
    with pytest.raises(InputError, match="final_solver"):
        LearnOptions(final_solver="cholesky")
    with pytest.raises(InputError, match="Y"):
        learn_hyperparameters(op, Softmax(), Y[:, :2], folds)
    with pytest.raises(InputError, match="two-class"):
        learn_one_vs_rest(op, Softmax(), np.eye(3)[y], folds)
    op2 = IndependentGP(RBF(1.0), "tied", 1.0, 1.0).operator(X, 2)
    with pytest.raises(InputError, match="no training point"):
        learn_one_vs_rest(op2, Softmax(), np.eye(3)[np.minimum(y, 1)], folds)
    no_params = IndependentGP(RBF(1.0), "tied", 1.0, 1.0).operator(X, 3)
    with pytest.raises(InputError, match="no hyperparameters"):
        learn_hyperparameters(_Frozen(no_params), Softmax(), Y, folds)


class _Frozen:
    """An operator view without hyperparameters."""

    def __init__(self, op):
        self.op = op
        self.params = np.zeros(0)
        self.param_names = ()
        self.n_points, self.n_classes = op.n_points, op.n_classes


def test_adaptive_inner_tolerances_follow_the_outer_progress():
    """Loose (the ceilings) before any decrease and while Ψ falls fast, the configured values once the
    decreases are small; never tighter than configured, never looser than fail_tol allows."""
    from gpmodels.inference.cv.tolerances import (
        ACCUMULATION_TOL_CEILING,
        GRAD_TOL_CEILING,
        ProgressTracker,
        scheduled_options,
    )

    base = CVOptions()
    tracker = ProgressTracker()
    loose = scheduled_options(base, tracker.rho)
    assert loose.newton.grad_tol == GRAD_TOL_CEILING and loose.accumulation_tol == ACCUMULATION_TOL_CEILING
    assert loose.newton.grad_tol * 10 <= base.fail_tol
    for psi in (100.0, 60.0, 59.9, 59.9, 61.0):  # ρ = 0.4/60, then 1e-3 (59.9 again and a worse Ψ do not count)
        tracker.update(psi)
    assert tracker.rho == pytest.approx(0.1 / 59.9)
    mid = scheduled_options(base, tracker.rho)
    assert mid.newton.grad_tol == pytest.approx(0.01 * 0.1 / 59.9) and mid.accumulation_tol == pytest.approx(0.1 / 59.9)
    tight = scheduled_options(base, 1e-9)
    assert tight.newton.grad_tol == base.newton.grad_tol and tight.accumulation_tol == base.accumulation_tol
    assert tight.newton.max_iter == base.newton.max_iter and tight.k3 == base.k3


def test_learning_with_fixed_and_adaptive_tolerances_reaches_the_same_psi():
    X, y, _, _ = _split()
    op = IndependentGP(RBF(5.0), "separate", 0.5, 1.0).operator(X, 3)
    folds = kfold_partition(y.size, 5, seed=1, y=y)
    runs = {}
    for mode in ("fixed", "adaptive"):
        opts = LearnOptions(cv=OPTIONS.cv, outer=OuterOptions(max_iter=8), inner_tolerances=mode)
        runs[mode] = learn_hyperparameters(op, Softmax(), np.eye(3)[y], folds, opts)
    fixed, adaptive = runs["fixed"], runs["adaptive"]
    assert adaptive.psi == pytest.approx(fixed.psi, rel=2e-2)
    tols = [e.summary["grad_tol"] for e in adaptive.evaluations]
    assert tols[0] == 1e-4 and min(tols) < tols[0]  # loose at the start, tighter as Ψ flattens
    assert all(e.summary["grad_tol"] == OPTIONS.cv.newton.grad_tol for e in fixed.evaluations)


def test_the_final_fit_starts_from_the_folds_solutions():
    """fit_learned starts at each point's mean over the folds that train on it of its α[J_k] entry
    (start_from_folds) and reaches the cold start's optimum with fewer MVMs."""
    from gpmodels.inference.cv.learn import start_from_folds
    from gpmodels.inference.map.model import fit_map

    X, y, _, _ = _split()
    Y = np.eye(3)[y]
    op = IndependentGP(RBF(1.0), "separate", 2.0, 1.0).operator(X, 3)
    folds = kfold_partition(y.size, 5, seed=1, y=y)
    res = learn_hyperparameters(op, Softmax(), Y, folds, OPTIONS)
    alpha0 = start_from_folds(res.outer.inner, res.folds, y.size)
    i = 7
    expect = [
        a[np.searchsorted(np.setdiff1d(np.arange(y.size), I), i)]
        for I, a in zip(res.folds, res.outer.inner.alphas)
        if i not in I
    ]
    assert len(expect) == 4
    np.testing.assert_allclose(alpha0[i], np.mean(expect, axis=0), rtol=1e-12)
    assert start_from_folds(None, res.folds, y.size) is None
    warm = fit_learned(res, Softmax(), Y, OPTIONS)
    cold = fit_map(res.operator, Softmax(), Y, NewtonCG(OPTIONS.final))
    assert warm.result.converged and cold.result.converged
    assert warm.result.phi == pytest.approx(cold.result.phi, rel=1e-8)
    assert warm.result.diagnostics.mvm_count < cold.result.diagnostics.mvm_count
