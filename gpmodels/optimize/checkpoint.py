"""Checkpoints of hyperparameter learning: atomic, verified, refused when corrupt or foreign.

What is written (after the starting evaluation and after every successful outer iteration): the
outer optimiser's state (hyperparameters x, the criterion f, ∇f, the L-BFGS pairs, counters, the
progress records) and the *inner state* of the objective (Seeger 2008, Sec. 4: the inner state
belongs to the outer state; for the CV criterion α[J_k] of every fold, for the Laplace MLM the
mode α̂, for VB the variational state).  A run restarted from it continues exactly where it
stopped, so an interruption loses at most the iteration in progress.

The inner state is opaque here: ``None``, a dict of named arrays, or an object with
``to_arrays() -> dict`` (names: letters, digits, ``_``); the reader gives the arrays back as a dict,
or to ``restore_inner(arrays)`` (e.g. ``CVState.from_arrays``).  Nothing here knows an objective.

Format: one ``.npz`` file (numpy's zip of arrays, read with ``allow_pickle=False``) with
- ``header``: UTF-8 JSON (format tag, the run's identity, scalars, progress records, the names of
  the inner arrays);
- the arrays (``x``, ``value``, ``gradient``, ``S``, ``Yd``, ``inner_<name>`` per inner array,
  ``probe``, ``theta0``);
- ``checksum``: SHA-256 over the header and every array (name, dtype, shape, bytes).

Writes are atomic: a temporary file in the same folder is written, flushed, fsync'ed and
renamed over the target (``os.replace``), so a crash mid-write leaves the previous checkpoint.

Refusals (:class:`CheckpointError`, never a silent fresh start or a silent use):
- corrupt: not a zip, a member or the checksum does not verify, fields missing;
- foreign: the format tag differs, or the identity differs (exact parts: a SHA-256 of the
  canonical JSON of data and fold digests, names of the hyperparameters, settings, the caller's
  identity such as the spec; numeric parts compared to a relative 1e-9: the starting
  hyperparameters and a *probe* K̃ v for a fixed seeded v, which ties the checkpoint to the
  kernel matrix itself).  The message names what differs.  Files of the earlier format
  ``gpmodels.cv-checkpoint/1`` (inner state fixed to the CV folds) are refused by their tag.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import attrs
import numpy as np

from gpmodels.array_schema import Entry, check_arrays
from gpmodels.data.datasets import check_npz
from gpmodels.errors import CheckpointError, DataError, InputError
from gpmodels.optimize.lbfgs import OuterRecord, OuterState
from gpmodels.safe_write import write_new
from gpmodels.validation import boolean, instance_of, to_path

__all__ = [
    "CHECKPOINT_FORMAT",
    "Checkpointing",
    "RunIdentity",
    "digest_array",
    "inner_arrays",
    "probe_operator",
    "read_checkpoint",
    "write_checkpoint",
    "caller_identity",
]

CHECKPOINT_FORMAT = "gpmodels.outer-checkpoint/2"
_PROBE_SEED = 20080101
_NUMERIC_RTOL = 1e-9


def digest_array(a) -> str:
    """SHA-256 of an array's dtype, shape and bytes (exact identity of data, folds)."""
    a = np.ascontiguousarray(a)
    h = hashlib.sha256()
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()


#: the most points the identity probe multiplies over
PROBE_POINTS = 512


def probe_operator(op) -> np.ndarray:
    """K̃[J, J] v for a fixed seeded v of shape (|J|, C) on a fixed seeded set J of at most
    ``PROBE_POINTS`` points: a numerical fingerprint of the kernel matrix.  It multiplies on
    ``op.restrict(J)``, a new operator, so the probe leaves ``op`` as it was (a product on ``op``
    itself would build and keep a stored matrix that learning reads from its squared distances
    otherwise, and change the arithmetic of later results) and costs O(|J|^2), not O(n^2)."""
    rng = np.random.default_rng(_PROBE_SEED)
    n = op.n_points
    J = np.arange(n) if n <= PROBE_POINTS else np.sort(rng.choice(n, PROBE_POINTS, replace=False))
    sub = op.restrict(J)
    v = rng.standard_normal((sub.n_points, sub.n_classes))
    return sub.mvm(v)


@attrs.frozen
class Checkpointing:
    """Where to checkpoint and whether to resume.

    ``resume=True``: continue from ``path`` when it exists (a corrupt or foreign file raises
    :class:`CheckpointError`); ``False``: start afresh and overwrite it.  ``identity``: what else
    identifies the run (e.g. the spec), compared exactly on resume.
    """

    path: Path = attrs.field(converter=to_path, validator=instance_of(Path, what="a path (str or os.PathLike)"))
    resume: bool = attrs.field(default=True, validator=boolean())
    identity: dict = attrs.field(factory=dict, validator=instance_of(dict))


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


def inner_arrays(inner) -> dict | None:
    """The named arrays of an inner state: None, a dict of arrays, or ``inner.to_arrays()``."""
    if inner is None:
        return None
    if isinstance(inner, dict):
        arrays = inner
    elif callable(getattr(inner, "to_arrays", None)):
        arrays = inner.to_arrays()
    else:
        raise CheckpointError(
            f"cannot checkpoint an inner state of type {type(inner).__name__}: it must be None, "
            "a dict of named arrays or have to_arrays()"
        )
    bad = [k for k in arrays if not (isinstance(k, str) and k.replace("_", "a").isalnum() and k.isascii())]
    if bad:
        raise CheckpointError(f"inner-state array names must be ASCII letters, digits and '_'; got {bad[0]!r}")
    return {k: np.asarray(v) for k, v in arrays.items()}


def write_checkpoint(path, state: OuterState, identity: RunIdentity, extra: dict | None = None) -> None:
    """Atomically write ``state`` (its inner state: see :func:`inner_arrays`) for the run ``identity``."""
    path = Path(path)
    inner = inner_arrays(state.inner)
    header = {
        "format": CHECKPOINT_FORMAT,
        "fingerprint": identity.fingerprint,
        "identity": identity.exact,
        "iteration": state.iteration,
        "evaluations": state.evaluations,
        "failed": state.failed,
        "elapsed": state.elapsed,
        "finished": state.finished,
        "converged": state.converged,
        "message": state.message,
        "history": [r.as_dict() for r in state.history],
        "inner": None if inner is None else sorted(inner),
        "extra": extra or {},
    }
    arrays = {
        "x": state.x,
        "value": np.array(state.value),
        "gradient": state.gradient,
        "S": state.S,
        "Yd": state.Yd,
        "theta0": np.asarray(identity.theta0, dtype=float),
        "probe": np.asarray(identity.probe, dtype=float),
    }
    for name, a in (inner or {}).items():
        arrays[f"inner_{name}"] = a
    header_bytes = _canonical(header).encode("utf-8")
    payload = dict(arrays)
    payload["header"] = np.frombuffer(header_bytes, dtype=np.uint8)
    payload["checksum"] = np.frombuffer(_checksum(header_bytes, arrays).encode("ascii"), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_new(path.parent, path.name, lambda fh: np.savez(fh, **payload), sync=True)


def _corrupt(path, why) -> CheckpointError:
    return CheckpointError(f"checkpoint {path} is corrupt ({why}); it is refused. Delete it to start afresh.")


def caller_identity(path) -> dict | None:
    """The caller's part of the identity recorded in the checkpoint at ``path`` (what a caller put in
    :attr:`Checkpointing.identity`), or None when there is no readable checkpoint there; nothing is
    verified beyond the sizes (:func:`read_checkpoint` refuses a corrupt or foreign file later)."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        check_npz(path)
        with np.load(path, allow_pickle=False) as z:
            header = json.loads(z["header"].tobytes().decode("utf-8"))
        caller = header["identity"]["caller"]
    except (DataError, OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
        return None
    return caller if isinstance(caller, dict) else None


def read_checkpoint(path, identity: RunIdentity, restore_inner=None) -> tuple[OuterState, dict]:
    """Read and verify a checkpoint written for ``identity``; returns (state, extra).

    The state's inner state is None, ``restore_inner(arrays)`` when given, else the dict of arrays.
    """
    path = Path(path)
    data = _read_arrays(path)
    header = _verified_header(path, data)
    _check_identity(path, header, data, identity)
    try:
        names = header["inner"]
        inner = None if names is None else {str(k): data[f"inner_{k}"] for k in names}
        if inner is not None and restore_inner is not None:
            inner = restore_inner(inner)
        history = tuple(OuterRecord(**{**r, "x": tuple(r["x"])}) for r in header["history"])
        state = OuterState(
            x=data["x"],
            value=float(data["value"]),
            gradient=data["gradient"],
            S=data["S"],
            Yd=data["Yd"],
            inner=inner,
            iteration=int(header["iteration"]),
            evaluations=int(header["evaluations"]),
            failed=int(header["failed"]),
            elapsed=float(header["elapsed"]),
            history=history,
            finished=bool(header["finished"]),
            converged=bool(header["converged"]),
            message=str(header["message"]),
        )
    except (KeyError, TypeError, ValueError, InputError) as exc:
        raise _corrupt(path, f"a field is missing or malformed: {exc}") from None
    return state, header.get("extra", {})


def _read_arrays(path: Path) -> dict:
    """The checkpoint's arrays, each declared size bounded by the bytes stored before numpy allocates,
    with every field the format requires present."""
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:  # every declared array size bounded by the bytes stored, before numpy allocates
        check_npz(path)
    except DataError as exc:
        raise _corrupt(path, str(exc).removeprefix(str(path)).lstrip(": ")) from None
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {name: z[name] for name in z.files}
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint {path} does not exist") from None
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError, zipfile.LargeZipFile) as exc:
        # (numpy's and zipfile's messages may quote the file: named by type only)
        raise _corrupt(path, f"cannot be read as a numpy archive: {type(exc).__name__}") from None
    for key in CHECKPOINT_SCHEMA:
        if key not in data and key != "inner_":
            raise _corrupt(path, f"the field {key!r} is missing")
    try:
        check_arrays(
            data, CHECKPOINT_SCHEMA, (), what=f"checkpoint {path}", error=CheckpointError, open_prefixes=("inner_",)
        )
    except CheckpointError as exc:
        raise _corrupt(path, str(exc).removeprefix(f"checkpoint {path}").lstrip(": ")) from None
    return data


#: every array a checkpoint holds (p hyperparameters, m L-BFGS pairs; theta0 and the probe are compared with the run's);
#: ``inner_<name>``: the objective's inner state, any shape (its own ``restore_inner`` checks it)
CHECKPOINT_SCHEMA = {
    e.name: e
    for e in (
        Entry("header", "u", ("*",)),
        Entry("checksum", "u", (64,)),
        Entry("x", "f", ("p",)),
        Entry("value", "f", ()),
        Entry("gradient", "f", ("p",)),
        Entry("S", "f", ("m", "p")),
        Entry("Yd", "f", ("m", "p")),
        Entry("theta0", "f", ("*",)),
        Entry("probe", "f", None),
        Entry("inner_", "fiub", None),
    )
}


def _verified_header(path: Path, data: dict) -> dict:
    """The JSON header, taken out of ``data`` with the checksum, after the checksum over the header and
    the remaining arrays matched and the format is this version's."""
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
        raise CheckpointError(
            f"checkpoint {path} has format {header.get('format')!r}, not {CHECKPOINT_FORMAT!r}: "
            "it was not written by this version of gpmodels' hyperparameter learning; it is refused. "
            "Delete it to start afresh"
        )
    return header


def _check_identity(path: Path, header: dict, data: dict, identity: RunIdentity) -> None:
    """Refuse a checkpoint of another run: another identity fingerprint (naming the fields that
    differ), or other starting hyperparameters or kernel-matrix probe within the numeric tolerance."""
    if header.get("fingerprint") != identity.fingerprint:
        theirs, ours = header.get("identity", {}), identity.exact
        keys = sorted(k for k in set(theirs) | set(ours) if _canonical(theirs.get(k)) != _canonical(ours.get(k)))
        raise CheckpointError(
            f"checkpoint {path} belongs to another run (it differs in: "
            f"{', '.join(keys) or 'fingerprint'}); it is refused. Delete it, point the run "
            "elsewhere, or start afresh explicitly (resume: never)."
        )
    for name, ours in (("theta0", identity.theta0), ("probe", identity.probe)):
        theirs = data[name]
        ours = np.asarray(ours, dtype=float)
        atol = _NUMERIC_RTOL * max(1.0, float(np.abs(ours).max(initial=0)))
        if theirs.shape != ours.shape or not np.allclose(theirs, ours, rtol=_NUMERIC_RTOL, atol=atol):
            what = (
                "starting hyperparameters"
                if name == "theta0"
                else "kernel matrix (probe K̃ v differs: other data or kernel)"
            )
            raise CheckpointError(
                f"checkpoint {path} belongs to another run (its {what} differ); it is refused. "
                "Delete it or start afresh explicitly (resume: never)."
            )
