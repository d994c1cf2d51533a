"""Issue 42, runs: every file gpmodels writes into a folder goes through the one safe writer
(:func:`gpmodels.safe_write.write_new`), so a link planted at a name, before or during a run, is replaced and
never written through; one writer per folder at a time (the run lock covers ``GPClassifier.save`` too)."""

import ast
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpmodels
from gpmodels.driver.output import claim_output, folder_lock
from gpmodels.errors import OutputError
from gpmodels.estimators import GPClassifier, load_classifier

PACKAGE = Path(gpmodels.__file__).resolve().parent

#: the modules allowed to write a file by its path (with why)
ALLOWED = {
    "safe_write.py": "the one safe writer itself",
    "cli.py": "`gpmodels predict --out FILE`: the user's own file, checked not to be an input or a model file",
    "progress.py": "appends to run.log, which the run created new by the safe writer when it claimed its folder",
}


def _direct_writes(path: Path) -> list[str]:
    """Calls in the module that open a file for writing or write one by its path, outside the safe writer:
    ``open(..., 'w'/'a'/'x')``, ``Path.write_text``, ``np.savez(path)``, ``fig.savefig(path)`` (a call
    whose first argument is the file object ``fh`` of the safe writer is fine)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        first = node.args[0] if node.args else None
        if name == "open" and not isinstance(node.func, ast.Attribute):
            mode = (
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
            )
            if isinstance(mode, ast.Constant) and any(c in str(mode.value) for c in "wax+"):
                found.append(f"{path.name}:{node.lineno} open(..., {mode.value!r})")
        elif name in ("write_text", "write_bytes"):
            found.append(f"{path.name}:{node.lineno} .{name}()")
        elif name in ("savefig", "savez", "savez_compressed") and not (
            isinstance(first, ast.Name) and first.id == "fh"
        ):
            found.append(f"{path.name}:{node.lineno} {name}(path)")
    return found


def test_no_module_writes_a_file_except_through_the_safe_writer():
    offenders = [w for p in sorted(PACKAGE.rglob("*.py")) if p.name not in ALLOWED for w in _direct_writes(p)]
    assert offenders == [], "write these through gpmodels.safe_write.write_new: " + "; ".join(offenders)


def test_the_scan_finds_each_kind_of_direct_write(tmp_path):
    """The scan above can fail: each kind of direct write is found in a module written for the purpose."""
    p = tmp_path / "m.py"
    p.write_text(
        "open(a, 'w')\nopen(a, mode='a')\nPath(a).write_text('x')\nnp.savez(path, x=1)\nfig.savefig(path)\n"
        "np.savez(fh, x=1)\nopen(a)\n"
    )
    assert len(_direct_writes(p)) == 5


def _writers(folder: Path) -> dict:
    """name written -> a call of the gpmodels code that writes it into ``folder``."""
    from gpmodels import reports
    from gpmodels.driver.loader import dump_yaml
    from gpmodels.optimize.checkpoint import RunIdentity, write_checkpoint
    from gpmodels.optimize.lbfgs import OuterState
    from gpmodels.persistence import save_arrays
    from gpmodels.safe_write import write_new

    state = OuterState(np.ones(2), 1.0, np.ones(2), np.zeros((0, 2)), np.zeros((0, 2)), None, 0, 1, 0, 0.0, ())
    return {
        "metrics.json": lambda: write_new(folder, "metrics.json", "{}"),
        "model.npz": lambda: save_arrays(folder, "map", {"alpha": np.ones((1, 1))}),
        "checkpoint.npz": lambda: write_checkpoint(
            folder / "checkpoint.npz", state, RunIdentity({}, np.ones(2), np.ones(1))
        ),
        "spec.resolved.yaml": lambda: dump_yaml({"a": 1}, folder / "spec.resolved.yaml"),
        "error_reject.png": lambda: (
            reports.plot_error_reject({"m": [(0.0, 0.1), (0.5, 0.0)]}, folder / "error_reject.png")
            if reports.plots_available()
            else write_new(folder, "error_reject.png", b"")
        ),
    }


@settings(max_examples=20)
@given(
    planted=st.lists(
        st.tuples(
            st.sampled_from(["metrics.json", "model.npz", "checkpoint.npz", "spec.resolved.yaml", "error_reject.png"]),
            st.sampled_from(["hardlink", "symlink", "dangling"]),
        ),
        min_size=1,
        max_size=5,
        unique_by=lambda t: t[0],
    )
)
def test_generated_links_planted_after_the_folder_was_claimed_are_never_written_through(tmp_path_factory, planted):
    root = tmp_path_factory.mktemp("planted")
    outside, folder = root / "outside.txt", root / "run"
    outside.write_text("keep me")
    claimed = claim_output(folder, {"name": "a", "spec_sha256": "0" * 64})
    try:
        writers = _writers(folder)
        for name, kind in planted:  # planted while the run holds the folder
            if kind == "hardlink":
                os.link(outside, folder / name)
            else:
                os.symlink(outside if kind == "symlink" else root / "nothing", folder / name)
        for name, _ in planted:
            writers[name]()
            assert not (folder / name).is_symlink() and (folder / name).stat().st_nlink == 1
    finally:
        claimed.release()
    assert outside.read_text() == "keep me" and not (root / "nothing").exists()


def _fitted():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 2))
    return GPClassifier(objective="map").fit(X, (X[:, 0] > 0).astype(int)), X


@pytest.mark.parametrize("kind", ["hardlink", "symlink"])
@pytest.mark.parametrize("name", ["model.npz", "spec.resolved.yaml"])
def test_an_estimator_save_replaces_links_planted_in_its_folder(tmp_path, kind, name):
    est, X = _fitted()
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    folder = tmp_path / "m"
    folder.mkdir()
    (os.link if kind == "hardlink" else os.symlink)(outside, folder / name)
    back = load_classifier(est.save(folder))
    assert outside.read_text() == "keep me"
    np.testing.assert_array_equal(back.predict(X), est.predict(X))


def test_an_estimator_save_is_refused_while_a_run_holds_the_folder(tmp_path):
    est, _ = _fitted()
    with folder_lock(tmp_path / "m"):
        with pytest.raises(OutputError, match="in use by another gpmodels run"):
            est.save(tmp_path / "m")
    claimed = claim_output(tmp_path / "r", {"name": "a", "spec_sha256": "0" * 64})
    try:
        with pytest.raises(OutputError, match="in use by another gpmodels run"):
            est.save(tmp_path / "r")
    finally:
        claimed.release()
    assert est.save(tmp_path / "r").is_dir()  # the run is over: the folder is free
    assert not (tmp_path / "r" / ".gpmodels.lock").exists()
