"""Checkpoints of hyperparameter learning: atomic, verified, refused when corrupt or foreign.

What is written (after the starting evaluation and after every successful outer iteration): the
outer optimiser's state (hyperparameters x, Ψ, ∇Ψ, the L-BFGS pairs, counters, the progress
records) and the inner state α[J_k] of every fold (Seeger 2008, Sec. 4: the inner state belongs
to the outer state).  A run restarted from it continues exactly where it stopped, so an
interruption loses at most the iteration in progress.

Format: one ``.npz`` file (numpy's zip of arrays, read with ``allow_pickle=False``) with
- ``header``: UTF-8 JSON (format tag, the run's identity, scalars, progress records);
- the arrays (``x``, ``value``, ``gradient``, ``S``, ``Yd``, ``inner_alpha_<k>``, ``inner_beta_<k>``
  (the accumulation solutions, when kept), ``probe``, ``theta0``);
- ``checksum``: SHA-256 over the header and every array (name, dtype, shape, bytes).

Writes are atomic: a temporary file in the same folder is written, flushed, fsync'ed and
renamed over the target (``os.replace``), so a crash mid-write leaves the previous checkpoint.

Refusals (:class:`CheckpointError`, never a silent fresh start or a silent use):
- corrupt: not a zip, a member or the checksum does not verify, fields missing;
- foreign: the format tag differs, or the identity differs (exact parts: a SHA-256 of the
  canonical JSON of data and fold digests, names of the hyperparameters, settings, the caller's
  identity such as the spec; numeric parts compared to a relative 1e-9: the starting
  hyperparameters and a *probe* K̃ v for a fixed seeded v, which ties the checkpoint to the
  kernel matrix itself).  The message names what differs.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

import attrs
import numpy as np

from gpmodels.errors import CheckpointError, InputError
from gpmodels.optimize.lbfgs import OuterRecord, OuterState

__all__ = ["CHECKPOINT_FORMAT", "RunIdentity", "write_checkpoint", "read_checkpoint", "digest_array",
           "probe_operator"]

CHECKPOINT_FORMAT = "gpmodels.cv-checkpoint/1"
_PROBE_SEED = 20080101
_NUMERIC_RTOL = 1e-9


def digest_array(a) -> str:
    """SHA-256 of an array's dtype, shape and bytes (exact identity of data, folds)."""
    a = np.ascontiguousarray(a)
    h = hashlib.sha256()
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()


def probe_operator(op) -> np.ndarray:
    """K̃ v for a fixed seeded v of shape (n, C): a numerical fingerprint of the kernel matrix."""
    v = np.random.default_rng(_PROBE_SEED).standard_normal((op.n_points, op.n_classes))
    return op.mvm(v)


@attrs.frozen(eq=False)
class RunIdentity:
    """What makes a checkpoint belong to a run.

    ``exact``: a JSON-able dict compared by equality (through its hash); ``theta0`` and ``probe``
    compared numerically.
    """

    exact: dict
    theta0: np.ndarray
    probe: np.ndarray

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(_canonical(self.exact).encode()).hexdigest()


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default)


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON-serialisable: {type(o).__name__}")


def _checksum(header_bytes: bytes, arrays: dict) -> str:
    h = hashlib.sha256()
    h.update(header_bytes)
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode())
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def write_checkpoint(path, state: OuterState, identity: RunIdentity, extra: dict | None = None) -> None:
    """Atomically write ``state`` (inner state: a CVState or None) for the run ``identity``."""
    from gpmodels.inference.cv.criterion import CVState

    path = Path(path)
    inner = state.inner
    if inner is not None and not isinstance(inner, CVState):
        raise CheckpointError(f"can only checkpoint a CV inner state (CVState); got {type(inner).__name__}")
    header = {
        "format": CHECKPOINT_FORMAT,
        "fingerprint": identity.fingerprint,
        "identity": identity.exact,
        "iteration": state.iteration, "evaluations": state.evaluations, "failed": state.failed,
        "elapsed": state.elapsed, "finished": state.finished, "converged": state.converged,
        "message": state.message, "history": [r.as_dict() for r in state.history],
        "n_inner": -1 if inner is None else len(inner.alphas),
        "inner_betas": inner is not None and inner.betas is not None,
        "extra": extra or {},
    }
    arrays = {"x": state.x, "value": np.array(state.value), "gradient": state.gradient, "S": state.S, "Yd": state.Yd,
              "theta0": np.asarray(identity.theta0, dtype=float), "probe": np.asarray(identity.probe, dtype=float)}
    if inner is not None:
        for k, a in enumerate(inner.alphas):
            arrays[f"inner_alpha_{k}"] = a
        for k, b in enumerate(inner.betas or ()):
            arrays[f"inner_beta_{k}"] = b
    header_bytes = _canonical(header).encode("utf-8")
    payload = dict(arrays)
    payload["header"] = np.frombuffer(header_bytes, dtype=np.uint8)
    payload["checksum"] = np.frombuffer(_checksum(header_bytes, arrays).encode("ascii"), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, **payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    try:  # make the rename itself durable
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def _corrupt(path, why) -> CheckpointError:
    return CheckpointError(f"checkpoint {path} is corrupt ({why}); it is refused. Delete it to start afresh.")


def read_checkpoint(path, identity: RunIdentity) -> tuple[OuterState, dict]:
    """Read and verify a checkpoint written for ``identity``; returns (state, extra)."""
    from gpmodels.inference.cv.criterion import CVState

    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {name: z[name] for name in z.files}
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint {path} does not exist") from None
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError, zipfile.LargeZipFile) as exc:
        raise _corrupt(path, f"cannot be read as a numpy archive: {exc}") from None
    for key in ("header", "checksum", "x", "value", "gradient", "S", "Yd", "theta0", "probe"):
        if key not in data:
            raise _corrupt(path, f"the field {key!r} is missing")
    try:
        header_bytes = data.pop("header").tobytes()
        checksum = data.pop("checksum").tobytes().decode("ascii")
    except (UnicodeDecodeError, AttributeError) as exc:
        raise _corrupt(path, str(exc)) from None
    if _checksum(header_bytes, data) != checksum:
        raise _corrupt(path, "the checksum does not match its contents")
    try:
        header = json.loads(header_bytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _corrupt(path, f"its header is not JSON: {exc}") from None
    if header.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"checkpoint {path} has format {header.get('format')!r}, not {CHECKPOINT_FORMAT!r}: "
                              "it was not written by this version of gpmodels' CV learning; it is refused")
    if header.get("fingerprint") != identity.fingerprint:
        theirs, ours = header.get("identity", {}), identity.exact
        keys = sorted(k for k in set(theirs) | set(ours) if _canonical(theirs.get(k)) != _canonical(ours.get(k)))
        raise CheckpointError(f"checkpoint {path} belongs to another run (it differs in: {', '.join(keys) or 'fingerprint'}); "
                              "it is refused. Delete it, point the run elsewhere, or start afresh explicitly (resume: never).")
    for name, ours in (("theta0", identity.theta0), ("probe", identity.probe)):
        theirs = data[name]
        ours = np.asarray(ours, dtype=float)
        if theirs.shape != ours.shape or not np.allclose(theirs, ours, rtol=_NUMERIC_RTOL,
                                                         atol=_NUMERIC_RTOL * max(1.0, float(np.abs(ours).max(initial=0)))):
            what = "starting hyperparameters" if name == "theta0" else "kernel matrix (probe K̃ v differs: other data or kernel)"
            raise CheckpointError(f"checkpoint {path} belongs to another run (its {what} differ); it is refused. "
                                  "Delete it or start afresh explicitly (resume: never).")
    try:
        n_inner = int(header["n_inner"])
        betas = tuple(data[f"inner_beta_{k}"] for k in range(n_inner)) if header["inner_betas"] else None
        inner = None if n_inner < 0 else CVState(tuple(data[f"inner_alpha_{k}"] for k in range(n_inner)), betas)
        history = tuple(OuterRecord(**{**r, "x": tuple(r["x"])}) for r in header["history"])
        state = OuterState(
            x=data["x"], value=float(data["value"]), gradient=data["gradient"], S=data["S"], Yd=data["Yd"], inner=inner,
            iteration=int(header["iteration"]), evaluations=int(header["evaluations"]), failed=int(header["failed"]),
            elapsed=float(header["elapsed"]), history=history, finished=bool(header["finished"]),
            converged=bool(header["converged"]), message=str(header["message"]))
    except (KeyError, TypeError, ValueError, InputError) as exc:
        raise _corrupt(path, f"a field is missing or malformed: {exc}") from None
    return state, header.get("extra", {})
