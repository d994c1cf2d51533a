"""``GPClassifier(device=...)``: where the kernel matrices live, asked for on the estimator.  Without a
GPU (CI) ``cuda`` is a DeviceError naming what is missing, never a CPU run; the numpy namespace stands
in for PyTorch's GPU so that the estimator's whole device path runs here."""

import pickle
import warnings

import numpy as np
import pytest
from conftest import STAND_IN_GPU, toy_classification
from sklearn.base import clone

from gpmodels.driver.build import representation_choices
from gpmodels.errors import ConvergenceWarning, DeviceError, InputError
from gpmodels.estimators import GPClassifier
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.matern import MaternARD
from gpmodels.kernels.rational_quadratic import RationalQuadratic
from gpmodels.kernels.rbf import RBF
from gpmodels.priors import IndependentGP

pytest.importorskip("array_api_compat")
from gpmodels.kernels.device.backend import cuda_status  # noqa: E402

no_gpu = pytest.mark.skipif(cuda_status() is None, reason="a GPU is usable here: cuda would run")


def _data():
    X, y = toy_classification(45, 3, d=3, seed=3, spread=2.5)
    return X[:30], y[:30], X[30:]


def _fit(**kwargs):
    X, y, Xt = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return GPClassifier(random_state=0, **kwargs).fit(X, y), Xt


def test_the_device_parameter_keeps_the_estimator_at_eleven_parameters():
    # ten before issue 41 gave the estimator scikit-learn's kernel= parameter
    params = GPClassifier(device="auto").get_params(deep=False)
    assert params["device"] == "auto" and len(params) <= 11
    est = GPClassifier(device="cpu")
    assert clone(est).device == "cpu" and pickle.loads(pickle.dumps(est)).device == "cpu"


@pytest.mark.parametrize("bad", ["gpu", "CUDA", 1, True])
def test_a_device_that_is_none_of_the_allowed_ones_is_refused_by_name(bad):
    with pytest.raises(
        InputError,
        match=r"The 'device' parameter of GPClassifier must be None .*'cpu', 'cuda' or "
        r"'auto'; got",
    ):
        _fit(objective="map", device=bad)


@no_gpu
@pytest.mark.parametrize("objective", ["map", "cv"])
def test_cuda_without_a_usable_gpu_is_an_error_naming_what_is_missing_before_any_work(objective):
    est = GPClassifier(objective=objective, device="cuda")
    X, y, _ = _data()
    with pytest.raises(
        DeviceError,
        match="device 'cuda' was asked for but cannot be used: .*(not installed|no usable GPU|CPU-only build)",
    ):
        est.fit(X, y)
    assert not hasattr(est, "model_")


def test_cpu_is_the_default_fit_and_says_so():
    default, Xt = _fit(objective="map")
    cpu, _ = _fit(objective="map", device="cpu")
    np.testing.assert_array_equal(cpu.predict_proba(Xt), default.predict_proba(Xt))
    assert cpu.device_ == default.device_ == "cpu"


@no_gpu
def test_auto_without_a_gpu_runs_on_the_cpu_and_says_why():
    auto, Xt = _fit(objective="map", device="auto")
    cpu, _ = _fit(objective="map", device="cpu")
    np.testing.assert_array_equal(auto.predict_proba(Xt), cpu.predict_proba(Xt))
    assert auto.device_.startswith("cpu (auto: ")


@pytest.mark.parametrize("objective", ["map", "cv"])
@pytest.mark.parametrize(
    "kernel",
    [RBF(0.4), MaternARD([0.3, 0.5, 0.4], nu=2.5), RationalQuadratic(0.4, alpha=1.5)],
    ids=["rbf", "matern_ard", "rq"],
)
def test_cuda_goes_through_the_device_and_predicts_as_the_cpu(gpu_label, kernel, objective):
    prior = IndependentGP(kernel, "separate", 2.0, 1.0)
    kwargs = {"objective": objective, "cv": 3} if objective == "cv" else {"objective": "map"}
    cpu, Xt = _fit(prior=prior, device="cpu", **kwargs)
    gpu, _ = _fit(prior=prior, device="cuda", **kwargs)
    assert gpu.device_.startswith(gpu_label) and cpu.device_ == "cpu"
    choices = representation_choices(gpu.model_.operator)
    assert choices and all(c["device"].startswith(gpu_label) for c in choices)
    assert all(c["device"] == "cpu" for c in representation_choices(cpu.model_.operator))
    np.testing.assert_allclose(gpu.predict_proba(Xt), cpu.predict_proba(Xt), rtol=0, atol=1e-7)
    np.testing.assert_array_equal(gpu.predict(Xt), cpu.predict(Xt))
    assert gpu.kernel_.device == "cuda"


def test_a_kernel_without_a_device_form_is_refused_on_cuda_and_kept_on_the_cpu_by_auto(stand_in_gpu):
    prior = IndependentGP(RBF(0.4) + Linear(), "tied", 1.0, 1.0)
    with pytest.raises(DeviceError, match="allowed there: rbf, ard, matern, matern_ard, rational_quadratic"):
        _fit(prior=prior, objective="map", device="cuda")
    auto, _ = _fit(prior=prior, objective="map", device="auto")
    assert all("has no device form" in c["device"] for c in representation_choices(auto.model_.operator))


def test_a_prior_that_places_nothing_is_refused_with_a_device_and_fine_without():
    class UserPrior:
        def operator(self, X, n_classes):
            return IndependentGP(RBF(0.4), "tied", 1.0, 1.0).operator(X, n_classes)

    with pytest.raises(InputError, match="needs a prior that declares on_device .*UserPrior does not"):
        _fit(prior=UserPrior(), objective="map", device="cpu")
    est, _ = _fit(prior=UserPrior(), objective="map")
    assert est.device_ == "cpu"


def test_a_learned_prior_moves_to_the_device_with_its_values(stand_in_gpu):
    first, Xt = _fit(objective="cv", cv=3)
    tight = NewtonCG(NewtonOptions(max_iter=100, cg_max_iter=600, cg_tol=1e-14, cg_forcing=0.0, grad_tol=1e-12))
    cpu, _ = _fit(prior=first.kernel_, objective="map", solver=tight)
    again, _ = _fit(prior=first.kernel_, objective="map", solver=tight, device="cuda")
    assert again.device_ == STAND_IN_GPU and again.kernel_.names == first.kernel_.names
    np.testing.assert_allclose(again.kernel_.theta, first.kernel_.theta, rtol=1e-12)
    np.testing.assert_allclose(again.predict_proba(Xt), cpu.predict_proba(Xt), rtol=0, atol=1e-10)


def test_a_model_fitted_on_a_device_saves_a_folder_that_loads_onto_the_cpu(stand_in_gpu, tmp_path):
    from gpmodels.estimators import load_classifier

    gpu, Xt = _fit(objective="map", device="cuda")
    loaded = load_classifier(gpu.save(tmp_path / "model"))
    back = loaded[-1] if hasattr(loaded, "steps") else loaded  # (a Pipeline when the inputs were scaled)
    assert gpu.device_ == STAND_IN_GPU and back.device_ == "cpu"
    np.testing.assert_allclose(loaded.predict_proba(Xt), gpu.predict_proba(Xt), rtol=0, atol=1e-7)
