"""Kernel multiclass SVM of Crammer & Singer (JMLR 2001): the dual (15) by the fixed-point algorithm.

Primal (7): min_M ½β||M||² + Σ_i ξ_i  s.t.  M_{y_i}·x_i + δ_{y_i,r} − M_r·x_i ≥ 1 − ξ_i  (C = 1/β).
Dual (15) in τ_i = 1_{y_i} − η_i (shape (m, k)):

    max_τ Q(τ) = −½ Σ_ij K_ij τ_i·τ_j + β Σ_i τ_{i,y_i}   s.t.  τ_i ≤ 1_{y_i},  Σ_r τ_ir = 0,

and the classifier (16) H(x) = argmax_r Σ_i τ_ir K(x, x_i); the scores we report are those of M,
f_r(x) = β^{-1} Σ_i τ_ir K(x, x_i) (eq. 12), so margins are in the units of (7).

Algorithm (Fig. 4): F_ir = Σ_j K_ij τ_jr − β δ_{y_i,r} (eq. 23) is kept up to date; the KKT
quantity ψ_i = max_r F_ir − min_{r: τ_ir < δ_{y_i,r}} F_ir (eq. 32) selects the example p with the
largest ψ; its reduced problem (20) becomes (34) with D_r = F_pr/A_p − τ_pr + δ_{r,y_p} and is
solved by the fixed point of Fig. 3 from θ = mean(D) − 1/k (the image of θ_1 = min_r D_r) with
accuracy ε/2; then F ← F + K(·, x_p) Δτ_p.  Termination: max_i ψ_i < βε.

Sec. 7's improvements, each switchable (:class:`CSOptions`):
- ``selection``: ``kkt`` (Fig. 4) or ``cyclic`` (the baseline "version 1": sweep the examples in
  order, solving every reduced problem, until a sweep ends with max ψ < βε);
- ``active_set``: look for p first in A = {i: τ_i ≠ 0}, scan the rest only when every i ∈ A has
  ψ_i below the current accuracy; an example whose τ_i returns to 0 leaves A;
- ``cooling`` of ε: the loop runs in rounds t = 0, 1, ...; round t runs Fig. 4 at accuracy ε_t
  until no example violates it, then ε_{t+1} follows the schedule, floored at ε:
  exponential ε_t = ε_0 e^{−t}, linear ε_t = ε_0/(t+1), logarithmic ε_t = ε_{t−1}/log10(t+10)
  (see the deviation note below); ``none``: one round at ε;
- ``cache_mb``: LRU cache of kernel rows under a memory bound (:mod:`.kernel_cache`);
- ``sparse``: CSR inputs for the kernel rows (``auto`` when at least 20 % of the entries are zero,
  the paper's observation).

Engines (``engine``, :mod:`.loops`): the loop of Fig. 4 runs in compiled code (``compiled``, the C
extension ``_cs_core`` built at install when a C compiler is present) or in numpy (``numpy``, the
fallback); ``auto`` takes the compiled one when it was built.  Both run the same steps on the same
state in the same floating-point order and return the same τ; the switches above act on both.

Deviation (logarithmic cooling): read literally, ε_0/log10(t+10) with t the round index needs about
10^996 rounds to reach ε = 10^{−3}; we apply the factor 1/log10(t+10) per round (compounding),
which keeps ε "relatively large for a long period and then decreases moderately" and reaches
10^{−3} in about 30 rounds.

Objective and duality gap (in the scale of (7)): with F as above,
P = ½β^{-1}(Σ τ·F + β Σ τ_{iy_i}) + β^{-1} Σ_i (max_r F_ir − F_{iy_i}),
D = Q(τ)/β, and P − D = β^{-1}[Σ τ·F + Σ_i (max_r F_ir − F_{iy_i})] ≥ 0, all O(mk) from F.
"""

from __future__ import annotations

import math
import time

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.baselines.crammer_singer.kernel_cache import KernelRows
from gpmodels.baselines.crammer_singer.loops import (
    ENGINES,
    CompiledLoop,
    LoopSettings,
    LoopState,
    NumpyLoop,
    resolve_engine,
)
from gpmodels.errors import InputError
from gpmodels.kernels.base import Kernel
from gpmodels.validation import boolean, check_features, nonnegative_number, one_of, positive_int, positive_number

__all__ = [
    "CSOptions",
    "CSResult",
    "CrammerSingerModel",
    "fit_crammer_singer",
    "COOLINGS",
    "SELECTIONS",
    "SPARSE_MODES",
    "REDUCED_SOLVERS",
    "cooling_schedule",
    "dual_objective",
    "duality_gap",
    "run_cyclic_sweeps",
    "run_cooling_rounds",
]

COOLINGS = ("none", "exponential", "linear", "logarithmic")
SELECTIONS = ("kkt", "cyclic")
SPARSE_MODES = ("auto", "dense", "sparse")
REDUCED_SOLVERS = ("fixed_point", "exact")


@attrs.frozen
class CSOptions:
    """Settings of the Crammer–Singer solver (module docstring); C = 1/β in SVC's terms.

    ``engine``: ``auto`` (compiled when the C extension is built, else numpy), ``compiled`` (an
    error when it is not built) or ``numpy``; :func:`.loops.compiled_available` tells which.
    """

    beta: float = attrs.field(default=1.0, validator=positive_number())
    epsilon: float = attrs.field(default=1e-3, validator=positive_number())
    selection: str = attrs.field(default="kkt", validator=one_of(SELECTIONS))
    active_set: bool = attrs.field(default=True, validator=boolean())
    cooling: str = attrs.field(default="logarithmic", validator=one_of(COOLINGS))
    epsilon0: float = attrs.field(default=0.999, validator=positive_number())
    cache_mb: float = attrs.field(default=200.0, validator=nonnegative_number())
    sparse: str = attrs.field(default="auto", validator=one_of(SPARSE_MODES))
    reduced_solver: str = attrs.field(default="fixed_point", validator=one_of(REDUCED_SOLVERS))
    fixed_point_max_iter: int = attrs.field(default=1000, validator=positive_int())
    max_updates: int = attrs.field(default=10_000_000, validator=positive_int())
    max_sweeps: int = attrs.field(default=1000, validator=positive_int())
    engine: str = attrs.field(default="auto", validator=one_of(ENGINES))

    def __attrs_post_init__(self):
        if self.selection == "cyclic" and (self.active_set or self.cooling != "none"):
            raise InputError(
                f"CSOptions.selection must be 'kkt' unless active_set=False and cooling='none' "
                f"(selection='cyclic' is the baseline without KKT selection); got selection='cyclic', "
                f"active_set={self.active_set!r} and cooling={self.cooling!r}"
            )


def cooling_schedule(kind: str, epsilon0: float, epsilon: float, rounds: int) -> list[float]:
    """The accuracies ε_0, ε_1, ... of the rounds, ending at ε (at most ``rounds`` entries)."""
    if kind not in COOLINGS:
        raise InputError(f"cooling must be one of {COOLINGS}; got {kind!r}")
    if kind == "none" or epsilon0 <= epsilon:
        return [epsilon]
    out, e, t = [], epsilon0, 0
    while e > epsilon and t < rounds - 1:
        out.append(e)
        t += 1
        if kind == "exponential":
            e = epsilon0 * math.exp(-t)
        elif kind == "linear":
            e = epsilon0 / (t + 1)
        else:
            e = e / math.log10(t + 10)
    out.append(epsilon)
    return out


@attrs.frozen
class CSResult:
    """Solver output: τ (m, k), F (m, k), objectives, gap, counters, a per-round trace."""

    tau: np.ndarray
    F: np.ndarray
    dual_objective: float  # Q(τ) of (15)
    primal: float  # (7) at M(τ)
    dual: float  # Q(τ)/β, the dual of (7)
    gap: float  # primal − dual ≥ 0
    max_psi: float  # max_i ψ_i / β at the end
    converged: bool
    message: str
    updates: int
    rounds: int
    seconds: float
    trace: tuple  # dicts per round: epsilon, updates, seconds, max_psi, Q, gap
    stats: dict

    def as_dict(self) -> dict:
        """The fields in order but τ and F, the trace as a list, and the kernel-row statistics spread in."""
        fields = attrs.asdict(self, recurse=False, filter=attrs.filters.exclude("tau", "F", "stats"))
        return fields | {"trace": list(self.trace), **self.stats}


def _inner(a: np.ndarray, b: np.ndarray) -> float:
    """Σ a∘b without BLAS: these run between the solver's rounds, and a threaded BLAS call leaves
    OpenBLAS's worker threads spinning for a while, taking a core from the compiled loop."""
    return float(np.einsum("ij,ij->", a, b))


def dual_objective(tau: np.ndarray, F: np.ndarray, y: np.ndarray, beta: float) -> float:
    """Q(τ) of (15) from F (eq. 23): −½ Σ τ·F + ½β Σ_i τ_{i,y_i}.  # shape: tau, F (m, k)"""
    ar = np.arange(y.size)
    return float(-0.5 * _inner(tau, F) + 0.5 * beta * tau[ar, y].sum())


def duality_gap(tau: np.ndarray, F: np.ndarray, y: np.ndarray, beta: float) -> tuple[float, float, float]:
    """(primal, dual, gap) of (7) from F (module docstring).  # shape: tau, F (m, k)"""
    ar = np.arange(y.size)
    tF = _inner(tau, F)
    ty = float(tau[ar, y].sum())
    slack = float((F.max(axis=1) - F[ar, y]).sum())
    primal = 0.5 * (tF + beta * ty) / beta + slack / beta
    dual = (-0.5 * tF + 0.5 * beta * ty) / beta
    return primal, dual, (tF + slack) / beta


def _prepare_inputs(kernel: Kernel, X, mode: str):
    if getattr(kernel, "supports_sparse", True) is False:
        return check_features("X", X, allow_sparse=False)
    X = check_features("X", X)
    if mode == "dense":
        return X.toarray() if sp.issparse(X) else X
    if mode == "sparse":
        return X if sp.issparse(X) else sp.csr_matrix(X)
    n_entries = X.shape[0] * X.shape[1]
    nnz = X.nnz if sp.issparse(X) else int(np.count_nonzero(X))
    zero_fraction = 1.0 - nnz / max(n_entries, 1)
    if zero_fraction >= 0.2:
        return X if sp.issparse(X) else sp.csr_matrix(X)
    return X.toarray() if sp.issparse(X) else X


class CrammerSingerModel:
    """A fitted Crammer–Singer machine: scores f_r(x) = β^{-1} Σ_{i ∈ SV} τ_ir K(x, x_i) (eqs. 12, 16)."""

    def __init__(
        self,
        kernel: Kernel | None,
        X_support,
        tau_support: np.ndarray,
        support: np.ndarray,
        beta: float,
        n_classes: int,
        result: CSResult,
    ):
        self.kernel = kernel
        self.X_support_ = X_support
        self.tau_support_ = tau_support  # shape: (n_sv, k)
        self.support_ = support
        self.beta = beta
        self.n_classes = n_classes
        self.result = result

    def decision_function(self, X_new) -> np.ndarray:
        """Scores f(x), shape (n, k)."""
        if self.kernel is None:
            raise InputError("this model was fitted on a Gram matrix; use decision_from_gram(K_new_train)")
        if getattr(self.kernel, "supports_sparse", True) is False:
            X_new = check_features("X_new", X_new, allow_sparse=False)
        else:
            X_new = check_features("X_new", X_new)
            if sp.issparse(self.X_support_) and not sp.issparse(X_new):
                X_new = sp.csr_matrix(X_new)
            elif not sp.issparse(self.X_support_) and sp.issparse(X_new):
                X_new = X_new.toarray()
        if self.support_.size == 0:
            return np.zeros((X_new.shape[0], self.n_classes))
        Kx = self.kernel.gram(X_new, self.X_support_)
        return (Kx @ self.tau_support_) / self.beta

    def decision_from_gram(self, K_new_train: np.ndarray) -> np.ndarray:
        """Scores from K(X_new, X_train), shape (n, m) -> (n, k)."""
        K_new_train = np.asarray(K_new_train, dtype=np.float64)
        m = self.result.tau.shape[0]
        if K_new_train.ndim != 2 or K_new_train.shape[1] != m:
            raise InputError(f"Dimension mismatch: K_new_train must have shape (*, {m}); got {K_new_train.shape}")
        return (K_new_train[:, self.support_] @ self.tau_support_) / self.beta

    def predict(self, X_new) -> np.ndarray:
        """argmax_r f_r(x) (eq. 16), shape (n,)."""
        return np.argmax(self.decision_function(X_new), axis=1)


def _check_labels(y, n: int, n_classes: int | None) -> tuple[np.ndarray, int]:
    y = np.asarray(y)
    if y.shape != (n,):
        raise InputError(f"Dimension mismatch: y must have shape ({n},); got {y.shape}")
    if y.dtype.kind not in "iu":
        if y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
            y = y.astype(np.intp)
        else:
            raise InputError(f"labels y must be integers 0..k-1; got dtype {y.dtype}")
    k = int(y.max()) + 1 if n_classes is None else int(n_classes)
    if k < 2:
        raise InputError(f"Crammer–Singer needs at least 2 classes; got {k}")
    if y.min() < 0 or y.max() >= k:
        raise InputError(f"labels must lie in 0..{k - 1}; got values from {y.min()} to {y.max()}")
    return y.astype(np.intp), k


def _training_rows(kernel: Kernel | None, X, gram: np.ndarray | None, o: CSOptions):
    """(kernel rows, training inputs as used or None) from a kernel and X, or from a Gram matrix."""
    if gram is not None:
        return KernelRows(None, gram=gram), None
    if kernel is None:
        raise InputError("fit_crammer_singer needs a kernel (or a Gram matrix `gram`)")
    Xs = _prepare_inputs(kernel, X, o.sparse)
    return KernelRows(kernel, Xs, memory_mb=o.cache_mb, enabled=o.cache_mb > 0), Xs


def run_cyclic_sweeps(loop, o: CSOptions, record) -> tuple[int, str]:
    """The baseline "version 1" of Sec. 7: sweep the examples in order, solving every reduced problem,
    until a sweep ends with max ψ < βε (``record(ε)`` appends the trace entry that holds max ψ / β).
    Returns (sweeps, message)."""
    sweeps, last = 0, None
    while sweeps < o.max_sweeps and loop.updates < o.max_updates:
        loop.sweep()
        sweeps += 1
        last = record(o.epsilon)
        if last["max_psi"] < o.epsilon:
            break
    return sweeps, "max ψ < βε after a sweep" if last["max_psi"] < o.epsilon else "max_sweeps reached"


def run_cooling_rounds(loop, o: CSOptions, record) -> tuple[int, str]:
    """Fig. 4 in rounds of decreasing accuracy (Sec. 7, cooling of ε): round t selects by the KKT
    quantity ψ (eq. 32) until max ψ ≤ βε_t, ε_t from :func:`cooling_schedule`; a round that made
    updates (and the last one) is recorded by ``record(ε_t)``.  Returns (rounds, message)."""
    beta = float(o.beta)
    schedule = cooling_schedule(o.cooling, o.epsilon0, o.epsilon, 100_000)
    rounds, stalled = 0, False
    for eps_t in schedule:
        before = loop.updates
        stalled = loop.run_round(eps_t * beta, o.max_updates)
        rounds += 1
        if loop.updates > before or eps_t == schedule[-1]:
            record(eps_t)
        if stalled or loop.updates >= o.max_updates:
            break
    if stalled:
        return rounds, "stalled: the reduced problem of the selected example made no progress (round-off)"
    if loop.updates >= o.max_updates:
        return rounds, "max_updates reached"
    return rounds, "max ψ < βε"


def _final_result(
    st: LoopState, y, beta: float, epsilon: float, run: tuple, *, loop_stats: dict, extra_stats: dict
) -> tuple[CSResult, np.ndarray]:
    """The solution of Fig. 4 back in example order (the loop works on positions) as a
    :class:`CSResult`, with its duality gap, the largest KKT violation max_i ψ_i / β (converged when
    it is within ``epsilon``) and the support size; and the support (examples with τ_i ≠ 0).
    ``run``: (message, updates, rounds, seconds, trace) of the loop; the statistics are the loop's, the
    support size, then ``extra_stats``."""
    message, updates, rounds, seconds, trace = run
    order = st.pos
    Fk, tau, pen = st.Fk[:, order], st.tau[:, order], st.pen[:, order]
    F, tauT = np.ascontiguousarray(Fk.T), np.ascontiguousarray(tau.T)
    max_psi = float((Fk.max(axis=0) - (Fk + pen).min(axis=0)).max() / beta)
    primal, dual, gap = duality_gap(tauT, F, y, beta)
    support = np.flatnonzero(np.any(tauT != 0.0, axis=1))
    stats = {**loop_stats, "n_support": int(support.size), **extra_stats}
    result = CSResult(
        tauT,
        F,
        dual_objective(tauT, F, y, beta),
        primal,
        dual,
        gap,
        max_psi,
        bool(max_psi <= epsilon * (1 + 1e-12)),
        message,
        updates,
        rounds,
        seconds,
        trace,
        stats,
    )
    return result, support


def fit_crammer_singer(
    kernel: Kernel | None,
    X,
    y,
    options: CSOptions = CSOptions(),
    *,
    n_classes: int | None = None,
    gram: np.ndarray | None = None,
    on_iteration=None,
) -> CrammerSingerModel:
    """Solve (15) by Fig. 4 with the improvements of Sec. 7 chosen in ``options``
    (:func:`run_cooling_rounds`, or :func:`run_cyclic_sweeps` for ``selection='cyclic'``).
    ``on_iteration(record)`` is called with each trace record (a recorded round or sweep: ``epsilon``,
    ``updates``, ``seconds``, ``max_psi``, ``Q``, ``gap``), for progress.

    ``kernel`` with training inputs ``X`` (dense or CSR; shape (m, d)), or ``gram`` (m x m) with
    ``kernel``/``X`` None.  ``y``: integer labels 0..k-1, shape (m,).
    """
    o = options
    rows, Xs = _training_rows(kernel, X, gram, o)
    m = rows.m
    y, k = _check_labels(y, m, n_classes)
    beta = float(o.beta)
    A = rows.diag()
    if np.any(A <= 0):
        raise InputError(
            f"K(x_i, x_i) must be > 0 for every example (eq. 18); example {int(np.argmin(A))} has {A.min()}"
        )
    engine = resolve_engine(o.engine)
    t0 = time.perf_counter()
    use_active = o.selection == "kkt" and o.active_set
    st = LoopState.initial(y, A, k, beta, 0 if use_active else m)
    loop = _make_loop(CompiledLoop if engine == "compiled" else NumpyLoop, st, rows, gram, o, use_active)
    trace, record = _trace_recorder(st, loop, beta, t0, on_iteration)
    run = run_cyclic_sweeps if o.selection == "cyclic" else run_cooling_rounds
    rounds, message = run(loop, o, record)
    seconds = time.perf_counter() - t0
    extra = {"sparse_inputs": bool(Xs is not None and sp.issparse(Xs)), "engine": engine}
    result, support = _final_result(
        st,
        y,
        beta,
        o.epsilon,
        (message, loop.updates, rounds, seconds, tuple(trace)),
        loop_stats=loop.stats(),
        extra_stats=extra,
    )
    X_sv = None if Xs is None else Xs[support]
    return CrammerSingerModel(
        kernel if gram is None else None, X_sv, result.tau[support].copy(), support, beta, k, result
    )


def _make_loop(Loop, st: LoopState, rows, gram, o: CSOptions, use_active: bool):
    """The inner loop of Fig. 4 over ``st``, calling Fig. 3 with accuracy ε/2.

    Rows kept: the LRU bound of the kernel rows, or, with a given Gram matrix, the number of (position-ordered)
    rows the compiled loop may copy within ``cache_mb``; F on A^c is deferred iff that is > 0."""
    capacity = rows.capacity if gram is None else int(o.cache_mb * 1024.0 * 1024.0 // (8 * rows.m))
    settings = LoopSettings(
        capacity=capacity,
        fp_tol=0.5 * o.epsilon,
        fp_max_iter=o.fixed_point_max_iter,
        exact=o.reduced_solver == "exact",
        active=use_active,
    )
    return Loop(st, rows, settings)


def _trace_recorder(st: LoopState, loop, beta: float, t0: float, on_iteration):
    """The trace list and ``record(eps_t)``, which appends one record (ε, updates, seconds, max ψ / β, the dual
    Q and the duality gap) and passes it to ``on_iteration``."""
    trace = []
    m = len(st.yv)

    def record(eps_t: float) -> dict:
        F, tT = st.Fk.T, st.tau.T
        _, _, gap = duality_gap(tT, F, st.yv, beta)
        trace.append(
            {
                "epsilon": eps_t,
                "updates": loop.updates,
                "seconds": time.perf_counter() - t0,
                "max_psi": float(st.psi(0, m).max() / beta),
                "Q": dual_objective(tT, F, st.yv, beta),
                "gap": gap,
            }
        )
        if on_iteration is not None:
            on_iteration(trace[-1])
        return trace[-1]

    return trace, record
