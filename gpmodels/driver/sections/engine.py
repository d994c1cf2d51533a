"""The `engine` section: where the work runs (this process or a Dask cluster)."""

from __future__ import annotations

import re

import attrs

from gpmodels.driver.schema import Node, option
from gpmodels.engine.base import DISTRIBUTE_MODES, ENGINE_TYPES
from gpmodels.engine.state import START_METHODS
from gpmodels.errors import SpecError, shown
from gpmodels.validation import boolean, gigabytes, integer, one_of, positive_int, string

__all__ = ["EngineSpec", "SCHEDULER_PATTERN"]

#: a Dask scheduler address: ``tcp://host:8786`` (or tls://, ucx://, inproc://)
SCHEDULER_PATTERN = re.compile(r"^(tcp|tls|ucx|inproc)://[^\s/]+$")


@attrs.frozen
class EngineSpec(Node):
    """Where independent work (CV folds, one-vs-rest models, study rows) runs: sized from the cores
    (`auto`), in this process, on worker processes, or on a Dask cluster (`pip install gpmodels[dask]`)."""

    type: str = option(
        "auto",
        one_of(ENGINE_TYPES),
        doc="`auto`: workers and BLAS threads sized from the usable cores and the memory; `local`: "
        "this process (`n_workers` threads); `processes`: worker processes; `dask`: a "
        "dask.distributed cluster (CLI `--scheduler` implies it)",
    )
    n_workers: int | None = option(
        None,
        integer(1, 1024),
        doc="workers: threads (`local`), processes (`processes`), LocalCluster workers "
        "(`dask`); null: 1 for `local`, else the cores",
    )
    blas_threads: int | None = option(
        None, integer(1, 1024), doc="BLAS threads of each worker (null: the cores over the workers)"
    )
    cores: int | None = option(
        None,
        integer(1, 65536),
        doc="cores to use (null: those this process may run on, `os.sched_getaffinity`)",
    )
    memory_gb: float | None = option(
        None, gigabytes(), doc="`auto`: memory the workers may take together (null: 80 % of the available memory)"
    )
    scheduler: str | None = option(
        None,
        string(),
        doc="address of a running `dask scheduler`; null starts a LocalCluster for the run",
        allowed="tcp://host:port",
    )
    threads_per_worker: int = option(1, integer(1, 1024), doc="LocalCluster: threads per worker")
    memory_limit: str = option("auto", string(), doc="LocalCluster: memory per worker (`4GiB`, `auto`)")
    processes: bool = option(True, boolean(), doc="LocalCluster: workers are processes (false: threads)")
    distribute: str = option(
        "gram",
        one_of(DISTRIBUTE_MODES),
        doc="`gram`: kernel matrices held in row blocks on the workers; `tasks`: CV folds, "
        "one-vs-rest models and study rows as parallel tasks",
    )
    block_rows: int | None = option(
        None, positive_int(), doc="rows of one held kernel-matrix block (null: n over the worker threads)"
    )
    start_method: str | None = option(
        None,
        one_of(START_METHODS),
        doc="how worker processes start: `fork`, `spawn`, `forkserver` (null: `fork`, or `spawn` where "
        "the kernel matrices are on a CUDA device, which a forked child cannot use)",
    )

    def check(self, path):
        if self.scheduler is not None and not SCHEDULER_PATTERN.match(self.scheduler):
            raise SpecError(
                f"must be a scheduler address like tcp://host:8786; got {shown(self.scheduler)}",
                f"{path}.scheduler" if path else "scheduler",
            )
        if self.scheduler is not None and self.type != "dask":
            raise SpecError("a scheduler address needs `type: dask`", f"{path}.type" if path else "type")
