"""What a Dask engine and the kernel matrices it holds on its workers share.

* :func:`import_distributed`: dask.distributed is an optional extra (``pip install gpmodels[dask]``),
  imported when it is used, never when this module is imported;
* :func:`engine_failures`: Dask's failures (a killed worker, lost or cancelled futures, a lost
  connection) as an :class:`~gpmodels.errors.EngineError` that names what was running;
* :class:`DaskClientEngine`: an engine over a dask.distributed ``Client``, with the client-side
  operations that work held on its workers uses (``scatter``, ``n_threads``).

Inputs reach the workers as the result of a task that holds them (:func:`_held`), copied to every worker,
rather than by ``Client.scatter``: data scattered is lost for good once every worker holding it is gone
(on a loaded machine a slow worker can be declared lost beside a killed one), and the tasks needing it are
cancelled ("lost dependencies"); a task's result is computed again from its task, which the scheduler keeps.

:class:`~gpmodels.engine.dask.DaskEngine` (starting and closing a cluster, running maps) and
:class:`~gpmodels.engine.dask_gram.DaskGram` (row blocks held on the workers) build on it; the
engine builds its representations from :mod:`gpmodels.engine.dask_gram`, which needs only this module.
"""

from __future__ import annotations

import contextlib
import warnings

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


def _held(data):
    """The task whose result is ``data`` (module docstring)."""
    return data


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
        """``data`` on every worker, as a task's result that Dask recomputes if every copy is lost (module
        docstring); one future."""
        with engine_failures("placing the inputs on the workers"), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
            future = self.client.submit(_held, data, pure=False)
            self.client.replicate([future])
        return future
