"""Kernel combinations K_θ = Σ_m θ_m K_m over any operators (Nickisch & Seeger 2011, Sec. 2).

θ_m > 0 are the kernel weights of multiple kernel learning; in the flat hyperparameter vector they
appear in log space as ``weight{m}.log_theta`` (first), followed by every component's own
parameters prefixed ``k{m}.``.  Derivatives (Seeger 2008, eq. (6) for the trace form):

  d/dlog θ_m Σ_k e_k^T K_θ f_k = θ_m Σ_k e_k^T K_m f_k         (one MVM of K_m per component),
  d/dψ of component m's parameter ψ:  θ_m · (K_m's own grad_trace).

Every protocol method is the θ-weighted sum of the components' (diag, per-point blocks, restrict,
cross, cross_test, dense), so a Sum of class-diagonal operators is class-diagonal.  The components
must agree in n and C.  Weights must be positive and finite (θ_m = 0 means: drop K_m).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpmodels.errors import InputError
from gpmodels.operators.base import Composite, Operator, concat_params

__all__ = ["Sum", "check_weights"]


def check_weights(theta, M: int | None = None) -> np.ndarray:
    """θ as a float vector of positive, finite weights (one per kernel when M is given)."""
    try:
        theta = np.atleast_1d(np.asarray(theta, dtype=np.float64))
    except (TypeError, ValueError):
        raise InputError(f"kernel weights θ must be numbers; got {theta!r}") from None
    if theta.ndim != 1 or (M is not None and theta.size != M):
        raise InputError(f"kernel weights θ must be a vector of {M} values (one per kernel); got shape {theta.shape}")
    bad = ~np.isfinite(theta) | (theta <= 0)
    if np.any(bad):
        m = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"kernel weights θ must be positive and finite (drop a kernel from the Sum rather than "
            f"give it θ = 0); got θ[{m}] = {float(theta[m])!r}"
        )
    return theta


class Sum(Composite):
    """K_θ = Σ_m θ_m K_m over operators ``ops`` with weights ``theta``."""

    is_kernel_sum = True

    def __init__(self, ops: Sequence[Operator], theta=None):
        self.ops = tuple(ops)
        if not self.ops:
            raise InputError("Sum needs at least one operator")
        for m, op in enumerate(self.ops):
            if not isinstance(op, Operator):
                raise InputError(f"Sum components must be Operators; component {m} is {type(op).__name__}")
            if (op.n_points, op.n_classes) != (self.ops[0].n_points, self.ops[0].n_classes):
                raise InputError(
                    f"Sum components must share n and C; component 0 has "
                    f"({self.ops[0].n_points}, {self.ops[0].n_classes}), component {m} has "
                    f"({op.n_points}, {op.n_classes})"
                )
        self.theta = check_weights(np.ones(len(self.ops)) if theta is None else theta, len(self.ops))
        self.is_class_diagonal = all(op.is_class_diagonal for op in self.ops)

    @property
    def n_kernels(self) -> int:
        return len(self.ops)

    @property
    def weights(self) -> np.ndarray:
        """θ, shape (M,)."""
        return self.theta.copy()

    def with_weights(self, theta) -> Sum:
        return Sum(self.ops, theta)

    # ------------------------------------------------------------------ protocol
    @property
    def n_points(self):
        return self.ops[0].n_points

    @property
    def n_classes(self):
        return self.ops[0].n_classes

    def _parts(self):
        return self.ops

    def _compose(self, ops, maps, V):
        # K_θ V = Σ_m θ_m K_m V, in component order
        out = self.theta[0] * maps[0](V)
        for t, apply in zip(self.theta[1:], maps[1:]):
            out += t * apply(V)
        return out

    def _diag(self):
        return sum(t * op._diag() for t, op in zip(self.theta, self.ops))

    def _point_block_mvm(self, P):
        return sum(t * op._point_block_mvm(P) for t, op in zip(self.theta, self.ops))

    def _param_parts(self):
        parts = [("", np.log(self.theta), [f"weight{m}.log_theta" for m in range(self.n_kernels)])]
        parts += [(f"k{m}.", op.params, op.param_names) for m, op in enumerate(self.ops)]
        return parts

    @property
    def params(self):
        return concat_params(self._param_parts())[0]

    @property
    def param_names(self):
        return concat_params(self._param_parts())[1]

    @property
    def param_bounds(self):
        return np.vstack([np.tile([-np.inf, np.inf], (self.n_kernels, 1))] + [op.param_bounds for op in self.ops])

    def with_params(self, theta):
        theta = np.asarray(theta, dtype=np.float64).ravel()
        if theta.size != self.params.size:
            raise InputError(f"Sum has {self.params.size} parameters {self.param_names}; got {theta.size} values")
        if not np.all(np.isfinite(theta)):
            raise InputError(f"hyperparameters must be finite; got {theta.tolist()}")
        M = self.n_kernels
        ops, pos = [], M
        for op in self.ops:
            p = op.params.size
            ops.append(op.with_params(theta[pos : pos + p]) if p else op)
            pos += p
        return Sum(ops, np.exp(theta[:M]))

    def _grad_trace(self, E, F):
        g_w = np.empty(self.n_kernels)
        rest = []
        for m, (t, op) in enumerate(zip(self.theta, self.ops)):
            g_w[m] = t * float(np.sum(E * op._mvm(F)))
            if op.params.size:
                rest.append(t * op._grad_trace(E, F))
        return np.concatenate([g_w] + rest)

    def _restrict(self, J):
        return Sum([op._restrict(J) for op in self.ops], self.theta)

    def _test_point_blocks(self, X_new):
        return sum(t * op._test_point_blocks(X_new) for t, op in zip(self.theta, self.ops))

    def _dense(self):
        return sum(t * op._dense() for t, op in zip(self.theta, self.ops))

    def class_block(self, c):
        return sum(t * op.class_block(c) for t, op in zip(self.theta, self.ops))

    def __repr__(self):
        return f"Sum({', '.join(f'{t:.4g}·{op!r}' for t, op in zip(self.theta, self.ops))})"
