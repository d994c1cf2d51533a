"""A structured prior written outside the package: the worked example of docs/extending.md.

Class-similarity prior.  Given a symmetric PSD C x C matrix S of class similarities,

    K = v (S_λ ⊗ M),     S_λ = I + λ S,     λ > 0, v > 0

in Seeger's class-major notation, i.e. cov(u_c(x), u_d(x')) = v S_λ[c, d] M(x, x').  With S = 0 (or
λ → 0) it is the tied independent prior; λ → ∞ lets the similar classes share their functions.
In gpmodels' (n, C) layout (flat index i C + c) the matrix is ``v * np.kron(M, S_λ)`` and

    K V = v M V S_λ                                   one GEMM with M and one small C x C product.

Hyperparameters (log space): ``log_variance`` (v), ``log_strength`` (λ), then the kernel's own
(``kernel.log_w`` for the RBF).  Derivatives of Σ_k e_kᵀ K f_k (the protocol's grad_trace):

    ∂/∂log v = Σ_k <E_k, K F_k>
    ∂/∂log λ = v λ Σ_k <E_k, M F_k S>
    ∂/∂θ_M   = v Σ_ab ∂M_ab/∂θ G_ab,   G = Σ_k E_k (F_k S_λ)ᵀ   (n x n; Kernel.grad_contract)

Only this file and ``gpmodels.priors.register_prior`` are needed to use it from Python and specs.
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.errors import InputError, SpecError
from gpmodels.operators import Intercept, Operator
from gpmodels.operators.base import CrossOperator, KronTerm

__all__ = ["ClassSimilarity", "ClassSimilarityPrior", "build_class_similarity", "check_similarity"]


def check_similarity(S, C: int | None = None) -> np.ndarray:
    """S as a float (C, C) array; InputError unless it is square, symmetric and PSD."""
    S = np.array(S, dtype=np.float64)
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise InputError(f"the class similarity S must be a square matrix; got shape {S.shape}")
    if C is not None and S.shape[0] != C:
        raise InputError(f"the class similarity S is {S.shape[0]} x {S.shape[0]} but there are {C} classes")
    if not np.all(np.isfinite(S)) or not np.allclose(S, S.T, rtol=0, atol=1e-12 * max(1.0, np.abs(S).max())):
        raise InputError("the class similarity S must be finite and symmetric")
    if np.linalg.eigvalsh(S)[0] < -1e-10 * max(1.0, np.abs(S).max()):
        raise InputError("the class similarity S must be positive semi-definite")
    return S


class _Cross(CrossOperator):
    """K_{I,J} = v (S_λ ⊗ M_IJ): (|J|, C, k) -> (|I|, C, k)."""

    def __init__(self, M_IJ, S_lam, v):
        self.M, self.S, self.v = M_IJ, S_lam, v

    @property
    def shape(self):
        return self.M.shape[0], self.M.shape[1], self.S.shape[0]

    def _mvm(self, V):  # shape: (cols, C, k)
        return self.v * np.einsum("ij,jck,cd->idk", self.M, V, self.S, optimize=True)


class ClassSimilarity(Operator):
    """K = v (S_λ ⊗ M) over training inputs X, S_λ = I + λ S (see the module docstring)."""

    def __init__(self, X, kernel, S, variance: float = 1.0, strength: float = 1.0, *, M=None):
        self.X = X
        self.kernel = kernel
        self.S = check_similarity(S)
        self.v, self.lam = float(variance), float(strength)
        if not (self.v > 0 and self.lam > 0):
            raise InputError(f"variance and strength must be > 0; got {variance} and {strength}")
        self.S_lam = np.eye(self.S.shape[0]) + self.lam * self.S
        self.M = np.ascontiguousarray(kernel.gram(X, X) if M is None else M)  # stored n x n shape matrix

    # --------------------------------------------------------------- must be defined
    @property
    def n_points(self):
        return self.M.shape[0]

    @property
    def n_classes(self):
        return self.S.shape[0]

    def _mvm(self, V):  # shape: (n, C, k) -> (n, C, k)
        n, C, k = V.shape
        MV = (self.M @ V.reshape(n, C * k)).reshape(n, C, k)  # one GEMM on C k columns
        return self.v * np.einsum("ick,cd->idk", MV, self.S_lam)  # S_λ symmetric

    @property
    def params(self):
        return np.concatenate([[np.log(self.v), np.log(self.lam)], self.kernel.params])

    @property
    def param_names(self):
        return ("log_variance", "log_strength") + tuple(f"kernel.{p}" for p in self.kernel.param_names)

    def with_params(self, theta):
        theta = np.asarray(theta, dtype=np.float64).ravel()
        if theta.size != self.params.size:
            raise InputError(f"Dimension mismatch: theta must have {self.params.size} entries; got {theta.size}")
        kernel = self.kernel.with_params(theta[2:])
        same = np.array_equal(theta[2:], self.kernel.params)  # keep M when the shape did not change
        return ClassSimilarity(self.X, kernel, self.S, np.exp(theta[0]), np.exp(theta[1]), M=self.M if same else None)

    def _restrict(self, J):  # Seeger 2008, App. D.2: a contiguous copy of M_JJ, not an index map
        return ClassSimilarity(self.X[J], self.kernel, self.S, self.v, self.lam, M=self.M[np.ix_(J, J)])

    def _cross(self, I, J):
        return _Cross(np.ascontiguousarray(self.M[np.ix_(I, J)]), self.S_lam, self.v)

    def _cross_test(self, X_new):
        return _Cross(self.kernel.gram(X_new, self.X), self.S_lam, self.v)

    # --------------------------------------------------------------- for speed
    def _diag(self):
        return self.v * np.outer(np.diag(self.M), np.diag(self.S_lam))

    def _point_block_mvm(self, P):  # K_i = v M_ii S_λ (Seeger 2008, App. B)
        return self.v * np.diag(self.M)[:, None] * (P @ self.S_lam)

    def _kron_terms(self):  # K = M ⊗ (v S_λ) in (points ⊗ classes) order: low-rank preconditioners
        M = self.M
        return [KronTerm(lambda B: M @ B, self.v * self.S_lam)]

    def _grad_trace(self, E, F):  # shapes: (n, C, q)
        n, C, q = F.shape
        MF = (self.M @ F.reshape(n, C * q)).reshape(n, C, q)
        MFS = np.einsum("ick,cd->idk", MF, self.S)
        g_lam = self.v * self.lam * float(np.sum(E * MFS))
        g_v = self.v * float(np.sum(E * (MF + self.lam * MFS)))  # Σ <E, K F>
        FS = np.einsum("jck,cd->jdk", F, self.S_lam)
        G = np.einsum("ick,jck->ij", E, FS)  # G = Σ_k E_k (F_k S_λ)^T
        g_M = self.v * self.kernel.grad_contract(self.X, self.X, G, gram=self.M)
        return np.concatenate([[g_v, g_lam], g_M])

    def _dense(self):
        return self.v * np.kron(self.M, self.S_lam)


@attrs.frozen(eq=False)
class ClassSimilarityPrior:
    """The prior factory: (X, C) -> K̃ = v (S_λ ⊗ M) [+ σ² (I ⊗ 11ᵀ)]."""

    kernel: object
    S: np.ndarray
    variance: float = 1.0
    strength: float = 1.0
    sigma2: float = 0.0

    def operator(self, X, n_classes: int) -> Operator:
        op = ClassSimilarity(X, self.kernel, check_similarity(self.S, n_classes), self.variance, self.strength)
        return Intercept(op, self.sigma2) if self.sigma2 > 0 else op


def build_class_similarity(ctx) -> ClassSimilarityPrior:
    """The spec builder: ``model.prior_options`` = {similarity: C rows | "tree", strength: λ}.

    ``similarity: tree`` takes S = Φ_L Φ_Lᵀ (depth of the lowest common ancestor) from the class
    tree; the kernel, ``variance`` and ``sigma2`` come from the usual model keys.
    """
    opts = ctx.options_with_defaults({"similarity": None, "strength": 1.0})
    key = "model.prior_options"
    S = opts["similarity"]
    if S is None:
        raise SpecError("prior 'class_similarity' needs `similarity`: a list of C rows or 'tree'", f"{key}.similarity")
    if isinstance(S, str):
        if S != "tree":
            raise SpecError(f"must be a list of C rows or 'tree'; got {S!r}", f"{key}.similarity")
        S = ctx.require_tree().lca_depth_matrix().astype(float)
    try:
        S = check_similarity(S)
    except (InputError, ValueError, TypeError) as exc:
        raise SpecError(str(exc), f"{key}.similarity") from None
    strength = opts["strength"]
    if isinstance(strength, bool) or not isinstance(strength, (int, float)) or not strength > 0:
        raise SpecError(f"must be a number > 0; got {strength!r}", f"{key}.strength")
    if isinstance(ctx.model.variance, tuple):
        raise SpecError("prior 'class_similarity' has one variance v", "model.variance")
    return ClassSimilarityPrior(ctx.kernel, S, ctx.model.variance, float(strength), ctx.model.sigma2)
