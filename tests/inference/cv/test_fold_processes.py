"""CV folds on worker processes (inference/cv/fold_processes.py): the same numbers, bit for bit, as
the sequential loop with the same BLAS threads per fold, for a single evaluation, a failing one and
a whole learning run."""

import numpy as np
import pytest
from conftest import toy_classification

from gpmodels.data.splits import kfold_partition
from gpmodels.errors import InputError
from gpmodels.inference.cv.criterion import CVOptions, cv_criterion
from gpmodels.inference.cv.fold_processes import FoldProcesses
from gpmodels.inference.cv.learn import LearnOptions, learn_hyperparameters
from gpmodels.inference.map.newton_cg import NewtonOptions
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.linalg.blas_threads import limit_blas_threads
from gpmodels.optimize.lbfgs import OuterOptions
from gpmodels.priors.independent import IndependentGP

NEWTON = NewtonOptions(max_iter=20, cg_max_iter=30)


def _problem(n=48, C=3, q=4):
    X, y = toy_classification(n, C, d=2, seed=4)
    op = IndependentGP(RBF(0.7), "separate", [1.5, 3.0, 0.8][:C], 1.0).operator(X, C)
    return op, np.eye(C)[y], kfold_partition(n, q, seed=5, y=y)


def _same_evaluation(a, b):
    assert a.ok and b.ok and a.psi == b.psi
    assert np.array_equal(a.gradient, b.gradient)
    for x, y in zip(a.state.alphas + a.state.betas, b.state.alphas + b.state.betas, strict=True):
        assert np.array_equal(x, y)
    assert [(f.newton_iterations, f.fit_mvms, f.accumulation_iterations, f.start) for f in a.folds] == \
        [(f.newton_iterations, f.fit_mvms, f.accumulation_iterations, f.start) for f in b.folds]


def test_worker_processes_give_the_sequential_evaluation_bit_for_bit():
    op, Y, folds = _problem()
    opts = CVOptions(newton=NEWTON, k3=20)
    theta = op.params + np.array([0.2, -0.1, 0.3, 0.1, -0.2, 0.4])
    with limit_blas_threads(1):
        seq = cv_criterion(op.with_params(theta), Softmax(), Y, folds, opts)
        moved = theta + 0.3
        seq2 = cv_criterion(op.with_params(moved), Softmax(), Y, folds, opts, state=seq.state)
        with FoldProcesses(op, Softmax(), Y, workers=2) as pool:
            par = cv_criterion(op.with_params(theta), Softmax(), Y, folds, opts, map_folds=pool.at(theta))
            par2 = cv_criterion(op.with_params(moved), Softmax(), Y, folds, opts, state=par.state,
                                map_folds=pool.at(moved))
    _same_evaluation(seq, par)
    _same_evaluation(seq2, par2)


def test_a_failing_evaluation_on_worker_processes_fails_like_the_sequential_one():
    op, Y, folds = _problem()
    short = CVOptions(newton=NewtonOptions(max_iter=1, cg_max_iter=2), fail_tol=1e-6)
    with FoldProcesses(op, Softmax(), Y, workers=2) as pool:
        ev = cv_criterion(op, Softmax(), Y, folds, short, map_folds=pool.at(op.params))
        again = cv_criterion(op, Softmax(), Y, folds, CVOptions(newton=NEWTON), map_folds=pool.at(op.params))
    assert not ev.ok and ev.gradient is None and ev.state is None and "did not converge" in ev.message
    assert again.ok  # the pool is still usable after a stopped evaluation
    with pytest.raises(InputError, match="at least 2 workers"):
        FoldProcesses(op, Softmax(), Y, workers=1)


def test_learning_with_fold_processes_reproduces_the_sequential_run():
    op, Y, folds = _problem()
    base = LearnOptions(cv=CVOptions(newton=NEWTON, k3=20), outer=OuterOptions(max_iter=3))
    procs = LearnOptions(cv=CVOptions(newton=NEWTON, k3=20, fold_workers=2), outer=OuterOptions(max_iter=3))
    assert procs.cv.fold_parallelism == "processes"
    with limit_blas_threads(1):
        seq = learn_hyperparameters(op, Softmax(), Y, folds, base)
        par = learn_hyperparameters(op, Softmax(), Y, folds, procs)
    assert np.array_equal(seq.theta, par.theta) and seq.psi == par.psi
    assert [e.psi for e in seq.evaluations] == [e.psi for e in par.evaluations]


def _learn_in_child(_):
    op, Y, folds = _problem()
    opts = LearnOptions(cv=CVOptions(newton=NEWTON, k3=20, fold_workers=2), outer=OuterOptions(max_iter=1))
    return learn_hyperparameters(op, Softmax(), Y, folds, opts).psi


def test_inside_a_daemonic_process_the_folds_fall_back_to_threads():
    """A task of a process pool (daemonic, as a Dask worker's) may not start children: the learning
    runs its folds on threads there and gives the same Ψ as in this process."""
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(1) as pool:
        child = pool.map(_learn_in_child, [0])[0]
    with limit_blas_threads(1):
        assert child == pytest.approx(_learn_in_child(0), rel=1e-12)


def test_an_engine_that_holds_the_kernel_matrices_runs_folds_on_threads():
    from pathlib import Path
    from types import SimpleNamespace

    from gpmodels.spec.build import build_learn_options
    from gpmodels.spec.loader import load_spec

    spec, _ = load_spec(Path(__file__).resolve().parents[3] / "specs" / "satimage-cv.yaml")
    assert build_learn_options(spec.objective).cv.fold_parallelism == "processes"
    held = build_learn_options(spec.objective, SimpleNamespace(distributes_gram=True))
    assert held.cv.fold_parallelism == "threads" and held.cv.fold_workers == 2
