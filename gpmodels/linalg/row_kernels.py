"""Compiled passes over the (n, C) arrays of Newton–CG: the softmax factor's V and V^T, the pair line
search's Φ(λ) and Φ'(λ), and CG's vector updates, each one parallel sweep over the rows.

With many classes the (n, C) vectors are large (section B of WIPO-alpha, |J| = 7835 and C = 1172: 73 MB
each), and numpy's element-wise passes over them run on one core, each reading and writing the whole
array: V x alone was three passes and a BLAS row sum, one evaluation of the line search about fifteen
passes with two exponentials.  Here every such product is one sweep per row that keeps the row in cache,
on the cores of :func:`~gpmodels.linalg.compiled_loops.compiled_threads` (Numba's ``prange`` over row
ranges):

- softmax factor (Seeger 2008, Sec. 5.1.1; :class:`~gpmodels.likelihoods.softmax.SoftmaxFactor`):
  (V x)_i = s_i − π_i (1^T s_i), s_i = π_i^{1/2} ∘ x_i;  (V^T y)_i = π_i^{1/2} ∘ (y_i − (π_i^T y_i) 1),
  optionally plus a vector z (the Newton system's β + V^T K̃ V β in the same sweep);
- pair line search (Sec. 5.1.2) at α_λ = α + λ s, u_λ = u + λ s̃:
  Φ(λ) = ½ α_λ^T u_λ + Σ_i (l_i − y_i^T u_i),  Φ'(λ) = s̃^T (α_λ + π(u_λ) − y),  l_i = log 1^T exp(u_i);
- CG's updates y += c x and p = c p + z (element-wise: the same numbers as numpy's).

The row ranges are fixed blocks of :data:`ROWS_PER_RANGE` rows, not one per thread, and a reduction
adds the ranges' partial sums in range order, so the results do not depend on the number of threads.
The element-wise updates are compiled without ``fastmath`` (no fused multiply-add), so that they give
numpy's numbers bit for bit; the row reductions sum in their own order (they differ from numpy's
pairwise and BLAS sums by round-off).

Numba is the optional extra ``fast``.  Whether a fit's host passes run here is the execution plan's choice
(:class:`~gpmodels.inference.execution_plan.ExecutionPlan`'s ``sweeps``: Numba installed and vectors large
enough that a sweep's launch pays), made once per fit: CG's vectors then come from
:data:`~gpmodels.linalg.arrays.SWEPT_HOST`, the softmax factor from its ``swept`` form and the line search from
the likelihood's ``swept_pair_line_values``.  The kernels take any 2-D float arrays of one shape (strided ones
too, at a cost); CG's coefficients are per row, so the row blocks of several systems sweep together.
"""

from __future__ import annotations

import threading

import numpy as np

from gpmodels.linalg.compiled_loops import AVAILABLE, compile_parallel, compiled_threads, numba_threads

__all__ = [
    "AVAILABLE",
    "ROWS_PER_RANGE",
    "softmax_v",
    "softmax_vt",
    "softmax_line",
    "add_scaled",
    "scale_add",
]

#: rows per range of a sweep: ranges of this size are the unit of work and of the reductions' partial sums
ROWS_PER_RANGE = 32


def _prange(n):  # numba.prange in the compiled kernels (compile_parallel); range when run as Python
    return range(n)


def _v(x, pi, sqrt_pi, out, cuts):  # pragma: no cover - compiled
    """out_i = s_i − π_i (1^T s_i), s_i = π_i^{1/2} ∘ x_i."""
    C = x.shape[1]
    for t in _prange(cuts.size - 1):
        for i in range(cuts[t], cuts[t + 1]):
            total = 0.0
            for c in range(C):
                total += sqrt_pi[i, c] * x[i, c]
            for c in range(C):
                out[i, c] = sqrt_pi[i, c] * x[i, c] - pi[i, c] * total


def _vt(y, pi, sqrt_pi, plus, out, cuts):  # pragma: no cover - compiled
    """out_i = π_i^{1/2} ∘ (y_i − (π_i^T y_i) 1) [+ plus_i where ``plus`` has rows]."""
    C = y.shape[1]
    add = plus.shape[0] > 0
    for t in _prange(cuts.size - 1):
        for i in range(cuts[t], cuts[t + 1]):
            dot = 0.0
            for c in range(C):
                dot += pi[i, c] * y[i, c]
            if add:
                for c in range(C):
                    out[i, c] = plus[i, c] + (y[i, c] - dot) * sqrt_pi[i, c]
            else:
                for c in range(C):
                    out[i, c] = (y[i, c] - dot) * sqrt_pi[i, c]


def _line(alpha, s, u, st, Y, lam, parts, cuts):  # pragma: no cover - compiled
    """parts[t] = (Σ of ½ α_λ^T u_λ + l_i − y_i^T u_λ, Σ of s̃_i^T (α_λ + π_i − y_i)) over range t's rows; u_λ and
    exp(u_λ − max) of a row are formed once, in a row buffer that stays in cache."""
    C = u.shape[1]
    for t in _prange(cuts.size - 1):
        ul = np.empty(C)
        e = np.empty(C)
        phi = 0.0
        dphi = 0.0
        for i in range(cuts[t], cuts[t + 1]):
            m = -np.inf
            for c in range(C):
                ul[c] = u[i, c] + lam * st[i, c]
                m = max(m, ul[c])
            if not np.isfinite(m):
                m = 0.0
            total = 0.0
            for c in range(C):
                e[c] = np.exp(ul[c] - m)
                total += e[c]
            lse = m + np.log(total)
            inv = 1.0 / total
            row = 0.0
            for c in range(C):
                a = alpha[i, c] + lam * s[i, c]
                row += 0.5 * a * ul[c] - Y[i, c] * ul[c]
                dphi += st[i, c] * (a + (e[c] * inv - Y[i, c]))
            phi += row + lse
        parts[t, 0] = phi
        parts[t, 1] = dphi


def _axpy(y, c, x, cuts):  # pragma: no cover - compiled
    """y_i += c_i x_i in place (c: one coefficient per row)."""
    C = y.shape[1]
    for t in _prange(cuts.size - 1):
        for i in range(cuts[t], cuts[t + 1]):
            for j in range(C):
                y[i, j] += x[i, j] * c[i]


def _xpay(p, c, z, cuts):  # pragma: no cover - compiled
    """p_i = c_i p_i + z_i in place (c: one coefficient per row)."""
    C = p.shape[1]
    for t in _prange(cuts.size - 1):
        for i in range(cuts[t], cuts[t + 1]):
            for j in range(C):
                p[i, j] = p[i, j] * c[i] + z[i, j]


_compiled: dict = {}
_lock = threading.Lock()


def _kernels() -> dict:
    with _lock:
        if not _compiled:
            if not AVAILABLE:
                raise ImportError("the compiled row sweeps need Numba: pip install 'gpmodels[fast]'")
            for f in (_v, _vt, _line):
                _compiled[f.__name__[1:]] = compile_parallel(f)
            for f in (_axpy, _xpay):  # element-wise: no reassociation, no fused multiply-add
                _compiled[f.__name__[1:]] = compile_parallel(f, fastmath=False)
    return _compiled


def _cuts(n: int) -> np.ndarray:
    return np.arange(0, n + ROWS_PER_RANGE, ROWS_PER_RANGE).clip(max=n).astype(np.int64)


def _run(name: str, shape: tuple, threads: int | None, *args):
    kernel = _kernels()[name]  # compiled first: that chooses the threading layer before numba_threads starts one
    with numba_threads(compiled_threads(threads)):
        kernel(*args, _cuts(shape[0]))


def softmax_v(x, pi, sqrt_pi, out, threads: int | None = None) -> np.ndarray:
    """V x of the softmax factor into ``out`` (all (n, C)): (V x)_i = s_i − π_i (1^T s_i), s_i = π_i^{1/2} ∘ x_i
    (Seeger 2008, Sec. 5.1.1; no component fixed by App. B); returns ``out``."""
    _run("v", x.shape, threads, x, pi, sqrt_pi, out)
    return out


def softmax_vt(y, pi, sqrt_pi, plus=None, out=None, threads: int | None = None) -> np.ndarray:
    """V^T y (+ ``plus``) of the softmax factor: (V^T y)_i = π_i^{1/2} ∘ (y_i − (π_i^T y_i) 1) (Seeger 2008,
    Sec. 5.1.1; no component fixed by App. B), into ``out`` (default: a new array)."""
    out = np.empty_like(y) if out is None else out
    extra = np.empty((0, y.shape[1])) if plus is None else plus
    _run("vt", y.shape, threads, y, pi, sqrt_pi, extra, out)
    return out


def softmax_line(alpha, s, u, s_tilde, Y, lam: float, threads: int | None = None) -> tuple[float, float]:
    """(Φ(λ), Φ'(λ)) of the pair line search (Seeger 2008, Sec. 5.1.2) for the softmax likelihood at
    α_λ = α + λ s, u_λ = u + λ s̃ (all (n, C)): Φ(λ) = ½ α_λ^T u_λ + Σ_i (l_i − y_i^T u_λi) with
    l_i = log Σ_c exp(u_λic) (shifted by the row maximum), Φ'(λ) = s̃^T (α_λ + π(u_λ) − y)."""
    n = u.shape[0]
    parts = np.zeros((max(1, -(-n // ROWS_PER_RANGE)), 2))
    _run("line", u.shape, threads, alpha, s, u, s_tilde, Y, float(lam), parts)
    phi, dphi = parts.sum(axis=0)
    return float(phi), float(dphi)


def _per_row(c, n: int) -> np.ndarray:
    """A scalar, (1,), (n,) or (n, 1) coefficient as one per row (no copy)."""
    return np.broadcast_to(np.reshape(np.asarray(c, dtype=np.float64), -1), (n,))


def add_scaled(y, c, x, threads: int | None = None) -> np.ndarray:
    """y += c x in place (c a scalar or one per row), element-wise as numpy's ``y += x * c``; returns y."""
    _run("axpy", y.shape, threads, y, _per_row(c, y.shape[0]), x)
    return y


def scale_add(p, c, z, threads: int | None = None) -> np.ndarray:
    """p = c p + z in place (c a scalar or one per row), element-wise as numpy's ``p *= c; p += z``; returns p."""
    _run("xpay", p.shape, threads, p, _per_row(c, p.shape[0]), z)
    return p
