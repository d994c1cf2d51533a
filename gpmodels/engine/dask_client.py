"""What a Dask engine and the kernel matrices it holds on its workers share.

* :func:`import_distributed`: dask.distributed is an optional extra (``pip install gpmodels[dask]``),
  imported when it is used, never when this module is imported;
* :func:`engine_failures`: Dask's failures (a killed worker, lost or cancelled futures, a lost
  connection) as an :class:`~gpmodels.errors.EngineError` that names what was running;
* :class:`DaskClientEngine`: an engine over a dask.distributed ``Client``, with the client-side
  operations that work held on its workers uses (``scatter``, ``n_threads``).

:class:`~gpmodels.engine.dask.DaskEngine` (starting and closing a cluster, running maps) and
:class:`~gpmodels.engine.dask_gram.DaskGram` (row blocks held on the workers) build on it; the
engine builds its representations from :mod:`gpmodels.engine.dask_gram`, which needs only this module.
"""

from __future__ import annotations

import contextlib

from gpmodels.engine.base import Engine
from gpmodels.errors import EngineError

__all__ = ["DaskClientEngine", "import_distributed", "engine_failures", "INSTALL_HINT"]

INSTALL_HINT = "pip install gpmodels[dask]"


def import_distributed():
    """The ``distributed`` module, or EngineError naming the extra to install."""
    try:
        import distributed
    except ImportError as exc:
        raise EngineError(
            f"the dask engine needs dask.distributed, which is not installed ({exc}); install it with `{INSTALL_HINT}`"
        ) from None
    return distributed


@contextlib.contextmanager
def engine_failures(what: str):
    """Turn Dask's failures (a killed worker, lost or cancelled futures, a lost connection) into an
    EngineError that says ``what`` was running and which worker was lost."""
    distributed = import_distributed()
    from distributed.client import FutureCancelledError

    try:
        yield
    except distributed.KilledWorker as exc:
        key, worker = getattr(exc, "task", None), getattr(exc, "last_worker", None)
        worker = getattr(worker, "address", worker)  # a WorkerState
        raise EngineError(
            f"{what}: worker {worker} was lost running task {key} more often than Dask retries "
            "(distributed.scheduler.allowed-failures); the run stops rather than continue "
            "without it"
        ) from exc
    except FutureCancelledError as exc:
        raise EngineError(
            f"{what}: a task was cancelled ({exc}); its worker or the scheduler was lost with every copy of its inputs"
        ) from exc
    except (OSError, TimeoutError) as exc:
        raise EngineError(f"{what}: lost the connection to the cluster ({type(exc).__name__}: {exc})") from exc


class DaskClientEngine(Engine):
    """An engine over a dask.distributed ``Client`` (``client``; None once closed): what work held on
    its workers (:class:`~gpmodels.engine.dask_gram.DaskGram`) needs of it.  Subclasses start the
    client and define the maps (:class:`~gpmodels.engine.dask.DaskEngine`)."""

    client = None

    @property
    def n_threads(self) -> int:
        """Worker threads of the cluster now (at least 1)."""
        return max(1, sum(self.client.nthreads().values()))

    def scatter(self, data):
        """``data`` on every worker (broadcast: a lost worker loses no input); one future."""
        with engine_failures("scattering the inputs"):
            return self.client.scatter(data, broadcast=True, hash=False)
