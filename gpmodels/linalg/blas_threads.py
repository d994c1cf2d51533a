"""BLAS threads: how many the BLAS uses and a context that limits them (threadpoolctl).

Used where gpmodels runs its own threads over numpy work (CV folds at once, float32 tile products)
so that Python threads times BLAS threads does not oversubscribe the cores.  threadpoolctl is a core
dependency: it is the standard way to query and limit the BLAS of numpy (scikit-learn uses it too).
"""

from __future__ import annotations

import functools

from threadpoolctl import ThreadpoolController

__all__ = ["blas_threads", "limit_blas_threads"]


@functools.lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    return ThreadpoolController()


def blas_threads() -> int:
    """The number of threads of the BLAS numpy uses (the largest, if several are loaded; 1 if none)."""
    return max((c.num_threads for c in _controller().lib_controllers if c.user_api == "blas"), default=1)


def limit_blas_threads(limit: int):
    """A context in which the BLAS uses at most ``limit`` (>= 1) threads."""
    return _controller().limit(limits=max(1, int(limit)), user_api="blas")
