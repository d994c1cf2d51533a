"""Coupling between classes: K(B) = (B ⊗ I) K (B^T ⊗ I), B square or C x p factor loadings.

Seeger 2008, Sec. 7.4.1.  The class functions are u_i = B f_i (+ intercepts) where f_i collects
p latent processes at point i, a priori independent with kernel matrix K (any operator over p
"classes", typically a :class:`~gpmodels.operators.blockdiag.BlockDiagonal`).  B in R^{C x p} is a
square coupling matrix (p = C) or, for p < C, the factor loadings of p underlying latent
factors.  In our (n, C) layout, (B ⊗ I) acts on axis 1: row i of an (n, C) array is mapped by B.

- MVM: V (n, C, k) -> B^T V (n, p, k) -> K MVM -> B (.) (n, C, k): O(n C p) besides the inner MVM.
- diag: K(B)_ic,ic = Σ_j B_cj^2 K_ij,ij when K is block-diagonal over the factors.
- Per-point blocks: K(B)_i = B K_i B^T, so K(B)_i p_i = B K_i (B^T p_i).
- Gradient (eq. 6) for Σ_k e_k^T K(B) f_k, with Ẽ = (B^T ⊗ I) E, F̃ = (B^T ⊗ I) F:
    inner hyperparameters θ:  tr Ẽ^T (dK/dθ) F̃   (the inner operator's grad_trace),
    entries of B:             d/dB_cj = Σ_{i,k} e_ick (K F̃_k)_ij + f_ick (K Ẽ_k)_ij
  (two inner MVMs with q right-hand sides each, done as one MVM with 2q).

The entries of B are hyperparameters in their natural, unconstrained units (no log), named
``B[class,j]``; a boolean mask ``learn`` (C x p) selects which entries are free (default: all),
the others stay fixed (e.g. a structural zero pattern).  Note the scale redundancy between a
column of B and the variance of its factor: learn one of them (the prior factory
:class:`gpmodels.priors.CoupledPrior` ties the factor variances by default).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpmodels.errors import InputError
from gpmodels.operators.base import Composite, Operator

__all__ = ["Coupled"]


def _check_B(B) -> np.ndarray:
    B = np.array(B, dtype=np.float64)
    if B.ndim != 2 or B.shape[0] < 1 or B.shape[1] < 1:
        raise InputError(f"B must be a 2-D matrix of shape (C, p) with C, p >= 1; got shape {B.shape}")
    if not np.all(np.isfinite(B)):
        raise InputError("B must be finite")
    if B.shape[1] > B.shape[0]:
        raise InputError(f"B must have p <= C columns (square coupling or factor loadings); got shape {B.shape}")
    B.setflags(write=False)
    return B


class Coupled(Composite):
    """K(B) = (B ⊗ I) K (B^T ⊗ I) around an operator K over p factors; see the module docstring.

    ``B``: (C, p) with p <= C.  ``learn``: True (all entries are hyperparameters), False (B
    fixed) or a (C, p) boolean mask.  ``class_names`` label the rows of B in ``param_names``.
    """

    def __init__(self, inner: Operator, B, learn=True, class_names: Sequence[str] | None = None):
        if not isinstance(inner, Operator):
            raise InputError(f"Coupled needs an Operator as its inner K; got {type(inner).__name__}")
        B = _check_B(B)
        if B.shape[1] != inner.n_classes:
            raise InputError(
                f"B has {B.shape[1]} columns but the inner operator has {inner.n_classes} latent "
                "processes; they must agree"
            )
        mask = (
            np.broadcast_to(np.asarray(learn, dtype=bool), B.shape).copy() if np.ndim(learn) == 0 else np.asarray(learn)
        )
        if mask.shape != B.shape or mask.dtype != bool:
            raise InputError(
                f"learn must be a bool or a boolean mask of B's shape {B.shape}; got {np.asarray(learn)!r}"
            )
        mask.setflags(write=False)
        if class_names is not None:
            class_names = tuple(str(c) for c in class_names)
            if len(class_names) != B.shape[0]:
                raise InputError(f"class_names must name the {B.shape[0]} rows of B; got {len(class_names)}")
        self.inner = inner
        self.B = B
        self.learn = mask
        self.class_names = class_names

    # ------------------------------------------------------------------ protocol
    @property
    def n_points(self) -> int:
        return self.inner.n_points

    @property
    def n_classes(self) -> int:
        return self.B.shape[0]

    @property
    def n_factors(self) -> int:
        return self.B.shape[1]

    def _to_factors(self, V):
        # B^T along axis 1: shape (n, C[, k]) -> (n, p[, k])
        return np.matmul(self.B.T, V) if V.ndim == 3 else V @ self.B

    def _to_classes(self, W):
        # B along axis 1: shape (n, p[, k]) -> (n, C[, k])
        return np.matmul(self.B, W) if W.ndim == 3 else W @ self.B.T

    def _parts(self):
        return (self.inner,)

    def _compose(self, ops, maps, V):
        # (B ⊗ I) K (B^T ⊗ I) V; the same for a block K_{I,J} and its transpose (B on both sides)
        return self._to_classes(maps[0](np.ascontiguousarray(self._to_factors(V))))

    def _diag(self):
        if self.inner.is_class_diagonal:
            return self.inner._diag() @ (self.B**2).T
        return np.einsum("icc->ic", self._point_blocks())

    def _point_block_mvm(self, P):
        return self._to_classes(self.inner._point_block_mvm(self._to_factors(P)))

    def _kron_terms(self):
        # (B ⊗ I)(M ⊗ S)(B^T ⊗ I) = M ⊗ B S B^T
        inner = self.inner._kron_terms()
        if inner is None:
            return None
        return [t.with_S(self.B @ t.S @ self.B.T) for t in inner]

    @property
    def params(self) -> np.ndarray:
        return np.concatenate([self.inner.params, self.B[self.learn]])

    @property
    def param_names(self) -> tuple[str, ...]:
        rows = self.class_names or tuple(str(c) for c in range(self.n_classes))
        names = tuple(f"B[{rows[c]},{j}]" for c, j in zip(*np.nonzero(self.learn)))
        return tuple(self.inner.param_names) + names

    @property
    def param_bounds(self) -> np.ndarray:
        return np.vstack(
            [self.inner.param_bounds.reshape(-1, 2), np.tile([-np.inf, np.inf], (int(self.learn.sum()), 1))]
        )

    def with_params(self, theta) -> Coupled:
        theta = np.asarray(theta, dtype=np.float64).ravel()
        if theta.size != self.params.size:
            raise InputError(f"Coupled has {self.params.size} parameters; got {theta.size} values")
        m = self.inner.params.size
        B = self.B.copy()
        B[self.learn] = theta[m:]
        inner = self.inner.with_params(theta[:m]) if m else self.inner
        return Coupled(inner, B, self.learn, self.class_names)

    def _grad_trace(self, E, F):
        n, C, q = E.shape
        Et = np.ascontiguousarray(self._to_factors(E))  # shape: (n, p, q)
        Ft = np.ascontiguousarray(self._to_factors(F))
        g_inner = self.inner._grad_trace(Et, Ft) if self.inner.params.size else np.zeros(0)
        if not self.learn.any():
            return g_inner
        KFE = self.inner._mvm(np.concatenate([Ft, Et], axis=2))  # one MVM with 2q columns
        KF, KE = KFE[:, :, :q], KFE[:, :, q:]
        # Seeger 2008, Sec. 7.4.1: dK(B) = (dB ⊗ I) K (B^T ⊗ I) + (B ⊗ I) K (dB^T ⊗ I)
        G = np.einsum("ncq,njq->cj", E, KF) + np.einsum("ncq,njq->cj", F, KE)
        return np.concatenate([g_inner, G[self.learn]])

    def _restrict(self, J):
        return Coupled(self.inner._restrict(J), self.B, self.learn, self.class_names)

    def _test_point_blocks(self, X_new):
        # K(B)_** = B K_** B^T per new point
        inner = self.inner._test_point_blocks(X_new)  # shape: (m, p, p)
        return np.matmul(np.matmul(self.B, inner), self.B.T)

    def _dense(self):
        n, C, p = self.n_points, self.n_classes, self.n_factors
        inner = self.inner._dense().reshape(n, p, n, p)
        out = np.einsum("cj,ijkl,dl->ickd", self.B, inner, self.B, optimize=True)
        return np.ascontiguousarray(out).reshape(n * C, n * C)

    def class_block(self, c: int) -> np.ndarray:
        """K(B)_{.c,.c} = Σ_{j,l} B_cj B_cl K_{.j,.l}; for a block-diagonal K, Σ_j B_cj^2 K_{.j,.j}."""
        if not 0 <= c < self.n_classes:
            raise InputError(f"class index must be in 0..{self.n_classes - 1}; got {c}")
        if self.inner.is_class_diagonal:
            out = np.zeros((self.n_points, self.n_points))
            for j in np.flatnonzero(self.B[c]):
                out += self.B[c, j] ** 2 * self.inner.class_block(int(j))
            return out
        return super().class_block(c)

    def __repr__(self) -> str:
        kind = "coupling" if self.n_factors == self.n_classes else "loadings"
        return f"Coupled({self.inner!r}, B {self.B.shape} {kind}, {int(self.learn.sum())} learned entries)"
