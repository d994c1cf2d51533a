"""`objective.type: one_vs_rest` through the driver: C binary models learned by Ψ (or fitted at the
given hyperparameters), the saved model's round trip and `gpmodels predict`, checkpoints per
class, spec checks; and the shipped satimage spec."""

import csv
import json

import numpy as np
import pytest
from conftest import ROOT, assert_spec_error, figures, toy_data_section, write_spec

from gpmodels.cli import main
from gpmodels.driver.loader import load_spec
from gpmodels.driver.saved import load_model
from gpmodels.inference.cv.one_vs_rest import fit_one_vs_rest
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.persistence import load_arrays


def _spec(tmp_path, learn=True, max_iter=2, **cv):
    settings = {
        "folds": 3,
        "newton": {"max_iter": 20, "cg_max_iter": 30, "grad_tol": 1e-6},
        "outer": {"max_iter": max_iter},
        "checkpoint": False,
    }
    settings.update(cv)
    return {
        "name": "toy-ovr",
        "seed": 1,
        "data": toy_data_section(tmp_path, n=90, n_train=60, d=3, seed=3, spread=2.5),
        "model": {"kernel": {"type": "rbf", "w": "auto"}, "sharing": "tied", "variance": 2.0, "sigma2": 1.0},
        "objective": {
            "type": "one_vs_rest",
            "learn": learn,
            "newton": {"max_iter": 30, "cg_max_iter": 40},
            "cv": settings,
        },
        "output": {"dir": str(tmp_path / "out")},
    }


def _round_trip(tmp_path, m):
    """The saved model predicts the test file as the run did; `gpmodels predict` agrees."""
    out = tmp_path / "out"
    kind, _ = load_arrays(out)
    assert kind == "one_vs_rest"
    model = load_model(out)
    with np.load(tmp_path / "test.npz") as z:
        X, y = z["X"], z["y"]
    P = model.predict_proba(X)
    assert np.array_equal(P, load_model(out).predict_proba(X))
    truth = np.array([str(v) for v in y])
    assert np.mean(np.array(model.classes)[model.predict(X)] != truth) == pytest.approx(m["test_error"])
    log_loss = -np.mean(np.log(P[np.arange(len(y)), [model.classes.index(t) for t in truth]]))
    assert log_loss == pytest.approx(m["test_log_loss"], rel=1e-12)
    assert main(["predict", str(out), str(tmp_path / "test.npz"), "--out", str(tmp_path / "p.csv")]) == 0
    with open(tmp_path / "p.csv") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["row", "prediction", "p_0", "p_1", "p_2"] and len(rows) == 31
    np.testing.assert_allclose([float(v) for v in rows[1][2:]], P[0], rtol=1e-5)
    return model


def test_one_vs_rest_learns_each_class_and_round_trips(tmp_path, capsys):
    d = _spec(tmp_path, learn_sigma2=True)
    assert main(["run", str(write_spec(tmp_path, d))]) == 0
    out = tmp_path / "out"
    m = json.loads((out / "metrics.json").read_text())
    for c in range(3):
        assert {f"hyper.class{c}.variance0", f"hyper.class{c}.kernel0.w", f"hyper.class{c}.sigma2"} <= set(m)
    assert m["outer_iterations"] == 6 and m["psi_learned"] < m["psi_start"] and m["test_error"] < 0.3
    assert len({m[f"hyper.class{c}.variance0"] for c in range(3)}) == 3  # each task its own hyperparameters
    assert all(not isinstance(v, (dict, list)) for v in m.values())
    assert {"model.npz", *figures("trace_Psi.png", "error_reject.png")} <= {p.name for p in out.iterdir()}
    diag = json.loads((out / "diagnostics.json").read_text())
    assert set(diag["learning"]) == {"class0", "class1", "class2"}
    assert [r["iteration"] for r in diag["learning"]["class2"]] == [0, 1, 2]
    text = capsys.readouterr().out
    assert "class 2: iteration 2: Ψ =" in text and "one-vs-rest: 3 binary tasks" in text
    model = _round_trip(tmp_path, m)
    # the loaded operators carry each class' learned hyperparameters, σ² included
    assert model.operators[1].describe()["sigma2"] == pytest.approx(m["hyper.class1.sigma2"])


def test_one_vs_rest_checkpoints_per_class_and_resumes(tmp_path, capsys):
    d = _spec(tmp_path, checkpoint=True, max_iter=1)
    p = write_spec(tmp_path, d)
    assert main(["run", str(p), "--quiet"]) == 0
    assert {f"checkpoint-class{c}.npz" for c in range(3)} <= {f.name for f in (tmp_path / "out").iterdir()}
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert main(["run", str(p)]) == 0
    again = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert again["resumed_from_iteration"] == 1 and again["psi_learned"] == m["psi_learned"]
    assert again["test_error"] == m["test_error"]
    assert "class 0: resumed from the checkpoint of outer iteration 1" in capsys.readouterr().out


def test_one_vs_rest_without_learning_fits_at_the_given_hyperparameters(tmp_path):
    d = _spec(tmp_path, learn=False)
    assert main(["run", str(write_spec(tmp_path, d)), "--quiet"]) == 0
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert "psi_learned" not in m and "outer_iterations" not in m and m["final_converged"]
    assert all((tmp_path / "out" / f).is_file() for f in figures("trace_Phi.png"))
    assert not (tmp_path / "out" / "trace_Psi.png").exists()
    model = _round_trip(tmp_path, m)
    # the same C fits by the library at the spec's hyperparameters
    from gpmodels.data.scaling import auto_rbf_w
    from gpmodels.kernels.rbf import RBF
    from gpmodels.priors.independent import IndependentGP

    with np.load(tmp_path / "train.npz") as z:
        X, y = z["X"], z["y"]
    op2 = IndependentGP(RBF(auto_rbf_w(X)), "tied", 2.0, 1.0).operator(X, 2)
    ovr = fit_one_vs_rest(op2, Softmax(), np.eye(3)[y], NewtonCG(NewtonOptions(max_iter=30, cg_max_iter=40)))
    with np.load(tmp_path / "test.npz") as z:
        Xt = z["X"]
    np.testing.assert_allclose(ovr.predict_proba(Xt), model.predict_proba(Xt), rtol=1e-10, atol=1e-12)
    assert ovr.learned == ()


@pytest.mark.parametrize(
    "mutate, key, message",
    [
        (lambda d: d["model"].update(prior="anova"), "model.prior", "independent prior"),
        (lambda d: d["model"].update(likelihood="logistic"), "model.likelihood", "binary softmax"),
        (lambda d: d["model"].update(sharing="separate", variance=[1.0, 2.0, 3.0]), "model.variance", "a list of 2"),
        (lambda d: d["model"].update(sharing="level"), "model.sharing", "tied, semi or separate"),
        (lambda d: d["data"].update(positive_class="1"), "data.positive_class", "multiclass"),
        (
            lambda d: (d["objective"]["cv"].update(learn_sigma2=True), d["model"].update(sigma2=0.0)),
            "objective.cv.learn_sigma2",
            "sigma2",
        ),
    ],
)
def test_bad_one_vs_rest_specs_name_the_key(tmp_path, mutate, key, message):
    d = _spec(tmp_path)
    mutate(d)
    assert_spec_error(d, key, message)


def test_the_satimage_ovr_spec_is_seeger_section_6_2():
    spec, _ = load_spec(ROOT / "specs" / "satimage-ovr.yaml")
    m, o = spec.model, spec.objective
    assert (spec.data.dataset, spec.data.scaling) == ("satimage", "none")
    assert (m.kernel.type, m.kernel.w, m.variance, m.sigma2, m.sharing) == ("rbf", "auto", 10.0, 16.0, "tied")
    assert (
        o.type,
        o.learn,
        o.newton.max_iter,
        o.newton.cg_max_iter,
        o.cv.newton.max_iter,
        o.cv.newton.cg_max_iter,
        o.cv.k3,
        o.cv.folds,
    ) == ("one_vs_rest", True, 30, 50, 13, 25, 40, 5)
