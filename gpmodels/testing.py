"""Conformance checks for operators and likelihoods, for this package's tests and for yours.

``check_operator(op, ...)`` tests an operator against a dense oracle (a matrix you build
independently) and against finite differences; ``check_likelihood(lik, U, Y)`` tests a
likelihood's gradient, Hessian and Hessian factor.  Each check raises ``AssertionError`` with a
message that says which property failed.  They need only numpy: hypothesis strategies that
generate the inputs live in the test suite.
"""

from __future__ import annotations

import numpy as np

from gpmodels.errors import InputError
from gpmodels.linalg.finite_differences import central_differences
from gpmodels.operators.base import Operator

__all__ = [
    "check_operator",
    "check_cross_blocks",
    "check_grad_trace",
    "check_likelihood",
    "check_likelihood_hooks",
    "check_diagonal_likelihood",
    "assert_close",
]


def assert_close(what: str, actual, expected, rtol: float = 1e-8, atol: float = 1e-10) -> None:
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    if actual.shape != expected.shape:
        raise AssertionError(f"{what}: shape {actual.shape} != expected {expected.shape}")
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    err = float(np.abs(actual - expected).max(initial=0.0))
    if not err <= atol * scale + rtol * scale:
        raise AssertionError(f"{what}: max abs error {err:.3g} (scale {scale:.3g}, rtol {rtol:g}, atol {atol:g})")


def check_operator(
    op: Operator, rng: np.random.Generator, *, dense=None, X_new=None, cross_dense=None, rtol: float = 1e-8
) -> None:
    """mvm / diag / point blocks / restrict / cross (and its transpose rmvm) / cross_test / dense against an oracle.

    ``dense``: the (nC, nC) matrix the operator stands for (built independently); when None, only
    self-consistency with ``op.dense()`` is checked.  ``X_new`` with ``cross_dense`` (m C x n C)
    checks prediction blocks.
    """
    n, C = op.n_points, op.n_classes
    D = op.dense()
    assert_close("dense() symmetric", D, D.T, rtol)
    if dense is not None:
        assert_close("dense() vs oracle", D, dense, rtol)
    V = rng.normal(size=(n, C))
    assert_close("mvm (n, C)", op.mvm(V), (D @ V.ravel()).reshape(n, C), rtol)
    V3 = rng.normal(size=(n, C, 3))
    assert_close("mvm (n, C, k)", op.mvm(V3), np.einsum("ab,bk->ak", D, V3.reshape(n * C, 3)).reshape(n, C, 3), rtol)
    assert_close("diag", op.diag(), np.diag(D).reshape(n, C), rtol)
    P = rng.random(size=(n, C))
    blocks = D.reshape(n, C, n, C)[np.arange(n), :, np.arange(n), :]
    assert_close("point_block_mvm", op.point_block_mvm(P), np.einsum("icd,id->ic", blocks, P), rtol)
    for c in range(C):
        assert_close(f"class_block({c})", op.class_block(c), D[c::C, c::C], rtol)
    if op.is_class_diagonal:
        off = D.reshape(n, C, n, C).copy()
        for c in range(C):
            off[:, c, :, c] = 0.0
        assert_close("is_class_diagonal but off-class entries", off, np.zeros_like(off), rtol)
    _check_restrict_and_cross(op, D, rng, rtol)
    if X_new is not None:
        _check_cross_test(op, X_new, cross_dense, V, rng, rtol)
    _check_structure_hooks(op, D, V, rtol)
    theta = op.params
    assert len(op.param_names) == theta.size, "param_names and params differ in length"
    same = op.with_params(theta)
    assert_close("with_params(params) reproduces the operator", same.mvm(V), op.mvm(V), rtol)


def _check_restrict_and_cross(op: Operator, D: np.ndarray, rng: np.random.Generator, rtol: float) -> None:
    """restrict(J) (dense and mvm) and the block cross(I, J) of the held-out I (mvm with one and k
    columns, rmvm against the oracle's transpose) for a random half J of the points."""
    n, C = op.n_points, op.n_classes
    J = rng.permutation(n)[: max(1, n // 2 + 1)]
    idx = (J[:, None] * C + np.arange(C)[None, :]).ravel()
    sub = op.restrict(J)
    assert_close("restrict(J).dense", sub.dense(), D[np.ix_(idx, idx)], rtol)
    VJ = rng.normal(size=(J.size, C))
    assert_close("restrict(J).mvm", sub.mvm(VJ), (D[np.ix_(idx, idx)] @ VJ.ravel()).reshape(J.size, C), rtol)
    I = np.setdiff1d(np.arange(n), J)
    if I.size:
        iidx = (I[:, None] * C + np.arange(C)[None, :]).ravel()
        cr = op.cross(I, J)
        assert cr.shape == (I.size, J.size, C), f"cross(I, J).shape {cr.shape}"
        assert_close("cross(I, J).mvm", cr.mvm(VJ), (D[np.ix_(iidx, idx)] @ VJ.ravel()).reshape(I.size, C), rtol)
        VJ3 = rng.normal(size=(J.size, C, 2))
        expect = np.einsum("ab,bk->ak", D[np.ix_(iidx, idx)], VJ3.reshape(-1, 2)).reshape(I.size, C, 2)
        assert_close("cross(I, J).mvm (k columns)", cr.mvm(VJ3), expect, rtol)
        WI = rng.normal(size=(I.size, C))
        assert_close(
            "cross(I, J).rmvm vs the oracle's transpose",
            cr.rmvm(WI),
            (D[np.ix_(iidx, idx)].T @ WI.ravel()).reshape(J.size, C),
            rtol,
        )
        WI3 = rng.normal(size=(I.size, C, 2))
        assert_close(
            "cross(I, J).rmvm (k columns) vs dense().T",
            cr.rmvm(WI3),
            (cr.dense().T @ WI3.reshape(-1, 2)).reshape(J.size, C, 2),
            rtol,
        )


def _check_cross_test(op: Operator, X_new, cross_dense, V: np.ndarray, rng: np.random.Generator, rtol: float) -> None:
    """cross_test(X_new): its shape, mvm against ``cross_dense`` (m C x n C) when given, and rmvm
    against the transpose of the oracle (or of its own dense())."""
    n, C = op.n_points, op.n_classes
    ct = op.cross_test(X_new)
    m = ct.shape[0]
    assert ct.shape[1:] == (n, C), f"cross_test shape {ct.shape}"
    expect = (cross_dense @ V.ravel()).reshape(m, C) if cross_dense is not None else None
    got = ct.mvm(V)
    if expect is not None:
        assert_close("cross_test(X_new).mvm", got, expect, rtol)
    Wm = rng.normal(size=(m, C, 2))
    expect_t = (cross_dense if cross_dense is not None else ct.dense()).T @ Wm.reshape(-1, 2)
    assert_close("cross_test(X_new).rmvm vs the transpose", ct.rmvm(Wm), expect_t.reshape(n, C, 2), rtol)
    assert_close("cross_test(X_new).rmvm (m, C)", ct.rmvm(Wm[:, :, 0]), expect_t[:, 0].reshape(n, C), rtol)


def _check_structure_hooks(op: Operator, D: np.ndarray, V: np.ndarray, rtol: float) -> None:
    """The structure an operator declares against its dense matrix: kron_terms (K = Σ_t M_t ⊗ S_t),
    kernel_groups (K = Σ_r M_r ⊗ diag(w_r)) and point_blocks (the C x C blocks K_i)."""
    n, C = op.n_points, op.n_classes
    terms = op.kron_terms()
    if terms is not None:  # K = Σ_t M_t ⊗ S_t: K V = Σ_t M_t V S_t in the (n, C) layout
        KV = sum(t.mvm(V) @ t.S for t in terms)
        assert_close("kron_terms: Σ_t M_t V S_t", KV, (D @ V.ravel()).reshape(n, C), rtol)
        for t in terms:
            assert_close("kron_terms: S_t symmetric", t.S, t.S.T, rtol)
    groups = op.kernel_groups()
    if groups is not None:  # K = Σ_r M_r ⊗ diag(w_r): K V = Σ_r (M_r V) diag(w_r)
        KV = sum(rep.mvm(V) * w[None, :] for rep, w in groups)
        assert_close("kernel_groups: Σ_r M_r V diag(w_r)", KV, (D @ V.ravel()).reshape(n, C), rtol)
        assert all(np.all(w >= 0) and w.shape == (C,) for _, w in groups), "kernel_groups: weights (C,) >= 0"
    blocks = op.point_blocks()
    expect_blocks = D.reshape(n, C, n, C)[np.arange(n), :, np.arange(n), :]
    assert_close("point_blocks", blocks, expect_blocks, rtol)


def _check_block(what: str, block, expected: np.ndarray, rng: np.random.Generator, rtol: float) -> None:
    """A CrossOperator against its expected dense (rows C, cols C) matrix: shape, dense, mvm, rmvm."""
    rows, cols, C = block.shape
    if expected.shape != (rows * C, cols * C):
        raise AssertionError(f"{what}: shape {block.shape} does not fit the expected block {expected.shape}")
    assert_close(f"{what}.dense()", block.dense(), expected, rtol)
    V, V3 = rng.normal(size=(cols, C)), rng.normal(size=(cols, C, 2))
    assert_close(f"{what}.mvm (cols, C)", block.mvm(V), (expected @ V.ravel()).reshape(rows, C), rtol)
    assert_close(f"{what}.mvm (cols, C, k)", block.mvm(V3), (expected @ V3.reshape(-1, 2)).reshape(rows, C, 2), rtol)
    W, W3 = rng.normal(size=(rows, C)), rng.normal(size=(rows, C, 2))
    assert_close(f"{what}.rmvm (rows, C)", block.rmvm(W), (expected.T @ W.ravel()).reshape(cols, C), rtol)
    assert_close(
        f"{what}.rmvm (rows, C, k)", block.rmvm(W3), (expected.T @ W3.reshape(-1, 2)).reshape(cols, C, 2), rtol
    )


def check_cross_blocks(
    op: Operator, rng: np.random.Generator, *, X_new=None, stacked: Operator | None = None, rtol: float = 1e-8
) -> None:
    """Every rectangular block of ``op`` equals the same block of a square operator's ``dense()``.

    ``cross(I, J)`` for training subsets I, J (disjoint, overlapping, equal, in any order) against
    rows I and columns J of ``op.dense()``, forward and transposed.  With ``X_new`` and ``stacked``
    (the same operator built on the training points followed by X_new), ``cross_test(X_new)``
    against the rows of the new points and the columns of the training points of
    ``stacked.dense()`` (whose training block must be ``op.dense()``).
    """
    n, C = op.n_points, op.n_classes
    D = op.dense()

    def flat(points):  # flat indices i C + c of the points' classes
        return (np.asarray(points, dtype=np.intp)[:, None] * C + np.arange(C)[None, :]).ravel()

    perm = rng.permutation(n)
    half = max(1, n // 2)
    some = rng.choice(n, size=max(1, (2 * n) // 3), replace=False)
    others = rng.choice(n, size=max(1, (2 * n) // 3), replace=False)
    pairs = [
        ("disjoint", perm[:half], perm[half:]),
        ("overlapping", some, others),
        ("equal", some, some),
        ("all points, permuted", perm, rng.permutation(n)),
    ]
    for name, I, J in pairs:
        if I.size and J.size:
            _check_block(f"cross(I, J) ({name})", op.cross(I, J), D[np.ix_(flat(I), flat(J))], rng, rtol)
    if X_new is not None and stacked is not None:
        S = stacked.dense()
        m = stacked.n_points - n
        assert_close("the stacked operator's training block vs dense()", S[: n * C, : n * C], D, rtol)
        ct = op.cross_test(X_new)
        _check_block("cross_test(X_new)", ct, S[np.ix_(flat(np.arange(n, n + m)), flat(np.arange(n)))], rng, rtol)


def check_grad_trace(
    op: Operator, rng: np.random.Generator, *, q: int = 2, step: float = 1e-5, rtol: float = 1e-5, atol: float = 1e-7
) -> None:
    """grad_trace(E, F) against central differences of Σ_k e_k^T K(θ) f_k; for a class-diagonal operator
    also grad_trace_blocks(A) against grad_trace with F the identity."""
    n, C = op.n_points, op.n_classes
    E, F = rng.normal(size=(n, C, q)), rng.normal(size=(n, C, q))
    g = op.grad_trace(E, F)
    theta = op.params
    assert g.shape == theta.shape, f"grad_trace shape {g.shape} != params {theta.shape}"
    fd = central_differences(theta, lambda t: np.sum(E * op.with_params(t).mvm(F)), step)
    scale = max(1.0, float(np.abs(fd).max(initial=0.0)))
    err = np.abs(g - fd)
    if np.any(err > rtol * scale + atol * scale):
        p = int(np.argmax(err))
        raise AssertionError(f"grad_trace[{op.param_names[p]}] = {g[p]:.8g}, finite differences {fd[p]:.8g}")
    if op.is_class_diagonal:  # dense class-block weights: the same as grad_trace against identities
        A = rng.normal(size=(C, n, n))
        F_eye = np.ascontiguousarray(np.broadcast_to(np.eye(n)[:, None, :], (n, C, n)))
        assert_close(
            "grad_trace_blocks", op.grad_trace_blocks(A), op.grad_trace(A.transpose(1, 0, 2), F_eye), 1e-9, 1e-12
        )


def check_likelihood(
    lik, U: np.ndarray, Y: np.ndarray, rng: np.random.Generator, *, step: float = 1e-6, rtol: float = 1e-5
) -> None:
    """Gradient and Hessian against finite differences; W = V V^T; V g̃ = g; V^T is V's transpose."""
    n, C = U.shape
    g = lik.gradient(U, Y)
    fd = central_differences(U.ravel(), lambda z: lik.value(z.reshape(U.shape), Y), step).reshape(U.shape)
    assert_close("gradient vs finite differences", g, fd, rtol, rtol)
    hf = lik.hessian_factor(U, Y)
    x = rng.normal(size=(n, C))
    Wx_fd = (lik.gradient(U + step * x, Y) - lik.gradient(U - step * x, Y)) / (2 * step)
    if getattr(hf, "exact", True):
        assert_close("W x vs finite differences of the gradient", hf.W(x), Wx_fd, rtol, rtol)
    else:  # a majoriser's curvature: W >= the Hessian, W > 0
        xWx, xHx = float(np.vdot(x, hf.W(x))), float(np.vdot(x, Wx_fd))
        assert xWx > 0.0, f"majoriser curvature must be positive definite; x^T W x = {xWx}"
        assert xWx >= xHx - rtol * max(1.0, abs(xHx)), f"majoriser curvature below the Hessian: {xWx} < {xHx}"
    y = rng.normal(size=(n, C))
    lhs, rhs = float(np.vdot(hf.V(x), y)), float(np.vdot(x, hf.Vt(y)))
    assert abs(lhs - rhs) <= 1e-9 * max(1.0, abs(lhs)), f"<V x, y> = {lhs} but <x, V^T y> = {rhs}"
    if np.all(hf.free):
        assert_close("W = V V^T", hf.V(hf.Vt(x)), hf.W(x), 1e-9, 1e-9)
        assert_close("V g_tilde(g) = g", hf.V(hf.g_tilde(g)), g, 1e-9, 1e-9)
        a = lik.project_alpha(rng.normal(size=(n, C)))
        assert_close("V beta_init(alpha) = alpha on the fit's domain", hf.V(hf.beta_init(a)), a, 1e-9, 1e-9)
        # App. B preconditioner: diag(I + V^T K V) for a random PSD per-point block-diagonal K
        B = rng.normal(size=(n, C, C))
        blocks = np.einsum("icd,ied->ice", B, B)
        diag_K = np.einsum("icc->ic", blocks)
        d = hf.precond_diag(diag_K, lambda P: np.einsum("icd,id->ic", blocks, P))
        E = np.eye(n * C).reshape(n, C, n * C)
        expect = np.empty((n, C))
        for j in range(n * C):
            vj = hf.V(E[:, :, j])
            expect.reshape(-1)[j] = 1.0 + float(np.sum(vj * np.einsum("icd,id->ic", blocks, vj)))
        assert_close("precond_diag = diag(I + V^T K V)", d, expect, 1e-9, 1e-9)
    _check_factor_rows(hf, x, y, n)
    check_likelihood_hooks(lik, U, Y, rng, step=step, rtol=rtol)


def _check_factor_rows(hf, x: np.ndarray, y: np.ndarray, n: int) -> None:
    """A factor that gives its rows (``HessianFactor.rows``): V, V^T, W and β_init of the rows' factor are
    the whole factor's on those rows (V is block-diagonal over points)."""
    rows = slice(n // 3, n - n // 4)
    part = hf.rows(rows)
    if part is None:
        return
    for name in ("V", "Vt", "W", "beta_init"):
        whole = getattr(hf, name)(x if name != "Vt" else y)[rows]
        assert_close(f"rows(): {name} on the rows", getattr(part, name)(x[rows] if name != "Vt" else y[rows]), whole)
    assert np.array_equal(part.free, hf.free[rows]), "rows(): the free components of the rows"


def _exact_blocks(lik, U, Y) -> np.ndarray:
    """The per-point blocks W_i (n, C, C) of the exact Hessian from ``exact_hessian_factor`` (signed
    ``diagonal_W`` when the factor has one: V = W^{1/2} cannot hold negative curvature)."""
    hf = lik.exact_hessian_factor(U, Y)
    w = hf.diagonal_W()
    n, C = U.shape
    if w is not None:
        return np.einsum("ic,cd->icd", w, np.eye(C))
    out = np.empty((n, C, C))
    for c in range(C):
        E = np.zeros((n, C))
        E[:, c] = 1.0
        out[:, :, c] = hf.W(E)
    return out


def check_likelihood_hooks(
    lik, U: np.ndarray, Y: np.ndarray, rng: np.random.Generator, *, step: float = 1e-6, rtol: float = 1e-5
) -> None:
    """The hooks of the criteria (:mod:`gpmodels.likelihoods.base`): ``value_per_point`` sums to ``value``;
    ``exact_hessian_factor`` has nothing fixed, is the Hessian (finite differences of the gradient) and
    W = V V^T where W >= 0; ``multinomial_pi`` (when given) reproduces W; ``trace_hessian_derivative``
    against central differences of Σ_i tr(S_i W_i); ``check_laplace`` raises only InputError.  A
    likelihood whose ``exact_hessian_factor`` raises InputError (not provided) skips those checks."""
    n, C = U.shape
    per_point = lik.value_per_point(U, Y)
    assert np.shape(per_point) == (n,), f"value_per_point must have shape ({n},); got {np.shape(per_point)}"
    assert_close("sum of value_per_point = value", float(np.sum(per_point)), lik.value(U, Y), 1e-10, 1e-10)
    try:
        lik.check_laplace()
    except InputError:
        pass
    try:
        hf = lik.exact_hessian_factor(U, Y)
    except InputError:
        return
    assert np.all(hf.free) and hf.fixed_alpha is None, "exact_hessian_factor must leave every component free"
    x = rng.normal(size=(n, C))
    Wx_fd = (lik.gradient(U + step * x, Y) - lik.gradient(U - step * x, Y)) / (2 * step)
    W = _exact_blocks(lik, U, Y)
    assert_close(
        "exact Hessian x vs finite differences of the gradient", np.einsum("icd,id->ic", W, x), Wx_fd, rtol, rtol
    )
    if np.all(np.linalg.eigvalsh(0.5 * (W + np.transpose(W, (0, 2, 1)))) >= 0):
        assert_close("exact factor: W = V V^T", hf.V(hf.Vt(x)), hf.W(x), 1e-9, 1e-9)
    pi = hf.multinomial_pi()
    if pi is not None:
        expect = pi * x - pi * np.sum(pi * x, axis=1, keepdims=True)
        assert_close("multinomial_pi: W x = π x - π (π^T x)", hf.W(x), expect, 1e-12, 1e-12)
    B = rng.normal(size=(n, C, C))
    S = np.einsum("icd,ied->ice", B, B)
    fd = np.empty((n, C))
    for c in range(C):
        Up, Um = U.copy(), U.copy()
        Up[:, c] += step
        Um[:, c] -= step
        tp = np.einsum("icd,idc->i", S, _exact_blocks(lik, Up, Y))
        tm = np.einsum("icd,idc->i", S, _exact_blocks(lik, Um, Y))
        fd[:, c] = (tp - tm) / (2 * step)
    assert_close(
        "trace_hessian_derivative vs differences of tr(S W)", lik.trace_hessian_derivative(U, Y, S), fd, rtol, rtol
    )


def check_diagonal_likelihood(lik, U: np.ndarray, Y: np.ndarray, *, step: float = 1e-6, rtol: float = 1e-5) -> None:
    """The elementwise hooks of a :class:`~gpmodels.likelihoods.diagonal.DiagonalLikelihood`.

    ∂², ∂³ and the ψ-derivatives against central differences; the Newton curvature against the
    Hessian (equal, or above it for a majoriser); and, when it has one, the super-Gaussian form:
    G(s²) + ℓ_lin = -2 log P, G' and G'' by differences, G concave, ∂G/∂ψ by differences.
    """
    d1 = lambda Z: lik.gradient(Z, Y)  # noqa: E731
    differences = (d1(U + step) - d1(U - step)) / (2 * step)
    assert_close("d2 vs differences of d1", lik.hessian_diag(U, Y), differences, rtol, rtol)
    d3_fd = (lik.hessian_diag(U + step, Y) - lik.hessian_diag(U - step, Y)) / (2 * step)
    assert_close("d3 vs differences of d2", lik.third_derivative(U, Y), d3_fd, rtol, rtol)
    w = lik.hessian_factor(U, Y).W(np.ones_like(U))
    if lik.curvature_kind == "hessian":
        assert_close("Newton curvature = Hessian", w, lik.hessian_diag(U, Y), 1e-12, 1e-12)
    else:
        assert np.all(w > 0) and np.all(w >= lik.hessian_diag(U, Y) - 1e-12), "majoriser curvature below the Hessian"
    _check_param_derivatives(lik, U, Y, step, rtol)
    if lik.has_super_gaussian:
        _check_super_gaussian(lik, U, Y, step, rtol)


def _shifted(lik, p: int, step: float):
    """``lik`` with hyperparameter ``p`` moved by +step and by -step (for central differences)."""
    tp, tm = lik.params.copy(), lik.params.copy()
    tp[p] += step
    tm[p] -= step
    return lik.with_params(tp), lik.with_params(tm)


def _check_param_derivatives(lik, U: np.ndarray, Y: np.ndarray, step: float, rtol: float) -> None:
    """``param_derivatives``: ∂ value, ∂ gradient and ∂ W by each hyperparameter against central differences."""
    theta = lik.params
    v, dg, dw = lik.param_derivatives(U, Y)
    assert v.shape == theta.shape and dg.shape == (theta.size,) + U.shape and dw.shape == dg.shape
    for p in range(theta.size):
        lp, lm = _shifted(lik, p, step)
        name = lik.param_names[p]
        assert_close(f"∂ value / ∂{name}", v[p], (lp.value(U, Y) - lm.value(U, Y)) / (2 * step), rtol, rtol)
        assert_close(f"∂ gradient / ∂{name}", dg[p], (lp.gradient(U, Y) - lm.gradient(U, Y)) / (2 * step), rtol, rtol)
        fd = (lp.hessian_diag(U, Y) - lm.hessian_diag(U, Y)) / (2 * step)
        assert_close(f"∂ W / ∂{name}", dw[p], fd, rtol, rtol)


def _check_super_gaussian(lik, U: np.ndarray, Y: np.ndarray, step: float, rtol: float) -> None:
    """The super-Gaussian form: G(s²) + ℓ_lin = -2 log P; G' and G'' by differences; G concave and
    increasing in x = s²; ∂G/∂ψ by differences."""
    s = lik.sg_s(U, Y)
    X = s**2
    assert_close("G(s²) + ℓ_lin = -2 log P", lik.sg_G(X, Y) + lik.sg_lin(U, Y), 2 * lik._nlp(U, Y), 1e-10, 1e-10)
    Xs = X + 0.1  # away from x = 0 for the differences
    h = step * np.maximum(1.0, Xs)
    fd = (lik.sg_G(Xs + h, Y) - lik.sg_G(Xs - h, Y)) / (2 * h)
    assert_close("G' vs differences", lik.sg_dG(Xs, Y), fd, rtol, rtol)
    fd = (lik.sg_dG(Xs + h, Y) - lik.sg_dG(Xs - h, Y)) / (2 * h)
    assert_close("G'' vs differences", lik.sg_d2G(Xs, Y), fd, rtol, rtol)
    assert np.all(lik.sg_d2G(Xs, Y) <= 1e-14), "G must be concave in x = s² (super-Gaussian)"
    assert np.all(lik.sg_dG(Xs, Y) > 0), "G must be increasing in x = s²"
    dG = lik.sg_dpsi(Xs, Y)
    for p in range(lik.params.size):
        lp, lm = _shifted(lik, p, step)
        fd = (lp.sg_G(Xs, Y) - lm.sg_G(Xs, Y)) / (2 * step)
        assert_close(f"∂G/∂{lik.param_names[p]}", dG[p], fd, rtol, rtol)
