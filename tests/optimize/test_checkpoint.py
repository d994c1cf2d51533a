"""Checkpoints of CV learning: exact round trip, kill-and-resume (in process and a real SIGKILL),
corrupt and foreign files refused with CheckpointError, atomic writes."""

import io
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import attrs
import numpy as np
import pytest
from conftest import TESTS, toy_classification

from gpmodels.data.splits import kfold_partition
from gpmodels.errors import CheckpointError
from gpmodels.inference.cv.learn import Checkpointing, LearnOptions, learn_hyperparameters
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.cv.state import CVState
from gpmodels.inference.map.newton_cg import NewtonOptions
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.optimize.checkpoint import RunIdentity, read_checkpoint, write_checkpoint
from gpmodels.optimize.lbfgs import OuterOptions
from gpmodels.priors.independent import IndependentGP

OPTIONS = LearnOptions(
    cv=CVOptions(newton=NewtonOptions(max_iter=20, cg_max_iter=40, grad_tol=1e-8)),
    outer=OuterOptions(max_iter=6, ftol=0.0, gtol=0.0),
)


class Interrupt(Exception):
    pass


def _problem(n=45, C=3, seed=0):
    X, y = toy_classification(n, C, d=2, seed=seed)
    op = IndependentGP(RBF(0.5), "semi", 2.0, 1.0).operator(X, C)
    return op, np.eye(C)[y], kfold_partition(n, 3, seed=seed + 7, y=y)


def _learn(path, interrupt_at=None, resume=True, identity=None, problem=None, options=OPTIONS):
    op, Y, folds = problem or _problem()
    seen = []

    def on_iteration(rec):
        seen.append(rec.iteration)
        if interrupt_at is not None and rec.iteration == interrupt_at:
            raise Interrupt()

    ck = Checkpointing(path, resume=resume, identity=identity or {"spec": "toy"})
    return learn_hyperparameters(op, Softmax(), Y, folds, options, checkpoint=ck, on_iteration=on_iteration), seen


def _same(a, b):
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-11, atol=1e-12)
    assert a.psi == pytest.approx(b.psi, rel=1e-12)
    assert a.outer.iteration == b.outer.iteration and a.outer.evaluations == b.outer.evaluations
    assert [r.value for r in a.history] == pytest.approx([r.value for r in b.history], rel=1e-12)


def test_interrupted_run_resumes_to_the_uninterrupted_result(tmp_path):
    full, seen_full = _learn(tmp_path / "full.npz")
    assert full.outer.iteration == 6 and seen_full == list(range(7))
    with pytest.raises(Interrupt):
        _learn(tmp_path / "ck.npz", interrupt_at=2)
    resumed, seen = _learn(tmp_path / "ck.npz")
    assert resumed.resumed_from == 2  # nothing lost: the checkpoint of iteration 2 was written before the interrupt
    assert seen == [3, 4, 5, 6]
    _same(resumed, full)
    assert len(resumed.evaluations) < len(full.evaluations)  # the resumed process did only the rest
    again, seen = _learn(tmp_path / "ck.npz")  # a finished run resumes to its end at once
    assert again.resumed_from == 6 and seen == [] and len(again.evaluations) == 0
    _same(again, full)


def test_a_killed_process_resumes_to_the_uninterrupted_result(tmp_path):
    """A real SIGKILL right after the checkpoint of iteration 3: no cleanup, no finally blocks."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path[:0] = [{str(TESTS)!r}, {str(Path(__file__).resolve().parent)!r}]
        from test_checkpoint import _problem, OPTIONS
        from gpmodels.inference.cv.learn import Checkpointing, learn_hyperparameters
        from gpmodels.likelihoods.softmax import Softmax
        op, Y, folds = _problem()
        def kill(rec):
            if rec.iteration == 3:
                os.kill(os.getpid(), signal.SIGKILL)
        learn_hyperparameters(op, Softmax(), Y, folds, OPTIONS,
                              checkpoint=Checkpointing({str(tmp_path / "ck.npz")!r}, identity={{"spec": "toy"}}),
                              on_iteration=kill)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
        timeout=120,
    )
    assert proc.returncode == -9, proc.stderr
    resumed, seen = _learn(tmp_path / "ck.npz")
    assert resumed.resumed_from == 3 and seen == [4, 5, 6]
    full, _ = _learn(tmp_path / "full.npz")
    _same(resumed, full)


def test_round_trip_keeps_the_whole_state(tmp_path):
    res, _ = _learn(tmp_path / "ck.npz")
    op, _, _ = _problem()
    st = res.outer
    ident = RunIdentity({"a": 1}, op.params, np.arange(6.0))
    write_checkpoint(tmp_path / "rt.npz", st, ident)
    back, _ = read_checkpoint(tmp_path / "rt.npz", ident, restore_inner=CVState.from_arrays)
    for name in ("x", "gradient", "S", "Yd"):
        np.testing.assert_array_equal(getattr(back, name), getattr(st, name))
    assert back.value == st.value and back.iteration == st.iteration and back.message == st.message
    assert back.history == st.history
    assert st.inner.betas is not None  # the accumulation solutions travel with the α's
    for a, b in zip(back.inner.alphas + back.inner.betas, st.inner.alphas + st.inner.betas):
        np.testing.assert_array_equal(a, b)


@pytest.fixture
def checkpoint(tmp_path):
    with pytest.raises(Interrupt):
        _learn(tmp_path / "ck.npz", interrupt_at=1)
    return tmp_path / "ck.npz"


def _middle_of_largest_array(data: bytes) -> int:
    """The offset of the middle byte of the largest member's stored data in the zip ``data``."""
    info = max(zipfile.ZipFile(io.BytesIO(data)).infolist(), key=lambda i: i.compress_size)
    name_len, extra_len = np.frombuffer(data[info.header_offset + 26 : info.header_offset + 30], dtype="<u2")
    return info.header_offset + 30 + int(name_len) + int(extra_len) + info.compress_size // 2


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_a_corrupt_checkpoint_is_refused(checkpoint, damage):
    data = bytearray(checkpoint.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":  # one byte of stored numbers (a byte of a zip header field that nothing reads is no damage)
        data[_middle_of_largest_array(bytes(data))] ^= 0xFF
    elif damage == "garbage":
        data = bytearray(b"not a checkpoint at all" * 10)
    else:
        data = bytearray()
    checkpoint.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="corrupt"):
        _learn(checkpoint)


def test_a_checkpoint_with_edited_contents_is_refused(checkpoint):
    with np.load(checkpoint) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["x"] = arrays["x"] + 1.0  # consistent zip, wrong checksum
    np.savez(checkpoint, **arrays)
    with pytest.raises(CheckpointError, match="checksum"):
        _learn(checkpoint)
    del arrays["inner_alpha_0"]
    np.savez(checkpoint, **arrays)
    with pytest.raises(CheckpointError, match="corrupt"):
        _learn(checkpoint)


def test_a_foreign_checkpoint_is_refused(checkpoint, tmp_path):
    with pytest.raises(CheckpointError, match="another run.*caller"):
        _learn(checkpoint, identity={"spec": "another spec"})
    op, Y, folds = _problem(seed=1)  # other data: other targets, folds and kernel matrix
    with pytest.raises(CheckpointError, match="another run"):
        _learn(checkpoint, problem=(op, Y, folds))
    op0, Y0, folds0 = _problem()
    with pytest.raises(CheckpointError, match="starting hyperparameters"):
        _learn(checkpoint, problem=(op0.with_params(op0.params + 0.1), Y0, folds0))
    X, y = toy_classification(45, 3, d=2, seed=0)
    shifted = IndependentGP(RBF(0.5), "semi", 2.0, 1.0).operator(X * 1.01, 3)  # same θ, other inputs
    with pytest.raises(CheckpointError, match="kernel matrix"):
        _learn(checkpoint, problem=(shifted, Y0, folds0))
    with pytest.raises(CheckpointError, match="another run.*options"):
        _learn(checkpoint, options=attrs.evolve(OPTIONS, cv=attrs.evolve(OPTIONS.cv, k3=7)))
    res, _ = _learn(checkpoint, resume=False)  # starting afresh explicitly overwrites it
    assert res.resumed_from is None


def test_writes_are_atomic(checkpoint, monkeypatch):
    before = checkpoint.read_bytes()

    def broken_savez(fh, **arrays):
        fh.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", broken_savez)
    # a failed write does not stop the learning (issue 15): it warns, naming the path and the last good checkpoint
    with pytest.warns(RuntimeWarning, match="cannot write the checkpoint .*learning goes on"):
        _learn(checkpoint, resume=False)
    assert checkpoint.read_bytes() == before
    assert [p.name for p in checkpoint.parent.iterdir()] == [checkpoint.name]  # no temporary file left
