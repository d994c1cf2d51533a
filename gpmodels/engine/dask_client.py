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
A task that needs a worker when the cluster has none (the last worker of an external scheduler killed) would
wait for one for ever: :meth:`DaskClientEngine.results` waits in slices and fails with an EngineError once the
cluster has had no worker for :data:`NO_WORKER_SECONDS`.

:class:`~gpmodels.engine.dask.DaskEngine` (starting and closing a cluster, running maps) and
:class:`~gpmodels.engine.dask_gram.DaskGram` (row blocks held on the workers) build on it; the
engine builds its representations from :mod:`gpmodels.engine.dask_gram`, which needs only this module.
"""

from __future__ import annotations

import contextlib
import time
import warnings

from gpmodels.engine.base import Engine
from gpmodels.errors import EngineError

__all__ = ["DaskClientEngine", "import_distributed", "engine_failures", "INSTALL_HINT"]

INSTALL_HINT = "pip install gpmodels[dask]"
#: seconds a cluster may have no worker while a task waits for one before the run fails (module docstring)
NO_WORKER_SECONDS = 10.0
#: seconds of one wait for results between two looks at the cluster's workers
_POLL_SECONDS = 1.0


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
        what = "placing the inputs on the workers"
        with engine_failures(what), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
            future = self.client.submit(_held, data, pure=False)
            self.wait([future], what)
            self.client.replicate([future])
        return future

    def wait(self, futures, what: str) -> None:
        """Until every future is done; an EngineError naming ``what`` once the cluster has had no worker for
        :data:`NO_WORKER_SECONDS` (module docstring)."""
        distributed = import_distributed()
        from distributed.client import FuturesCancelledError

        alone_since = None
        while True:
            try:
                distributed.wait(futures, timeout=_POLL_SECONDS)
                return
            except FuturesCancelledError as exc:
                raise EngineError(
                    f"{what}: a task was cancelled ({exc}); its worker or the scheduler was lost with every copy "
                    "of its inputs"
                ) from exc
            except TimeoutError:
                if self.client.scheduler_info().get("workers"):
                    alone_since = None
                    continue
                alone_since = alone_since or time.monotonic()
                if time.monotonic() - alone_since > NO_WORKER_SECONDS:
                    raise EngineError(
                        f"{what}: every worker of the cluster was lost and none came back within "
                        f"{NO_WORKER_SECONDS:g} s; the tasks cannot run"
                    ) from None

    def results(self, futures, what: str):
        """The futures' results in their order, each waited for by :meth:`wait`; closing the generator early
        cancels those not done (done ones may be held futures, such as a matrix's row blocks)."""
        try:
            for f in futures:
                self.wait([f], what)
                yield f.result()
        finally:
            for f in futures:
                if not f.done():
                    f.cancel()
