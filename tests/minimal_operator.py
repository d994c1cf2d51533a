"""An operator that defines only the required hooks, to exercise the base class' generic defaults.

K(θ) = exp(θ_0) A + exp(θ_1) B for fixed PSD matrices A, B of size nC (a Sum-like toy).
"""

import numpy as np

from gpmodels.operators.base import CrossOperator, Operator


class _MatrixCross(CrossOperator):
    def __init__(self, M, shape):
        self.M, self._shape = M, shape

    @property
    def shape(self):
        return self._shape

    def _mvm(self, V):
        rows, C = self._shape[0], self._shape[2]
        k = V.shape[2]
        return (self.M @ V.reshape(-1, k)).reshape(rows, C, k)


class DenseTestOperator(Operator):
    def __init__(self, A, B, theta, n, C):
        self.A, self.B, self.theta, self._n, self._C = A, B, np.asarray(theta, float), n, C

    @classmethod
    def random(cls, rng, n, C):
        Z1, Z2 = rng.normal(size=(n * C, n * C)), rng.normal(size=(n * C, n * C))
        return cls(Z1 @ Z1.T / (n * C), Z2 @ Z2.T / (n * C), rng.normal(size=2) * 0.5, n, C)

    def reference_dense(self):
        return np.exp(self.theta[0]) * self.A + np.exp(self.theta[1]) * self.B

    @property
    def n_points(self):
        return self._n

    @property
    def n_classes(self):
        return self._C

    def _mvm(self, V):
        k = V.shape[2]
        return (self.reference_dense() @ V.reshape(-1, k)).reshape(self._n, self._C, k)

    @property
    def params(self):
        return self.theta.copy()

    @property
    def param_names(self):
        return ("log_a", "log_b")

    def with_params(self, theta):
        return DenseTestOperator(self.A, self.B, theta, self._n, self._C)

    def _idx(self, J):
        return (np.asarray(J)[:, None] * self._C + np.arange(self._C)).ravel()

    def _restrict(self, J):
        i = self._idx(J)
        return DenseTestOperator(self.A[np.ix_(i, i)], self.B[np.ix_(i, i)], self.theta, len(J), self._C)

    def _cross(self, I, J):
        return _MatrixCross(self.reference_dense()[np.ix_(self._idx(I), self._idx(J))], (len(I), len(J), self._C))

    def _cross_test(self, X_new):
        raise NotImplementedError("a toy operator without inputs has no test points")
