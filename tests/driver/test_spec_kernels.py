"""Kernel sections: the Matérn, rational quadratic, constant and white kernels by name, and sums and
products composed of kernel sections; resolved `w: auto` in every term; saved models rebuild them."""

import json

import numpy as np
import pytest
import yaml
from conftest import toy_data_section, write_spec

from gpmodels.cli import main
from gpmodels.driver.build import build_kernel
from gpmodels.driver.loader import spec_from_dict
from gpmodels.driver.saved import load_model
from gpmodels.errors import SpecError
from gpmodels.kernels import RBF, Constant, KernelProduct, KernelSum, Matern, MaternARD, RationalQuadratic

SUM = {"type": "sum", "terms": [{"type": "matern", "nu": 1.5, "w": "auto"}, {"type": "rbf", "w": 0.5}]}


def _spec(tmp_path, kernel, objective=None):
    return {
        "name": "kernels",
        "seed": 1,
        "data": toy_data_section(tmp_path, n=90, n_train=60, d=3, seed=3, spread=2.5),
        "model": {"kernel": kernel, "sharing": "semi", "variance": 2.0, "sigma2": 1.0},
        "objective": objective or {"newton": {"max_iter": 30, "cg_max_iter": 40}},
        "output": {"dir": str(tmp_path / "out")},
    }


def test_kernel_sections_build_the_named_and_composed_kernels(tmp_path):
    X = np.random.default_rng(0).normal(size=(20, 3))
    nested = {
        "type": "product",
        "terms": [
            {"type": "constant", "value": 2.0},
            {"type": "sum", "terms": [SUM, {"type": "rational_quadratic", "w": 0.3, "alpha": 2.0}]},
        ],
    }
    spec = spec_from_dict(_spec(tmp_path, nested))
    k = build_kernel(spec.model.kernel, X, tmp_path)
    assert isinstance(k, KernelProduct) and isinstance(k.terms[0], Constant)
    inner = k.terms[1]
    assert isinstance(inner, KernelSum) and [type(t) for t in inner.terms] == [Matern, RBF, RationalQuadratic]
    matern, rbf, _ = inner.terms  # the nested sum is flattened
    assert isinstance(matern, Matern) and matern.nu == 1.5 and isinstance(rbf, RBF) and rbf.w == 0.5
    assert spec_from_dict(spec.to_dict()) is not None  # round trip through plain data
    ard = spec_from_dict(_spec(tmp_path, {"type": "matern_ard", "nu": 0.5, "w": [1.0, 2.0, 3.0]}))
    assert isinstance(build_kernel(ard.model.kernel, X, tmp_path), MaternARD)


@pytest.mark.parametrize(
    "kernel, key, message",
    [
        ({"type": "rbf", "w": 1.0, "terms": [SUM]}, "model.kernel.terms", "not used by kernel type 'rbf'"),
        ({"type": "sum"}, "model.kernel.terms", "needs `terms`"),
        ({"type": "sum", "terms": []}, "model.kernel.terms", "needs `terms`"),
        ({"type": "matern", "w": 1.0, "nu": 1.0}, "model.kernel.nu", "one of 0.5, 1.5, 2.5; got 1.0"),
        ({"type": "matern", "w": [1.0, 2.0]}, "model.kernel.w", "use type 'matern_ard' for one per feature"),
        ({"type": "rational_quadratic", "w": 1.0, "nu": 1.5}, "model.kernel.nu", "not used by kernel type"),
        ({"type": "sum", "terms": [{"type": "matern"}]}, "model.kernel.terms[0].w", "kernel type 'matern' needs `w`"),
        (
            {"type": "product", "terms": [{"type": "constant", "value": -1.0}]},
            "model.kernel.terms[0].value",
            "a positive number; got -1.0",
        ),
    ],
)
def test_bad_kernel_sections_name_the_key(tmp_path, kernel, key, message):
    with pytest.raises(SpecError) as info:
        spec_from_dict(_spec(tmp_path, kernel))
    assert info.value.path == key and message in str(info.value)


def test_a_sum_learned_by_cv_is_saved_and_predicts(tmp_path):
    objective = {
        "type": "cv",
        "newton": {"max_iter": 30, "cg_max_iter": 40},
        "cv": {
            "folds": 3,
            "newton": {"max_iter": 20, "cg_max_iter": 30, "grad_tol": 1e-6},
            "outer": {"max_iter": 3, "score_patience": 0},
        },
    }
    p = write_spec(tmp_path, _spec(tmp_path, SUM, objective))
    assert main(["run", str(p), "--quiet"]) == 0
    out = tmp_path / "out"
    m = json.loads((out / "metrics.json").read_text())
    assert m["psi_learned"] < m["psi_start"] and m["test_error"] < 0.25
    assert "hyper.kernel0.k0.w" in m and "hyper.kernel0.k1.w" in m
    resolved = yaml.safe_load((out / "spec.resolved.yaml").read_text())
    assert isinstance(resolved["model"]["kernel"]["terms"][0]["w"], float)  # 'auto' resolved in the term
    model = load_model(out)
    from gpmodels.data.files import load_inputs

    Xt, yt = load_inputs(tmp_path / "test.npz")
    P = model.predict_proba(Xt)
    err = np.mean(np.array(model.classes)[np.argmax(P, 1)] != np.array([str(int(v)) for v in yt]))
    assert err == pytest.approx(m["test_error"])


def test_length_scale_in_a_kernel_section_is_w_given_as_a_length(tmp_path):
    X = np.random.default_rng(0).normal(size=(20, 3))
    by_scale = spec_from_dict(_spec(tmp_path, {"type": "matern", "length_scale": 2.0, "nu": 2.5}))
    k = build_kernel(by_scale.model.kernel, X, tmp_path)
    assert isinstance(k, Matern) and k.w == pytest.approx(0.25) and k.length_scale == pytest.approx(2.0)
    ard = spec_from_dict(_spec(tmp_path, {"type": "ard", "length_scale": [1.0, 2.0, 4.0]}))
    np.testing.assert_allclose(build_kernel(ard.model.kernel, X, tmp_path).w, [1.0, 0.25, 0.0625])
    with pytest.raises(SpecError, match="give `w` or `length_scale`.*not both") as err:
        spec_from_dict(_spec(tmp_path, {"type": "rbf", "w": 1.0, "length_scale": 1.0}))
    assert "model.kernel.length_scale" in str(err.value)
    with pytest.raises(SpecError, match="not used by kernel type 'linear'"):
        spec_from_dict(_spec(tmp_path, {"type": "linear", "length_scale": 1.0}))
