"""Issue 42, specs: every path key is resolved and checked by one function in ``validate`` and ``run``
alike, and every list key of the schema declares its length bounds and element rules, so ``validate``
refuses what ``run`` would fail on."""

import os

import attrs
import pytest
import yaml
from conftest import toy_data_section
from hypothesis import given
from hypothesis import strategies as st

from gpmodels.cli import main
from gpmodels.driver.loader import spec_from_dict
from gpmodels.driver.sections.spec import Spec
from gpmodels.driver.sections.study import StudySpec
from gpmodels.errors import SpecError
from gpmodels.validation import AnyOf, Optional, SequenceOf


def _sequences(check):
    out = []
    for v in getattr(check, "_validators", None) or (check,):
        if isinstance(v, Optional):
            out += _sequences(v.inner)
        elif isinstance(v, SequenceOf):
            out.append(v)
        elif isinstance(v, AnyOf):
            for c in v.choices:
                out += _sequences(c)
    return out


def list_keys(cls, path="", depth=0) -> list:
    """(dotted key, SequenceOf or the (min, max) of a list of sections) of every list key of the schema."""
    found = []
    for f in attrs.fields(cls):
        meta = f.metadata.get("spec")
        if not meta:
            continue
        key = f"{path}.{f.name}" if path else f.name
        if meta["node"] is not None:
            if meta["many"]:
                found.append((key, meta["lengths"]))
            if depth < 3:
                found += list_keys(meta["node"], key, depth + 1)
        found += [(key, s) for s in _sequences(meta["check"])]
    return found


LIST_KEYS = list_keys(Spec) + [(f"study:{k}", v) for k, v in list_keys(StudySpec) if not k.startswith("models.")]


def test_every_list_key_declares_both_length_bounds():
    """The family is closed: a list key without an upper bound (or a section list without bounds) fails."""
    assert {k for k, _ in LIST_KEYS} >= {"evaluation.error_reject", "model.weights", "model.kernels", "study:models"}
    for key, bounds in LIST_KEYS:
        low, high = bounds if isinstance(bounds, tuple) else (bounds.min_len, bounds.max_len)
        assert high is not None and 0 <= low <= high, key


def _minimal(study: bool) -> dict:
    model = {"name": "m", "model": {"kernel": {"type": "rbf", "w": 1.0}}}
    base = {"name": "s", "data": {"path": "train.npz", "test": "split"}}
    return {**base, "models": [model]} if study else {**base, **model}


def _set(d: dict, key: str, value) -> dict:
    target = d
    parts = key.split(".")
    for part in parts[:-1]:
        target = target.setdefault(part, {})
        if isinstance(target, list):
            target = target[0]
    target[parts[-1]] = value
    return d


@pytest.mark.parametrize(("key", "bounds"), LIST_KEYS, ids=[k for k, _ in LIST_KEYS])
@given(extra=st.integers(1, 3), below=st.booleans())
def test_generated_lists_outside_their_bounds_are_refused_by_validate_naming_the_key(key, bounds, extra, below):
    low, high = bounds if isinstance(bounds, tuple) else (bounds.min_len, bounds.max_len)
    if below and low == 0:
        return
    n = max(low - extra, 0) if below else high + extra
    study = key.startswith("study:")
    key = key.removeprefix("study:")
    element = {"kind": "rbf"} if isinstance(bounds, tuple) else 0.5
    element = {"type": "rbf", "w": 1.0} if isinstance(bounds, tuple) and "kernel" in key else element
    element = _minimal(False) | {"name": "m"} if key == "models" else element
    d = _set(_minimal(study), key, [element] * n)
    with pytest.raises(SpecError) as info:
        (StudySpec.from_dict if study else spec_from_dict)(d)
    assert info.value.path.startswith(key.split(".")[0]) and ("list" in str(info.value)), str(info.value)


def _write_files(tmp_path):
    data = toy_data_section(tmp_path, n=60, n_train=40, d=2, seed=0)
    (tmp_path / "afolder").mkdir(exist_ok=True)
    (tmp_path / "afile").write_text("x")
    if not (tmp_path / "fifo").exists():
        os.mkfifo(tmp_path / "fifo")
    return data


#: path key -> (what it must be, how to set it in a spec dict)
PATH_KEYS = {
    "data.path": ("file", lambda d, v: d["data"].update(path=v)),
    "data.test_path": ("file", lambda d, v: d["data"].update(test_path=v)),
    "data.hierarchy": ("file", lambda d, v: d["data"].update(hierarchy=v)),
    "model.kernel.gram": ("file", lambda d, v: d["model"].update(kernel={"type": "precomputed", "gram": v})),
    "output.dir": ("folder", lambda d, v: d.update(output={"dir": v})),
}
BAD = {
    "file": ["", "\x00x", "afolder", "fifo"],
    "folder": ["", "\x00x", "afile", "fifo", "afile/sub"],
}


@pytest.mark.parametrize(
    ("key", "bad"), [(k, b) for k, (kind, _) in PATH_KEYS.items() for b in BAD[kind]], ids=lambda v: repr(v)
)
def test_each_bad_path_is_refused_by_validate_and_by_run_with_one_message(tmp_path, capsys, monkeypatch, key, bad):
    monkeypatch.chdir(tmp_path)
    data = _write_files(tmp_path)
    d = {"name": "p", "data": dict(data), "model": {"kernel": {"type": "rbf", "w": 1.0}}}
    PATH_KEYS[key][1](d, bad)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(d))
    assert main(["validate", "spec.yaml"]) == 2
    validate_err = capsys.readouterr().err
    assert main(["run", "spec.yaml", "--quiet"]) == 2
    run_err = capsys.readouterr().err
    assert key in validate_err and validate_err == run_err
    assert not (tmp_path / "~").exists() and not (tmp_path / "p").exists()


def test_tilde_is_expanded_in_every_path_key_and_never_makes_a_folder_named_tilde(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    data = _write_files(tmp_path)
    os.replace(tmp_path / "train.npz", tmp_path / "home" / "train.npz")
    d = {
        "name": "p",
        "data": {**data, "path": "~/train.npz"},
        "model": {"kernel": {"type": "rbf", "w": 1.0}},
        "output": {"dir": "~/runs/p"},
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(d))
    assert main(["validate", "spec.yaml"]) == 0
    assert main(["run", "spec.yaml", "--quiet"]) == 0
    assert (tmp_path / "home" / "runs" / "p" / "metrics.json").is_file() and not (tmp_path / "~").exists()


@given(st.lists(st.floats(0.0, 0.99), min_size=1, max_size=100, unique=True))
def test_generated_error_reject_lists_that_validate_give_a_curve(fractions):
    import numpy as np

    from gpmodels.scoring import metrics as M

    spec = spec_from_dict(_set(_minimal(False), "evaluation.error_reject", fractions))
    P = np.array([[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]])
    curve = M.error_reject_curve(P, np.array([0, 0, 1]), spec.evaluation.error_reject)
    assert len(curve) == len(fractions)
