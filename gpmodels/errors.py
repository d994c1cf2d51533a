"""Typed errors of gpmodels, all in one place.

Every error a user can trigger by bad input derives from :class:`GPModelsError` and from the
matching builtin (``ValueError`` for bad values), so callers may catch either.  Messages name
what is wrong and what is allowed (STYLE.md, "Errors").
"""

from __future__ import annotations

__all__ = [
    "GPModelsError",
    "InputError",
    "DataError",
    "SpecError",
    "OutputError",
    "HierarchyError",
    "ConvergenceError",
    "CheckpointError",
    "EngineError",
    "NotFittedError",
    "InputTypeError",
    "DeviceError",
    "OptionalDependencyError",
    "DataConversionWarning",
    "ConvergenceWarning",
    "NumericalError",
    "Terminated",
    "CheckpointWarning",
    "at",
    "described",
]


class GPModelsError(Exception):
    """Base class of every error raised on purpose by gpmodels."""


class InputError(GPModelsError, ValueError):
    """An argument has the wrong shape, type or value (NaN in X, a label outside the classes...)."""


class DataError(InputError):
    """A data file or data set cannot be found or read, or its contents are inconsistent."""


class SpecError(InputError):
    """A model spec is invalid: unknown key, wrong type, value outside the allowed set.

    ``path`` is the dotted key path inside the spec (``"model.kernel.type"``), or ``""``.
    """

    def __init__(self, message: str, path: str = ""):
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class OutputError(InputError):
    """A report folder cannot be used: not a writable folder, locked by another run, or holding
    another run's report.  ``key`` names the setting (``--out``, ``output.dir``)."""

    def __init__(self, message: str, key: str = ""):
        self.key = key
        super().__init__(message)


class HierarchyError(InputError):
    """A class hierarchy is not a rooted tree, or a label does not fit it."""


class ConvergenceError(GPModelsError, RuntimeError):
    """An iterative method did not reach its tolerance and the caller asked for that to be fatal."""


class NumericalError(GPModelsError, ArithmeticError):
    """A computation gave non-finite numbers (an overflowing kernel matrix, NaN coefficients or
    scores); the result is refused rather than reported."""


class CheckpointError(GPModelsError, RuntimeError):
    """A checkpoint is corrupt or belongs to another run; it is refused rather than used."""


class EngineError(GPModelsError, RuntimeError):
    """The distributed engine failed: its package is missing, the cluster cannot be reached, or a
    worker was lost and its work could not be redone.  The message names the scheduler or worker."""


class NotFittedError(GPModelsError, ValueError, AttributeError):
    """A model was used before ``fit`` (ValueError and AttributeError, as scikit-learn expects)."""


class InputTypeError(InputError, TypeError):
    """An argument has a type that cannot be converted (a dict inside X, ...)."""


class DataConversionWarning(UserWarning):
    """Input was converted to the expected form (a column-vector y raveled to 1-D, ...)."""


class CheckpointWarning(RuntimeWarning):
    """A checkpoint could not be written (disk full, permissions); the learning goes on.  A run routes it
    to its console and run.log."""


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM or SIGHUP: handled like Ctrl-C (checkpoints kept, the report folder's
    run.json final and its lock released); ``signum`` gives the exit code 128 + signum."""

    def __init__(self, signum: int):
        self.signum = int(signum)
        import signal

        super().__init__(signal.Signals(self.signum).name)


class ConvergenceWarning(UserWarning):
    """An iterative fit stopped at its iteration or update limit before reaching its tolerance."""


#: the most characters an error message quotes of a value
SHOWN_CHARS = 200


def shown(value, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` bounded in work and length, for error messages: nested containers are cut at
    a few levels and items (so a value built by YAML aliases is never expanded), and the text at
    ``limit`` characters with the number of characters left out."""
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxdict, r.maxlist, r.maxtuple, r.maxset = 3, 8, 8, 8, 8
    r.maxstring, r.maxother, r.maxlong = limit, limit, limit
    text = r.repr(value)
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text) - limit} more characters)"
    return text


class OptionalDependencyError(GPModelsError, ImportError):
    """A feature needs a package of an optional extra that is not installed; the message names the extra
    (``pip install gpmodels[plots]``)."""


class DeviceError(InputError):
    """A device (``cuda``) was asked for and cannot be used: the message names what is missing (the
    ``gpmodels[cuda]`` extra, a CUDA build of PyTorch, a visible GPU) or which kernel has no device form."""


# ---------------------------------------------------------------- what a message may quote of a file
# The one policy for messages about files (docs/security.md): a message names the file, the line and
# the column and says what was expected there; it may show a number the reader parsed, a class name the
# model reports anyway, and what the user wrote in the spec or on the command line, and nothing else of
# the file: a token that did not parse is described (its length), never quoted.


def at(path, line: int | None = None, column: int | None = None) -> str:
    """The place an error is about: ``PATH``, ``PATH:LINE`` or ``PATH:LINE:COLUMN`` (1-based)."""
    where = str(path)
    if line is not None:
        where += f":{line}"
        if column is not None:
            where += f":{column}"
    return where


def described(token) -> str:
    """A piece of a file described without quoting it: ``an empty value`` or ``7 characters``."""
    n = len(token)
    return "an empty value" if n == 0 else f"{n} character{'' if n == 1 else 's'}"
