"""A kernel matrix held in row blocks on the workers of a Dask engine.

:class:`DaskRepresentation` is what a Dask engine with ``distribute: gram`` gives as the
representation builder of its operators (:meth:`~gpmodels.engine.dask.DaskEngine.representation`):
it builds a :class:`DaskGram` for every exact full kernel matrix of a
:class:`~gpmodels.kernels.representations.RepresentationConfig` and leaves the others (features,
low rank) to the configuration.  The kernels package knows nothing of engines.

:class:`DaskGram` implements the :class:`~gpmodels.kernels.representation_base.Representation`
protocol for M = (M(x_a, x_b)) over the n training points:

- X is scattered once to every worker; row block b of M, M_b = M(X_b, X) of shape (|b|, n), is
  built by a task on a worker and held there (one future per block; rebuilt by ``with_kernel``
  when the kernel changes, and recomputed by Dask from the scattered X if its worker is lost);
- an MVM M B (B of shape (n, m): all classes and right-hand sides of one kernel group, App. D.3)
  scatters B once, runs one task M_b B per block and concatenates the gathered results in block
  order.  Each row of M B is one GEMM row over the same n terms as the in-process
  :class:`StoredGram`, all in float64, so results agree to rounding (1e-10 relative is the tested
  bound);
- ``grad_contract(E, F)`` = d/dθ Σ_j e_j^T M f_j is Σ_b (per-block tasks
  ``kernel.grad_contract(X_b, X, E_b F^T, gram=M_b)``), summed in block order;
- ``restrict(J)`` and ``cross(I, J)`` (CV folds, Seeger 2008 App. D.2) take the rows and columns
  of the held blocks on the workers (M[J, J] and M[I, J] exactly as StoredGram slices them); the
  cross block stays on the workers too (``mvm`` and ``rmvm`` by per-block tasks);
- ``diag`` and ``cross_test`` (new points) are computed in this process from X and the kernel,
  ``cross_test`` in row blocks under ``cross_memory_mb`` (as StoredGram does).

The object refuses to be pickled: it holds futures of one client, and shipping it into another
task would run MVMs from inside tasks.
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.engine.dask_client import DaskClientEngine, engine_failures
from gpmodels.errors import EngineError, InputError
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.blocked_gram import GramCross
from gpmodels.kernels.memory_budget import RepresentationChoice
from gpmodels.kernels.representation_base import CrossRepresentation, Representation, RepresentationBuilder
from gpmodels.kernels.representations import LOG, RepresentationConfig
from gpmodels.validation import instance_of, optional, positive_int

__all__ = ["DaskGram", "DaskCross", "DaskRepresentation", "row_blocks"]


def row_blocks(n: int, block_rows: int) -> list[slice]:
    """Consecutive row slices of at most ``block_rows`` rows covering range(n)."""
    step = max(1, int(block_rows))
    return [slice(s, min(n, s + step)) for s in range(0, n, step)]


# ---------------------------------------------------------------------------- tasks (pure, run on workers)
def _gram_block(kernel: Kernel, X, rows: slice) -> np.ndarray:
    """M(X_rows, X), shape (|rows|, n)."""
    return np.ascontiguousarray(kernel.gram(X[rows], X))


def _block_mvm(Mb: np.ndarray, B: np.ndarray) -> np.ndarray:
    """M_b B, shape (|b|, m)."""
    return Mb @ B


def _block_rmvm(Mb: np.ndarray, B: np.ndarray, rows: slice) -> np.ndarray:
    """M_b^T B_b, shape (n_cols, m): block b's share of M^T B."""
    return Mb.T @ B[rows]


def _block_grad(kernel: Kernel, X, rows: slice, Mb: np.ndarray, E: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Block b's share of d/dθ Σ_j e_j^T M f_j: Σ_{a in b, c} ∂M_ac/∂θ (E F^T)_ac."""
    return kernel.grad_contract(X[rows], X, E[rows] @ F.T, gram=Mb)


def _take(cols: np.ndarray, block: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Rows ``rows`` (local indices) and columns ``cols`` of one held block."""
    return np.ascontiguousarray(block[rows][:, cols])


def _stack(*parts) -> np.ndarray:
    return np.ascontiguousarray(np.vstack(parts))


# ---------------------------------------------------------------------------- held row blocks
class _HeldRows:
    """A (rows, cols) matrix as futures of consecutive row blocks on the workers."""

    def __init__(self, engine, slices: list[slice], futures: list, shape: tuple[int, int]):
        self.engine, self.slices, self.futures, self.shape = engine, slices, futures, shape

    def _run(self, what: str, submit) -> list:
        with engine_failures(what):
            client = self.engine.client
            futures = [submit(client, b, f) for b, f in zip(self.slices, self.futures)]
            return list(self.engine.results(futures, what))

    def mvm(self, B: np.ndarray) -> np.ndarray:
        Bf = self.engine.scatter(np.ascontiguousarray(B))
        parts = self._run("a distributed MVM", lambda c, b, f: c.submit(_block_mvm, f, Bf, pure=False))
        return np.concatenate(parts, axis=0) if parts else np.empty((0, B.shape[1]))

    def rmvm(self, B: np.ndarray) -> np.ndarray:
        Bf = self.engine.scatter(np.ascontiguousarray(B))
        parts = self._run("a distributed transposed MVM", lambda c, b, f: c.submit(_block_rmvm, f, Bf, b, pure=False))
        out = np.zeros((self.shape[1], B.shape[1]))
        for p in parts:  # block order: a fixed summation order
            out += p
        return out

    def take(self, I: np.ndarray, J: np.ndarray, block_rows: int) -> _HeldRows:
        """The held rows I, columns J (M[np.ix_(I, J)]) as new blocks on the workers.

        Where I runs through the held blocks in order (sorted folds), each new block is one run of
        rows of one held block, built on that block's worker (nothing moves); otherwise new blocks
        of ``block_rows`` rows stack the pieces cut from the held blocks they need (each piece cut on
        its block's worker, so only the pieces move)."""
        I = np.asarray(I, dtype=np.intp)
        J = np.asarray(J, dtype=np.intp)
        starts = np.array([s.start for s in self.slices], dtype=np.intp)
        owner = np.searchsorted(starts, I, side="right") - 1
        runs = np.split(np.arange(I.size), np.flatnonzero(np.diff(owner)) + 1) if I.size else []
        if len(runs) <= 2 * len(self.slices):
            groups = [[r] for r in runs]
        else:
            groups = [
                np.split(np.arange(s.start, s.stop), np.flatnonzero(np.diff(owner[s])) + 1)
                for s in row_blocks(I.size, block_rows)
            ]
        new_slices, futures, pos = [], [], 0
        with engine_failures("taking rows of a distributed kernel matrix"):
            Jf = self.engine.scatter(J)
            submit = self.engine.client.submit
            for group in groups:
                pieces = [
                    submit(_take, Jf, self.futures[int(owner[run[0]])], I[run] - starts[int(owner[run[0]])], pure=False)
                    for run in group
                ]
                size = sum(r.size for r in group)
                new_slices.append(slice(pos, pos + size))
                pos += size
                futures.append(pieces[0] if len(pieces) == 1 else submit(_stack, *pieces, pure=False))
        return _HeldRows(self.engine, new_slices, futures, (I.size, J.size))

    def dense(self) -> np.ndarray:
        what = "gathering a distributed kernel matrix"
        with engine_failures(what):
            parts = list(self.engine.results(self.futures, what))
        return np.vstack(parts) if parts else np.empty(self.shape)


def _refuse_pickle(obj):
    raise EngineError(
        f"a {type(obj).__name__} holds futures of this process's Dask client and cannot be sent to a "
        "worker or saved; with `engine.distribute: tasks` the kernel matrices stay in-process"
    )


@attrs.frozen
class DaskRepresentation(RepresentationBuilder):
    """The kernel matrices of ``config`` on the workers of ``engine``: every exact full matrix
    (``stored``, ``blocked``, or ``auto`` for a kernel without a feature form) as a :class:`DaskGram`
    of ``block_rows``-row blocks (None: n over the cluster's worker threads), float64; the local
    memory budget does not apply to the workers' memory.  Other kinds are built by ``config``."""

    config: RepresentationConfig = attrs.field(validator=instance_of(RepresentationConfig))
    engine: DaskClientEngine = attrs.field(validator=instance_of(DaskClientEngine, what="a Dask engine"))
    block_rows: int | None = attrs.field(default=None, validator=optional(positive_int()))

    @property
    def memory_mb(self) -> float:
        return self.config.memory_mb

    def build(
        self, X, kernel: Kernel, n_matrices: int = 1, *, log: bool = False, like: Representation | None = None
    ) -> Representation:
        if not self.config.keeps_full_matrix(kernel):
            return self.config.build(X, kernel, n_matrices, log=log, like=like)
        kernel.check_inputs(X)
        n = X.shape[0]
        choice = RepresentationChoice(
            "dask", "float64", "row blocks held on the engine's workers", 8 * n * n, n_matrices, None
        )
        if log:
            LOG.info("representation %s: %s", self.config.kind, choice.describe())
        rep = DaskGram(X, kernel, self.engine, block_rows=self.block_rows, cross_memory_mb=self.config.memory_mb)
        rep.choice = choice
        return rep


class DaskCross(CrossRepresentation):
    """A rectangular block M_{I,J} held in row blocks on the workers (a CV fold's K_{I,J})."""

    def __init__(self, held: _HeldRows):
        self._held = held
        self.shape = held.shape

    def mvm(self, B):
        return self._held.mvm(B)

    def rmvm(self, B):
        return self._held.rmvm(B)

    def dense(self):
        return self._held.dense()

    def __reduce__(self):
        _refuse_pickle(self)


class DaskGram(Representation, DaskCross):
    """M held in row blocks on the workers of a Dask engine: the held (X, X) block plus the square
    representation's methods; see the module docstring."""

    def __init__(
        self,
        X,
        kernel: Kernel,
        engine,
        *,
        block_rows: int | None = None,
        cross_memory_mb: float = 256.0,
        _X_future=None,
        _held: _HeldRows | None = None,
    ):
        if not isinstance(engine, DaskClientEngine) or engine.client is None:
            raise InputError(f"DaskGram needs an open Dask engine; got {engine!r}")
        self.X, self.kernel, self.engine, self.cross_memory_mb = X, kernel, engine, cross_memory_mb
        n = X.shape[0]
        self.block_rows = int(block_rows) if block_rows else max(1, -(-n // engine.n_threads))
        self._Xf = engine.scatter(X) if _X_future is None else _X_future
        self._held = self._build() if _held is None else _held
        self._diag = kernel.diag(X)

    def _build(self) -> _HeldRows:
        n = self.n
        slices = row_blocks(n, self.block_rows)
        workers = list(self.engine.client.scheduler_info().get("workers", {}))
        futures = []
        with engine_failures("building a distributed kernel matrix"):
            for i, s in enumerate(slices):
                # spread the blocks round-robin; another worker may take a block when its own is lost
                where = {"workers": [workers[i % len(workers)]], "allow_other_workers": True} if workers else {}
                futures.append(self.engine.client.submit(_gram_block, self.kernel, self._Xf, s, pure=False, **where))
        return _HeldRows(self.engine, slices, futures, (n, n))

    def diag(self):
        return self._diag

    def restrict(self, J):
        J = np.asarray(J, dtype=np.intp)
        X_J = self.X[J]
        return DaskGram(
            X_J,
            self.kernel,
            self.engine,
            block_rows=self.block_rows,
            cross_memory_mb=self.cross_memory_mb,
            _X_future=self.engine.scatter(X_J),
            _held=self._held.take(J, J, self.block_rows),
        )

    def cross(self, I, J):
        return DaskCross(self._held.take(I, J, self.block_rows))

    def cross_test(self, X_new):
        return GramCross(self.kernel, X_new, self.X, self.cross_memory_mb)

    def grad_contract(self, E, F):
        k = self.kernel
        if k.params.size == 0:
            return np.zeros(0)
        Ef = self.engine.scatter(np.ascontiguousarray(E))
        Ff = self.engine.scatter(np.ascontiguousarray(F))
        parts = self._held._run(
            "a distributed kernel gradient",
            lambda c, b, f: c.submit(_block_grad, k, self._Xf, b, f, Ef, Ff, pure=False),
        )
        total = np.zeros(k.params.size)
        for p in parts:  # block order: a fixed summation order
            total += p
        return total

    def with_kernel(self, kernel):
        if kernel.key() == self.kernel.key():
            return self
        return DaskGram(
            self.X,
            kernel,
            self.engine,
            block_rows=self.block_rows,
            cross_memory_mb=self.cross_memory_mb,
            _X_future=self._Xf,
        )

    @property
    def nbytes(self) -> int:
        """0: the blocks live on the workers, not in this process."""
        return 0

    @property
    def n_blocks(self) -> int:
        return len(self._held.futures)

    def __reduce__(self):
        _refuse_pickle(self)
