"""The compiled row sweeps of Newton–CG (gpmodels/linalg/row_kernels.py): the softmax factor's V and V^T, the pair
line search's Φ(λ) and Φ'(λ) and CG's updates against their numpy forms, on one thread and on several, and the
callers' numpy paths where the sweeps do not apply: the swept forms are what the plan's ``sweeps`` chooses (the
factor's ``swept``, the likelihood's ``swept_pair_line_values``, SWEPT_VECTORS), the numpy forms the defaults."""

import numpy as np
import pytest

from gpmodels.inference.execution_plan import DEFAULT_RULES
from gpmodels.likelihoods.base import Likelihood
from gpmodels.likelihoods.softmax import Softmax, SoftmaxFactor, log_softmax
from gpmodels.linalg import row_kernels
from gpmodels.linalg.cg import HOST_VECTORS, SWEPT_VECTORS

needs_numba = pytest.mark.skipif(not row_kernels.AVAILABLE, reason="the compiled sweeps need Numba (fast)")

#: rows x classes above the plan's sweep_min_entries, rows not a multiple of ROWS_PER_RANGE (a ragged last range)
SHAPE = (611, 450)


@pytest.fixture
def point(rng):
    U = 3.0 * rng.normal(size=SHAPE)
    Y = np.eye(SHAPE[1])[rng.integers(0, SHAPE[1], SHAPE[0])]
    return U, Y


def test_the_shape_takes_the_parallel_path():
    assert SHAPE[0] * SHAPE[1] >= DEFAULT_RULES.sweep_min_entries and SHAPE[0] % row_kernels.ROWS_PER_RANGE


def _swept(hf) -> bool:
    return type(hf._held).__name__ == "_SweptFactorArrays"


@needs_numba
def test_softmax_v_and_vt_are_the_numpy_products(point, rng):
    U, Y = point
    ref = SoftmaxFactor(log_softmax(U), Y, -np.inf)  # as made: numpy's products
    hf = ref.swept()  # nothing fixed: the compiled sweeps apply
    assert _swept(hf) and not _swept(ref)
    x, y = rng.normal(size=SHAPE), rng.normal(size=SHAPE)
    got_v, got_vt, got_plus = hf.V(x), hf.Vt(y), hf.Vt_plus(y, x)
    ref_v, ref_vt, ref_plus = ref.V(x), ref.Vt(y), ref.Vt_plus(y, x)
    np.testing.assert_allclose(got_v, ref_v, rtol=1e-12, atol=1e-13 * np.abs(ref_v).max())
    np.testing.assert_allclose(got_vt, ref_vt, rtol=1e-12, atol=1e-13 * np.abs(ref_vt).max())
    np.testing.assert_allclose(got_plus, ref_plus, rtol=1e-12, atol=1e-13 * np.abs(ref_plus).max())
    buf = np.empty(SHAPE)
    assert hf.V_into(x, buf) is buf
    np.testing.assert_array_equal(buf, got_v)


@needs_numba
@pytest.mark.parametrize("threads", [2, 3, 5])
def test_the_sweeps_on_several_threads_give_the_one_thread_numbers(point, rng, threads):
    U, Y = point
    pi, sqrt_pi = np.exp(log_softmax(U)), np.exp(0.5 * log_softmax(U))
    x, y = rng.normal(size=SHAPE), rng.normal(size=SHAPE)
    s, st = rng.normal(size=SHAPE), rng.normal(size=SHAPE)
    alpha = rng.normal(size=SHAPE)

    def run(t):
        v = row_kernels.softmax_v(x, pi, sqrt_pi, np.empty(SHAPE), threads=t)
        vt = row_kernels.softmax_vt(y, pi, sqrt_pi, plus=x, threads=t)
        line = row_kernels.softmax_line(alpha, s, U, st, Y, 0.37, threads=t)
        a = row_kernels.add_scaled(y.copy(), -0.3, x, threads=t)
        b = row_kernels.scale_add(y.copy(), 0.7, x, threads=t)
        return v, vt, line, a, b

    for one, many in zip(run(1), run(threads)):
        np.testing.assert_array_equal(np.asarray(one), np.asarray(many))


@needs_numba
@pytest.mark.parametrize("lam", [0.0, 0.25, 1.0])
def test_softmax_line_values_are_the_value_and_gradient_forms(point, rng, lam):
    U, Y = point
    alpha, s, st = rng.normal(size=SHAPE), rng.normal(size=SHAPE), rng.normal(size=SHAPE)
    lik = Softmax()
    phi, dphi = lik.swept_pair_line_values(alpha, s, U, st, Y, lam)
    ref_phi, ref_dphi = lik.pair_line_values(alpha, s, U, st, Y, lam)
    assert (ref_phi, ref_dphi) == Likelihood.pair_line_values(lik, alpha, s, U, st, Y, lam)
    assert phi == pytest.approx(ref_phi, rel=1e-12)
    assert dphi == pytest.approx(ref_dphi, rel=1e-11, abs=1e-10 * np.abs(st).sum())


def test_softmax_line_values_keep_infinite_latents_as_numpy_does(rng):
    U = rng.normal(size=(40, 7))
    U[3] = -np.inf  # a row whose maximum is not finite: shifted by 0, as _logsumexp_rows does
    Y = np.eye(7)[rng.integers(0, 7, 40)]
    alpha, s, st = (np.zeros((40, 7)) for _ in range(3))
    with np.errstate(invalid="ignore", divide="ignore"):
        got = Softmax().swept_pair_line_values(alpha, s, U, st, Y, 0.5)
        ref = Likelihood.pair_line_values(Softmax(), alpha, s, U, st, Y, 0.5)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))


@needs_numba
def test_cg_updates_are_numpys_bit_for_bit(rng):
    y, x = rng.normal(size=SHAPE), rng.normal(size=SHAPE)
    c = np.array([-0.731])
    vec = SWEPT_VECTORS
    ref = y.copy()
    ref += np.multiply(x, c)
    np.testing.assert_array_equal(vec.add_scaled(y.copy(), c, x, np.empty(SHAPE)), ref)
    ref = y.copy()
    ref *= c
    ref += x
    np.testing.assert_array_equal(vec.scale_add(y.copy(), c, x), ref)


def test_the_factor_with_fixed_components_keeps_its_numpy_products(rng):
    U = rng.normal(size=(30, 5))
    U[0, 0] = -60.0  # log π below κ with y = 1: App. B fixes the component
    Y = np.eye(5)[np.r_[0, rng.integers(0, 5, 29)]]
    hf = Softmax().hessian_factor(U, Y)
    assert not hf.all_free and hf.swept() is hf
    x = rng.normal(size=(30, 5))
    s = np.where(hf.fixed, 0.0, hf.sqrt_pi * x)
    np.testing.assert_allclose(hf.V(x), s - hf.pi * s.sum(axis=1, keepdims=True), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(hf.Vt(x)[hf.fixed], 0.0)
    np.testing.assert_allclose(hf.Vt_plus(x, x), x + hf.Vt(x))


@needs_numba
def test_cg_updates_with_a_coefficient_per_row_and_strided_arrays_are_numpys(rng):
    """Row blocks of several systems spread their coefficients per row; a strided (column-sliced) array sweeps
    as a contiguous one does."""
    y, x = rng.normal(size=SHAPE), rng.normal(size=(SHAPE[0], SHAPE[1] + 3))[:, 3:]
    c = rng.normal(size=(SHAPE[0], 1))
    for vec in (SWEPT_VECTORS, HOST_VECTORS):
        assert not x.flags.c_contiguous
        got_a = vec.add_scaled(y.copy(), c, x, np.empty(SHAPE))
        got_s = vec.scale_add(y.copy(), c, x)
        np.testing.assert_array_equal(got_a, y + x * c)
        np.testing.assert_array_equal(got_s, y * c + x)
    hf = SoftmaxFactor(log_softmax(rng.normal(size=SHAPE)), np.eye(SHAPE[1])[np.zeros(SHAPE[0], int)], -np.inf)
    np.testing.assert_allclose(hf.swept().V(x), hf.V(x), rtol=1e-12, atol=1e-13)
