"""The one writer of every file gpmodels writes into a folder (reports, models, checkpoints, plots).

A file is written as a new file and renamed over its name: a temporary file beside it is created
exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``: never an existing file, never through a symbolic link
planted at the temporary name), written, flushed to disk, then renamed over the name
(``os.replace``).  So a link planted at the name (symbolic, or a hard link to a file elsewhere) is
replaced, never written through, and a crash mid-write leaves the previous file whole.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["write_new"]


def write_new(folder, name: str, content: str | bytes | Callable, *, sync: bool = False) -> Path:
    """Write ``folder/name`` as a new file (module docstring) and return its path.  ``content``: text
    (UTF-8), bytes, or a function that writes into the binary file object it is given (``np.savez``,
    ``fig.savefig``); ``sync``: fsync the file and the folder (checkpoints: the rename survives a crash)."""
    folder = Path(folder)
    target = folder / name
    tmp = folder / f".{name}.{os.getpid()}.tmp"
    try:
        tmp.unlink()
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            if callable(content):
                content(fh)
            else:
                fh.write(content.encode("utf-8") if isinstance(content, str) else content)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    if sync:
        _sync_folder(folder)
    return target


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (where the system allows opening a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
