"""Engines: where a run's work is done (in this process, or on a Dask cluster)."""

from gpmodels.engine.base import DISTRIBUTE_MODES, ENGINE_TYPES, Engine, EngineConfig, LocalEngine, open_engine

__all__ = ["Engine", "LocalEngine", "EngineConfig", "ENGINE_TYPES", "DISTRIBUTE_MODES", "open_engine"]
