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

import contextlib
import datetime
import fcntl
import fnmatch
import hashlib
import json
import os
import socket
import stat
from pathlib import Path

import attrs

from gpmodels.errors import OutputError, shown
from gpmodels.safe_write import write_new

__all__ = [
    "CHECKPOINTS",
    "IDENTITY_FILE",
    "LOCK_FILE",
    "RUN_ARTEFACTS",
    "STUDY_ARTEFACTS",
    "OutputFolder",
    "claim_output",
    "expanded_path",
    "output_folder",
    "check_output_folder",
    "folder_lock",
    "read_identity",
    "spec_digest",
]

IDENTITY_FILE = "run.json"
LOCK_FILE = ".gpmodels.lock"
#: what a run writes into its folder (file name patterns), removed when the folder is reused
RUN_ARTEFACTS = (
    "metrics.json",
    "diagnostics.json",
    "spec.resolved.yaml",
    "model.npz",
    "model.npz.tmp.npz",
    "error_reject.csv",
    "error_reject.png",
    "confusion_levels.json",
    "levels.png",
    "trace_*.png",
    "hyperparameters.png",
    "reliability.png",
    "report.md",
)
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


#: names a run or study writes besides its artefacts
_OWN_FILES = (IDENTITY_FILE, LOCK_FILE, "run.log", ".*.tmp")


def written_by_a_run(name: str) -> bool:
    """Whether a run or study writes a file of this name into its folder."""
    return _matches(name, RUN_ARTEFACTS + STUDY_ARTEFACTS + CHECKPOINTS + _OWN_FILES)


@attrs.define
class OutputFolder:
    """A claimed report folder (see the module docstring); holds the lock while the run writes."""

    path: Path
    identity: dict
    released: bool = False
    lock_fd: int | None = None

    def finish(self, status: str) -> None:
        """Record ``status`` (``finished`` / ``failed`` / ``interrupted``: Ctrl-C, SIGTERM, SIGHUP) in
        ``run.json``; a write error is ignored (the report itself was written or the run failed anyway)."""
        try:
            write_new(self.path, IDENTITY_FILE, json.dumps({**self.identity, "status": status}, indent=1) + "\n")
        except OSError:
            pass

    def release(self) -> None:
        """Remove the lock (still holding it, so no other run can take the file meanwhile), then let it go."""
        if not self.released:
            self.released = True
            try:
                (self.path / LOCK_FILE).unlink()
            except OSError:
                pass
            if self.lock_fd is not None:
                os.close(self.lock_fd)
                self.lock_fd = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        interrupted = exc_type is not None and issubclass(exc_type, KeyboardInterrupt)
        self.finish("finished" if exc_type is None else "interrupted" if interrupted else "failed")
        self.release()
        return False


def expanded_path(value, key: str) -> Path:
    """A spec's or command line's path text as a path, the same for every path key: an empty path (which
    would name the working folder) and a NUL byte are refused, ``~`` and ``~/...`` expand to the home
    folder (so no folder literally named ``~`` is ever made), a ``~user`` without a home folder is refused.
    ``error``: the error class (called with the message and ``key``)."""
    text = str(value)
    if not text.strip() or "\x00" in text:
        what = "an empty path" if not text.strip() else "not a valid path (it holds a NUL byte)"
        raise OutputError(f"{key}: {what}; name a file or folder", key)
    try:
        return Path(text).expanduser()
    except RuntimeError:  # ~user of no known user: pathlib cannot expand it
        raise OutputError(f"{key}: {shown(text, 60)} starts with ~ but names no user with a home folder", key) from None


def output_folder(value, key: str) -> Path:
    """The report folder a run or study writes (``--out`` or ``output.dir``), resolved and checked the same
    in ``validate`` and ``run`` (:func:`expanded_path`, :func:`check_output_folder`); nothing is created."""
    folder = expanded_path(value, key)
    check_output_folder(folder, key)
    return folder


def check_output_folder(folder: Path, key: str) -> None:
    """``folder`` is an existing folder, or can be made one: the path is no file, FIFO or device, and the
    nearest existing folder above it is a folder (not a file).  OutputError naming ``key``; nothing is
    created."""
    if folder.exists() and not folder.is_dir():
        what = "an existing file" if folder.is_file() else "a FIFO, device or socket"
        raise OutputError(f"{key} {folder} is {what}, not a folder; choose a folder for the report", key)
    for parent in folder.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{key} {folder} cannot be created: {parent} is not a folder", key)
            return
        if os.path.lexists(parent):  # a dangling link on the way
            raise OutputError(f"{key} {folder} cannot be created: {parent} is a broken link", key)


def _check_path(folder, key: str) -> Path:
    """The report folder ``folder`` checked (:func:`output_folder`), created when missing, writable."""
    folder = output_folder(folder, key)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise OutputError(f"{key} {folder} cannot be created ({why}); choose a folder you can write", key) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{key} {folder} is not writable; choose a folder you can write", key)
    return folder


def _read_lock(fd: int) -> tuple[int, str] | None:
    """(pid, host) a lock file records, None when it is empty or unreadable (no positive process id:
    ``os.kill`` would read 0 and -1 as process groups, alive for ever)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        held = json.loads(os.read(fd, 1000).decode("utf-8"))
        pid, host = held["pid"], held["host"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0 or not isinstance(host, str):
        return None
    return pid, host


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _write_lock(fd: int, me: dict) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, json.dumps(me).encode("utf-8"))
    os.fsync(fd)


def _take_over(lock: Path, me: dict, key: str, folder: Path) -> int | None:
    """The descriptor of the existing lock file taken over when its run is gone (we then hold its
    flock and have written ours into it), None when the file changed meanwhile (try again); an
    OutputError when a run holds it or it cannot be judged."""
    try:
        fd = os.open(lock, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OutputError(
            f"{key} {folder}: the lock {lock} cannot be opened ({exc.strerror}); remove it if no "
            "gpmodels run uses the folder",
            key,
        ) from None
    try:
        held = _read_lock(fd)
        if not _try_flock(fd):  # its run holds it (the kernel drops the flock when a process dies)
            pid = f"process {held[0]}" if held else "a run that is starting"
            raise OutputError(
                f"{key} {folder} is in use by another gpmodels run ({pid}); wait for it to finish or "
                "choose another folder",
                key,
            )
        if os.fstat(fd).st_ino != os.stat(lock).st_ino:  # released and replaced while we looked: look again
            os.close(fd)
            return None
        if held is None:
            raise OutputError(
                f"{key} {folder}: the lock {lock} is empty or unreadable, so no gpmodels run wrote it "
                f"and no run holds it; remove it (rm {lock}) if no other program uses the folder",
                key,
            )
        pid, host = held
        if host != me["host"]:
            # the host is text of the file: named as "another host", never quoted (docs/security.md)
            raise OutputError(
                f"{key} {folder} is locked by a gpmodels run on another host (process {pid}; the host "
                f"is recorded in {lock}); remove {lock} if that run is over",
                key,
            )
        if pid != me["pid"] and _pid_alive(pid):  # a lock written without a flock by a live process
            raise OutputError(
                f"{key} {folder} is in use by another gpmodels run (process {pid}); wait for it to "
                f"finish or choose another folder (remove {lock} if that process is no gpmodels run)",
                key,
            )
        _write_lock(fd, me)  # stale: its process is gone; ours now, in place (we hold its flock)
        return fd
    except BaseException:
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        raise


def _lock(folder: Path, key: str) -> int:
    """Take the folder's lock: a file written in full under a private name, flock'ed, then linked to
    ``.gpmodels.lock`` (``link`` fails when the name exists, so creation is atomic); an existing lock
    is taken over only when its flock is free and its process gone (:func:`_take_over`).  Returns
    the descriptor that holds the flock for the run's lifetime."""
    lock = folder / LOCK_FILE
    me = {"pid": os.getpid(), "host": socket.gethostname()}
    mine = folder / f"{LOCK_FILE}.{me['pid']}"
    for _ in range(20):
        try:
            try:
                mine.unlink()
            except FileNotFoundError:
                pass
            fd = os.open(mine, os.O_CREAT | os.O_EXCL | os.O_RDWR | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as exc:
            raise OutputError(
                f"{key} {folder} is not writable ({exc.strerror or type(exc).__name__}); choose a folder you can write",
                key,
            ) from None
        try:
            _try_flock(fd)
            _write_lock(fd, me)
            os.link(mine, lock)
        except FileExistsError:
            os.close(fd)
            taken = _take_over(lock, me, key, folder)
            if taken is not None:
                return taken
            continue
        except OSError as exc:
            os.close(fd)
            raise OutputError(f"{key} {folder}: cannot create the lock {lock} ({exc.strerror})", key) from None
        finally:
            try:
                mine.unlink()
            except OSError:
                pass
        return fd
    raise OutputError(f"{key} {folder}: other runs took and released the lock while this one tried; try again", key)


@contextlib.contextmanager
def folder_lock(folder, key: str = "folder"):
    """Hold the folder's run lock (``.gpmodels.lock``, :func:`_lock`) while the body writes into it, for
    writers that are not runs (``GPClassifier.save``): a folder a run or another save is writing is
    refused with an :class:`OutputError`, and links planted at the names of its files are removed.
    The folder is created when missing."""
    folder = _check_path(folder, key)
    fd = _lock(folder, key)
    try:
        _unlink_planted_links(folder)
        yield folder
    finally:
        try:
            (folder / LOCK_FILE).unlink()
        except OSError:
            pass
        os.close(fd)


def _unlink_planted_links(folder: Path) -> None:
    """Remove every link at a name the run writes (symbolic links, and hard links: a file of ours with
    other names), and leftover temporary files: the run then writes only files it created, never
    through a link to a file outside the folder.  Other files are never touched."""
    for p in folder.iterdir():
        if not written_by_a_run(p.name) or p.name == LOCK_FILE:  # (the lock is ours now)
            continue
        try:
            st = p.lstat()
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode) or (stat.S_ISREG(st.st_mode) and st.st_nlink > 1) or p.name.endswith(".tmp"):
            p.unlink()
        elif stat.S_ISDIR(st.st_mode):
            raise OutputError(f"{folder}: {p.name} is a folder where the run writes a file; remove or rename it")


def claim_output(
    folder, identity: dict, *, force: bool = False, artefacts=RUN_ARTEFACTS, key: str = "--out"
) -> OutputFolder:
    """Check, lock and take over ``folder`` for the run ``identity`` (a dict with at least ``name``
    and ``spec_sha256``); see the module docstring.  Raises :class:`OutputError` before any work."""
    folder = _check_path(folder, key)
    claimed = OutputFolder(
        folder,
        {
            **identity,
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "status": "running",
        },
        lock_fd=_lock(folder, key),
    )
    try:
        _unlink_planted_links(folder)
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
        # a checkpoint without a run identity carries its own (checked when it is read); --force drops it;
        # a folder that held a run and now a study (or the reverse) loses the other kind's artefacts too, so
        # no model of an earlier run is left for `gpmodels predict` to take for this one's
        stale = artefacts + (CHECKPOINTS if force else ())
        if not same:
            stale += RUN_ARTEFACTS + STUDY_ARTEFACTS
        for n in names:
            if _matches(n, stale):
                (folder / n).unlink()
        write_new(folder, IDENTITY_FILE, json.dumps(claimed.identity, indent=1) + "\n")
    except OSError as exc:
        claimed.release()
        raise OutputError(
            f"{key} {folder}: cannot prepare the folder ({exc.strerror or type(exc).__name__})", key
        ) from None
    except BaseException:
        claimed.release()
        raise
    return claimed
