import importlib.util
import os
from pathlib import Path

# the short spin of idle OpenBLAS threads the `gpmodels` command runs with (gpmodels.configure_openblas),
# set before numpy loads OpenBLAS; inherited by the worker processes the tests start
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

TESTS = Path(__file__).resolve().parent
"""The tests folder (shared helpers, fixtures in data/)."""
ROOT = TESTS.parent
"""The repository root."""

settings.register_profile(
    "default", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.register_profile(
    "thorough",
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("GPMODELS_HYPOTHESIS_PROFILE", "default"))


def _data_root() -> Path:
    from gpmodels.data.datasets import find_data_root
    from gpmodels.errors import DataError

    try:
        return find_data_root()
    except DataError:
        return ROOT.parent / "shared" / "data"


#: the named data sets (GPMODELS_DATA, else ../shared/data beside the repository); may be absent
SHARED_DATA = _data_root()


def needs_shared_data(*datasets: str):
    """Skip unless SHARED_DATA holds each named data set (or exists at all, when none is named)."""
    missing = [d for d in datasets if not (SHARED_DATA / d).is_dir()] if SHARED_DATA.is_dir() else ["data"]
    return pytest.mark.skipif(bool(missing), reason=f"{', '.join(missing)} not in the shared data ({SHARED_DATA})")


def assert_spec_error(spec: dict, key: str, message: str, read=None) -> None:
    """Reading ``spec`` (by ``read``, default ``spec_from_dict``) raises a SpecError matching ``message`` whose
    path is ``key``."""
    from gpmodels.driver import spec_from_dict
    from gpmodels.errors import SpecError

    with pytest.raises(SpecError, match=message) as err:
        (read or spec_from_dict)(spec)
    assert err.value.path == key


#: whether matplotlib (the `plots` extra; the `test` extra installs it) is there: runs then draw their figures
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
needs_matplotlib = pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="draws figures: needs matplotlib (gpmodels[plots])")


def figures(*names) -> set:
    """The figure files ``names`` that a run writes: all of them with matplotlib, none without it (the run
    without it is checked by tests/test_dependencies.py)."""
    return set(names) if HAVE_MATPLOTLIB else set()


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def toy_classification(n=40, C=3, d=2, seed=0, spread=2.0):
    """Gaussian blobs: class c centred at a random point; labels 0..C-1, every class present."""
    r = np.random.default_rng(seed)
    centres = r.normal(scale=spread, size=(C, d))
    y = np.arange(n) % C
    X = centres[y] + r.normal(size=(n, d))
    return X, y


def toy_data_section(folder, *, n, n_train, C=3, d=2, seed=0, spread=2.0, label_offset=0, labels=None) -> dict:
    """Draw ``toy_classification(n, C, d, seed, spread)``, write its first ``n_train`` rows to
    ``folder / "train.npz"`` and the rest to ``folder / "test.npz"``; returns the spec's data section
    ``{"path": ..., "test_path": ...}``.  The labels written are ``labels[y]`` where ``labels`` (one name per
    class) is given, else ``y + label_offset``."""
    X, y = toy_classification(n, C, d=d, seed=seed, spread=spread)
    y = np.asarray(labels)[y] if labels is not None else y + label_offset
    np.savez(folder / "train.npz", X=X[:n_train], y=y[:n_train])
    np.savez(folder / "test.npz", X=X[n_train:], y=y[n_train:])
    return {"path": str(folder / "train.npz"), "test_path": str(folder / "test.npz")}


def write_spec(folder, d, name="spec.yaml"):
    """Write the plain spec ``d`` as YAML to ``folder / name``; returns the path."""
    import yaml

    path = folder / name
    path.write_text(yaml.safe_dump(d))
    return path


def assert_estimator_checks_pass(estimator, allowed_skips, **kwargs):
    """scikit-learn's check_estimator finds no failure, skips only ``allowed_skips`` and ran its checks."""
    from sklearn.utils.estimator_checks import check_estimator

    results = check_estimator(estimator, on_fail=None, **kwargs)
    failed = [(r["check_name"], repr(r["exception"])[:300]) for r in results if r["status"] == "failed"]
    assert not failed, failed
    skipped = {r["check_name"] for r in results if r["status"] == "skipped"}
    assert skipped <= set(allowed_skips), skipped - set(allowed_skips)
    assert len(results) > 40
    return results


def three_model_study(tmp_path) -> dict:
    """A study spec (plain data) of three RBF models differing in their variance, on toy data saved in tmp_path."""
    return {
        "name": "s",
        "data": toy_data_section(tmp_path, n=40, n_train=30, d=4, seed=0, label_offset=1),
        "models": [
            {"name": f"v{v}", "model": {"kernel": {"type": "rbf", "w": 0.3}, "variance": v}} for v in (1.0, 5.0, 20.0)
        ],
    }


#: the device label of the numpy namespace standing in for PyTorch's first CUDA device
STAND_IN_GPU = "cuda:0 (numpy stand-in)"


def install_stand_in_gpu(monkeypatch) -> None:
    """``device: cuda`` runs on the numpy namespace (labelled :data:`STAND_IN_GPU`), so that the whole
    device path of the driver and the estimators runs without a GPU."""
    from gpmodels.kernels.device import backend

    def numpy_as_cuda():
        be = backend.numpy_backend()
        be.label = STAND_IN_GPU
        return be

    monkeypatch.setattr(backend, "cuda_status", lambda: None)
    monkeypatch.setattr(backend, "cuda_backend", numpy_as_cuda)


@pytest.fixture
def stand_in_gpu(monkeypatch):
    install_stand_in_gpu(monkeypatch)


def _gpu_usable() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    from gpmodels.kernels.device.backend import cuda_status

    return cuda_status() is None


@pytest.fixture(
    params=[
        pytest.param("stand-in"),
        pytest.param(
            "cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not _gpu_usable(), reason="no usable CUDA GPU")]
        ),
    ]
)
def gpu_label(request, monkeypatch) -> str:
    """Where a test's ``device: cuda`` runs: the numpy stand-in (CI), or, marked ``gpu``, PyTorch's first
    CUDA device where one is usable.  Returns the start of the device label that reports must show."""
    if request.param == "cuda":
        return "cuda ("
    install_stand_in_gpu(monkeypatch)
    return STAND_IN_GPU
