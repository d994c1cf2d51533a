"""Every kernel with a spec name round-trips through a model folder: fit (learning its hyperparameters),
``save``, then the CLI's model-folder loader, ``gpmodels predict`` and ``load_classifier`` give the same
predictions.  scikit-learn kernels are saved as their native kernels, "fixed" parameters included."""

import csv
import warnings

import numpy as np
import pytest
from sklearn.gaussian_process import kernels as sk

from gpmodels.cli import main
from gpmodels.driver.saved import load_model
from gpmodels.errors import ConvergenceWarning, InputError
from gpmodels.estimators import CV, GPClassifier, load_classifier
from gpmodels.inference.cv.learn import LearnOptions
from gpmodels.kernels import (
    ARD,
    RBF,
    Constant,
    KernelProduct,
    KernelSum,
    Linear,
    Matern,
    MaternARD,
    RationalQuadratic,
    RationalQuadraticARD,
    White,
    make_kernel,
)
from gpmodels.kernels.sklearn_adapter import SklearnKernel
from gpmodels.optimize.lbfgs import OuterOptions
from gpmodels.priors import IndependentGP

KERNELS = {
    "matern-1/2": Matern(0.5, nu=0.5),
    "matern-3/2": Matern(0.5, nu=1.5),
    "matern-5/2": Matern(0.5, nu=2.5),
    "matern-ard": MaternARD([0.5, 0.3, 0.8], nu=2.5),
    "rational-quadratic": RationalQuadratic(0.5, alpha=2.0),
    "rational-quadratic-ard": RationalQuadraticARD([0.5, 0.3, 0.8], alpha=0.7),
    "constant*rbf": KernelProduct((Constant(2.0), RBF(0.5))),
    "matern+rbf": KernelSum((Matern(0.3, nu=1.5), RBF(0.5))),
    "rbf+white": KernelSum((RBF(0.5), White(0.1))),
    "(constant*ard)+linear": KernelSum((KernelProduct((Constant(1.5), ARD([0.5, 0.3, 0.8]))), Linear())),
    "sklearn constant*rbf": sk.ConstantKernel(2.0) * sk.RBF(1.5),
    "sklearn fixed parts": sk.ConstantKernel(2.0, "fixed") * sk.Matern(1.0, nu=1.5) + sk.WhiteKernel(0.1, "fixed"),
}


def _blobs(n, seed):
    r = np.random.default_rng(seed)
    y = np.arange(n) % 3
    return r.standard_normal((n, 3)) + 1.5 * np.eye(3)[y], y


def _learned(kernel, X, y) -> GPClassifier:
    """A tied GPClassifier with ``kernel`` learned by two outer CV iterations on (X, y)."""
    est = GPClassifier(
        IndependentGP(kernel, "tied", sigma2=1.0),
        objective=CV(LearnOptions(outer=OuterOptions(max_iter=2))),
        cv=3,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y)


@pytest.mark.parametrize("kernel", list(KERNELS.values()), ids=list(KERNELS))
def test_a_fitted_kernel_round_trips_through_a_model_folder_and_gpmodels_predict(tmp_path, kernel):
    X, y = _blobs(45, 0)
    Xt = _blobs(15, 7)[0]
    est = _learned(kernel, X, y)
    assert not np.allclose(est.kernel_.theta, est.kernel_.prior.operator(X, 3).params)  # learning moved θ
    P = est.predict_proba(Xt)
    folder = est.save(tmp_path / "model")

    predictor = load_model(folder)  # what `gpmodels predict` reads
    order = [list(predictor.classes).index(str(c)) for c in est.classes_]
    np.testing.assert_allclose(predictor.predict_proba(Xt)[:, order], P, rtol=1e-10, atol=1e-13)
    back = load_classifier(folder)
    np.testing.assert_allclose(back.predict_proba(Xt), P, rtol=1e-10, atol=1e-13)

    np.savez(tmp_path / "new.npz", X=Xt)
    assert main(["predict", str(folder), str(tmp_path / "new.npz"), "--out", str(tmp_path / "p.csv")]) == 0
    with open(tmp_path / "p.csv") as fh:
        rows = list(csv.reader(fh))
    header, rows = rows[0], rows[1:]
    assert [r[header.index("prediction")] for r in rows] == [str(c) for c in est.predict(Xt)]
    columns = [header.index(f"p_{c}") for c in est.classes_]
    # the CSV holds 6 significant digits
    np.testing.assert_allclose(np.array([[float(r[j]) for j in columns] for r in rows]), P, rtol=5.1e-6, atol=0)


@pytest.mark.parametrize("kernel", [k for k in KERNELS.values() if not hasattr(k, "get_params")], ids=repr)
def test_a_kernel_s_spec_section_rebuilds_it_with_its_values(kernel):
    section = dict(kernel.spec_section())
    rebuilt = make_kernel(section.pop("type"), **section)
    assert type(rebuilt) is type(kernel) and rebuilt.param_names == kernel.param_names
    np.testing.assert_array_equal(rebuilt.params, kernel.params)
    X = np.random.default_rng(1).normal(size=(6, 3))
    np.testing.assert_array_equal(rebuilt.gram(X, X), kernel.gram(X, X))


def test_a_kernel_without_a_spec_name_is_refused_by_save_with_the_names_allowed(tmp_path):
    X, y = _blobs(30, 0)
    wrapped = SklearnKernel(sk.ExpSineSquared(1.0, 3.0))
    assert KernelSum((RBF(0.5), wrapped)).spec_section() is None
    est = GPClassifier(IndependentGP(KernelSum((RBF(0.5), wrapped)), "tied", sigma2=1.0), objective="map").fit(X, y)
    with pytest.raises(InputError, match="matern, matern_ard, rational_quadratic.*pickle the estimator instead"):
        est.save(tmp_path / "m")


def test_fixed_scikit_learn_parameters_are_stored_as_values_of_the_rebuilt_kernel(tmp_path):
    X, y = _blobs(45, 0)
    kernel = sk.ConstantKernel(2.0, "fixed") * sk.Matern(1.0, nu=1.5) + sk.WhiteKernel(0.1, "fixed")
    est = _learned(kernel, X, y)
    back = load_classifier(est.save(tmp_path / "m"))
    learned = dict(zip(est.kernel_.names, est.kernel_.theta))
    loaded = dict(zip(back.kernel_.names, back.kernel_.theta))
    assert set(learned) < set(loaded) and all(loaded[n] == v for n, v in learned.items())
    fixed = {n: v for n, v in loaded.items() if n not in learned}  # log 2 (constant) and log 0.1 (white)
    assert sorted(np.round(np.exp(list(fixed.values())), 12)) == [0.1, 2.0]
