"""Φ_L, Φ_L^T and the class mixing Φ_L diag(w) Φ_L^T along axis 1, compiled, one point at a time.

The ANOVA prior's products (Seeger 2008, Sec. 3 and 5.3; :mod:`gpmodels.operators.anova`) apply the C x P
leaf rows Φ_L of the mixing matrix (u_p = Σ of ŭ over the path root -> p) to every point's (P, k) block
of an (n, P, k) array, and Φ_L^T to every (C, k) block.  With the non-root nodes numbered breadth first
(:class:`~gpmodels.hierarchy.ClassTree`: every parent precedes its children) both are one sweep over the
P nodes per point:

- Φ_L: a_p = ŭ_p + a_parent(p) in node order (the root's children: a_p = ŭ_p), then u_c = a_L(c);
- Φ_L^T: ẽ at the leaves, then ẽ_parent(p) += ẽ_p in reverse node order;
- the class mixing S V = Φ_L diag(w) Φ_L^T V of a merged product (a node group sharing one kernel
  matrix): both sweeps in a (P, k) scratch block per thread, so no (n, P, k) intermediate is ever
  formed and the memory is that of the input and the output, 2 n C k numbers.

Each reads its input once and writes its output once (P k additions per point); points run in parallel
(Numba's ``prange``, threads by :func:`~gpmodels.linalg.compiled_loops.compiled_threads`).  Without
Numba (:data:`AVAILABLE` False) ClassTree keeps its level-by-level numpy walks, which give the same sums.
"""

from __future__ import annotations

import threading

import numpy as np

from gpmodels.linalg.compiled_loops import AVAILABLE, compile_parallel, compiled_threads, numba_threads

__all__ = ["AVAILABLE", "phi_rows", "phi_t_rows", "mix_rows", "MIN_PARALLEL_WORK"]

#: below this many numbers (n P k) one thread runs the sweep: waking a thread team costs ~10 us on idle
#: cores and tens of ms on busy ones (:data:`gpmodels.kernels.sparse_products.MIN_PARALLEL_WORK`)
MIN_PARALLEL_WORK = 2_000_000


def _prange(n):  # numba.prange in the compiled kernels (compile_parallel); range when run as Python
    return range(n)


def _down(acc, parent, k):  # pragma: no cover - compiled
    """a_p += a_parent(p) in node order (parents first): Φ applied to the (P, k) block ``acc`` in place."""
    for p in range(parent.size):
        q = parent[p]
        if q >= 0:
            for c in range(k):
                acc[p, c] += acc[q, c]


def _up(acc, parent, k):  # pragma: no cover - compiled
    """e_parent(p) += e_p in reverse node order: Φ^T of leaf values in the (P, k) block ``acc`` in place."""
    for p in range(parent.size - 1, -1, -1):
        q = parent[p]
        if q >= 0:
            for c in range(k):
                acc[q, c] += acc[p, c]


def _phi(U, parent, leaves, out, cuts):  # pragma: no cover - compiled
    """out[i] = Φ_L U[i] for U (n, P, k), out (n, C, k)."""
    P, k = U.shape[1], U.shape[2]
    for t in _prange(cuts.size - 1):
        acc = np.empty((P, k))
        for i in range(cuts[t], cuts[t + 1]):
            acc[:, :] = U[i]
            _down(acc, parent, k)
            for j in range(leaves.size):
                out[i, j, :] = acc[leaves[j]]


def _phi_t(E, parent, leaves, out, cuts):  # pragma: no cover - compiled
    """out[i] = Φ_L^T E[i] for E (n, C, k), out (n, P, k)."""
    k = E.shape[2]
    for t in _prange(cuts.size - 1):
        for i in range(cuts[t], cuts[t + 1]):
            o = out[i]
            o[:, :] = 0.0
            for j in range(leaves.size):
                o[leaves[j], :] = E[i, j]
            _up(o, parent, k)


def _mix(V, parent, leaves, w, out, cuts):  # pragma: no cover - compiled
    """out[i] = Φ_L diag(w) Φ_L^T V[i] for V, out (n, C, k), in one (P, k) scratch block per range."""
    P, k = parent.size, V.shape[2]
    for t in _prange(cuts.size - 1):
        acc = np.empty((P, k))
        for i in range(cuts[t], cuts[t + 1]):
            acc[:, :] = 0.0
            for j in range(leaves.size):
                acc[leaves[j], :] = V[i, j]
            _up(acc, parent, k)
            for p in range(P):
                for c in range(k):
                    acc[p, c] *= w[p]
            _down(acc, parent, k)
            for j in range(leaves.size):
                out[i, j, :] = acc[leaves[j]]


def _mix1(V, parent, leaves, w, out, cuts):  # pragma: no cover - compiled
    """:func:`_mix` for one right-hand side (V, out (n, C)): the same sums, in a (P,) scratch vector."""
    P = parent.size
    for t in _prange(cuts.size - 1):
        acc = np.empty(P)
        for i in range(cuts[t], cuts[t + 1]):
            acc[:] = 0.0
            for j in range(leaves.size):
                acc[leaves[j]] = V[i, j]
            for p in range(P - 1, -1, -1):
                q = parent[p]
                if q >= 0:
                    acc[q] += acc[p]
            for p in range(P):
                acc[p] *= w[p]
            for p in range(P):
                q = parent[p]
                if q >= 0:
                    acc[p] += acc[q]
            for j in range(leaves.size):
                out[i, j] = acc[leaves[j]]


_compiled: dict = {}
_lock = threading.Lock()


def _kernels() -> dict:
    with _lock:
        if not _compiled:
            if not AVAILABLE:
                raise ImportError("the compiled tree products need Numba: pip install 'gpmodels[fast]'")
            import numba

            sweeps = {f.__name__: numba.njit(cache=True, nogil=True, boundscheck=False)(f) for f in (_up, _down)}
            _compiled.update({f.__name__[1:]: compile_parallel(f, **sweeps) for f in (_phi, _phi_t, _mix, _mix1)})
    return _compiled


def _as3(A: np.ndarray) -> np.ndarray:
    A = np.ascontiguousarray(A, dtype=np.float64)
    return A[:, :, None] if A.ndim == 2 else A.reshape(A.shape[0], A.shape[1], -1)


def _run(name: str, work: int, n: int, threads: int | None, *args) -> None:
    t = 1 if work < MIN_PARALLEL_WORK else compiled_threads(threads)
    parts = max(1, min(n, 4 * t if t > 1 else 1))
    cuts = np.linspace(0, n, parts + 1).astype(np.int64)
    kernel = _kernels()[name]
    with numba_threads(t):
        kernel(*args, cuts)


def phi_rows(U: np.ndarray, parent: np.ndarray, leaves: np.ndarray, threads: int | None = None) -> np.ndarray:
    """Φ_L along axis 1: U (n, P[, ...]) -> (n, C[, ...]), float64 (module docstring)."""
    U3 = _as3(U)
    out = np.empty((U3.shape[0], leaves.size, U3.shape[2]))
    _run("phi", U3.size, U3.shape[0], threads, U3, parent, leaves, out)
    return out.reshape((U.shape[0], leaves.size) + U.shape[2:])


def phi_t_rows(E: np.ndarray, parent: np.ndarray, leaves: np.ndarray, threads: int | None = None) -> np.ndarray:
    """Φ_L^T along axis 1: E (n, C[, ...]) -> (n, P[, ...]), float64 (module docstring)."""
    E3 = _as3(E)
    out = np.empty((E3.shape[0], parent.size, E3.shape[2]))
    _run("phi_t", out.size, E3.shape[0], threads, E3, parent, leaves, out)
    return out.reshape((E.shape[0], parent.size) + E.shape[2:])


def mix_rows(
    V: np.ndarray, parent: np.ndarray, leaves: np.ndarray, weights: np.ndarray, threads: int | None = None
) -> np.ndarray:
    """Φ_L diag(weights) Φ_L^T along axis 1: V (n, C[, ...]) -> (n, C[, ...]), float64, no (n, P, ...)
    intermediate (module docstring)."""
    V3 = _as3(V)
    out = np.empty_like(V3)
    w = np.ascontiguousarray(weights, dtype=np.float64)
    work = V3.shape[0] * parent.size * V3.shape[2]
    if V3.shape[2] == 1:  # one right-hand side (every CG step): scalar sweeps, no loop over k
        _run("mix1", work, V3.shape[0], threads, V3[:, :, 0], parent, leaves, w, out[:, :, 0])
    else:
        _run("mix", work, V3.shape[0], threads, V3, parent, leaves, w, out)
    return out.reshape(V.shape)
