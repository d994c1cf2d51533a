"""Intercepts eliminated into the kernel: K̃ = K + σ² (I_C ⊗ 1 1^T) (Seeger 2008, Sec. 5.1.1).

With a Gaussian prior of variance σ² on the intercepts b_c, the Newton system gives
b = σ² (I ⊗ 1^T) α, i.e. b_c = σ² Σ_i α_ic, and the model becomes u = K̃ α with
K̃^(c) = K^(c) + σ² 1 1^T.  σ² is fixed by default (as in the paper); with ``learn=True`` its log
is a hyperparameter with d/dlog σ² Σ_k e_k^T K̃ f_k = σ² Σ_{k,c} (1^T e_ck)(1^T f_ck).
"""

from __future__ import annotations

import numpy as np

from gpmodels.operators.base import Composite, KronTerm, Operator
from gpmodels.validation import check_positive

__all__ = ["Intercept"]


class Intercept(Composite):
    """K̃ = K + σ² 1 1^T per class, around any operator K."""

    has_intercept = True

    def __init__(self, inner: Operator, sigma2: float, learn: bool = False):
        self.inner = inner
        self.sigma2 = check_positive("sigma2 (intercept variance)", sigma2)
        self.learn = bool(learn)
        self.is_class_diagonal = inner.is_class_diagonal

    def intercepts(self, alpha) -> np.ndarray:
        """b_c = σ² Σ_i α_ic for α of shape (n, C); returns shape (C,)."""
        return self.sigma2 * np.asarray(alpha).sum(axis=0)

    @property
    def n_points(self):
        return self.inner.n_points

    @property
    def n_classes(self):
        return self.inner.n_classes

    def _parts(self):
        return (self.inner,)

    def _compose(self, ops, maps, V):
        # K̃ V = K V + σ² 1 (1^T V) per class; for a block K_{I,J} (or its transpose) the row of
        # column sums broadcasts over its rows
        out = maps[0](V)
        out += self.sigma2 * ops.row_sum(V)
        return out

    @property
    def arrays(self):
        return self.inner.arrays

    def _diag(self):
        return self.inner._diag() + self.sigma2

    def _point_block_mvm(self, P):
        return self.inner._point_block_mvm(P) + self.sigma2 * P

    def _kron_terms(self):
        inner = self.inner._kron_terms()
        if inner is None:
            return None
        C = self.n_classes

        def ones(B):  # (1 1^T) B
            return np.broadcast_to(B.sum(axis=0, keepdims=True), B.shape).copy()

        return inner + [KronTerm(ones, self.sigma2 * np.eye(C), rank=1)]

    @property
    def params(self):
        inner = self.inner.params
        return np.append(inner, np.log(self.sigma2)) if self.learn else inner

    @property
    def param_names(self):
        names = self.inner.param_names
        return names + ("log_sigma2",) if self.learn else names

    def param_classes(self):
        """The inner operator's, then None for σ² (it acts on every class) when learned."""
        inner = self.inner.param_classes()
        return inner + (None,) if self.learn else inner

    @property
    def param_bounds(self):
        b = self.inner.param_bounds
        return np.vstack([b, [[-np.inf, np.inf]]]) if self.learn else b

    def with_params(self, theta):
        theta = np.asarray(theta, dtype=np.float64).ravel()
        if self.learn:
            return Intercept(self.inner.with_params(theta[:-1]), float(np.exp(theta[-1])), True)
        return Intercept(self.inner.with_params(theta), self.sigma2, False)

    def _grad_trace(self, E, F):
        g = self.inner._grad_trace(E, F) if self.inner.params.size else np.zeros(0)
        if self.learn:
            g = np.append(g, self.sigma2 * np.sum(E.sum(axis=0) * F.sum(axis=0)))
        return g

    def _grad_trace_blocks(self, A):
        # K̃_c = K_c + σ² 1 1^T: d/dlog σ² Σ_c Σ_ab (A_c)_ab K̃_c,ab = σ² Σ_c 1^T A_c 1
        g = self.inner._grad_trace_blocks(A) if self.inner.params.size else np.zeros(0)
        if self.learn:
            g = np.append(g, self.sigma2 * float(A.sum()))
        return g

    def _restrict(self, J):
        return Intercept(self.inner._restrict(J), self.sigma2, self.learn)

    def _test_point_blocks(self, X_new):
        # K̃_** = K_** + σ² I_C: the intercept b_c ~ N(0, σ²) is independent across classes
        out = self.inner._test_point_blocks(X_new).copy()
        C = self.n_classes
        out[:, np.arange(C), np.arange(C)] += self.sigma2
        return out

    def _dense(self):
        n, C = self.n_points, self.n_classes
        ones = np.kron(np.ones((n, n)), np.eye(C))
        return self.inner._dense() + self.sigma2 * ones

    def class_block(self, c):
        return self.inner.class_block(c) + self.sigma2

    def __repr__(self):
        return f"Intercept({self.inner!r}, sigma2={self.sigma2:g}{', learned' if self.learn else ''})"
