"""The two engines of the Crammer–Singer inner loop (Crammer & Singer 2001, Fig. 4 with Fig. 3 and Sec. 7).

Both run the same algorithm on the same state, which the driver (:mod:`.solver`) owns and
which they update in place (:class:`LoopState`, *position* order: the active set A occupies
positions 0..nA−1; ``perm``: position → example, ``pos``: example → position):

    F    (k, m)  F_ir = Σ_j K_ij τ_jr − β δ_{y_i r}                    (eq. 23), class-major
    tau  (k, m)  τ_i = 1_{y_i} − η_i                                    (eq. 15)
    pen  (k, m)  0 where τ_ir < δ_{y_i r} (allowed in the min of eq. 32), +∞ else

One round at accuracy ε_t (threshold βε_t): select p = argmax_{i ∈ A} ψ_i with
ψ_i = max_r F_ir − min_{r: τ_ir < δ_{y_i r}} F_ir (eq. 32); when every ψ_i in A is ≤ βε_t, scan A^c
and move its worst violator into A, or end the round when there is none; solve the reduced
problem (34) of p (Fig. 3 from θ = mean(D) − 1/k at accuracy ε/2, or exactly by sorting); update
F ← F + K(·, x_p) Δτ_p — on A at once, on A^c deferred until A^c is next scanned when rows are
kept (a cache or a given Gram matrix), at once otherwise; an example whose τ returns to 0 leaves A.

- :class:`NumpyLoop` — pure numpy; one Python-level step per example update (≈ 0.1 ms of call
  overhead each).  Rows from :class:`.kernel_cache.KernelRows` and its LRU cache.
- :class:`CompiledLoop` — the same steps in C (``_cs_core.c``, a CPython extension built by
  setup.py at install when a C compiler is present; without it ``engine="auto"`` is numpy).
  It keeps its own LRU map over a pool of ⌊cache_mb / (8m)⌋ rows (at most m) allocated here, and
  calls back into Python only for a missing row (:meth:`.KernelRows.compute_into`, the kernel
  object), so the memory bound, the no-cache baseline and the hit / miss / eviction counts of
  Sec. 7 are those of the numpy engine.  Its pooled rows are kept in position order (two entries
  swapped in every pooled row per position swap, as libsvm's cache does when it shrinks), so that
  the F updates read contiguous rows without gathers.

The two engines agree bit for bit: the same selection (first largest ψ in position order), the
same Fig. 3 arithmetic (:func:`.reduced_problem.fixed_point_list`, left-to-right sums), F updated
as F + Δτ_r K per class with no fused multiply-add, and the deferred terms added one pending
example at a time in the order of their first update.  The tests hold them to that.

Rows on demand rather than the full Gram matrix when it fits the bound: the solver touches only the
rows of examples that enter A (≈ the support patterns: 1.2k of 4.4k rows on satimage), and the full
4435² RBF Gram of satimage costs ≈ 0.3 s (1.4 s on first touch of its 157 MB), against ≈ 0.07 s
for the 1.2k rows (one GEMV and one exp each).

Why a CPython extension on the buffer protocol, not ctypes or the numpy C API: the loop calls back
for missing rows, a plain ``PyObject_Call`` there (ctypes would need a CFUNCTYPE trampoline per
call and a hand-loaded shared library that setuptools does not build as such); and the buffer
protocol needs no numpy headers, so the build needs only a C compiler and Python.h — no numpy at
build time and no tie to one numpy ABI.
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.baselines.crammer_singer.kernel_cache import KernelRows
from gpmodels.baselines.crammer_singer.reduced_problem import _seqsum, fixed_point_list, solve_exact, tau_from_nu
from gpmodels.errors import InputError

try:  # built by setup.py when a C compiler is available (optional extension)
    from gpmodels.baselines.crammer_singer import _core as _cs_core
except ImportError:  # pragma: no cover - depends on the install
    _cs_core = None

__all__ = ["ENGINES", "LoopState", "LoopSettings", "NumpyLoop", "CompiledLoop", "compiled_available", "resolve_engine"]

ENGINES = ("auto", "compiled", "numpy")


def compiled_available() -> bool:
    """Whether the C extension ``gpmodels.baselines.crammer_singer._core`` was built and imports."""
    return _cs_core is not None


def resolve_engine(engine: str) -> str:
    """``auto`` → ``compiled`` when the extension is available, else ``numpy``."""
    if engine not in ENGINES:
        raise InputError(f"engine must be one of {', '.join(map(repr, ENGINES))}; got {engine!r}")
    if engine == "numpy" or (engine == "auto" and _cs_core is None):
        return "numpy"
    if _cs_core is None:
        raise InputError(
            "engine='compiled' needs the C extension gpmodels.baselines.crammer_singer._core, which is not built "
            "(was there a C compiler at install?); reinstall with one, or use engine='auto' or 'numpy'"
        )
    return "compiled"


@attrs.define
class LoopState:
    """The arrays of Fig. 4 in position order (module docstring); ``nA`` = |A|."""

    Fk: np.ndarray  # shape: (k, m)
    tau: np.ndarray  # shape: (k, m)
    pen: np.ndarray  # shape: (k, m)
    yv: np.ndarray  # shape: (m,) int64
    Av: np.ndarray  # shape: (m,)
    perm: np.ndarray  # shape: (m,) int64, position -> example
    pos: np.ndarray  # shape: (m,) int64, example -> position
    nA: int

    @classmethod
    def initial(cls, y: np.ndarray, A: np.ndarray, k: int, beta: float, n_active: int) -> LoopState:
        """τ = 0 and F_ir = −β δ_{y_i r} (Fig. 4's initialisation)."""
        m = y.size
        ar = np.arange(m, dtype=np.int64)
        Fk = np.zeros((k, m))
        Fk[y, ar] = -beta
        pen = np.full((k, m), np.inf)
        pen[y, ar] = 0.0
        return cls(
            Fk,
            np.zeros((k, m)),
            pen,
            y.astype(np.int64),
            np.ascontiguousarray(A, dtype=np.float64),
            ar.copy(),
            ar.copy(),
            n_active,
        )

    def psi(self, lo: int, hi: int) -> np.ndarray:
        """ψ_i (eq. 32) at positions lo..hi−1."""
        F = self.Fk[:, lo:hi]
        return F.max(axis=0) - (F + self.pen[:, lo:hi]).min(axis=0)


@attrs.frozen
class LoopSettings:
    """What both loops of Fig. 4 are given besides the state: ``capacity`` kernel rows kept (> 0: F on A^c
    deferred), Fig. 3's tolerance and iteration cap, the exact reduced solver or the fixed point, and the
    active set on or off."""

    capacity: int = attrs.field(converter=int)
    fp_tol: float = attrs.field(converter=float)
    fp_max_iter: int = attrs.field(converter=int)
    exact: bool = attrs.field(converter=bool)
    active: bool = attrs.field(converter=bool)


class NumpyLoop:
    """Fig. 4 in numpy (module docstring); rows from ``rows`` (a :class:`KernelRows`)."""

    engine = "numpy"

    def __init__(self, st: LoopState, rows: KernelRows, settings: LoopSettings):
        k, m = st.Fk.shape
        self.st, self.rows, self.k, self.m = st, rows, k, m
        self.fp_tol, self.fp_max_iter = settings.fp_tol, settings.fp_max_iter
        self.exact, self.active = settings.exact, settings.active
        self.lazy = settings.capacity > 0  # defer F on A^c only when the rows are stored (cache, or a given Gram)
        self.identity = True  # perm is the identity (no swap yet)
        self.pending: dict[int, np.ndarray] = {}
        self.buf = np.empty((k, m))
        self.updates = 0

    def psi_range(self, lo: int, hi: int) -> np.ndarray:
        st = self.st
        b = self.buf[:, : hi - lo]
        np.add(st.Fk[:, lo:hi], st.pen[:, lo:hi], out=b)
        return st.Fk[:, lo:hi].max(axis=0) - b.min(axis=0)

    def swap(self, a: int, b: int) -> None:
        if a == b:
            return
        st = self.st
        for arr in (st.Fk, st.tau, st.pen):
            arr[:, [a, b]] = arr[:, [b, a]]
        for arr in (st.yv, st.Av, st.perm):
            arr[a], arr[b] = arr[b], arr[a]
        st.pos[st.perm[a]], st.pos[st.perm[b]] = a, b
        self.identity = False

    def sync(self) -> None:
        """Apply the Δτ of A's updates since the last sync to F on A^c, one pending example and class
        at a time (the compiled loop's order of the sums)."""
        if not self.pending:
            return
        st, m, nA = self.st, self.m, self.st.nA
        if nA < m:
            cols = st.perm[nA:]
            F = st.Fk
            for q, dq in self.pending.items():
                rowN = self.rows.row(q)[cols]
                for r in np.flatnonzero(dq):
                    F[r, nA:] += dq[r] * rowN
        self.pending.clear()

    def update(self, q: int) -> bool:
        """Solve the reduced problem of the example at position q < nA; False when τ did not move."""
        st, k, m = self.st, self.k, self.m
        Fk, tau = st.Fk, st.tau
        yp = int(st.yv[q])
        D = Fk[:, q] / st.Av[q] - tau[:, q]  # eq. (34)
        D[yp] += 1.0
        if self.exact:
            nu = solve_exact(D)
        else:  # Fig. 3 on Python floats, from θ = mean(D) − 1/k (the image of θ_1 = min_r D_r)
            Dl = D.tolist()
            nu = np.array(fixed_point_list(Dl, (_seqsum(Dl) - 1.0) * (1.0 / k), self.fp_tol, self.fp_max_iter)[0])
        new = tau_from_nu(nu, D, yp)
        dt = new - tau[:, q]
        nz = np.flatnonzero(dt)
        if nz.size == 0 and not self.exact:
            nu = solve_exact(D)  # the fixed point stopped at once: take the exact step
            new = tau_from_nu(nu, D, yp)
            dt = new - tau[:, q]
            nz = np.flatnonzero(dt)
        if nz.size == 0:
            return False
        nA = st.nA
        row = self.rows.row(int(st.perm[q]))
        rowA = row[:nA] if self.identity else row[st.perm[:nA]]
        if nz.size == k:
            Fk[:, :nA] += dt[:, None] * rowA
        else:
            for r in nz:
                Fk[r, :nA] += dt[r] * rowA
        if nA < m:
            if self.lazy:
                p = int(st.perm[q])
                acc = self.pending.get(p)
                self.pending[p] = dt if acc is None else acc + dt
            else:  # no cache: the row would be recomputed at the sync, so update A^c now
                rowN = row[st.perm[nA:]]
                for r in nz:
                    Fk[r, nA:] += dt[r] * rowN
        tau[:, q] = new
        st.pen[:, q] = np.inf
        allowed = new < 0.0
        allowed[yp] = new[yp] < 1.0
        st.pen[allowed, q] = 0.0
        self.updates += 1
        return True

    def run_round(self, thr: float, max_updates: int) -> bool:
        """One round of Fig. 4 at threshold βε_t (module docstring); True when it stalled."""
        st, m = self.st, self.m
        stalled = False
        while self.updates < max_updates:
            q = -1
            if st.nA > 0:
                psi = self.psi_range(0, st.nA)
                q = int(np.argmax(psi))
                if psi[q] <= thr:
                    q = -1
            if q < 0 and st.nA < m:  # A exhausted: scan A^c and move the worst violator into A
                self.sync()
                psi = self.psi_range(st.nA, m)
                j = int(np.argmax(psi))
                if psi[j] <= thr:
                    break
                self.swap(st.nA + j, st.nA)
                q = st.nA
                st.nA += 1
            if q < 0:
                break
            if not self.update(q):
                stalled = True
                break
            if self.active and not np.any(st.tau[:, q] != 0.0):  # τ_q = 0: q leaves A
                self.sync()
                self.swap(q, st.nA - 1)
                st.nA -= 1
        self.sync()
        return stalled

    def sweep(self) -> None:
        """The baseline without KKT selection: the reduced problem of every example in turn."""
        for q in range(self.m):
            self.update(q)
        self.sync()

    def stats(self) -> dict:
        return self.rows.stats()


class CompiledLoop:
    """Fig. 4 in C (``_cs_core.Solver``) on the same state; rows through its LRU pool (module docstring)."""

    engine = "compiled"

    def __init__(self, st: LoopState, rows: KernelRows, settings: LoopSettings):
        if _cs_core is None:
            raise InputError("the C extension gpmodels.baselines.crammer_singer._core is not built; use engine='numpy'")
        capacity = settings.capacity
        k, m = st.Fk.shape
        self.st, self.rows = st, rows
        # rows from a stored Gram matrix (copied, permuted, into the pool), or computed by the kernel
        # object, called back for misses only
        gram = None if rows.gram is None else np.ascontiguousarray(rows.gram, dtype=np.float64)
        fill = None
        self.capacity = capacity
        # at most m rows are ever needed; without a cache one row is recomputed per request
        pool = np.empty((min(capacity, m) if capacity > 0 else 1, m))
        if gram is None:

            def fill(p: int, s: int) -> None:
                rows.compute_into(p, pool[s])

        self.pool = pool
        # cap the Fig. 3 iterations at what fits a C long on every platform
        self.core = _cs_core.Solver(
            st.Fk,
            st.tau,
            st.pen,
            st.yv,
            st.Av,
            st.perm,
            st.pos,
            pool,
            capacity > 0,
            fill,
            gram,
            st.nA,
            settings.fp_tol,
            min(settings.fp_max_iter, 2**31 - 1),
            settings.exact,
            settings.active,
        )

    @property
    def updates(self) -> int:
        return self.core.counters()["updates"]

    def run_round(self, thr: float, max_updates: int) -> bool:
        stalled = self.core.run_round(float(thr), int(max_updates))
        self.st.nA = self.core.counters()["n_active"]
        return stalled

    def sweep(self) -> None:
        self.core.sweep()

    def counters(self) -> dict:
        """The C loop's counters: updates, rows, syncs, swaps and the work done (positions visited)."""
        return self.core.counters()

    def stats(self) -> dict:
        c = self.core.counters()
        return {
            "cache_rows": self.capacity,
            "cache_hits": c["cache_hits"],
            "kernel_rows_computed": c["kernel_rows_computed"],
            "cache_evictions": c["cache_evictions"],
        }
