"""A process engine's map whose jobs do not fill whole rounds of its workers (5 CV folds on 2 workers) runs the
last jobs after the others with their compiled loops on the idle cores: which jobs, how many threads, the
worker plan's words, and results bit for bit those of one thread."""

import numpy as np
import pytest
import scipy.sparse as sp

from gpmodels.engine import LocalEngine, ProcessEngine, Workload
from gpmodels.engine.processes import wide_tail_note, wide_tail_threads
from gpmodels.linalg import compiled_loops

numba = pytest.importorskip("numba")


def _two_threads_or_skip():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("Numba's pool has one thread here")


@pytest.mark.parametrize(
    ("jobs", "workers", "cores", "compiled", "threads"),
    [
        (5, 2, 2, True, 2),  # the fifth fold alone on both cores
        (4, 2, 2, True, 0),  # whole rounds: nothing idles
        (5, 2, 2, False, 0),  # no compiled loops declared: more threads would not help
        (7, 3, 6, True, 6),
        (8, 3, 6, True, 3),  # two last jobs share the six cores
        (2, 3, 6, True, 0),  # fewer jobs than workers: one round
        (5, 4, 4, True, 4),
        (7, 4, 4, True, 0),  # three last jobs on four cores: no more than a worker's one thread each
    ],
)
def test_the_last_jobs_threads(jobs, workers, cores, compiled, threads):
    workload = Workload(jobs, compiled=compiled)
    per_worker = max(1, cores // workers)
    assert wide_tail_threads(workload, jobs, workers, cores, per_worker) == threads
    assert wide_tail_threads(None, jobs, workers, cores, per_worker) == 0
    note = wide_tail_note(workload, workers, cores, per_worker)
    assert (f"on {threads} threads of compiled loops" in note) if threads else note == ""


def test_compiled_width_sets_the_threads_of_loops_that_ask_for_none_and_restores_them():
    _two_threads_or_skip()
    before = compiled_loops.compiled_threads()
    with compiled_loops.compiled_width(2):
        assert compiled_loops.compiled_threads() == 2
        assert compiled_loops.compiled_threads(1) == 1  # a loop that asks keeps its count
    assert compiled_loops.compiled_threads() == before


def _sweep(shared, job):
    """A job of compiled loops: a parallel CSR x dense product and a row sweep, and the threads they got."""
    from gpmodels.kernels.sparse_products import csr_matmat
    from gpmodels.linalg import row_kernels

    A, B, U = shared
    out = csr_matmat(A, B * (job + 1))
    line = row_kernels.softmax_line(U, U, U * job, U, np.zeros_like(U), 0.5)
    return job, compiled_loops.compiled_threads(), out, line


def _shared():
    rng = np.random.default_rng(3)
    A = sp.random(3000, 400, density=0.05, format="csr", random_state=4)
    return A, rng.standard_normal((400, 600)), rng.standard_normal((700, 40))


def test_a_maps_last_job_runs_on_the_idle_cores_with_the_results_of_one_thread():
    _two_threads_or_skip()
    shared, jobs = _shared(), list(range(5))
    with ProcessEngine(2, blas_threads=1, cores=2) as engine:
        wide = list(engine.imap_shared(_sweep, shared, jobs, Workload(5, compiled=True)))
        plain = list(engine.imap_shared(_sweep, shared, jobs, Workload(5)))
        reason = engine.worker_plan(Workload(5, compiled=True))[1]
    serial = LocalEngine(blas_threads=1).map_shared(_sweep, shared, jobs)
    assert [(j, t) for j, t, *_ in wide] == [(0, 1), (1, 1), (2, 1), (3, 1), (4, 2)]
    assert [t for _, t, *_ in plain] == [1] * 5
    assert "the last 1 after the others, on 2 threads of compiled loops each" in reason
    for a, b, c in zip(wide, plain, serial, strict=True):
        assert np.array_equal(a[2], c[2]) and np.array_equal(b[2], c[2])
        assert a[3] == b[3] == c[3]
