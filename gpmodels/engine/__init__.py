"""Engines: where a run's work is done (in this process, or on a Dask cluster)."""

from gpmodels.engine.base import Engine, EngineConfig, LocalEngine, open_engine

__all__ = ["Engine", "LocalEngine", "EngineConfig", "open_engine"]
