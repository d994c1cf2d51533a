"""What the shared state of an engine's map asks of a worker process: the memory it holds
(:func:`resident_bytes`) and how the process must start (:func:`worker_start_method`).

Both read what the objects reachable from the state declare, through attributes, tuples, lists and
dicts (modules and plain functions are not looked into):

- ``nbytes``: the bytes an object holds (numpy arrays; kernel representations, which declare the
  matrix they hold once built);
- ``worker_start_method``: the multiprocessing start method a worker process holding the object
  needs (:data:`START_METHODS`); None or absent: any.  Device array backends declare ``spawn``
  (:mod:`gpmodels.kernels.device.backend`): a process forked after CUDA was initialised cannot use
  CUDA, so their state crosses to a fresh interpreter, pickled as its recipe, and is rebuilt there in
  the worker's own device context.  Such an object may declare ``free_bytes()`` too, the memory free
  in its device context, against which the auto engine sizes the workers' matrices
  (:mod:`gpmodels.engine.auto`).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator

import numpy as np

__all__ = ["resident_bytes", "worker_start_method", "worker_devices", "START_METHODS", "FRESH_START_METHODS"]

#: multiprocessing's start methods a process engine may use
START_METHODS = ("fork", "spawn", "forkserver")
#: those that start workers as fresh interpreters, which get the shared state pickled
FRESH_START_METHODS = ("spawn", "forkserver")
#: how deep the declarations are looked for
MAX_DEPTH = 12

_LEAVES = (str, bytes, int, float, complex, bool, type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)


def _children(obj) -> list:
    if isinstance(obj, dict):
        return list(obj.values())
    if isinstance(obj, (tuple, list, set, frozenset)):
        return list(obj)
    if hasattr(obj, "__dict__") or hasattr(type(obj), "__slots__"):
        out = list(getattr(obj, "__dict__", {}).values())
        return out + [getattr(obj, s) for s in getattr(type(obj), "__slots__", ()) if hasattr(obj, s)]
    return []


def _reachable(obj, stop: Callable[[object], bool]) -> Iterator:
    """Every object reachable from ``obj`` once (depth-first, at most ``MAX_DEPTH`` deep), not looking
    into numpy arrays, modules, functions, or objects for which ``stop`` is true."""
    seen: set = set()
    stack = [(obj, 0)]
    while stack:
        o, depth = stack.pop()
        if o is None or isinstance(o, _LEAVES) or id(o) in seen or depth > MAX_DEPTH:
            continue
        seen.add(id(o))
        yield o
        if isinstance(o, np.ndarray) or stop(o):
            continue
        stack.extend((c, depth + 1) for c in _children(o) if not callable(c) or hasattr(c, "__dict__"))


def _declared_nbytes(obj) -> int | None:
    declared = getattr(obj, "nbytes", None)
    if isinstance(declared, (int, np.integer)) and not isinstance(declared, bool):
        return int(declared)
    return None


def resident_bytes(obj) -> int:
    """Bytes held by what is reachable from ``obj``: every object that declares its size as ``nbytes``
    (numpy arrays; kernel representations, which declare the matrix they hold once built, a lazily
    computed one included) counted once and not looked into (a view counts its base).  What a worker
    that rebuilds ``obj`` at new parameters allocates (on its device, for device representations)."""
    total, bases = 0, set()
    for o in _reachable(obj, lambda o: _declared_nbytes(o) is not None):
        if isinstance(o, np.ndarray):
            base = o.base if isinstance(o.base, np.ndarray) else o
            if id(base) not in bases:
                bases.add(id(base))
                total += int(base.nbytes)
        elif (declared := _declared_nbytes(o)) is not None:
            total += declared
    return total


def _declares_fresh_start(o) -> bool:
    return getattr(type(o), "worker_start_method", None) in FRESH_START_METHODS


def worker_devices(obj) -> list:
    """The objects reachable from ``obj`` that declare a fresh ``worker_start_method`` (device array
    backends), each once: the device contexts a worker holding ``obj`` opens."""
    return [o for o in _reachable(obj, _declares_fresh_start) if _declares_fresh_start(o)]


def worker_start_method(obj) -> str | None:
    """The start method that a worker process holding what is reachable from ``obj`` needs, as its
    objects declare it (``worker_start_method``): the first fresh one (``spawn`` / ``forkserver``)
    declared, else None (any method; a forked worker inherits the state)."""
    devices = worker_devices(obj)
    return type(devices[0]).worker_start_method if devices else None
