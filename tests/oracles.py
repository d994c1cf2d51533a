"""Independent dense oracles: kernels by explicit loops, operators by explicit Kronecker algebra."""

import numpy as np
import scipy.sparse as sp


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def _matern(nu, r):
    """Matérn profile of smoothness nu at scaled distance r (Rasmussen & Williams 2006, eq. 4.16-4.17)."""
    if nu == 0.5:
        return np.exp(-r)
    if nu == 1.5:
        return (1.0 + np.sqrt(3.0) * r) * np.exp(-np.sqrt(3.0) * r)
    return (1.0 + np.sqrt(5.0) * r + 5.0 * r**2 / 3.0) * np.exp(-np.sqrt(5.0) * r)


def _pair_value(kernel, a, b):
    """M(a, b) for one pair of points from the kernel's definition."""
    from gpmodels.kernels.constant import Constant, White
    from gpmodels.kernels.linear import Linear, Polynomial
    from gpmodels.kernels.matern import Matern, MaternARD
    from gpmodels.kernels.rational_quadratic import RationalQuadratic, RationalQuadraticARD
    from gpmodels.kernels.rbf import ARD, RBF

    diff = a - b
    if isinstance(kernel, RBF):
        return np.exp(-0.5 * kernel.w * np.sum(diff**2))
    if isinstance(kernel, ARD):
        return np.exp(-0.5 * np.sum(kernel.w * diff**2))
    if isinstance(kernel, Linear):
        return np.sum(a * b)
    if isinstance(kernel, Polynomial):
        return (kernel.scale * np.sum(a * b) + kernel.offset) ** kernel.degree
    if isinstance(kernel, (Matern, MaternARD)):
        return _matern(kernel.nu, np.sqrt(np.sum(kernel.w * diff**2)))
    if isinstance(kernel, (RationalQuadratic, RationalQuadraticARD)):
        return (1.0 + np.sum(kernel.w * diff**2) / (2.0 * kernel.alpha)) ** (-kernel.alpha)
    if isinstance(kernel, Constant):
        return kernel.value
    if isinstance(kernel, White):
        return kernel.noise if np.all(diff == 0) else 0.0
    raise TypeError(type(kernel))


def naive_gram(kernel, X1, X2):
    """M(x1_a, x2_b) by loops over pairs, from the kernel's definition (not its code); sums and
    products from their terms' oracles, a scikit-learn kernel by calling it on each pair."""
    from gpmodels.kernels.composite import Constrained, KernelProduct, KernelSum
    from gpmodels.kernels.precomputed import Precomputed
    from gpmodels.kernels.sklearn_adapter import SklearnKernel

    if isinstance(kernel, Precomputed):
        i1, i2 = np.asarray(X1)[:, 0].astype(int), np.asarray(X2)[:, 0].astype(int)
        return np.array([[kernel.gram_matrix[a, b] for b in i2] for a in i1])
    if isinstance(kernel, Constrained):
        return naive_gram(kernel.kernel, X1, X2)
    if isinstance(kernel, (KernelSum, KernelProduct)):
        grams = [naive_gram(t, X1, X2) for t in kernel.terms]
        return sum(grams) if isinstance(kernel, KernelSum) else np.prod(grams, axis=0)
    A, B = _dense(X1), _dense(X2)
    out = np.empty((A.shape[0], B.shape[0]))
    for a in range(A.shape[0]):
        for b in range(B.shape[0]):
            if isinstance(kernel, SklearnKernel):
                out[a, b] = kernel.kernel(A[a : a + 1], B[b : b + 1])[0, 0]
            else:
                out[a, b] = _pair_value(kernel, A[a], B[b])
    return out


def nystrom_gram(kernel, X1, X2, Xp, jitter, diag_correct):
    """K_1p K_pp^{-1} K_p2 (+ diag correction when X1 is X2) from naive Grams."""
    Kpp = naive_gram(kernel, Xp, Xp)
    Kpp[np.diag_indices_from(Kpp)] += jitter * max(1.0, float(np.mean(np.diag(Kpp))))
    Q = naive_gram(kernel, X1, Xp) @ np.linalg.solve(Kpp, naive_gram(kernel, Xp, X2))
    if diag_correct:
        exact = np.diag(naive_gram(kernel, X1, X1))
        Q[np.diag_indices_from(Q)] += np.maximum(exact - np.diag(Q), 0.0)
    return Q


def block_diagonal_dense(class_grams, class_v, sigma2=0.0):
    """(nC, nC) matrix with flat index i*C + c from per-class n x n Grams."""
    C = len(class_grams)
    n = class_grams[0].shape[0]
    D = np.zeros((n * C, n * C))
    for c in range(C):
        E = np.zeros((C, C))
        E[c, c] = 1.0
        D += np.kron(class_v[c] * class_grams[c] + sigma2, E)
    return D


def block_diagonal_cross(class_grams, class_v, sigma2=0.0):
    """(mC, nC) from per-class m x n cross Grams."""
    C = len(class_grams)
    D = 0.0
    for c in range(C):
        E = np.zeros((C, C))
        E[c, c] = 1.0
        D = D + np.kron(class_v[c] * class_grams[c] + sigma2, E)
    return D


def dense_softmax_map(K, Y, iters=60):
    """MAP u of the softmax model with a dense prior matrix K (nC x nC, flat index i*C + c):
    damped Newton on α with (I + W K) α' = W u - g solved densely (Seeger 2008, eq. 5 before the
    symmetrisation), α kept in ran W.  An oracle for non-block-diagonal priors."""
    n, C = Y.shape
    alpha = np.zeros(n * C)
    y = Y.ravel()

    def phi(a):
        u = (K @ a).reshape(n, C)
        m = u.max(axis=1, keepdims=True)
        lse = (m + np.log(np.exp(u - m).sum(axis=1, keepdims=True))).ravel()
        return 0.5 * a @ (K @ a) + lse.sum() - y @ u.ravel()

    for _ in range(iters):
        u = (K @ alpha).reshape(n, C)
        pi = np.exp(u - u.max(axis=1, keepdims=True))
        pi /= pi.sum(axis=1, keepdims=True)
        g = (pi - Y).ravel()
        W = np.zeros((n * C, n * C))
        for i in range(n):
            s = slice(i * C, (i + 1) * C)
            W[s, s] = np.diag(pi[i]) - np.outer(pi[i], pi[i])
        new = np.linalg.solve(np.eye(n * C) + W @ K, W @ u.ravel() - g)
        step, f0 = 1.0, phi(alpha)
        while phi(alpha + step * (new - alpha)) > f0 and step > 1e-10:
            step *= 0.5
        alpha = alpha + step * (new - alpha)
    return (K @ alpha).reshape(n, C), phi(alpha)


def cv_fd_gradient(op, Y, folds, opts, step):
    """∇Ψ by central differences in each log hyperparameter (softmax likelihood)."""
    from gpmodels.inference.cv.criterion import cv_criterion
    from gpmodels.likelihoods.softmax import Softmax
    from gpmodels.linalg.finite_differences import central_differences

    def psi(theta):
        ev = cv_criterion(op.with_params(theta), Softmax(), Y, folds, opts, gradient=False)
        assert ev.ok, ev.message
        return ev.psi

    return central_differences(op.params, psi, step)
