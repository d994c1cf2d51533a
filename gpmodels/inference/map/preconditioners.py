"""Preconditioners for the Newton systems (I + V^T K̃ V) β = r of Newton–CG (Seeger 2008, eq. 5).

Each preconditioner is a small class built once per fit on the operator, behind one protocol
(:class:`Preconditioner`): ``inverse(hf)`` gives, per Newton iteration, P^{-1} for the Hessian factor ``hf`` at
the current iterate as host arrays (:class:`Inverse`), and ``inverse(hf).on(ops, factor)`` its application
apply(r) = P^{-1} r, written once over the array primitives ``ops`` of CG's arrays
(:mod:`gpmodels.linalg.arrays`: the host's, or a device backend's).  ``NewtonOptions.preconditioner``
names one (:data:`PRECONDITIONERS`; ``auto``: the execution plan's choice,
:func:`~gpmodels.inference.execution_plan.auto_preconditioner`; the ones that form per-point C x C blocks only
within the plan's ``point_blocks_max_bytes``):

``diagonal``  diag(I + V^T K̃ V), App. B: from diag K̃ and the per-point products K̃_i π_i.
``block``     block-Jacobi over points: the exact C x C blocks I + V_i^T K̃_i V_i (K̃_i: the
              per-point block of K̃), inverted once per Newton iteration.  It captures the
              coupling of the classes of one point (strong under the ANOVA prior) but none between
              points.
``lowrank``   deflation of the leading eigen-directions of the kernel, with the App. B diagonal
              for the rest.  It needs K̃ in Kronecker-sum form K̃ = Σ_t M_t ⊗ S_t (points ⊗
              classes, :meth:`Operator.kron_terms`): the flat prior (S = diag v), the ANOVA prior
              (S = Φ_L D_v Φ_L^T, the tree's class covariance), coupling (S = B D_v B^T) and the
              intercept (1 1^T ⊗ σ² I).  Each M_t gets a rank-r_t eigen-approximation
              Q_t Λ_t Q_t^T by a randomized range finder with power iterations (Halko et al. 2011;
              once per fit, O(r) MVMs with M_t), so that

                  K̃ ≈ L L^T + R,   L = [√λ_tj q_tj ⊗ F_t]_{t,j},  F_t F_t^T = S_t,

              and the preconditioner is P = D + Z Z^T with Z = V^T L and D = diag(I + V^T R V)
              (the App. B formula applied to the residual R = K̃ - L L^T).  By Woodbury,
                  P^{-1} = D^{-1} - D^{-1} Z (I + Z^T D^{-1} Z)^{-1} Z^T D^{-1},
              where Z^T D^{-1} Z = L^T (V D^{-1} V^T) L only needs the per-point C x C matrices
              G_i = V_i D_i^{-1} V_i^T: its (k, l) block is F_k^T (Σ_i a_ik a_il G_i) F_l, one
              GEMM of size R0^2 x n x C^2 per Newton iteration (R0 = Σ r_t eigenvectors, R columns
              of L), or, where cheaper (the flat prior: one column of F per eigenvector), Σ_i
              L_i^T G_i L_i from the rows L_i (C x R) of L, O(n C R (C + R)).  Applying P^{-1}
              costs O(n C R0) per CG step: L^T v and L z go through L's factors a_k ⊗ F_k.
``lowrank_block`` the same deflation with the per-point C x C blocks of I + V^T R V in place of
              its diagonal (G_i = V_i B_i^{-1} V_i^T): once the kernel's outlying directions are
              deflated, the coupling of the classes within a point (the tree's S under the ANOVA
              prior) is what is left, and the blocks capture it.  The most effective kind for the
              hierarchical systems; O(n C^3) per Newton iteration.

Memory: ``block``, ``lowrank`` and ``lowrank_block`` hold (n, C, C) arrays, fine for C up to a few
hundred classes; beyond that the diagonal is the practical choice.

Why ``lowrank`` helps: on text with a linear kernel, M = X X^T has a few eigenvalues far above
the rest (the shared vocabulary; on news20 the largest is 16 times the second).  Each such
direction appears in the Newton system once per class direction of S, a cluster of outlying
eigenvalues that CG has to resolve one by one; deflating them removes that cluster, for the flat
and the hierarchical prior alike, and for the hierarchical one with the tree's coupling S exact.
Operators without a Kronecker form get the diagonal (:func:`make_preconditioner`).

Each preconditioner declares ``forcing_in_alpha_space``: whether Newton–CG measures its forcing test on
V r, the residual mapped to α-space (which ignores the β-direction √π_i per point that α' = V β does
not see, and the D^{-1/2} amplification of a poor warm start), or on r.  The diagonal keeps r (the
original path); with the others a residual test stopped after one step and stalled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import attrs
import numpy as np
import scipy.linalg as sla

from gpmodels.errors import InputError
from gpmodels.inference import execution_plan
from gpmodels.inference.map.deflation import block_term_eigenpairs, deflated_terms, term_eigenpairs
from gpmodels.inference.map.row_blocks import RowBlocksPreconditioner, separate_inverses
from gpmodels.linalg.arrays import HOST, Made
from gpmodels.operators.base import KronTerm, Operator

__all__ = [
    "Preconditioner",
    "DiagonalPreconditioner",
    "BlockJacobiPreconditioner",
    "LowRankPreconditioner",
    "LowRankBlockPreconditioner",
    "make_preconditioner",
    "PRECONDITIONERS",
    "point_blocks_bytes",
    "check_point_blocks",
]
#: ``lowrank``: the pair weights a_ik a_il (n R0 (R0 + 1) / 2 floats) are kept for the fit up to this size, else rebuilt
#: in every Newton iteration
PAIR_CACHE_BYTES = 64e6


def _rows_cheaper(n: int, C: int, R0: int, R: int, max_bytes: float = 256e6) -> bool:
    """Whether Z^T D^{-1} Z is cheaper from L's rows, O(n C R (C + R)), than from the pairs of
    eigenvectors, O(n R0^2 C^2), within ``max_bytes`` for L (n C R floats).  The flat prior (one
    column of F per eigenvector, R = R0) always takes the rows; the ANOVA prior (F_t with C columns)
    the pairs."""
    return C * R * (C + R) <= R0 * R0 * C * C and n * C * R * 8 <= max_bytes


def _sym_index(m: int) -> np.ndarray:
    """For each (i, j) of an m x m symmetric matrix, row-major, the position of (min, max) among the
    np.triu_indices(m) entries."""
    pos = np.zeros((m, m), dtype=np.intp)
    pos[np.triu_indices(m)] = np.arange(m * (m + 1) // 2)
    return np.where(np.arange(m)[:, None] <= np.arange(m)[None, :], pos, pos.T).ravel()


def _psd_factor(S: np.ndarray) -> np.ndarray:
    """F (C, s) with F F^T = S for symmetric PSD S, s = numerical rank."""
    lam, U = np.linalg.eigh(0.5 * (S + S.T))
    keep = lam > 1e-12 * max(float(lam.max(initial=0.0)), np.finfo(float).tiny)
    return U[:, keep] * np.sqrt(lam[keep])[None, :]


class Preconditioner(Protocol):
    """A CG preconditioner for the Newton systems on one operator, built once per fit."""

    #: the name the spec and ``NewtonOptions.preconditioner`` use
    name: str
    #: whether Newton–CG measures its forcing test on V r (α-space) rather than on r (module docstring)
    forcing_in_alpha_space: bool
    #: ``lowrank``: the eigensolvers' subspaces side by side, (n, Σ k_t), a start for the next fit; else None
    basis: np.ndarray | None

    def inverse(self, hf, setup=HOST) -> Inverse:
        """P^{-1} for the Hessian factor ``hf`` (host) of this Newton iteration, set up on the host, its large
        products on ``setup``'s arrays where they pay (the device of the system's products); apply(r) =
        P^{-1} r on the arrays of primitives ``ops`` (:mod:`gpmodels.linalg.arrays`) is
        ``inverse(hf).on(ops, factor)``, ``factor`` the Hessian factor held there (``hf`` on the host)."""

    @staticmethod
    def inverses(parts: list, factors: list, setup=HOST, cache: dict | None = None) -> list:
        """[P_k^{-1}] of blocks of points ``parts`` (preconditioners of this kind) at their rows' Hessian factors
        ``factors``, as ``inverse`` gives each, their set-ups' products shared where the kind can share them;
        ``cache``: what stays the same over the fit."""


class Inverse(Protocol):
    """A preconditioner's P^{-1} at one Newton iteration: host arrays, applied on any primitives' arrays."""

    def on(self, ops, factor) -> Callable:
        """r -> P^{-1} r (n, C) on the arrays of ``ops``, ``factor`` the Hessian factor held there."""

    @classmethod
    def join(cls, parts: list, cache: dict) -> Inverse:
        """diag(P_1, ..., P_F)^{-1} of ``parts`` of this kind over consecutive row ranges, as one; ``cache``: what
        stays the same over the fit (the joined eigenvectors)."""


@attrs.frozen(eq=False)
class _Scale:
    """x -> x s for an (n, C) array s (a diagonal inverse)."""

    s: np.ndarray

    def on(self, ops, factor=None) -> Callable:
        s = ops.from_host(self.s)
        return lambda x: x * s

    @classmethod
    def join(cls, parts, cache) -> _Scale:
        return cls(np.concatenate([p.s for p in parts]))


@attrs.frozen(eq=False)
class _Divide:
    """x -> x / d for an (n, C) array d (a diagonal)."""

    d: np.ndarray

    def on(self, ops, factor=None) -> Callable:
        d = ops.from_host(self.d)
        return lambda x: x / d

    @classmethod
    def join(cls, parts, cache) -> _Divide:
        return cls(np.concatenate([p.d for p in parts]))


@attrs.frozen(eq=False)
class _BlockSolve:
    """x_i -> B_i^{-1} x_i per point for inverse blocks (n, C, C)."""

    inv_blocks: np.ndarray

    def on(self, ops, factor=None) -> Callable:
        xp, B_inv = ops.xp, ops.from_host(self.inv_blocks)
        return lambda x: xp.matmul(B_inv, x[:, :, None])[:, :, 0]

    @classmethod
    def join(cls, parts, cache) -> _BlockSolve:
        return cls(np.concatenate([p.inv_blocks for p in parts]))


@attrs.frozen(eq=False)
class _Held:
    """Host arrays and their copies on the arrays of each primitives object that asks, made once."""

    arrays: tuple
    copies: Made = attrs.field(factory=Made)

    def on(self, ops) -> tuple:
        return self.copies.get(ops, lambda: tuple(ops.from_host(a) for a in self.arrays))


@attrs.frozen(eq=False)
class _Woodbury:
    """P^{-1} = B^{-1} - B^{-1} Z H^{-1} Z^T B^{-1}, Z = V^T L with L's columns a_k ⊗ F_k: ``solve_B`` B^{-1},
    ``H`` the diagonal blocks of H = I + Z^T B^{-1} Z (host), ``factors`` the eigenvectors A (n, R0) and F, the
    stack (R0, C, s) where every F_k has one shape, else block-diagonal F_big (R0 C, R)."""

    solve_B: Inverse
    H: tuple
    factors: _Held
    n_classes: int

    @property
    def stacked(self) -> bool:
        return self.factors.arrays[1].ndim == 3

    def on(self, ops, factor) -> Callable:
        xp, (A, F) = ops.xp, self.factors.on(ops)
        solve_B, solve_H = self.solve_B.on(ops), ops.spd_solver(self.H)
        buf = ops.buffer((A.shape[0], self.n_classes))  # V B^{-1} r, consumed at once in every step
        R0 = A.shape[1]

        def apply_lowrank(r):  # per CG step: B^{-1} r - B^{-1} Z H^{-1} Z^T B^{-1} r
            y = solve_B(r)
            AtVy = A.T @ factor.V_into(y, buf)  # shape: (R0, C)
            # L^T v and L z through L's factors a_k ⊗ F_k (reading A, n x R0, not L's rows, n C x R)
            if self.stacked:
                z = solve_H(xp.reshape(ops.stack_tmv(F, AtVy), (-1,)))
                LZ = A @ ops.stack_mv(F, xp.reshape(z, (R0, -1)))
            else:
                z = solve_H(F.T @ xp.reshape(AtVy, (-1,)))
                LZ = A @ xp.reshape(F @ z, (R0, -1))
            y -= solve_B(factor.Vt(LZ))  # y is this call's own array
            return y

        return apply_lowrank

    def F_big(self) -> np.ndarray:
        """Block-diagonal (R0 C, R) with F_k in block (k, k)."""
        F = self.factors.arrays[1]
        return sla.block_diag(*F) if self.stacked else F

    @classmethod
    def join(cls, parts, cache) -> _Woodbury:
        """The eigenvectors block-diagonal (N, Σ R0_k), the factors stacked where all have one shape, else
        block-diagonal, H's blocks side by side; the joined eigenvectors and factors made once (``cache``)."""
        if "factors" not in cache:
            stacked = all(p.stacked for p in parts) and len({p.factors.arrays[1].shape[1:] for p in parts}) == 1
            F = (
                np.concatenate([p.factors.arrays[1] for p in parts])
                if stacked
                else sla.block_diag(*[p.F_big() for p in parts])
            )
            cache["factors"] = _Held((sla.block_diag(*[p.factors.arrays[0] for p in parts]), F))
        solve_B = type(parts[0].solve_B).join([p.solve_B for p in parts], cache)
        return cls(solve_B, sum((p.H for p in parts), ()), cache["factors"], parts[0].n_classes)


class DiagonalPreconditioner:
    """P = diag(I + V^T K̃ V) of App. B, from diag K̃ and the per-point products K̃_i π_i."""

    name = "diagonal"
    forcing_in_alpha_space = False
    basis = None

    def __init__(self, op: Operator):
        self.diag_K = op.diag()  # shape: (n, C)
        self.point_block_mvm = op.point_block_mvm

    def inverse(self, hf, setup=HOST) -> _Scale:
        return _Scale(1.0 / hf.precond_diag(self.diag_K, self.point_block_mvm))

    inverses = staticmethod(separate_inverses)


class BlockJacobiPreconditioner:
    """Block-Jacobi over points: P = the exact C x C blocks I + V_i^T K̃_i V_i, inverted once per iteration."""

    name = "block"
    forcing_in_alpha_space = True
    basis = None

    def __init__(self, op: Operator):
        self.blocks_K = op.point_blocks()  # shape: (n, C, C)

    def inverse(self, hf, setup=HOST) -> _BlockSolve:
        return _BlockSolve(np.linalg.inv(hf.precond_blocks(self.blocks_K)))

    inverses = staticmethod(separate_inverses)


class LowRankPreconditioner:
    """P = D + Z Z^T: the leading kernel eigen-directions deflated, D = diag(I + V^T R V) for the
    residual R = K̃ - L L^T (module docstring); needs the operator's Kronecker form ``terms``."""

    name = "lowrank"
    forcing_in_alpha_space = True

    def __init__(
        self,
        op: Operator,
        terms: list[KronTerm],
        *,
        rank: int = 8,
        seed: int = 0,
        start: np.ndarray | None = None,
        eigenpairs: list | None = None,
    ):
        """``eigenpairs``: those of :func:`~gpmodels.inference.map.deflation.term_eigenpairs` for ``terms``,
        ``rank``, ``seed`` and ``start``, where they were found already (a stack's blocks at once)."""
        self.op = op
        self.diag_K = op.diag()  # shape: (n, C)
        self.point_block_mvm = op.point_block_mvm
        self.blocks_K = op.point_blocks() if self.uses_blocks else None  # shape: (n, C, C)
        terms = deflated_terms(terms)
        if eigenpairs is None:
            eigenpairs = term_eigenpairs(terms, op.n_points, int(rank), np.random.default_rng(seed), start)
        self._setup(terms, eigenpairs)

    uses_blocks = False  # the residual's per-point blocks instead of its diagonal (``lowrank_block``)

    # ------------------------------------------------------------------ set-up (once per fit)
    def _setup(self, terms: list[KronTerm], eigenpairs: list) -> None:
        """L's columns √λ_tj q_tj ⊗ F_t and the residual's diagonal (and blocks) from each term's eigenpairs."""
        n, C = self.op.n_points, self.op.n_classes
        cols, factors, bases = [], [], []
        w = np.zeros((n, C))  # diag of the low-rank part per (i, c)
        parts = []  # (weights per point (n,), S) for the residual point blocks
        for t, (lam, Q, basis) in zip(terms, eigenpairs):
            bases.append(basis)
            if lam.size == 0:
                continue
            F = _psd_factor(t.S)
            A = Q * np.sqrt(lam)[None, :]  # shape: (n, r)
            for j in range(A.shape[1]):
                cols.append(A[:, j])
                factors.append(F)
            wt = np.sum(A * A, axis=1)  # Σ_j λ_j q_ij^2
            w += wt[:, None] * np.diag(t.S)[None, :]
            parts.append((wt, t.S))
        self.basis = np.hstack(bases) if bases else None
        self.A = np.ascontiguousarray(np.column_stack(cols)) if cols else np.zeros((n, 0))  # shape: (n, R0)
        R0 = self.A.shape[1]
        self.offsets = np.cumsum([0] + [F.shape[1] for F in factors])
        R = int(self.offsets[-1])
        self.F = factors
        self._F_big = None
        self._AA = None
        # every F_k of one shape (C, s) (one Kronecker term, or the flat prior's): the (k, l) blocks of
        # Z^T D^{-1} Z are one batched product over the pairs
        shapes = {F.shape for F in factors}
        self.F_stack = np.stack(factors) if len(shapes) == 1 else None  # shape: (R0, C, s)
        self.use_rows(bool(R0) and _rows_cheaper(n, C, R0, R))
        self.diag_res = self.diag_K - w
        self.res_parts = parts
        if self.blocks_K is not None:  # per-point blocks of the residual R = K̃ - L L^T
            self.blocks_res = self.blocks_K.copy()
            for wt, S in parts:
                self.blocks_res -= wt[:, None, None] * S[None]

    def use_rows(self, on: bool) -> None:
        """Build Z^T D^{-1} Z from L's rows (kept, n C R floats) or from pairs of eigenvectors; the
        two give the same P (tested); :func:`_rows_cheaper` picks one.  L's rows and factors are held afresh."""
        n, C, R0 = self.A.shape[0], self.op.n_classes, self.A.shape[1]
        # L itself, row i of shape (C, R): [a_ik F_k]_k (the flat prior: R = R0, one column each)
        if not on:
            self.L_rows = None
        elif self.F_stack is not None:
            self.L_rows = np.einsum("ik,kcs->icks", self.A, self.F_stack).reshape(n * C, -1)
        else:
            self.L_rows = (self.A @ self.F_big().reshape(R0, -1)).reshape(n * C, -1)
        self._rows = None if self.L_rows is None else _Held((self.L_rows.reshape(n, C, -1),))  # on the set-up's arrays
        self.factors = _Held((self.A, self.F_big() if self.F_stack is None else self.F_stack))  # for the applications

    def F_big(self) -> np.ndarray:
        """Block-diagonal (R0 C, R) with F_k in block (k, k): L's column blocks are a_k ⊗ F_k (built
        on first use, for F_k of different shapes)."""
        if self._F_big is None:
            C, R0 = self.op.n_classes, self.A.shape[1]
            self._F_big = np.zeros((R0 * C, int(self.offsets[-1])))
            for k, F in enumerate(self.F):
                self._F_big[k * C : (k + 1) * C, self.offsets[k] : self.offsets[k + 1]] = F
        return self._F_big

    def _res_point_block_mvm(self, P):
        out = self.point_block_mvm(P)
        for wt, S in self.res_parts:
            out -= wt[:, None] * (P @ S)
        return out

    # ------------------------------------------------------------------ per Newton iteration
    def _residual_solve(self, hf, Vb):
        """(x -> B^{-1} x, W, None) for B = diag(I + V^T R V): G_i = V_i B_i^{-1} V_i^T = W_i W_i^T with
        W_i = V_i D_i^{-1/2}, so that Σ_i L_i^T G_i L_i = Z^T Z for Z_i = W_i^T L_i (a symmetric rank-k update)."""
        D = np.maximum(hf.precond_diag(self.diag_res, self._res_point_block_mvm), 1.0)  # shape: (n, C)
        return _Divide(D), Vb / np.sqrt(D)[:, None, :], None

    def pair_products(self) -> np.ndarray:
        """(a_ik a_il)_{k<=l} per point, (n, R0 (R0 + 1) / 2): the weights of Σ_i a_ik a_il G_i, fixed for the
        fit (kept after the first Newton iteration within :data:`PAIR_CACHE_BYTES`)."""
        if self._AA is not None:
            return self._AA
        k, l = np.triu_indices(self.A.shape[1])
        AA = self.A[:, k] * self.A[:, l]
        if AA.nbytes <= PAIR_CACHE_BYTES:
            self._AA = AA
        return AA

    def _pair_sums(self, G: np.ndarray) -> np.ndarray:
        """Σ_i a_ik a_il G_i as (R0, R0, C, C) for symmetric G_i (n, C, C): both symmetries used, the
        pairs k <= l and the entries c <= d (a quarter of the GEMM), the rest mirrored."""
        n, C = G.shape[:2]
        R0 = self.A.shape[1]
        c, d = np.triu_indices(C)
        upper = self.pair_products().T @ G[:, c, d]  # shape: (R0 (R0 + 1) / 2, C (C + 1) / 2)
        return upper[_sym_index(R0)][:, _sym_index(C)].reshape(R0, R0, C, C)

    def _small_system(self, W, G, n: int, C: int, setup) -> np.ndarray:
        """H = I + Z^T B^{-1} Z (R x R) from G_i = V_i B_i^{-1} V_i^T, or from W_i with G_i = W_i W_i^T; from L's rows
        and W, its products on ``setup``'s arrays (L's rows held there for the fit, W uploaded)."""
        A, L_rows, Fs = self.A, self.L_rows, self.F_stack
        R0, R = A.shape[1], int(self.offsets[-1])
        if L_rows is not None and W is not None:  # H = I + Y^T Y, Y_i = W_i^T L_i: O(n C R (C + R / 2))
            xp, (rows,) = setup.xp, self._rows.on(setup)
            Y = xp.reshape(xp.matmul(xp.permute_dims(setup.from_host(W), (0, 2, 1)), rows), (n * C, R))
            return np.eye(R) + setup.to_host(_gram(Y))
        if L_rows is not None:  # H = I + Σ_i L_i^T G_i L_i: O(n C R (C + R))
            return np.eye(R) + L_rows.T @ np.matmul(G, L_rows.reshape(n, C, R)).reshape(n * C, R)
        # (k, l) block F_k^T (Σ_i a_ik a_il G_i) F_l: O(n R0^2 C^2), for F_k with many columns
        G_sum = self._pair_sums(np.matmul(W, np.swapaxes(W, 1, 2)) if G is None else G)
        if Fs is not None:
            blocks = np.matmul(np.matmul(np.swapaxes(Fs, 1, 2)[:, None], G_sum), Fs[None])  # (R0, R0, s, s)
            return np.eye(R) + blocks.transpose(0, 2, 1, 3).reshape(R, R)
        F_big = self.F_big()
        return np.eye(R) + F_big.T @ G_sum.transpose(0, 2, 1, 3).reshape(R0 * C, R0 * C) @ F_big

    def inverse(self, hf, setup=HOST) -> Inverse:
        """P^{-1} = B^{-1} - B^{-1} Z H^{-1} Z^T B^{-1} (B^{-1} alone without eigenvectors) for the Hessian factor of
        this Newton iteration; H's products from L's rows on ``setup``'s arrays (:meth:`_small_system`)."""
        return self._inverse_from(self._residual_solve(hf, hf.point_V()), setup)

    def _inverse_from(self, residual: tuple, setup) -> Inverse:
        """P^{-1} from ``residual`` = (B^{-1}, W, G) of :meth:`_residual_solve` (G_i = V_i B_i^{-1} V_i^T, or W_i with
        G_i = W_i W_i^T)."""
        solve_B, W, G = residual
        if not self.A.shape[1]:
            return solve_B
        n, C = self.A.shape[0], self.op.n_classes
        return _Woodbury(solve_B, (self._small_system(W, G, n, C, setup),), self.factors, C)

    @staticmethod
    def inverses(parts: list, factors: list, setup=HOST, cache: dict | None = None) -> list:
        """[P_k^{-1}] of the blocks ``parts`` (of this kind, over consecutive row ranges) at their rows' Hessian
        factors ``factors``, as :meth:`inverse` gives each; where every block builds H_k = I + Y_k^T Y_k from L's
        rows and W (Y_i = W_i^T L_i, one width R), the Y_i of all blocks are one batched product on ``setup``'s
        arrays (one upload of the W_i, one download of the H_k) over the blocks' L rows joined there once
        (``cache``, for the fit; a copy beside the blocks' own on the host): on a device F blocks then cost one
        block's calls."""
        residuals = [p._residual_solve(hf, hf.point_V()) for p, hf in zip(parts, factors)]
        widths = {int(p.offsets[-1]) for p in parts}
        rows_and_W = all(p.L_rows is not None and W is not None for p, (_, W, _) in zip(parts, residuals))
        if len(parts) < 2 or len(widths) != 1 or not rows_and_W:
            return [p._inverse_from(residual, setup) for p, residual in zip(parts, residuals)]
        cache = {} if cache is None else cache
        if "setup_rows" not in cache:
            L = [p.L_rows.reshape(p.A.shape[0], -1, p.L_rows.shape[1]) for p in parts]  # (n_k, C, R) each
            cache["setup_rows"] = _Held((np.concatenate(L),))
        xp, (rows,) = setup.xp, cache["setup_rows"].on(setup)
        (R,) = widths
        W = setup.from_host(np.concatenate([W for _, W, _ in residuals]))
        Y = xp.matmul(xp.permute_dims(W, (0, 2, 1)), rows)  # shape: (N, C, R), Y_i = W_i^T L_i
        cuts, C = np.cumsum([0] + [p.A.shape[0] for p in parts]), Y.shape[1]
        grams = [_gram(xp.reshape(Y[a:b, ...], ((b - a) * C, R))) for a, b in zip(cuts[:-1], cuts[1:])]
        H = setup.to_host(xp.stack(grams))
        return [_Woodbury(r[0], (np.eye(R) + H[k],), p.factors, C) for k, (p, r) in enumerate(zip(parts, residuals))]


def _gram(Y):
    """Y^T Y (numpy forms it by a symmetric rank-k update: half a GEMM)."""
    return Y.T @ Y


class LowRankBlockPreconditioner(LowRankPreconditioner):
    """The ``lowrank`` deflation with the per-point C x C blocks of I + V^T R V in place of its diagonal."""

    name = "lowrank_block"
    uses_blocks = True

    def _residual_solve(self, hf, Vb):
        """(x -> B^{-1} x, None, G) for the per-point blocks B_i of I + V^T R V and G_i = V_i B_i^{-1} V_i^T."""
        Binv = np.linalg.inv(hf.precond_blocks(self.blocks_res))
        return (
            _BlockSolve(Binv),
            None,
            np.matmul(np.matmul(Vb, Binv), np.transpose(Vb, (0, 2, 1))),
        )  # V_i B_i^{-1} V_i^T


def point_blocks_bytes(op: Operator) -> int:
    """Bytes of the per-point C x C blocks over the operator's points (n C^2 float64)."""
    return 8 * op.n_points * op.n_classes**2


def check_point_blocks(op: Operator, name: str) -> None:
    """InputError where preconditioner ``name``'s per-point C x C blocks exceed the plan's
    :attr:`~gpmodels.inference.execution_plan.PlanRules.point_blocks_max_bytes`."""
    need, most = point_blocks_bytes(op), execution_plan.DEFAULT_RULES.point_blocks_max_bytes
    if need > most:
        raise InputError(
            f"preconditioner {name!r} forms the per-point C x C blocks of the Newton system: n = {op.n_points} "
            f"points x C^2 = {op.n_classes}^2 classes need {need / 2**30:.1f} GiB (at most "
            f"{most / 2**30:.0f} GiB); use preconditioner 'diagonal' (App. B, O(n C)) or 'auto'"
        )


def _deflated(cls):
    def build(op: Operator, *, rank: int = 8, seed: int = 0, start: np.ndarray | None = None) -> Preconditioner:
        check_point_blocks(op, cls.name)
        terms = op.kron_terms()
        if terms is None:  # no Kronecker form: nothing to deflate
            return DiagonalPreconditioner(op)
        return cls(op, terms, rank=rank, seed=seed, start=start)

    return build


def _auto(op: Operator, *, rank: int = 8, seed: int = 0, start: np.ndarray | None = None) -> Preconditioner:
    name, _ = execution_plan.auto_preconditioner(op.n_points, op.n_classes)
    return PRECONDITIONERS[name](op, rank=rank, seed=seed, start=start)


#: the deflating preconditioners by name
DEFLATING = {"lowrank": LowRankPreconditioner, "lowrank_block": LowRankBlockPreconditioner}
#: name -> builder (op, *, rank, seed, start) -> Preconditioner
PRECONDITIONERS: dict[str, Callable[..., Preconditioner]] = {
    "diagonal": lambda op, **_: DiagonalPreconditioner(op),
    "block": lambda op, **_: (check_point_blocks(op, "block"), BlockJacobiPreconditioner(op))[1],
    **{name: _deflated(cls) for name, cls in DEFLATING.items()},
    "auto": _auto,
}


def _deflated_blocks(cls, op: Operator, rank: int, seed: int, starts: list) -> list[Preconditioner]:
    """The deflating preconditioner ``cls`` of every row block of ``op``: their eigensolvers in lockstep,
    one product of ``op``'s Kronecker term for all blocks per step
    (:func:`~gpmodels.inference.map.deflation.block_term_eigenpairs`), where ``op``'s terms are its blocks';
    else block by block."""
    blocks = op.row_blocks
    stack_terms, block_terms = op.kron_terms(), [part.kron_terms() for _, part in blocks]
    found = None
    if stack_terms is not None and all(t is not None for t in block_terms):
        offsets = [blocks[0][0].start] + [rows.stop for rows, _ in blocks]
        found = block_term_eigenpairs(stack_terms, block_terms, offsets, rank, seed, starts)
    if found is None:
        return [_deflated(cls)(part, rank=rank, seed=seed, start=s) for (_, part), s in zip(blocks, starts)]
    return [
        cls(part, terms, rank=rank, seed=seed, eigenpairs=e) for (_, part), terms, e in zip(blocks, block_terms, found)
    ]


def make_preconditioner(
    name: str, op: Operator, *, rank: int = 8, seed: int = 0, start: np.ndarray | None = None
) -> Preconditioner:
    """The preconditioner ``name`` (module docstring) for Newton–CG on ``op``: ``lowrank`` /
    ``lowrank_block`` on an operator without a Kronecker form give the diagonal one; ``start``: the
    ``basis`` of a preconditioner of a nearby operator on the same points (``lowrank``: its
    eigensolvers then start from those subspaces, 2 MVMs per Kronecker term instead of 4).  On an operator
    of independent blocks of points (``op.row_blocks``) the deflating ones are built per block
    (:class:`~gpmodels.inference.map.row_blocks.RowBlocksPreconditioner`), their eigensolvers in lockstep,
    ``auto`` choosing by the largest block."""
    if name not in PRECONDITIONERS:
        raise InputError(f"preconditioner must be one of {tuple(PRECONDITIONERS)}; got {name!r}")
    blocks = op.row_blocks
    if blocks is not None and name == "auto":
        largest = max(part.n_points for _, part in blocks)
        name, _ = execution_plan.auto_preconditioner(largest, op.n_classes, op.n_points)
    if blocks is not None and name in DEFLATING:
        check_point_blocks(op, name)
    if blocks is None or name not in DEFLATING:
        return PRECONDITIONERS[name](op, rank=int(rank), seed=int(seed), start=start)
    starts = [None if start is None or start.shape[0] != op.n_points else start[rows] for rows, _ in blocks]
    parts = _deflated_blocks(DEFLATING[name], op, int(rank), int(seed), starts)
    return RowBlocksPreconditioner([(rows, p) for (rows, _), p in zip(blocks, parts)])
