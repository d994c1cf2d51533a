"""The spec keys and runners of the unifying-paper objectives, on small data generated here."""

import json

import numpy as np
import pytest
import yaml
from conftest import assert_spec_error

from gpmodels.cli import main
from gpmodels.driver.loader import spec_from_dict
from gpmodels.errors import SpecError


def _files(tmp_path):
    r = np.random.default_rng(0)
    X = r.normal(size=(70, 2))
    f = np.sin(2 * X[:, 0]) + X[:, 1]
    lab = np.where(f > 0.3, 2, np.where(f > -0.5, 1, 0))  # three classes: "2" vs rest is binary
    np.savez(tmp_path / "cls.npz", X=X, y=lab)
    y = f + 0.1 * r.standard_t(3.0, size=70)
    np.savez(tmp_path / "reg.npz", X=X, y=y)
    return tmp_path / "cls.npz", tmp_path / "reg.npz"


def _spec(tmp_path, task, model, objective):
    cls, reg = _files(tmp_path)
    data = {"path": str(reg if task == "regression" else cls), "test": "split", "test_fraction": 0.3}
    if task == "regression":
        data["task"] = "regression"
    else:
        data["positive_class"] = "2"
    return {"name": "u", "data": data, "model": model, "objective": objective, "output": {"dir": str(tmp_path / "out")}}


RBF = {"type": "rbf", "w": 1.0}
KERNELS = [{"type": "rbf", "w": 0.3}, {"type": "rbf", "w": 3.0}, {"type": "linear"}]
CASES = {
    "map-logistic": (
        "classification",
        {"kernel": RBF, "likelihood": "logistic", "sharing": "tied", "sigma2": 1.0},
        {"type": "map"},
    ),
    "map-student": (
        "regression",
        {"kernel": RBF, "likelihood": "student_t", "scale": 0.2, "sharing": "tied"},
        {"type": "map"},
    ),
    "laplace-exact": (
        "classification",
        {"kernel": RBF, "likelihood": "logistic", "sharing": "tied"},
        {"type": "laplace", "laplace": {"learn_max_iter": 15}},
    ),
    "laplace-mvm-fixed": (
        "classification",
        {"kernel": RBF, "likelihood": "logistic", "sharing": "tied"},
        {"type": "laplace", "laplace": {"path": "mvm"}, "learn": False},
    ),
    "vb-logistic": (
        "classification",
        {"kernel": RBF, "likelihood": "logistic", "sharing": "tied"},
        {"type": "vb", "vb": {"learn_max_iter": 10}},
    ),
    "mlm-gaussian": (
        "regression",
        {"kernel": RBF, "likelihood": "gaussian", "noise": 0.1, "sharing": "tied"},
        {"type": "mlm", "vb": {"learn_max_iter": 15}},
    ),
    "mkl-alternating": (
        "classification",
        {"kernels": KERNELS, "likelihood": "logistic"},
        {"type": "mkl", "mkl": {"lam": 1.0, "solver": "alternating", "max_iter": 100, "tol": 1e-10}},
    ),
    "mkl-hinge-lbfgs": (
        "classification",
        {"kernels": KERNELS, "likelihood": "hinge"},
        {"type": "mkl", "mkl": {"solver": "lbfgs", "p": 2.0, "max_iter": 100, "tol": 1e-8}},
    ),
    "joint-map-alg1": (
        "classification",
        {"kernels": KERNELS[:2], "likelihood": "logistic"},
        {"type": "joint_map", "mkl": {"solver": "algorithm1", "max_iter": 100, "tol": 1e-10}},
    ),
    "vb-kernels-laplace": (
        "regression",
        {"kernels": KERNELS[:2], "likelihood": "laplace", "scale": 0.2},
        {"type": "vb", "mkl": {"max_iter": 100, "tol": 1e-10}},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_runners(tmp_path, case):
    task, model, objective = CASES[case]
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(_spec(tmp_path, task, model, objective)))
    assert main(["run", str(p), "--quiet"]) == 0
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    if task == "regression":
        assert m["test_rmse"] < 0.5, m
    elif objective["type"] == "joint_map":
        # joint MAP is unbounded below as θ -> 0 (log|K_θ| -> -∞ at u = 0): it runs into the jitter floor
        assert np.isfinite(m["criterion"]) and m["hyper.weight0"] < 1e-3 and m["hyper.weight1"] < 1e-3, m
    else:
        assert m["test_error"] < 0.3, m
    if "kernels" in model:
        assert all(m[f"hyper.weight{i}"] > 0 for i in range(len(model["kernels"])))
    resolved = yaml.safe_load((tmp_path / "out" / "spec.resolved.yaml").read_text())
    spec_from_dict(resolved)


@pytest.mark.parametrize(
    "mutate, key, message",
    [
        (
            lambda d: d["data"].update(task="regression", positive_class=None),
            "model.likelihood",
            "regression task needs",
        ),
        (lambda d: d["model"].update(likelihood="gaussian"), "model.likelihood", "data.task: regression"),
        (lambda d: d["objective"].update(type="mlm"), "model.likelihood", "Gaussian marginal likelihood"),
        (lambda d: d["objective"].update(type="mkl"), "model.kernels", "give model.kernels"),
        (lambda d: d["model"].update(kernels=KERNELS), "model.kernel", "exactly one of `kernel` or `kernels`"),
        (
            lambda d: d["objective"].update(type="vb", mkl={"solver": "algorithm1"}),
            "objective.mkl.solver",
            "weights of model.kernels",
        ),
        (
            lambda d: d["objective"].update(mkl={"lam": 2.0}),
            "objective.mkl",
            "holds settings of `type: mkl / joint_map / vb / mlm`; this objective is 'laplace'",
        ),
        (lambda d: d["objective"].update(mkl={"solvr": "algorithm1"}), "objective.mkl.solvr", "did you mean 'solver'"),
        (
            lambda d: d["objective"].update(solver="algorithm1"),
            "objective.solver",
            "must be one of 'newton-cg', 'exact'; got 'algorithm1'",
        ),  # the MAP solver; MKL's is objective.mkl.solver
        (lambda d: d["model"].update(likelihood="hinge"), "model.likelihood", "smooth, normalised"),
        (lambda d: d["objective"].update(mkl={"p": 0.5}), "objective.mkl.p", ">= 1"),
        (
            lambda d: d["objective"].update(laplace={"learn_max_iters": 5}),
            "objective.laplace.learn_max_iters",
            "did you mean 'learn_max_iter'",
        ),
        (lambda d: d["objective"].update(laplace={"path": "mvn"}), "objective.laplace.path", "mvn"),
        (lambda d: d["data"].update(task="regresion"), "data.task", "did you mean 'regression'"),
    ],
)
def test_bad_specs_name_the_key(tmp_path, mutate, key, message):
    d = _spec(
        tmp_path, "classification", {"kernel": RBF, "likelihood": "logistic", "sharing": "tied"}, {"type": "laplace"}
    )
    mutate(d)
    assert_spec_error(d, key, message)


def test_kernel_list_checks(tmp_path):
    d = _spec(
        tmp_path,
        "classification",
        {"kernels": KERNELS, "weights": [1.0, 2.0], "likelihood": "logistic"},
        {"type": "mkl"},
    )
    with pytest.raises(SpecError, match="one weight per kernel") as err:
        spec_from_dict(d)
    assert err.value.path == "model.weights"
    d["model"].update(weights=[1.0, 2.0, -1.0])
    with pytest.raises(SpecError, match="each entry a positive number"):
        spec_from_dict(d)


def test_binary_likelihood_on_three_classes_is_refused(tmp_path, capsys):
    d = _spec(tmp_path, "classification", {"kernel": RBF, "likelihood": "logistic", "sharing": "tied"}, {"type": "map"})
    d["data"].pop("positive_class")
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(d))
    assert main(["run", str(p), "--quiet"]) == 2
    assert "positive_class" in capsys.readouterr().err
