"""Engines: where the work of a run is done.

An :class:`Engine` runs independent pieces of work (CV folds, one-vs-rest binary models, study
rows) through ``map`` and, when it ``distributes_gram``, holds the kernel matrices of the
training points on other processes or machines (:mod:`gpmodels.kernels.distributed`).

- :class:`LocalEngine`: everything in this process, in order (the default; no extra package).
- :class:`gpmodels.engine.dask.DaskEngine`: a dask.distributed cluster, a ``LocalCluster``
  started and closed by the run, or one started by Dask's own ``dask scheduler`` / ``dask worker``
  commands and reached at its address.

:func:`open_engine` turns an :class:`EngineConfig` into an engine; use it as a context manager so
that a cluster it started is closed on errors and Ctrl-C too.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable

import attrs

from gpmodels.validation import boolean, instance_of, one_of, optional, positive_int

__all__ = ["Engine", "LocalEngine", "EngineConfig", "ENGINE_TYPES", "DISTRIBUTE_MODES", "open_engine"]

ENGINE_TYPES = ("local", "dask")
#: what a dask engine spreads over its workers: the kernel matrices (``gram``: row blocks held on the
#: workers, every MVM one task per block) or the independent pieces of work (``tasks``: CV folds,
#: one-vs-rest binary models, study rows, each with in-process matrices on a worker)
DISTRIBUTE_MODES = ("gram", "tasks")


@attrs.frozen
class EngineConfig:
    """How to start an engine (the spec section ``engine``).

    ``scheduler``: the address of a running Dask scheduler (``tcp://host:8786``); None starts a
    ``LocalCluster`` of ``n_workers`` worker processes (threads when ``processes`` is false) with
    ``threads_per_worker`` threads and ``memory_limit`` each (Dask's syntax: ``"4GiB"``, ``"auto"``).
    ``block_rows``: rows of one held block of a distributed kernel matrix (None: n split evenly
    over the cluster's worker threads).
    """

    type: str = attrs.field(default="local", validator=one_of(ENGINE_TYPES))
    scheduler: str | None = attrs.field(default=None, validator=optional(instance_of(str, what="an address string")))
    n_workers: int = attrs.field(default=2, validator=positive_int())
    threads_per_worker: int = attrs.field(default=1, validator=positive_int())
    memory_limit: str = attrs.field(default="auto", validator=instance_of(str, what="a size like '4GiB' or 'auto'"))
    processes: bool = attrs.field(default=True, validator=boolean())
    distribute: str = attrs.field(default="gram", validator=one_of(DISTRIBUTE_MODES))
    block_rows: int | None = attrs.field(default=None, validator=optional(positive_int()))


class Engine(abc.ABC):
    """Runs independent work and (optionally) holds kernel matrices; see the module docstring."""

    #: the kernel matrices live on the engine's workers (RepresentationConfig builds a distributed Gram)
    distributes_gram: bool = False
    #: independent pieces of work (folds, binary models, study rows) run as parallel tasks
    maps_tasks: bool = False
    #: rows of one held block of a distributed kernel matrix (None: n over the worker threads)
    block_rows: int | None = None

    @abc.abstractmethod
    def map(self, fn: Callable, items: Iterable) -> list:
        """[fn(x) for x in items], in the order of ``items``; ``fn`` must be pure."""

    def close(self) -> None:
        """Release what the engine started (nothing for the local engine)."""
        return None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalEngine(Engine):
    """Everything in this process, one piece after the other."""

    def map(self, fn, items):
        return [fn(x) for x in items]

    def __repr__(self) -> str:
        return "LocalEngine()"


def open_engine(config: EngineConfig | None = None) -> Engine:
    """The engine of ``config`` (local by default); the dask engine imports dask.distributed here,
    and raises :class:`~gpmodels.errors.EngineError` naming ``pip install gpmodels[dask]`` without it."""
    config = config or EngineConfig()
    if config.type == "local":
        return LocalEngine()
    from gpmodels.engine.dask import DaskEngine

    return DaskEngine.start(config)
