"""Engines: the one way independent work runs (in this process, on worker processes, or on a Dask
cluster), sized by default from the cores and memory (:mod:`gpmodels.engine.auto`)."""

from gpmodels.engine.auto import AutoEngine, engine_for_jobs, plan_workers
from gpmodels.engine.base import Engine, EngineConfig, LocalEngine, Workload
from gpmodels.engine.factory import open_engine
from gpmodels.engine.processes import ProcessEngine

__all__ = [
    "Engine",
    "LocalEngine",
    "ProcessEngine",
    "AutoEngine",
    "EngineConfig",
    "Workload",
    "plan_workers",
    "engine_for_jobs",
    "open_engine",
]
