"""A prior defined outside the package (tests/external_prior.py, the worked example of
docs/extending.md) goes through everything a built-in prior does: the operator conformance suite,
MAP by Newton–CG against a dense Newton reference, CV learning (Ψ, ∇Ψ by finite differences), the
Laplace marginal likelihood against a dense reference, and specs (registered name and import path)
through the driver with a save / load round trip in a fresh process."""

import json
import os
import subprocess
import sys
from pathlib import Path

import external_prior
import numpy as np
import pytest
import yaml
from conftest import toy_classification, toy_data_section
from external_prior import ClassSimilarity, ClassSimilarityPrior, build_class_similarity
from hypothesis import given
from hypothesis import strategies as st
from operator_cases import kernels, log_uniform
from oracles import naive_gram

from gpmodels.data.splits import kfold_partition
from gpmodels.driver.build import check_files
from gpmodels.driver.loader import load_spec, spec_from_dict
from gpmodels.driver.run import run_spec
from gpmodels.driver.saved import load_model
from gpmodels.errors import InputError, SpecError
from gpmodels.inference import (
    LaplaceOptions,
    LearnOptions,
    NewtonCG,
    fit_map,
    laplace_mlm,
    learn_hyperparameters,
)
from gpmodels.inference.cv.criterion import cv_criterion
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax, log_softmax
from gpmodels.operators import Intercept
from gpmodels.optimize.lbfgs import OuterOptions
from gpmodels.priors import register_prior, registered_priors, unregister_prior
from gpmodels.priors.registry import resolve_prior
from gpmodels.testing import check_grad_trace, check_operator

sys.path.insert(0, str(Path(__file__).resolve().parent / "inference" / "cv"))  # test_cv moved there in the re-layout
from oracles import cv_fd_gradient
from test_cv import CG_TIGHT, FD_STEP

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
S3 = np.array([[1.0, 0.8, 0.0], [0.8, 1.0, 0.0], [0.0, 0.0, 1.0]])  # classes 0 and 1 alike


# ------------------------------------------------------------------ the operator protocol
@st.composite
def similarity_case(draw):
    n, C, d = draw(st.integers(2, 7)), draw(st.integers(1, 4)), draw(st.integers(1, 3))
    r = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    X, X_new = r.normal(size=(n, d)), r.normal(size=(draw(st.integers(1, 4)), d))
    kernel = draw(kernels(d))
    A = r.normal(size=(C, draw(st.integers(1, C))))  # PSD, possibly rank-deficient
    S = A @ A.T
    v, lam = draw(log_uniform), draw(log_uniform)
    S_lam = np.eye(C) + lam * S
    dense = np.zeros((n * C, n * C))  # cov(u_c(x_i), u_d(x_j)) = v S_λ[c, d] M(x_i, x_j), entry by entry
    M, M_new = naive_gram(kernel, X, X), naive_gram(kernel, X_new, X)
    for i in range(n):
        for j in range(n):
            dense[i * C : (i + 1) * C, j * C : (j + 1) * C] = v * S_lam * M[i, j]
    cross = np.einsum("ab,cd->acbd", M_new, v * S_lam).reshape(X_new.shape[0] * C, n * C)
    sigma2 = draw(st.sampled_from([0.0, draw(log_uniform)]))
    op = ClassSimilarityPrior(kernel, S, v, lam, sigma2).operator(X, C)
    if sigma2 > 0:
        ones = np.kron(np.ones((n, n)), np.eye(C)) * sigma2
        dense, cross = dense + ones, cross + np.kron(np.ones((X_new.shape[0], n)), np.eye(C)) * sigma2
    return op, dense, X_new, cross


@given(case=similarity_case(), seed=st.integers(0, 2**31 - 1))
def test_external_operator_passes_the_conformance_suite(case, seed):
    op, dense, X_new, cross = case
    check_operator(op, np.random.default_rng(seed), dense=dense, X_new=X_new, cross_dense=cross, rtol=1e-7)
    check_grad_trace(op, np.random.default_rng(seed + 1))


def test_similarity_must_be_symmetric_psd_and_fit_the_classes():
    X = np.zeros((3, 1))
    with pytest.raises(InputError, match="symmetric"):
        ClassSimilarity(X, RBF(1.0), [[1.0, 0.5], [0.0, 1.0]])
    with pytest.raises(InputError, match="positive semi-definite"):
        ClassSimilarity(X, RBF(1.0), [[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(InputError, match="3 classes"):
        ClassSimilarityPrior(RBF(1.0), np.eye(2)).operator(X, 3)


# ------------------------------------------------------------------ inference
def _problem(n=24, seed=0):
    X, y = toy_classification(n, 3, d=2, seed=seed)
    op = ClassSimilarityPrior(RBF(0.5), S3, variance=2.0, strength=0.7).operator(X, 3)
    return X, y, np.eye(3)[y], op


def _dense_map(K, Y, tol=1e-13):
    """MAP by dense Newton in u (R&W eq. 3.18 with the full softmax W), backtracking on Φ(α)."""
    lik, N = Softmax(), K.shape[0]
    n, C = Y.shape

    def phi(a):
        u = (K @ a).reshape(n, C)
        return 0.5 * a @ K @ a + lik.value(u, Y)

    a = np.zeros(N)
    for _ in range(100):
        u = (K @ a).reshape(n, C)
        g = lik.gradient(u, Y).ravel()
        if np.abs(a + g).max() < tol:
            break
        pi = np.exp(log_softmax(u))
        W = np.zeros((N, N))
        for i in range(n):
            W[i * C : (i + 1) * C, i * C : (i + 1) * C] = np.diag(pi[i]) - np.outer(pi[i], pi[i])
        a_new = np.linalg.solve(np.eye(N) + W @ K, W @ u.ravel() - g)
        step = 1.0
        while phi(a + step * (a_new - a)) > phi(a) + 1e-14 * abs(phi(a)) and step > 1e-8:
            step /= 2
        a = a + step * (a_new - a)
    return a.reshape(n, C), W


def test_map_by_newton_cg_matches_a_dense_newton_reference():
    X, y, Y, op = _problem()
    model = fit_map(op, Softmax(), Y, NewtonCG(LaplaceOptions().newton))
    alpha_ref, _ = _dense_map(op.dense(), Y)
    np.testing.assert_allclose(model.alpha, alpha_ref, rtol=1e-7, atol=1e-9)
    assert model.result.diagnostics.converged
    # prediction = K̃_{*,.} α̂ with the dense cross block
    Xt = X[:5] + 0.1
    C = 3
    M = naive_gram(RBF(0.5), Xt, X)
    cross = 2.0 * np.einsum("ab,cd->acbd", M, np.eye(C) + 0.7 * S3).reshape(5 * C, -1)
    np.testing.assert_allclose(model.latent(Xt), (cross @ alpha_ref.ravel()).reshape(5, C), rtol=1e-7, atol=1e-9)


def test_cv_gradient_matches_central_differences():
    X, y = toy_classification(15, 3, d=2, seed=0)
    Y, folds = np.eye(3)[y], kfold_partition(15, 3, seed=1, y=y)
    op = ClassSimilarityPrior(RBF(0.5), S3, variance=2.0, strength=0.7).operator(X, 3)
    ev = cv_criterion(op, Softmax(), Y, folds, CG_TIGHT)
    assert ev.ok, ev.message
    fd = cv_fd_gradient(op, Y, folds, CG_TIGHT, FD_STEP)
    np.testing.assert_allclose(ev.gradient, fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())


def test_cv_learning_decreases_psi():
    X, y, Y, op = _problem(30, seed=3)
    folds = kfold_partition(30, 3, seed=0, y=y)
    res = learn_hyperparameters(op, Softmax(), Y, folds, LearnOptions(outer=OuterOptions(max_iter=4)))
    assert res.psi < res.history[0].value - 1e-3 * abs(res.history[0].value)
    assert set(res.hyperparameters()) == {"variance", "strength", "kernel.w"}
    assert isinstance(res.operator, ClassSimilarity) and not np.allclose(res.theta, op.params)


def test_laplace_marginal_likelihood_and_gradient():
    X, y, Y, op = _problem(12, seed=1)
    opts = LaplaceOptions()
    res = laplace_mlm(op, Softmax(), Y, opts)
    # dense reference: log q = -½ α̂ᵀ f̂ - Φ_lh(f̂) - ½ log|I + K W| at the dense mode (R&W eq. 3.44)
    K = op.dense()
    alpha, W = _dense_map(K, Y)
    f = (K @ alpha.ravel()).reshape(alpha.shape)
    sign, logdet = np.linalg.slogdet(np.eye(K.shape[0]) + K @ W)
    assert sign > 0
    ref = -0.5 * float(np.vdot(alpha, f)) - Softmax().value(f, Y) - 0.5 * logdet
    assert abs(res.log_marginal - ref) <= 1e-9 * abs(ref)
    theta, h = op.params, 1e-5
    fd = np.empty(theta.size)
    for p in range(theta.size):
        tp, tm = theta.copy(), theta.copy()
        tp[p] += h
        tm[p] -= h
        fd[p] = (
            laplace_mlm(op.with_params(tp), Softmax(), Y, opts, gradient=False).log_marginal
            - laplace_mlm(op.with_params(tm), Softmax(), Y, opts, gradient=False).log_marginal
        ) / (2 * h)
    np.testing.assert_allclose(res.gradient, fd, rtol=1e-6, atol=1e-8 * np.abs(fd).max())
    # the MVM path (CG, Lanczos, Hutchinson) estimates the same quantities
    mvm = laplace_mlm(op, Softmax(), Y, LaplaceOptions(path="mvm", n_probes=64))
    assert abs(mvm.log_marginal - ref) <= 0.05 * abs(ref)


# ------------------------------------------------------------------ specs and the driver
@pytest.fixture
def registered():
    register_prior("class_similarity", build_class_similarity)
    yield "class_similarity"
    unregister_prior("class_similarity")


def _spec(tmp_path, prior, objective=None, **model):
    m = {
        "prior": prior,
        "prior_options": {"similarity": S3.tolist(), "strength": 0.5},
        "kernel": {"type": "rbf", "w": "auto"},
        "variance": 2.0,
        "sigma2": 1.0,
    }
    m.update(model)
    return {
        "name": "similarity",
        "seed": 1,
        "data": toy_data_section(tmp_path, n=75, n_train=45, d=2, seed=5, spread=2.5),
        "model": m,
        "objective": objective or {"type": "map"},
        "output": {"dir": str(tmp_path / "out")},
    }


def _predict_in_fresh_process(folder: Path, X) -> np.ndarray:
    """load_model in a new interpreter that never registered the prior (only PYTHONPATH reaches it)."""
    np.save(folder / "X_new.npy", X)
    code = (
        "import sys, numpy as np; from gpmodels.driver.saved import load_model; "
        "P = load_model(sys.argv[1], allow_import=('external_prior',)).predict_proba(np.load(sys.argv[2])); "
        "np.save(sys.argv[3], P)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)])}
    subprocess.run(
        [sys.executable, "-c", code, str(folder), str(folder / "X_new.npy"), str(folder / "P.npy")],
        check=True,
        env=env,
        cwd=folder,
    )
    return np.load(folder / "P.npy")


def test_registered_prior_runs_from_a_spec_and_round_trips(tmp_path, registered):
    assert registered in registered_priors()
    d = _spec(tmp_path, registered)
    metrics = run_spec(spec_from_dict(d), quiet=True)
    assert metrics["converged"] and metrics["test_error"] < 0.25
    out = tmp_path / "out"
    resolved = yaml.safe_load((out / "spec.resolved.yaml").read_text())
    assert resolved["model"]["prior"] == "external_prior:build_class_similarity"  # importable without registering
    assert resolved["model"]["prior_options"] == {"similarity": S3.tolist(), "strength": 0.5}
    X_test = np.load(tmp_path / "test.npz")["X"]
    P = load_model(out).predict_proba(X_test)
    unregister_prior(registered)
    P_again = _predict_in_fresh_process(out, X_test)
    np.testing.assert_array_equal(P_again, P)
    # the model is the same as the one composed in Python
    spec, _ = load_spec(out / "spec.resolved.yaml")
    w = spec.model.kernel.w
    op = ClassSimilarityPrior(RBF(w), S3, 2.0, 0.5, 1.0).operator(np.load(tmp_path / "train.npz")["X"], 3)
    assert isinstance(op, Intercept) and isinstance(op.inner, ClassSimilarity)
    Y = np.eye(3)[np.load(tmp_path / "train.npz")["y"]]
    from gpmodels.inference.map.newton_cg import NewtonOptions

    ref = fit_map(op, Softmax(), Y, NewtonCG(NewtonOptions(max_iter=30, cg_max_iter=50))).predict_proba(X_test)
    np.testing.assert_allclose(P, ref, rtol=1e-12, atol=1e-14)


def test_import_path_prior_learns_by_cv_and_laplace_through_the_driver(tmp_path):
    path = "external_prior:build_class_similarity"
    cv = {"type": "cv", "cv": {"folds": 3, "outer": {"max_iter": 2}}}  # the checkpoint identity holds prior_options
    d = _spec(tmp_path, path, cv)
    with pytest.raises(SpecError, match="needs --allow-import external_prior"):  # a path runs no code unasked
        run_spec(spec_from_dict(d), quiet=True)
    m = run_spec(spec_from_dict(d, allow_import=("external_prior",)), quiet=True)
    assert m["psi_learned"] < m["psi_start"] and "hyper.strength" in m and m["hyper.strength"] != 0.5
    assert (tmp_path / "out" / "checkpoint.npz").is_file()
    # resumes: the identity (prior_options included) matches
    again = run_spec(spec_from_dict(d), quiet=True, allow_import="external_prior")
    assert again["resumed_from_iteration"] == 2 and again["psi_learned"] == m["psi_learned"]
    X_test = np.load(tmp_path / "test.npz")["X"]
    P = load_model(tmp_path / "out", allow_import=("external_prior",)).predict_proba(X_test)
    np.testing.assert_array_equal(_predict_in_fresh_process(tmp_path / "out", X_test), P)
    d = _spec(tmp_path, path, {"type": "laplace", "laplace": {"learn_max_iter": 3}})
    d["output"]["dir"] = str(tmp_path / "laplace")
    m = run_spec(spec_from_dict(d, allow_import=("external_prior",)), quiet=True)
    assert m["test_error"] < 0.3
    diag = json.loads((tmp_path / "laplace" / "diagnostics.json").read_text())
    assert diag["trace"][-1] < diag["trace"][0]  # -log q decreased
    with pytest.raises(SpecError, match="needs --allow-import external_prior"):  # a model folder runs no code unasked
        load_model(tmp_path / "laplace")
    np.testing.assert_array_equal(
        load_model(tmp_path / "laplace", allow_import=("external_prior",)).predict_proba(X_test).shape, (30, 3)
    )


@pytest.mark.parametrize(
    "mutate, key, message",
    [
        (lambda d: d["model"].update(prior="class_similarty"), "model.prior", "did you mean 'class_similarity'"),
        (lambda d: d["model"].update(prior="no_such_module_xyz:build"), "model.prior", "cannot import module"),
        (lambda d: d["model"].update(prior="external_prior:nothing"), "model.prior", "has no attribute"),
        (lambda d: d["model"].update(prior="external_prior:__all__"), "model.prior", "not a builder"),
        (lambda d: d["model"].update(prior="independent"), "model.prior_options", "are for user priors"),
        (
            lambda d: d["model"]["prior_options"].update(strenght=2.0),
            "model.prior_options.strenght",
            "did you mean 'strength'",
        ),
        (
            lambda d: d["model"]["prior_options"].update(similarity=[[1, 2], [2, 1]]),
            "model.prior_options.similarity",
            "positive semi-definite",
        ),
        (lambda d: d["model"]["prior_options"].update(similarity="tree"), "model.prior", "needs a class hierarchy"),
    ],
)
def test_bad_user_prior_specs_name_the_key(tmp_path, registered, mutate, key, message):
    d = _spec(tmp_path, registered)
    mutate(d)
    with pytest.raises(SpecError, match=message) as info:
        spec = spec_from_dict(d, allow_import=("external_prior", "no_such_module_xyz"))
        check_files(spec, None)  # imports an allowed prior named by path, as `gpmodels validate --allow-import` does
        run_spec(spec, quiet=True)
    assert info.value.path == key
    if "did you mean 'class" in message:
        assert "registered: independent, anova, coupled, loadings, class_similarity" in str(info.value)


def test_builder_must_return_a_prior_factory_of_an_operator(tmp_path):
    register_prior("broken_prior", lambda ctx: "not a prior")
    register_prior("wrong_size", lambda ctx: ClassSimilarityPrior(ctx.kernel, np.eye(2)))
    try:
        for name, message in (("broken_prior", "returned a str"), ("wrong_size", "2 x 2 but there are 3 classes")):
            d = _spec(tmp_path, name)
            del d["model"]["prior_options"]
            with pytest.raises((SpecError, InputError), match=message):
                run_spec(spec_from_dict(d), quiet=True)
    finally:
        unregister_prior("broken_prior")
        unregister_prior("wrong_size")


def test_registry_rules():
    with pytest.raises(SpecError, match="needs --allow-import external_prior"):
        resolve_prior("external_prior:build_class_similarity")
    assert (
        resolve_prior("external_prior:build_class_similarity", allow_import="external_prior") is build_class_similarity
    )
    register_prior("class_similarity", build_class_similarity)
    try:
        register_prior("class_similarity", build_class_similarity)  # the same builder again: a no-op
        with pytest.raises(ValueError, match="already registered"):
            register_prior("class_similarity", lambda ctx: None)
        with pytest.raises(ValueError, match="built-in"):
            register_prior("anova", build_class_similarity)
        with pytest.raises(ValueError, match="import paths"):
            register_prior("a:b", build_class_similarity)
    finally:
        unregister_prior("class_similarity")
    assert "class_similarity" not in registered_priors()
    assert registered_priors()[:4] == ("independent", "anova", "coupled", "loadings")
    with pytest.raises(SpecError, match="unknown prior 'class_similarity'"):
        resolve_prior("class_similarity")
    assert external_prior.__file__.startswith(str(TESTS))  # defined outside the package
