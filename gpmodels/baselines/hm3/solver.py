"""H-M^3: hierarchical multilabel max-margin learning on the edge-marginal dual (Rousu et al., JMLR 2006).

Model (Sec. 2.3): orthogonal edge features φ_e^u(x, y) = [y_e = u] φ(x) on the class tree, so the
joint kernel is Σ_e [y_e = y'_e] K_x(x, x') with an x-kernel K_x from :mod:`gpmodels.kernels`.
Marginal dual (8), per example i, edge e, labeling u (arrays (m, P, 4), see
:mod:`.inference`):

    max_μ  Σ μ·ℓ − ½ μᵀ K_E μ   s.t.  μ ≥ 0,  Σ_u μ_e(i, u) ≤ C,  marginals of adjacent edges agree.

With ν_ie(u) = m_i [y_ie = u] − μ_ie(u) (m_i = Σ_u μ_ie(u), the same on every edge) the weight
vector is w_e^u = Σ_i ν_ie(u) φ(x_i), the edge scores H = K_x ν (m x 4P, one GEMM) give
(K_E μ)_ie(u) = H_ie(y_ie) − H_ie(u), the gradient g = ℓ − K_E μ is the loss-augmented margin
violation per edge, ||w||² = Σ ν·H, and the slack ξ_i = max_y Σ_e g_ie(y_e) (≥ 0, y = y_i gives 0).
Duality gap (Sec. 3.2): Σ_i (C ξ_i − μ_i·g_i) = primal ½||w||² + CΣξ minus dual.

Algorithm 1: repeat {choose a working set; K_x columns of the working set; for each i in it, its
gradient (H_i from the chunk start plus the chunk's earlier updates) and Algorithm 2; H += K_x[:, W]
Δν_W (one GEMM); g, ξ and the gap for all examples (the DP vectorised over examples)} until the
relative duality gap is below ``gap_tol``.

Algorithm 2 (conditional subspace gradient ascent): μ* = C·vertex(argmax_y g_i·μ(y)) by the DP of
Sec. 3.4 (the zero vertex when that maximum is ≤ 0), Δμ = μ* − μ_i, q = g_i·Δμ,
r = Δμᵀ K_ii Δμ, τ = min(q/r, 1), stop at q ≤ 0 or after the example's iteration limit.
K_ii Δμ = K_x(i, i) (Δν(y_i) − Δν) costs O(P) (Sec. 3.5, derived here for any K_x; the paper's
closed form is the case K_x(i, i) = 1), and r = K_x(i, i) Σ_e ||Δν_e||².

Working set (Sec. 3.2): examples that are inactive (m_i = 0) and non-violators (ξ_i = 0) are
dropped; the chunk is drawn (with replacement) with probability ∝ Δ_i − min_j Δ_j,
Δ_i = Cξ_i − μ_i·g_i, from the non-saturated examples (m_i < C) first, the saturated ones only when
the former yield fewer distinct examples than the chunk size; an example drawn k times gets k times
the base iteration limit.  ``working_set='cyclic'`` sweeps all examples in order instead.

Direction finding: ``direction='dp'`` (Sec. 3.4) or ``'lp'`` (the LP (11) solved by HiGHS through scipy, the
paper's LIPSOL comparison, :mod:`.lp`).
"""

from __future__ import annotations

import time

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.baselines.crammer_singer.kernel_cache import KernelRows
from gpmodels.baselines.hm3.inference import (
    TRAIN_LOSSES,
    best_labelings,
    best_single_paths,
    edge_losses,
    edge_onehot,
    parent_bits,
)
from gpmodels.baselines.hm3.lp import DirectionLP
from gpmodels.errors import InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.kernels.base import Kernel
from gpmodels.scoring.multilabel import NODE_WEIGHTINGS, check_multilabels
from gpmodels.validation import check_features, nonnegative_int, one_of, optional, positive_int, positive_number

__all__ = [
    "HM3Options",
    "HM3Result",
    "HM3Model",
    "fit_hm3",
    "conditional_gradient_ascent",
    "best_vertex",
    "edge_gradients",
    "dual_weights",
    "objectives_and_gaps",
    "WORKING_SETS",
    "DIRECTIONS",
]

WORKING_SETS = ("gap_sampling", "cyclic")
DIRECTIONS = ("dp", "lp")


@attrs.frozen
class HM3Options:
    """Settings of H-M^3 (module docstring)."""

    C: float = attrs.field(default=1.0, validator=positive_number())
    loss: str = attrs.field(default="delta", validator=one_of(TRAIN_LOSSES))
    scaling: str = attrs.field(default="uniform", validator=one_of(NODE_WEIGHTINGS))
    working_set: str = attrs.field(default="gap_sampling", validator=one_of(WORKING_SETS))
    chunk_size: int = attrs.field(default=200, validator=positive_int())
    iteration_limit: int = attrs.field(default=10, validator=positive_int())
    direction: str = attrs.field(default="dp", validator=one_of(DIRECTIONS))
    gap_tol: float = attrs.field(default=1e-2, validator=positive_number())
    max_passes: int = attrs.field(default=200, validator=positive_int())
    max_seconds: float = attrs.field(default=float("inf"), validator=positive_number(finite=False))
    seed: int | None = attrs.field(default=0, validator=optional(nonnegative_int()))  # gap sampling; None: unseeded


@attrs.frozen
class HM3Result:
    """μ (m, P, 4), objectives, gap, counters and a per-pass trace."""

    mu: np.ndarray
    dual: float
    primal: float
    gap: float
    converged: bool
    message: str
    passes: int
    csga_steps: int
    seconds: float
    trace: tuple

    def as_dict(self) -> dict:
        """The fields in order but μ, the trace as a list."""
        return attrs.asdict(self, recurse=False, filter=attrs.filters.exclude("mu")) | {"trace": list(self.trace)}


class HM3Model:
    """A fitted H-M^3 model: edge scores H_e(x, u) = Σ_i K_x(x, x_i) ν_ie(u); prediction by DP."""

    def __init__(self, kernel: Kernel, X_train, nu: np.ndarray, tree: ClassTree, result: HM3Result):
        self.kernel = kernel
        keep = np.flatnonzero(np.any(nu.reshape(nu.shape[0], -1) != 0.0, axis=1))
        self.support_ = keep
        self.X_support_ = X_train[keep]
        self.nu_support_ = nu[keep]  # shape: (n_sv, P, 4)
        self.tree = tree
        self.result = result

    def edge_scores(self, X_new) -> np.ndarray:
        """w_e^u · φ(x) for every test point, edge and labeling, shape (n, P, 4)."""
        X_new = check_features("X_new", X_new)
        if sp.issparse(self.X_support_) != sp.issparse(X_new):
            X_new = sp.csr_matrix(X_new) if sp.issparse(self.X_support_) else X_new.toarray()
        P = self.tree.n_nodes
        if self.support_.size == 0:
            return np.zeros((X_new.shape[0], P, 4))
        Kx = self.kernel.gram(X_new, self.X_support_)
        return (Kx @ self.nu_support_.reshape(self.support_.size, -1)).reshape(-1, P, 4)

    def predict(self, X_new) -> np.ndarray:
        """The consistent multilabel (union of partial paths) of maximal score, (n, P) bool (Sec. 5)."""
        return best_labelings(self.edge_scores(X_new), self.tree, consistent=True)[0]

    def predict_single_path(self, X_new) -> np.ndarray:
        """The class whose single root-to-leaf path scores highest, (n,) — for single-label data."""
        return best_single_paths(self.edge_scores(X_new), self.tree)


def edge_gradients(L: np.ndarray, H: np.ndarray, y_index: np.ndarray) -> np.ndarray:
    """g = ℓ − K_E μ with (K_E μ)_ie(u) = H_ie(y_ie) − H_ie(u) (module docstring), the loss-augmented
    margin violation per edge and labeling.  # shape: L, H (..., P, 4); y_index (..., P) -> (..., P, 4)"""
    return L - np.take_along_axis(H, y_index[..., None], axis=-1) + H


def best_vertex(g: np.ndarray, tree: ClassTree, C: float) -> np.ndarray:
    """The vertex μ* = C·vertex(argmax_y g·μ(y)) of the marginal polytope of one example (Rousu 2006,
    Alg. 2 line 4, by the DP of Sec. 3.4), or μ* = 0 when that maximum is ≤ 0.  # shape: g (P, 4)"""
    P = tree.n_nodes
    lab, val = best_labelings(g[None], tree)
    star = np.zeros((P, 4))
    if val[0] > 0.0:
        star[np.arange(P), 2 * parent_bits(lab, tree)[0].astype(np.intp) + lab[0]] = C
    return star


def conditional_gradient_ascent(
    g: np.ndarray,
    mu_i: np.ndarray,
    y_onehot: np.ndarray,
    k_ii: float,
    tree: ClassTree,
    C: float,
    limit: int,
    *,
    direction=None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Conditional subspace gradient ascent on one example (Rousu et al. 2006, Algorithm 2).

    Maximises the dual (8) over μ_i (the other examples fixed), from μ_i with edge gradients
    g = ℓ_i − K_E μ|_i, by at most ``limit`` conditional-gradient (Frank–Wolfe) steps:

        μ* = C·vertex(argmax_y g·μ(y))  (0 when that maximum is ≤ 0),   Δμ = μ* − μ_i,
        q = g·Δμ,   r = Δμᵀ K_ii Δμ,   τ = min(q/r, 1)  (eq. 10, clipped to stay feasible),
        μ_i ← μ_i + τ Δμ,   g ← g − τ K_ii Δμ,

    stopping when q ≤ 0 (μ_i optimal on its polytope).  K_ii Δμ = K_x(i, i)(Δν(y_i) − Δν) with
    Δν = Δm 1_{y_i} − Δμ (Sec. 3.5), O(P) per step.  ``direction``: None for the DP of Sec. 3.4
    (:func:`best_vertex`), or an object with ``solve(g) -> μ*`` (the LP (11), :class:`.lp.DirectionLP`).

    ``g``, ``mu_i`` (P, 4); ``y_onehot`` (P, 4) the true edge labelings; returns the new (μ_i, g) and
    the number of steps taken.  The inputs are not modified.
    """
    mu_i = mu_i.copy()
    g = g.copy()
    steps = 0
    for _ in range(limit):
        star = best_vertex(g, tree, C) if direction is None else direction.solve(g)
        dmu = star - mu_i
        q = float(np.vdot(g, dmu))
        if q <= 0.0:
            break
        dnu = dmu.sum(axis=1)[:1] * y_onehot - dmu  # Δν = Δm Y_i − Δμ, Δm the same on every edge
        dnu_y = (dnu * y_onehot).sum(axis=1, keepdims=True)
        s = k_ii * (dnu_y - dnu)  # K_ii Δμ (Sec. 3.5)
        r = float(np.vdot(dmu, s))
        tau = 1.0 if r <= 0.0 else min(q / r, 1.0)  # eq. (10), clipped to stay feasible
        mu_i += tau * dmu
        g -= tau * s
        steps += 1
    return mu_i, g, steps


def dual_weights(mu: np.ndarray, Yoh: np.ndarray) -> np.ndarray:
    """ν = m Y − μ with m_i = Σ_u μ_ie(u) (the same on every edge; read on edge 0).  # shape: (m, P, 4)"""
    return mu[:, :1, :].sum(axis=2, keepdims=True) * Yoh - mu


def objectives_and_gaps(mu, H, L, Yoh, y_index, tree: ClassTree, C: float):
    """(dual f, primal, slacks ξ (m,), per-example gaps Δ_i (m,)) of (8) at μ with H = K_x ν.

    f = Σ μ·ℓ − ½||w||², ||w||² = Σ ν·H, ξ_i = max(max_y Σ_e g_ie(y_e), 0) by the DP,
    primal = ½||w||² + C Σ ξ, Δ_i = max(C ξ_i − μ_i·g_i, 0) (Sec. 3.2; Algorithm 1, line 9).
    """
    nu = dual_weights(mu, Yoh)
    g = edge_gradients(L, H, y_index)
    _, vals = best_labelings(g, tree)
    xi = np.maximum(vals, 0.0)
    gap_i = C * xi - np.einsum("npu,npu->n", mu, g)
    w2 = float(np.vdot(nu, H))
    f = float(np.vdot(mu, L)) - 0.5 * w2
    primal = 0.5 * w2 + C * xi.sum()
    return f, primal, xi, np.maximum(gap_i, 0.0)


def _check_inputs(kernel, X, Y, tree: ClassTree):
    """Validated (kernel rows over X, multilabels Y) of :func:`fit_hm3`."""
    if not isinstance(kernel, Kernel):
        raise InputError(f"fit_hm3 needs a kernel from gpmodels.kernels; got {type(kernel).__name__}")
    X = check_features("X", X, allow_sparse=kernel.supports_sparse)
    rows = KernelRows(kernel, X, memory_mb=0.0, enabled=False)
    Y = check_multilabels(Y, tree)
    if Y.shape[0] != rows.m:
        raise InputError(f"Dimension mismatch: Y has {Y.shape[0]} rows but X has {rows.m}")
    return X, rows, Y


def _working_set(o: HM3Options, mu, xi, gap_i, rng):
    """UpdateWorkingSet (Sec. 3.2): (examples, per-example iteration limits); empty when none violates its KKT
    conditions."""
    m = mu.shape[0]
    if o.working_set == "cyclic":
        return np.arange(m), np.full(m, o.iteration_limit)
    mass = mu[:, 0, :].sum(axis=1)
    pool = ~((mass <= 0.0) & (xi <= 1e-12 * max(1.0, o.C)))
    return _draw_working_set(gap_i, mass, pool, float(o.C), o.chunk_size, o.iteration_limit, rng)


def _update_chunk(W, limits, rows: KernelRows, mu, H, L, Yoh, y_index, Kd, tree: ClassTree, C: float, direction):
    """Algorithm 1, lines 4-8: Algorithm 2 on each example of the working set W in turn (its edge scores
    H_i from the chunk start plus the chunk's earlier updates), then H += K_x[:, W] Δν_W (one GEMM).
    Updates μ and H in place; returns the number of Algorithm 2 steps."""
    m, P = mu.shape[0], tree.n_nodes
    Kc = rows.block(W)  # K_x(X, X_W), (m, s)
    KWW = Kc[W]  # (s, s)
    dnu = np.zeros((W.size, P, 4))
    steps = 0
    for t, i in enumerate(W):
        h = H[i] if t == 0 else H[i] + np.tensordot(KWW[t, :t], dnu[:t], axes=1)
        g = edge_gradients(L[i], h, y_index[i])
        mu_i, _, n_steps = conditional_gradient_ascent(
            g, mu[i], Yoh[i], Kd[i], tree, C, int(limits[t]), direction=direction
        )
        steps += n_steps
        dnu[t] = (mu_i.sum(axis=1)[:1] - mu[i].sum(axis=1)[:1]) * Yoh[i] - (mu_i - mu[i])
        mu[i] = mu_i
    H += (Kc @ dnu.reshape(W.size, -1)).reshape(m, P, 4)
    return steps


def fit_hm3(kernel: Kernel, X, Y, tree: ClassTree, options: HM3Options = HM3Options(), *, callback=None) -> HM3Model:
    """Train H-M^3 by Algorithms 1 and 2 (module docstring).

    ``X``: training inputs (m, d), dense or CSR; ``Y``: multilabels (m, P) over ``tree`` (validated
    with :func:`gpmodels.scoring.multilabel.check_multilabels`).
    ``callback(record)`` is called with each pass' trace record.
    """
    o = options
    X, rows, Y = _check_inputs(kernel, X, Y, tree)
    m, P, C = rows.m, tree.n_nodes, float(o.C)
    rng = np.random.default_rng(o.seed)
    Kd = rows.diag()
    L = edge_losses(Y, tree, o.loss, o.scaling)  # (m, P, 4)
    Yoh = edge_onehot(Y, tree)  # (m, P, 4)
    yidx = np.argmax(Yoh, axis=2)  # (m, P) index of y_ie
    mu = np.zeros((m, P, 4))
    H = np.zeros((m, P, 4))
    direction = None
    if o.direction == "lp":
        direction = DirectionLP(tree, C)
    t0 = time.perf_counter()
    steps = 0
    f, primal, xi, gap_i = objectives_and_gaps(mu, H, L, Yoh, yidx, tree, C)
    converged, message, passes = False, "max_passes reached", 0
    gap = primal - f
    trace = [{"pass": 0, "seconds": 0.0, "dual": f, "primal": primal, "gap": gap, "csga_steps": 0}]
    while passes < o.max_passes:
        if gap <= o.gap_tol * max(abs(primal), abs(f), 1e-300):
            converged, message = True, "relative duality gap below gap_tol"
            break
        if time.perf_counter() - t0 > o.max_seconds:
            message = "max_seconds reached"
            break
        W, limits = _working_set(o, mu, xi, gap_i, rng)
        if W.size == 0:
            converged, message = True, "no example violates its KKT conditions"
            break
        steps += _update_chunk(W, limits, rows, mu, H, L, Yoh, yidx, Kd, tree, C, direction)
        passes += 1
        f, primal, xi, gap_i = objectives_and_gaps(mu, H, L, Yoh, yidx, tree, C)  # Algorithm 1, line 9
        gap = primal - f
        rec = {
            "pass": passes,
            "seconds": time.perf_counter() - t0,
            "dual": f,
            "primal": primal,
            "gap": gap,
            "csga_steps": steps,
            "working_set": int(W.size),
        }
        trace.append(rec)
        if callback is not None:
            callback(rec)
    seconds = time.perf_counter() - t0
    result = HM3Result(mu, f, primal, gap, converged, message, passes, steps, seconds, tuple(trace))
    return HM3Model(kernel, X, dual_weights(mu, Yoh), tree, result)


def _draw_working_set(gap_i, mass, pool, C, size, base_limit, rng):
    """Working set and per-example iteration limits by KKT priority and gap sampling (Sec. 3.2)."""
    idx = np.flatnonzero(pool)
    if idx.size == 0:
        return idx, idx
    w = gap_i[idx] - gap_i[idx].min()
    nonsat = mass[idx] < C * (1.0 - 1e-9)
    counts = np.zeros(idx.size, dtype=np.intp)

    def draw(sel, n):
        ww = w[sel]
        tot = ww.sum()
        cand = np.flatnonzero(sel)
        if cand.size == 0 or n <= 0:
            return
        p = ww / tot if tot > 0 else np.full(cand.size, 1.0 / cand.size)
        picks = rng.choice(cand, size=n, replace=True, p=p)
        np.add.at(counts, picks, 1)

    draw(nonsat, size)
    distinct = int(np.count_nonzero(counts))
    if distinct < size:
        draw(~nonsat, size - distinct)
    chosen = np.flatnonzero(counts)
    order = np.argsort(~nonsat[chosen], kind="stable")  # non-saturated first
    chosen = chosen[order]
    return idx[chosen], counts[chosen] * base_limit
