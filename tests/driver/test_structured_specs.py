"""Specs with class trees: the anova / coupled / loadings priors, tree sharing for the flat prior,
EM with pseudo-targets, hierarchical scores and decision rules, saved hierarchical models, and
errors that name the key."""

import json

import numpy as np
import pytest
import yaml
from conftest import assert_spec_error, figures, toy_data_section

from gpmodels.cli import main
from gpmodels.driver.loader import spec_from_dict
from gpmodels.driver.run import run_spec
from gpmodels.driver.saved import load_model
from gpmodels.errors import SpecError

HIER = "root\tg\nroot\tc3\ng\tc1\ng\tc2\nc3\tc31\nc3\tc32\n"  # leaves c1, c2, c31, c32 (c3 is inner)


def _spec(tmp_path, model=None, objective=None, data=None):
    (tmp_path / "h.tsv").write_text(HIER)
    m = {"prior": "anova", "kernel": {"type": "rbf", "w": 0.2}, "sharing": "level", "variance": 3.0, "sigma2": 1.0}
    m.update(model or {})
    d = {
        **toy_data_section(tmp_path, n=80, n_train=56, C=4, d=4, seed=0, spread=3.0, labels=["c1", "c2", "c31", "c32"]),
        "hierarchy": str(tmp_path / "h.tsv"),
    }
    d.update(data or {})
    o = {"newton": {"max_iter": 30, "cg_max_iter": 60}}
    o.update(objective or {})
    return {"name": "tree", "data": d, "model": m, "objective": o, "output": {"dir": str(tmp_path / "out")}}


@pytest.mark.parametrize(
    "model",
    [
        {"prior": "anova", "sharing": "level"},
        {"prior": "anova", "sharing": "semi"},
        {"prior": "independent", "sharing": "subtree", "kernel_sharing": "tied"},
        {"prior": "coupled", "sharing": "tied", "coupling": {"init": "tree"}},
        {"prior": "loadings", "sharing": "tied", "coupling": {"factors": 2}},
    ],
)
def test_structured_priors_run_and_report_hierarchical_scores(tmp_path, model):
    spec = spec_from_dict(
        _spec(tmp_path, model, {"newton": {"max_iter": 30, "cg_max_iter": 60, "preconditioner": "lowrank"}})
    )
    m = run_spec(spec, quiet=True)
    for key in (
        "test_acc",
        "test_taxo_argmax",
        "test_pacc_argmax",
        "test_taxo_expected_loss",
        "test_pacc_expected_loss",
        "test_level1_acc_argmax",
        "test_level2_acc_argmax",
    ):
        assert key in m
    assert m["converged"] and m["test_acc"] > 0.6
    assert m["test_level1_acc_argmax"] >= m["test_level2_acc_argmax"] - 1e-12
    levels = json.loads((tmp_path / "out" / "confusion_levels.json").read_text())
    assert set(levels) == {"argmax", "expected_loss"} and levels["argmax"]["1"]["nodes"] == ["g", "c3"]
    for png in figures("levels.png"):
        assert (tmp_path / "out" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_flat_data_write_no_levels_plot(tmp_path):
    d = _spec(tmp_path, {"prior": "independent", "sharing": "tied"})
    d["data"].pop("hierarchy")
    run_spec(spec_from_dict(d), quiet=True, force=True)
    assert (tmp_path / "out" / "metrics.json").is_file()
    assert not (tmp_path / "out" / "levels.png").exists() and not (tmp_path / "out" / "confusion_levels.json").exists()


def test_em_spec_with_coarsened_labels_and_with_a_file(tmp_path, capsys):
    d = _spec(
        tmp_path,
        {"prior": "anova"},
        {"type": "em", "em": {"max_iter": 20}},
        {"pseudo_targets": {"fraction": 0.5, "levels_up": 1}},
    )
    p = tmp_path / "em.yaml"
    p.write_text(yaml.safe_dump(d))
    assert main(["run", str(p)]) == 0
    out = capsys.readouterr().out
    assert "EM:" in out and "targets uncertain" in out
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["uncertain_targets"] > 0 and m["em_iterations"] >= 2
    trace = json.loads((tmp_path / "out" / "diagnostics.json").read_text())["trace"]
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    names = ["g" if i % 2 else "c31" for i in range(56)]
    (tmp_path / "pt.txt").write_text("\n".join(names) + "\n")
    d["data"]["pseudo_targets"] = {"file": str(tmp_path / "pt.txt")}
    m = run_spec(spec_from_dict(d), quiet=True, force=True)
    assert m["uncertain_targets"] == 28
    (tmp_path / "pt.txt").write_text("\n".join(names[:10]) + "\n")
    with pytest.raises(SpecError, match="lists 10 pseudo-targets but there are 56") as err:
        run_spec(spec_from_dict(d), quiet=True, force=True)
    assert err.value.path == "data.pseudo_targets.file"
    (tmp_path / "pt.txt").write_text("\n".join(["nowhere"] * 56) + "\n")
    with pytest.raises(SpecError, match=r"pt.txt:1: not a node of the class tree \(56 such lines\)"):
        run_spec(spec_from_dict(d), quiet=True, force=True)


def test_saved_hierarchical_model_predicts_like_the_run(tmp_path):
    d = _spec(tmp_path, {"prior": "anova"}, data={"prune_hierarchy": True})
    (tmp_path / "h.tsv").write_text(HIER.replace("c3\tc31\nc3\tc32\n", "c3\tc3x\nc3x\tc31\nc3x\tc32\n"))
    run_spec(spec_from_dict(d), quiet=True, force=True)
    model = load_model(tmp_path / "out")
    tree = model.operator.inner.tree
    assert type(model.operator.inner).__name__ == "ANOVA"
    assert tree.n_nodes == 6 and "c3" not in tree.nodes  # the single-child node c3 was pruned, as saved
    with np.load(tmp_path / "test.npz") as z:
        X, y = z["X"], z["y"]
    err = np.mean(np.array(model.classes)[model.predict(X)] != y)
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert err == pytest.approx(m["test_error"])


@pytest.mark.parametrize(
    "mutate, key, message",
    [
        (lambda d: d["data"].pop("hierarchy"), "model.prior", "needs a class hierarchy"),
        (
            lambda d: (d["data"].pop("hierarchy"), d["model"].update(prior="independent", sharing="subtree")),
            "model.sharing",
            "needs a class hierarchy",
        ),
        (
            lambda d: d["model"].update(prior="coupled", sharing="level"),
            "model.sharing",
            "shares over its latent factors",
        ),
        (
            lambda d: d["model"].update(prior="loadings", sharing="tied"),
            "model.coupling.factors",
            "needs `coupling.factors`",
        ),
        (lambda d: d["model"].update(prior="anova", coupling={"init": "tree"}), "model.coupling", "is for the coupled"),
        (
            lambda d: d["model"].update(prior="coupled", coupling={"matrix": [[1, 2], [3]]}),
            "model.coupling.matrix",
            "equally long lists",
        ),
        (lambda d: d["objective"].update(type="em"), "objective.type", "needs `data.pseudo_targets`"),
        (lambda d: d["data"].update(pseudo_targets={"fraction": 0.3}), "data.pseudo_targets", "objective.type: em"),
        (lambda d: d["data"].update(pseudo_targets={}), "data.pseudo_targets.file", "exactly one of"),
        (lambda d: d["objective"]["newton"].update(preconditioner="ilu"), "objective.newton.preconditioner", "one of"),
        (lambda d: d["model"].update(sharing="per-node"), "model.sharing", "one of"),
        (
            lambda d: (
                d["evaluation"].update(decision="bayes")
                if "evaluation" in d
                else d.update(evaluation={"decision": "bayes"})
            ),
            "evaluation.decision",
            "one of",
        ),
    ],
)
def test_bad_structured_specs_name_the_key(tmp_path, mutate, key, message):
    from gpmodels.driver.build import check_files

    d = _spec(tmp_path)
    mutate(d)
    assert_spec_error(d, key, message, read=lambda s: check_files(spec_from_dict(s), None))


def test_a_hierarchy_that_does_not_fit_the_classes(tmp_path):
    d = _spec(tmp_path)
    (tmp_path / "h.tsv").write_text("root\tg\ng\tc1\ng\tc2\nroot\tc31\n")  # c32 missing
    with pytest.raises(SpecError, match="'c32' is not a node") as err:
        run_spec(spec_from_dict(d), quiet=True, force=True)
    assert err.value.path == "data.hierarchy"
