"""Crammer–Singer: the compiled loop (C extension) against the numpy loop, and the fallback without it.

The two engines run the same steps in the same floating-point order (gpmodels/baselines/crammer_singer/loops.py),
so they are held to the same τ and F bit for bit, the same update and round counts and the same
kernel-row cache counters; both are also checked against cvxpy in test_crammer_singer.py.
"""

import os
import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import toy_classification
from hypothesis import given, settings
from hypothesis import strategies as st

from gpmodels.baselines.crammer_singer import loops as cs_loops
from gpmodels.baselines.crammer_singer.kernel_cache import KernelRows
from gpmodels.baselines.crammer_singer.loops import compiled_available
from gpmodels.baselines.crammer_singer.solver import CSOptions, fit_crammer_singer
from gpmodels.errors import InputError
from gpmodels.kernels import RBF, Linear, Precomputed
from gpmodels.kernels.precomputed import index_inputs

needs_compiled = pytest.mark.skipif(
    not compiled_available(),
    reason="C extension gpmodels.baselines.crammer_singer._core not built (no C compiler at install)",
)


def _compiler_setuptools_would_use():
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or ""
    return shutil.which(cc.split()[0]) if cc.split() else None


def test_extension_is_built_where_it_can_be():
    """A failed optional build is silent at install; with a compiler and Python.h it must not happen."""
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if _compiler_setuptools_would_use() is None or not headers.exists():
        pytest.skip("no C compiler or no Python.h here: the numpy engine is the one in use")
    assert compiled_available(), (
        "a C compiler and Python.h are present but gpmodels.baselines.crammer_singer._core did not "
        "import: reinstall (pip install -e .) and read the build output"
    )


def _problem(kind, m, k, d, seed):
    r = np.random.default_rng(seed)
    X = r.normal(size=(m, d))
    y = r.integers(0, k, size=m)
    y[:k] = np.arange(k)[: min(k, m)]
    if kind == "rbf":
        return RBF(w=float(r.uniform(0.2, 3.0))), X, y, None
    if kind == "linear_sparse":
        Xs = np.where(r.random(X.shape) < 0.4, 0.0, X)
        Xs[:, 0] = 1.0  # K_ii > 0 (eq. 18)
        return Linear(), sp.csr_matrix(Xs), y, None
    G = RBF(w=float(r.uniform(0.2, 3.0))).gram(X, X) + 0.1
    return None, None, y, G


def _fit(kern, X, y, G, k, engine, **opts):
    o = CSOptions(engine=engine, **opts)
    if G is not None:
        return fit_crammer_singer(None, None, y, o, n_classes=k, gram=G)
    return fit_crammer_singer(kern, X, y, o, n_classes=k)


def _assert_same(a, b):
    ra, rb = a.result, b.result
    np.testing.assert_array_equal(ra.tau, rb.tau)
    np.testing.assert_array_equal(ra.F, rb.F)
    assert (ra.updates, ra.rounds, ra.message, ra.converged) == (rb.updates, rb.rounds, rb.message, rb.converged)
    assert ra.dual_objective == rb.dual_objective and ra.gap == rb.gap and ra.max_psi == rb.max_psi
    np.testing.assert_array_equal(a.support_, b.support_)
    assert [t["updates"] for t in ra.trace] == [t["updates"] for t in rb.trace]


options = st.one_of(
    st.builds(
        dict,
        selection=st.just("cyclic"),
        active_set=st.just(False),
        cooling=st.just("none"),
        max_sweeps=st.integers(1, 30),
    ),
    st.builds(
        dict,
        active_set=st.booleans(),
        cooling=st.sampled_from(["none", "exponential", "linear", "logarithmic"]),
        epsilon0=st.sampled_from([0.999, 0.05]),
        max_updates=st.sampled_from([7, 10_000_000]),
    ),
)


@needs_compiled
@settings(max_examples=40)
@given(
    kind=st.sampled_from(["rbf", "linear_sparse", "gram"]),
    m=st.integers(2, 28),
    k=st.integers(2, 6),
    d=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    beta=st.floats(0.05, 5.0),
    epsilon=st.sampled_from([1e-1, 1e-3, 1e-7]),
    reduced_solver=st.sampled_from(["fixed_point", "exact"]),
    cache_rows=st.sampled_from([0, 1, 2, 5, 1000]),
    opts=options,
)
def test_engines_agree_bit_for_bit(kind, m, k, d, seed, beta, epsilon, reduced_solver, cache_rows, opts):
    kern, X, y, G = _problem(kind, m, k, d, seed)
    cache_mb = cache_rows * 8 * m / 2**20  # room for exactly cache_rows rows
    common = dict(beta=beta, epsilon=epsilon, reduced_solver=reduced_solver, cache_mb=cache_mb, **opts)
    a = _fit(kern, X, y, G, k, "numpy", **common)
    b = _fit(kern, X, y, G, k, "compiled", **common)
    _assert_same(a, b)
    if G is None:  # the same LRU decisions, and kernel rows computed for misses only
        for key in ("cache_rows", "cache_hits", "kernel_rows_computed", "cache_evictions"):
            assert a.result.stats[key] == b.result.stats[key], key
    assert (a.result.stats["engine"], b.result.stats["engine"]) == ("numpy", "compiled")
    Xn = X if G is None else index_inputs(np.arange(m))
    if G is None:
        np.testing.assert_array_equal(a.predict(Xn), b.predict(Xn))


@needs_compiled
@pytest.mark.parametrize("cache_rows", [0, 2, 6, 10_000])
def test_compiled_engine_calls_the_kernel_for_missing_rows_only(monkeypatch, cache_rows):
    X, y = toy_classification(80, 4, d=3, seed=2, spread=1.0)
    calls = []
    real = KernelRows.compute_into

    def counting(self, p, out):
        calls.append(p)
        return real(self, p, out)

    monkeypatch.setattr(KernelRows, "compute_into", counting)
    o = dict(beta=0.5, epsilon=1e-5, cache_mb=cache_rows * 8 * 80 / 2**20)
    b = fit_crammer_singer(RBF(w=0.5), X, y, CSOptions(engine="compiled", **o))
    n_compiled = len(calls)
    s = b.result.stats
    assert n_compiled == s["kernel_rows_computed"] and s["cache_rows"] == cache_rows
    if cache_rows >= 80:  # the whole bound: every row computed once at most, never evicted
        assert n_compiled == len(set(calls)) <= 80 and s["cache_evictions"] == 0 and s["cache_hits"] > 0
    elif cache_rows > 0:
        assert s["cache_evictions"] == n_compiled - cache_rows > 0
    else:  # no cache: one row per update
        assert n_compiled == b.result.updates and s["cache_hits"] == 0
    a = fit_crammer_singer(RBF(w=0.5), X, y, CSOptions(engine="numpy", **o))
    _assert_same(a, b)


@needs_compiled
@pytest.mark.parametrize("cache_rows", [0, 3, 10_000])
def test_an_error_in_the_kernel_propagates_out_of_the_compiled_loop(monkeypatch, cache_rows):
    X, y = toy_classification(40, 3, d=2, seed=1)
    real = KernelRows.compute_into
    calls = []

    def failing(self, p, out):
        calls.append(p)
        if len(calls) == 5:
            raise RuntimeError("kernel row failed")
        return real(self, p, out)

    monkeypatch.setattr(KernelRows, "compute_into", failing)
    o = CSOptions(beta=0.5, epsilon=1e-5, cache_mb=cache_rows * 8 * 40 / 2**20, engine="compiled")
    with pytest.raises(RuntimeError, match="kernel row failed"):
        fit_crammer_singer(RBF(w=0.5), X, y, o)
    monkeypatch.setattr(KernelRows, "compute_into", real)
    again = fit_crammer_singer(RBF(w=0.5), X, y, o)
    assert again.result.converged


@needs_compiled
def test_compiled_solver_refuses_bad_buffers():
    """The C type checks what it is given (dtype, size, consistency) instead of reading past the end."""
    m, k = 5, 3
    y = np.array([0, 1, 2, 0, 1], dtype=np.int64)
    st_ = cs_loops.LoopState.initial(y, np.ones(m), k, 1.0, 0)
    good = dict(
        F=st_.Fk,
        tau=st_.tau,
        pen=st_.pen,
        y=st_.yv,
        A=st_.Av,
        perm=st_.perm,
        pos=st_.pos,
        pool=np.empty((2, m)),
        lru=True,
        fill=lambda p, s: None,
        gram=None,
        n_active=0,
        fp_tol=1e-3,
        fp_max_iter=100,
        exact=False,
        active=True,
    )
    cs_loops._cs_core.Solver(**good)
    for change, err in [
        (dict(F=st_.Fk.astype(np.float32)), TypeError),
        (dict(pool=np.empty((2, m + 1))), ValueError),
        (dict(y=np.array([0, 1, 5, 0, 1])), ValueError),
        (dict(perm=np.zeros(m, dtype=np.int64)), ValueError),
        (dict(fill=None), TypeError),
        (dict(gram=np.eye(m + 1)), ValueError),
        (dict(n_active=m + 1), ValueError),
        (dict(lru=False), ValueError),
    ]:
        with pytest.raises(err):
            cs_loops._cs_core.Solver(**{**good, **change})


def test_fallback_without_the_extension(monkeypatch):
    """Without the C extension (no compiler at install) `auto` is numpy and `compiled` says why it cannot run."""
    monkeypatch.setattr(cs_loops, "_cs_core", None)
    assert not compiled_available() and cs_loops.resolve_engine("auto") == "numpy"
    X, y = toy_classification(30, 3, d=2, seed=4)
    m = fit_crammer_singer(RBF(w=0.5), X, y, CSOptions(beta=0.5, epsilon=1e-4))
    assert m.result.stats["engine"] == "numpy" and m.result.converged
    with pytest.raises(InputError, match="C extension"):
        fit_crammer_singer(RBF(w=0.5), X, y, CSOptions(engine="compiled"))
    with pytest.raises(InputError, match="engine"):
        CSOptions(engine="fortran")


def test_auto_engine_is_the_compiled_one_when_built():
    X, y = toy_classification(30, 3, d=2, seed=4)
    m = fit_crammer_singer(RBF(w=0.5), X, y, CSOptions(beta=0.5, epsilon=1e-4))
    assert m.result.stats["engine"] == ("compiled" if compiled_available() else "numpy")


@needs_compiled
def test_engines_agree_with_many_classes_and_precomputed_kernels():
    """k > 48 (where the numpy engine once switched its Fig. 3 to numpy arrays), a Precomputed kernel,
    and a run stopped by max_updates."""
    X, y = toy_classification(100, 50, d=3, seed=7, spread=4.0)
    Xi = index_inputs(np.arange(100))
    for kern, Xin, extra in [
        (RBF(w=0.7), X, {}),
        (Precomputed(RBF(w=0.7).gram(X, X)), Xi, {}),
        (Precomputed(RBF(w=0.7).gram(X, X) + 0.2), Xi, dict(max_updates=800)),
    ]:
        a = fit_crammer_singer(kern, Xin, y, CSOptions(beta=0.3, epsilon=1e-3, engine="numpy", **extra))
        b = fit_crammer_singer(kern, Xin, y, CSOptions(beta=0.3, epsilon=1e-3, engine="compiled", **extra))
        _assert_same(a, b)
        assert b.result.converged == (not extra) and b.result.updates <= extra.get("max_updates", np.inf)
        np.testing.assert_array_equal(a.predict(Xin), b.predict(Xin))
