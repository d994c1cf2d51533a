"""Report folders: checked before the work, owned by one run, locked while it writes.

A run (or study) claims its folder with :func:`claim_output` before it loads data or fits:

1. the path must be a folder that can be created and written: an existing file, an invalid path
   or an unwritable folder is an :class:`OutputError` (exit code 2) before any work;
2. a lock file ``.gpmodels.lock`` (the writer's host and process id) is created exclusively; a
   second run on the same folder is refused while the first lives; a lock whose process is gone
   (a crash, kill -9) is stale and taken over;
3. the run identity ``run.json`` (name, objective, SHA-256 of the spec without its ``output``
   section) is compared with the one already there: a folder holding *another* run's report is
   refused unless ``force`` (a failed run that left no report is not protected); with the same
   spec or ``force`` the earlier run's artefacts (model, metrics, plots; see ``RUN_ARTEFACTS``) are
   removed before anything is written, so nothing of the earlier run is left to be taken for this
   run's (a run that saves no model leaves no model.npz).  CV checkpoints are kept (they resume the
   same spec; another spec's is refused by its own identity) and removed with ``force`` (a clean start).  Files the
   package does not write are never touched.

``release`` removes the lock; ``finish`` records the outcome in ``run.json``.
"""

from __future__ import annotations

import datetime
import fnmatch
import hashlib
import json
import os
import socket
from pathlib import Path

import attrs

from gpmodels.errors import OutputError

__all__ = ["CHECKPOINTS", "IDENTITY_FILE", "LOCK_FILE", "RUN_ARTEFACTS", "STUDY_ARTEFACTS", "OutputFolder",
           "claim_output", "read_identity", "spec_digest"]

IDENTITY_FILE = "run.json"
LOCK_FILE = ".gpmodels.lock"
#: what a run writes into its folder (file name patterns), removed when the folder is reused
RUN_ARTEFACTS = ("metrics.json", "diagnostics.json", "spec.resolved.yaml", "model.npz", "model.npz.tmp.npz",
                 "error_reject.csv", "error_reject.png", "confusion_levels.json", "levels.png", "trace_*.png",
                 "hyperparameters.png", "reliability.png", "report.md")
#: what a study writes into its folder (its models have their own sub-folders)
STUDY_ARTEFACTS = ("study.md", "study.csv", "study.json", "report.md", "error_reject.png")
#: learning checkpoints: kept for a rerun (it resumes the same spec), removed with ``force``
CHECKPOINTS = ("checkpoint.npz", "checkpoint-class*.npz", "checkpoint*.npz.tmp*")


#: keys that do not change a run's results: not part of its identity (``cv`` keys inside any ``cv`` section)
_NOT_IDENTITY = ("output", "description", "engine")  # engine: where it runs, not what it computes
_NOT_IDENTITY_CV = ("checkpoint", "resume")


def _identity_part(value, key=None):
    if isinstance(value, dict):
        drop = _NOT_IDENTITY_CV if key == "cv" else ()
        return {k: _identity_part(v, k) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_identity_part(v) for v in value]
    return value


def spec_digest(spec) -> str:
    """SHA-256 of the spec's plain dict without what does not change the results: ``output`` (the
    folder is not the run), ``description`` and the checkpoint settings of ``cv`` sections."""
    d = _identity_part({k: v for k, v in spec.to_dict().items() if k not in _NOT_IDENTITY})
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def read_identity(folder) -> dict | None:
    """The ``run.json`` of ``folder``, or None when there is none (or it is unreadable)."""
    path = Path(folder) / IDENTITY_FILE
    try:
        if path.stat().st_size > 1_000_000:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _matches(name: str, patterns) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    except (OSError, OverflowError, ValueError):
        return False
    return True


@attrs.define
class OutputFolder:
    """A claimed report folder (see the module docstring)."""

    path: Path
    identity: dict
    released: bool = False

    def finish(self, status: str) -> None:
        """Record ``status`` (``finished`` / ``failed`` / ``interrupted``: Ctrl-C) in ``run.json``; a write
        error is ignored (the report itself was written or the run failed anyway)."""
        try:
            (self.path / IDENTITY_FILE).write_text(json.dumps({**self.identity, "status": status}, indent=1) + "\n")
        except OSError:
            pass

    def release(self) -> None:
        if not self.released:
            self.released = True
            try:
                (self.path / LOCK_FILE).unlink()
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        interrupted = exc_type is not None and issubclass(exc_type, KeyboardInterrupt)
        self.finish("finished" if exc_type is None else "interrupted" if interrupted else "failed")
        self.release()
        return False


def _check_path(folder: Path, key: str) -> None:
    text = str(folder)
    if not text or "\x00" in text:
        raise OutputError(f"{key} {text!r} is not a valid folder path", key)
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{key} {folder} is an existing file, not a folder; choose a folder for the report", key)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise OutputError(f"{key} {folder} cannot be created ({why}); choose a folder you can write", key) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{key} {folder} is not writable; choose a folder you can write", key)


def _lock(folder: Path, key: str) -> None:
    lock = folder / LOCK_FILE
    me = {"pid": os.getpid(), "host": socket.gethostname()}
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                held = json.loads(lock.read_text(encoding="utf-8")[:1000])
                pid, host = int(held["pid"]), str(held["host"])
            except (OSError, ValueError, KeyError, TypeError):
                pid, host = -1, me["host"]  # unreadable: a crash while writing it; stale
            if host == me["host"] and pid != me["pid"] and _pid_alive(pid):
                raise OutputError(
                    f"{key} {folder} is in use by another gpmodels run (process {pid}); wait for it to "
                    f"finish or choose another folder (a lock left by a crash on another host: remove "
                    f"{lock})",
                    key,
                ) from None
            if host != me["host"]:
                raise OutputError(
                    f"{key} {folder} is locked by a gpmodels run on host {host!r} (process {pid}); "
                    f"remove {lock} if that run is over",
                    key,
                ) from None
            try:  # stale: its process is gone
                lock.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise OutputError(
                    f"{key} {folder}: cannot remove the stale lock {lock} ({exc.strerror})", key
                ) from None
            continue
        except OSError as exc:
            raise OutputError(
                f"{key} {folder} is not writable ({exc.strerror or type(exc).__name__}); choose a folder you can write",
                key,
            ) from None
        with os.fdopen(fd, "w") as fh:
            json.dump(me, fh)
        return
    raise OutputError(f"{key} {folder}: another run took the lock at the same time; try again", key)


def claim_output(
    folder, identity: dict, *, force: bool = False, artefacts=RUN_ARTEFACTS, key: str = "--out"
) -> OutputFolder:
    """Check, lock and take over ``folder`` for the run ``identity`` (a dict with at least ``name``
    and ``spec_sha256``); see the module docstring.  Raises :class:`OutputError` before any work."""
    folder = Path(folder)
    _check_path(folder, key)
    _lock(folder, key)
    claimed = OutputFolder(
        folder,
        {**identity, "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
         "status": "running"},
    )
    try:
        old = read_identity(folder)
        names = [p.name for p in folder.iterdir() if p.is_file()]
        same = old is not None and old.get("spec_sha256") == identity["spec_sha256"]
        report = sorted(n for n in names if _matches(n, artefacts))
        if not same and not force and report:  # a failed run left no report: nothing to protect
            if old is not None:
                raise OutputError(
                    f"{key} {folder} holds the report of another run ({old.get('name')!r}, spec "
                    f"{str(old.get('spec_sha256'))[:12]}; this spec is "
                    f"{identity['spec_sha256'][:12]}): choose another folder or pass --force "
                    "(force=True) to replace it",
                    key,
                )
            raise OutputError(
                f"{key} {folder} holds files of an earlier run without a run identity "
                f"({', '.join(report[:5])}); choose another folder or pass --force (force=True) "
                "to replace them",
                key,
            )
        # a checkpoint without a run identity carries its own (checked when it is read); --force drops it
        stale = artefacts + (CHECKPOINTS if force else ())
        for n in names:
            if _matches(n, stale):
                (folder / n).unlink()
        (folder / IDENTITY_FILE).write_text(json.dumps(claimed.identity, indent=1) + "\n")
    except OSError as exc:
        claimed.release()
        raise OutputError(
            f"{key} {folder}: cannot prepare the folder ({exc.strerror or type(exc).__name__})", key
        ) from None
    except BaseException:
        claimed.release()
        raise
    return claimed
