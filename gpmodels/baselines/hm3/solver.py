"""H-M^3: hierarchical multilabel max-margin learning on the edge-marginal dual (Rousu et al., JMLR 2006).

Model (Sec. 2.3): orthogonal edge features φ_e^u(x, y) = [y_e = u] φ(x) on the class tree, so the
joint kernel is Σ_e [y_e = y'_e] K_x(x, x') with an x-kernel K_x from :mod:`gpmodels.kernels`.
Marginal dual (8), per example i, edge e, labeling u (arrays (m, P, 4), see
:mod:`.hm3_inference`):

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

Direction finding: ``direction='dp'`` (Sec. 3.4) or ``'lp'`` (the LP (11) solved by cvxpy, the
paper's LIPSOL comparison, :mod:`.hm3_lp`).
"""

from __future__ import annotations

import time

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.errors import InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.kernels.base import Kernel
from gpmodels.scoring.multilabel import SCALINGS, check_multilabels
from gpmodels.validation import check_features, nonnegative_int, one_of, optional, positive_int, positive_number
from gpmodels.baselines.hm3.inference import TRAIN_LOSSES, best_labelings, best_single_paths, edge_losses, edge_onehot
from gpmodels.baselines.crammer_singer.kernel_cache import KernelRows

__all__ = ["HM3Options", "HM3Result", "HM3Model", "fit_hm3", "WORKING_SETS", "DIRECTIONS"]

WORKING_SETS = ("gap_sampling", "cyclic")
DIRECTIONS = ("dp", "lp")


@attrs.frozen
class HM3Options:
    """Settings of H-M^3 (module docstring)."""

    C: float = attrs.field(default=1.0, validator=positive_number())
    loss: str = attrs.field(default="delta", validator=one_of(TRAIN_LOSSES))
    scaling: str = attrs.field(default="uniform", validator=one_of(SCALINGS))
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
        return {"dual": self.dual, "primal": self.primal, "gap": self.gap, "converged": self.converged,
                "message": self.message, "passes": self.passes, "csga_steps": self.csga_steps,
                "seconds": self.seconds, "trace": list(self.trace)}


class HM3Model:
    """A fitted H-M^3 model: edge scores H_e(x, u) = Σ_i K_x(x, x_i) ν_ie(u); prediction by DP."""

    def __init__(self, kernel: Kernel, X_train, nu: np.ndarray, tree: ClassTree, result: HM3Result):
        self.kernel = kernel
        keep = np.flatnonzero(np.any(nu.reshape(nu.shape[0], -1) != 0.0, axis=1))
        self.support_ = keep
        self.X_support_ = X_train[keep]
        self.nu_support_ = nu[keep]          # shape: (n_sv, P, 4)
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


def _dual_parts(mu, nu, H, L, Yoh):
    """(dual f, ||w||²) from μ, ν, H = K_x ν and the losses."""
    w2 = float(np.vdot(nu, H))
    return float(np.vdot(mu, L)) - 0.5 * w2, w2


def fit_hm3(kernel: Kernel, X, Y, tree: ClassTree, options: HM3Options = HM3Options(), *,
            callback=None) -> HM3Model:
    """Train H-M^3 by Algorithms 1 and 2 (module docstring).

    ``X``: training inputs (m, d), dense or CSR; ``Y``: multilabels (m, P) over ``tree`` (validated
    with :func:`gpmodels.scoring.multilabel.check_multilabels`).
    ``callback(record)`` is called with each pass' trace record.
    """
    o = options
    if not isinstance(kernel, Kernel):
        raise InputError(f"fit_hm3 needs a kernel from gpmodels.kernels; got {type(kernel).__name__}")
    X = check_features("X", X, allow_sparse=kernel.supports_sparse)
    rows = KernelRows(kernel, X, memory_mb=0.0, enabled=False)
    m = rows.m
    Y = check_multilabels(Y, tree)
    if Y.shape[0] != m:
        raise InputError(f"Dimension mismatch: Y has {Y.shape[0]} rows but X has {m}")
    P, C = tree.n_nodes, float(o.C)
    rng = np.random.default_rng(o.seed)
    Kd = rows.diag()
    L = edge_losses(Y, tree, o.loss, o.scaling)        # (m, P, 4)
    Yoh = edge_onehot(Y, tree)                          # (m, P, 4)
    yidx = np.argmax(Yoh, axis=2)                       # (m, P) index of y_ie
    mu = np.zeros((m, P, 4))
    H = np.zeros((m, P, 4))
    arP = np.arange(P)
    par_idx = np.where(tree.parent >= 0, tree.parent, P)   # the root -> a sentinel that is positive
    lp = None
    if o.direction == "lp":
        from gpmodels.baselines.hm3.lp import DirectionLP

        lp = DirectionLP(tree, C)
    t0 = time.perf_counter()
    trace = []
    steps = 0

    def status():
        nu = mu.sum(axis=2, keepdims=True)[:, :1] * Yoh - mu
        Hy = np.take_along_axis(H, yidx[:, :, None], axis=2)
        g = L - Hy + H
        _, vals = best_labelings(g, tree)
        xi = np.maximum(vals, 0.0)
        gap_i = C * xi - np.einsum("npu,npu->n", mu, g)
        f, w2 = _dual_parts(mu, nu, H, L, Yoh)
        primal = 0.5 * w2 + C * xi.sum()
        return f, primal, xi, np.maximum(gap_i, 0.0)

    def csga(i: int, h: np.ndarray, limit: int) -> np.ndarray:
        """Algorithm 2 on example i with edge scores h = H_i (P, 4); returns Δν_i."""
        nonlocal steps
        yo = Yoh[i]
        mu_i = mu[i].copy()
        g = L[i] - np.take_along_axis(h, yidx[i][:, None], axis=1) + h
        kii = Kd[i]
        for _ in range(limit):
            if lp is None:
                lab, val = best_labelings(g[None], tree)
                star = np.zeros((P, 4))
                if val[0] > 0.0:
                    labx = np.append(lab[0], True)
                    star[arP, 2 * labx[par_idx].astype(np.intp) + lab[0]] = C
            else:
                star = lp.solve(g)
            dmu = star - mu_i
            q = float(np.vdot(g, dmu))
            if q <= 0.0:
                break
            dnu = dmu.sum(axis=1)[:1] * yo - dmu        # Δν = Δm Y_i − Δμ, Δm the same on every edge
            dnu_y = (dnu * yo).sum(axis=1, keepdims=True)
            s = kii * (dnu_y - dnu)                     # K_ii Δμ (Sec. 3.5)
            r = float(np.vdot(dmu, s))
            tau = 1.0 if r <= 0.0 else min(q / r, 1.0)  # eq. (10), clipped to stay feasible
            mu_i += tau * dmu
            g -= tau * s
            steps += 1
        dnu_i = (mu_i.sum(axis=1)[:1] - mu[i].sum(axis=1)[:1]) * yo - (mu_i - mu[i])
        mu[i] = mu_i
        return dnu_i

    f, primal, xi, gap_i = status()
    converged, message, passes = False, "max_passes reached", 0
    gap = primal - f
    trace.append({"pass": 0, "seconds": 0.0, "dual": f, "primal": primal, "gap": gap, "csga_steps": 0})
    order = np.arange(m)
    while passes < o.max_passes:
        if gap <= o.gap_tol * max(abs(primal), abs(f), 1e-300):
            converged, message = True, "relative duality gap below gap_tol"
            break
        if time.perf_counter() - t0 > o.max_seconds:
            message = "max_seconds reached"
            break
        # -------- UpdateWorkingSet (Sec. 3.2)
        if o.working_set == "cyclic":
            W, limits = order, np.full(m, o.iteration_limit)
        else:
            mass = mu[:, 0, :].sum(axis=1)
            pool = ~((mass <= 0.0) & (xi <= 1e-12 * max(1.0, C)))
            W, limits = _draw_working_set(gap_i, mass, pool, C, o.chunk_size, o.iteration_limit, rng)
            if W.size == 0:
                message = "no example violates its KKT conditions"
                converged = True
                break
        # -------- Algorithm 1, lines 4-8
        Kc = rows.block(W)                              # K_x(X, X_W), (m, s)
        KWW = Kc[W]                                     # (s, s)
        dnu = np.zeros((W.size, P, 4))
        for t, i in enumerate(W):
            h = H[i] if t == 0 else H[i] + np.tensordot(KWW[t, :t], dnu[:t], axes=1)
            dnu[t] = csga(int(i), h, int(limits[t]))
        H += (Kc @ dnu.reshape(W.size, -1)).reshape(m, P, 4)
        passes += 1
        # -------- line 9
        f, primal, xi, gap_i = status()
        gap = primal - f
        rec = {"pass": passes, "seconds": time.perf_counter() - t0, "dual": f, "primal": primal, "gap": gap,
               "csga_steps": steps, "working_set": int(W.size)}
        trace.append(rec)
        if callback is not None:
            callback(rec)
    seconds = time.perf_counter() - t0
    nu = mu[:, :1, :].sum(axis=2, keepdims=True) * Yoh - mu
    result = HM3Result(mu, f, primal, gap, converged, message, passes, steps, seconds, tuple(trace))
    return HM3Model(kernel, X, nu, tree, result)


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
    order = np.argsort(~nonsat[chosen], kind="stable")   # non-saturated first
    chosen = chosen[order]
    return idx[chosen], counts[chosen] * base_limit
