"""The Dask engine: a dask.distributed cluster behind the :class:`~gpmodels.engine.base.Engine` protocol.

dask.distributed is an optional extra (``pip install gpmodels[dask]``); it is imported when an engine
starts, never when this module is imported.  With no scheduler address a ``LocalCluster`` is started
and closed by :meth:`DaskEngine.close` (the context manager closes it on errors and Ctrl-C too); with
an address the engine connects to a cluster started by ``dask scheduler`` / ``dask worker`` and
leaves it running.

Failures.  Every task is pure, so when a worker is lost Dask recomputes what it held from the
inputs scattered to every worker (``broadcast``) and retries its running tasks (``allowed-failures``
times, Dask's setting).  What cannot be redone — a task that kills worker after worker, every
replica of a scattered input gone, a scheduler that cannot be reached — surfaces as an
:class:`~gpmodels.errors.EngineError` naming the lost worker or the address: never a silently wrong
number.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from gpmodels.engine.base import EngineConfig, LocalEngine, Workload
from gpmodels.engine.dask_client import DaskClientEngine, engine_failures, import_distributed
from gpmodels.engine.dask_gram import DaskRepresentation
from gpmodels.errors import EngineError
from gpmodels.linalg.blas_threads import usable_cores

__all__ = ["DaskEngine", "import_distributed", "engine_failures"]


def _call_shared(fn, shared, job):
    """A job on a Dask worker: the map's ``fn`` on the scattered shared state (resolved from its future)."""
    return fn(shared, job)


class DaskEngine(DaskClientEngine):
    """A dask.distributed ``Client`` (and the ``LocalCluster`` it started, if any).

    ``distribute: tasks``: maps run their jobs as tasks on the cluster, the shared state scattered
    to every worker once (while the next maps get the same object).  ``distribute: gram``: operators
    built for this engine hold their kernel matrices in row blocks on the workers
    (:meth:`representation`, :mod:`gpmodels.engine.dask_gram`) and maps run here, one job after
    the other (each job's MVMs already use the cluster)."""

    def __init__(self, client, cluster=None, config: EngineConfig | None = None):
        self.client, self.cluster = client, cluster
        self.config = config or EngineConfig(type="dask")
        self._shared, self._shared_future = None, None

    @classmethod
    def start(cls, config: EngineConfig) -> DaskEngine:
        """Connect to ``config.scheduler``, or start a LocalCluster of ``config.n_workers`` workers
        (None: the usable cores over ``threads_per_worker``)."""
        distributed = import_distributed()
        if config.scheduler is not None:
            try:
                client = distributed.Client(config.scheduler, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise EngineError(
                    f"cannot reach the Dask scheduler at {config.scheduler!r} ({type(exc).__name__}: "
                    f"{exc}); start it with `dask scheduler` and the workers with "
                    f"`dask worker {config.scheduler}`"
                ) from None
            try:
                client.wait_for_workers(1, timeout=60)
            except (OSError, TimeoutError):
                client.close()
                raise EngineError(
                    f"the Dask scheduler at {config.scheduler!r} has no worker after 60 s; start "
                    f"them with `dask worker {config.scheduler}`"
                ) from None
            return cls(client, None, config)
        n_workers = config.n_workers or max(1, (config.cores or usable_cores()) // config.threads_per_worker)
        try:
            cluster = distributed.LocalCluster(
                n_workers=n_workers,
                threads_per_worker=config.threads_per_worker,
                memory_limit=config.memory_limit,
                processes=config.processes,
                dashboard_address=":0",
            )
        except (ValueError, TypeError) as exc:
            raise EngineError(f"cannot start a LocalCluster with engine {config}: {exc}") from None
        try:
            client = distributed.Client(cluster)
            # every worker registered before the first broadcast: a scatter reaches only the workers known then
            client.wait_for_workers(n_workers, timeout=60)
        except BaseException:
            cluster.close()
            raise
        return cls(client, cluster, attrs.evolve(config, n_workers=n_workers))

    @property
    def holds_kernel_matrices(self) -> bool:
        """Whether operators built for this engine hold their kernel matrices on its workers."""
        return self.config.distribute == "gram"

    def workers_for(self, workload: Workload) -> int:
        return 1 if self.holds_kernel_matrices else max(1, min(self.n_threads, workload.tasks))

    def representation(self, config):
        if not self.holds_kernel_matrices:
            return config
        return DaskRepresentation(config, self, self.config.block_rows)

    def imap_shared(self, fn: Callable, shared, jobs, workload=None):
        jobs = list(jobs)
        if self.holds_kernel_matrices:
            return LocalEngine().imap_shared(fn, shared, jobs)
        if self._shared is not shared:
            self._shared, self._shared_future = shared, self.scatter(shared)
        what = f"running {getattr(fn, '__name__', 'a task')} on {len(jobs)} items"
        with engine_failures(what):
            futures = [self.client.submit(_call_shared, fn, self._shared_future, job, pure=False) for job in jobs]
        return self._gather(futures, what)

    def _gather(self, futures, what: str):
        with engine_failures(what):
            yield from self.results(futures, what)

    def close(self) -> None:
        client, cluster = self.client, self.cluster
        self.client = self.cluster = None
        self._shared = self._shared_future = None
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()

    def __repr__(self) -> str:
        local = f"LocalCluster({self.config.n_workers} workers)" if self.cluster else "closed"
        where = self.config.scheduler or local
        return f"DaskEngine({where}, distribute={self.config.distribute!r})"
