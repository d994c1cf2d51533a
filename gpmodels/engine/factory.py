"""The engine of a configuration: :func:`open_engine` turns an :class:`~gpmodels.engine.base.EngineConfig`
(the spec section ``engine``) into one of the engines of :mod:`gpmodels.engine.base` and the modules beside it.
Importing the Dask engine's module does not import dask.distributed (:mod:`gpmodels.engine.dask`)."""

from __future__ import annotations

from gpmodels.engine.auto import AutoEngine
from gpmodels.engine.base import Engine, EngineConfig, LocalEngine
from gpmodels.engine.dask import DaskEngine
from gpmodels.engine.processes import ProcessEngine

__all__ = ["open_engine"]


def open_engine(config: EngineConfig | None = None) -> Engine:
    """The engine of ``config`` (``auto`` by default); the dask engine imports dask.distributed here,
    and raises :class:`~gpmodels.errors.EngineError` naming ``pip install gpmodels[dask]`` without it."""
    config = config or EngineConfig()
    if config.type == "local":
        return LocalEngine(config.n_workers or 1, config.blas_threads)
    if config.type == "processes":
        return ProcessEngine.from_config(config)
    if config.type == "auto":
        return AutoEngine.from_config(config)
    return DaskEngine.start(config)
