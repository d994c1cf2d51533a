"""The execution plan: where and how a fit's work runs, decided once from the problem and the hardware.

:func:`plan_execution` is a pure function of a :class:`Problem` (its sizes, the device that holds its kernel
matrices, what the user asked for) and a :class:`Hardware` (cores, that device), so the tests inject
both.  Every choice it makes is a :class:`Decision` with its reason, and the whole :class:`ExecutionPlan` is
frozen, recorded in ``metrics.json`` and ``report.md`` and shown by the estimators (``plan_``).  The choices:

- ``cg``: where Newton–CG's CG solve runs.  With the kernel matrices on a device, CG runs there too from
  :attr:`PlanRules.device_cg_min_entries` entries of the (n, C) vectors on; below, a host pass over them costs
  about one device launch and a CG step on the device makes about twice the calls of the product alone (its
  updates, norms and preconditioner: 78 against 35 calls per step with lowrank), so CG stays on the host and
  only the product goes to the device.  bench/device_calls.py on one H100: a satimage fold (3548 x 6, lowrank)
  3.3 ms per CG step with CG on the host, 3.6 ms on the device; imclef07a's shape (10 000 x 63, diagonal)
  11.2 ms on the host, 4.2 ms on the device.
- ``host_blas``: the BLAS threads of the fit's host work.  One where the products run on a device and CG on the
  host: every BLAS call there (CG's norms and dots, the factor's row sums, the preconditioner's n x R products)
  is too small for a thread team, which would be woken for each call (satimage mc-sep CV learning on the
  16-core H100 machine: 1.72 ms per MVM on one thread, 2.42 ms on 16).  Else all the cores the process has.
- ``preconditioner``: ``auto`` resolved.  ``lowrank`` from :attr:`PlanRules.lowrank_min_points` points of one
  fit on (the randomised eigensolver's set-up and its O(n r) per CG step pay only once an MVM costs enough:
  one warm CV evaluation, mc-sep, 5 folds, rank 32, one BLAS thread: digits |J| = 958, C = 10: 1.86 s diagonal
  / 2.61 s lowrank; satimage |J| = 1600, C = 6: 2.13 / 2.17 s; |J| = 3548: 21.5 / 13.9 s), and only while the
  per-point C x C blocks fit :attr:`PlanRules.point_blocks_max_bytes`; else ``diagonal``.
- ``solver`` (CV): ``auto`` resolved.  ``exact`` (App. C) where it applies (a flat prior, the multinomial
  Hessian form) and |J| · C <= :attr:`PlanRules.exact_max_size`: one evaluation, 5 folds, RBF mc-sep, time
  exact / Newton–CG = 0.84, 1.63, 2.71, 7.43 at C = 3 and |J| = 40 ... 320, and 2.26, 1.79, 6.9, 10.3 at
  C = 10: App. C's O(C |J|^3) factorisations win only while Newton–CG's per-MVM overhead dominates.
- ``folds_per_fit`` (CV): ``auto`` resolved.  All folds in one fit (the Newton loop's block axis) where the
  kernel matrices live on a device and the refits are Newton–CG: there a fold's CG step is bound by its fixed
  costs (a satimage fold step on one H100: 1.5 ms, of which reading the matrices 0.1 ms), and together the
  folds share each step's calls (PyTorch on the CPU, satimage's five refits: 28.9 calls per fold CG step
  against 60.6 one by one, 9.7 s against 27.3 s).  Else one fold per fit, on the engine's workers where it
  has them (bench/cv_lockstep.py, 2 cores: 2 workers 1.49 s, folds together 2.31 s per cold evaluation).
- ``workers`` (CV): the engine's own plan for the fold jobs (:meth:`~gpmodels.engine.base.Engine.worker_plan`).
- ``sweeps``: how the host's passes over the (n, C) vectors run (CG's updates, the Hessian factor's V and V^T,
  the pair line search's Φ(λ)): as compiled parallel row sweeps (:mod:`gpmodels.linalg.row_kernels`: CG's
  vectors on :data:`~gpmodels.linalg.arrays.SWEPT_HOST`, the factor's ``swept`` form, the likelihood's
  ``swept_pair_line_values``) where Numba is installed (``Hardware.compiled``) and one fit's vectors have
  :attr:`PlanRules.sweep_min_entries` entries; else numpy's passes.
  Launching a compiled sweep costs about 35 us even on one thread, numpy's pass over a few hundred numbers
  about 1 us; at section B's size of WIPO-alpha (a fold's vectors 7835 x 1172) one sweep replaces three to
  fifteen numpy passes on one core.

:meth:`ExecutionPlan.place` turns the plan into the :class:`Placement` of one Newton system: the array primitives
(:mod:`gpmodels.linalg.arrays`) its products and its CG run on, so that Newton–CG passes them down and never asks
where it runs.
"""

from __future__ import annotations

import contextlib

import attrs

from gpmodels.errors import InputError
from gpmodels.linalg.arrays import HOST as HOST_ARRAYS
from gpmodels.linalg.arrays import SWEPT_HOST
from gpmodels.linalg.blas_threads import one_blas_thread, usable_cores
from gpmodels.linalg.compiled_loops import AVAILABLE as COMPILED_AVAILABLE
from gpmodels.validation import instance_of, nonnegative_int, optional, positive_int

__all__ = [
    "Decision",
    "ExecutionPlan",
    "Hardware",
    "Placement",
    "PlanRules",
    "Problem",
    "DEFAULT_RULES",
    "auto_preconditioner",
    "dense_blas",
    "plan_execution",
    "plan_for",
]

#: the plan's names for CG's placements
HOST, DEVICE = "host", "device"
#: the plan's names for the host's passes over (n, C) vectors
COMPILED, NUMPY = "compiled", "numpy"


@attrs.frozen
class PlanRules:
    """The sizes at which the plan's choices change (module docstring: the measurements behind each)."""

    device_cg_min_entries: int = attrs.field(default=1 << 16, validator=nonnegative_int())
    lowrank_min_points: int = attrs.field(default=1500, validator=nonnegative_int())
    #: the per-point C x C blocks (n C^2 floats) that ``block`` and ``lowrank`` form once per Newton iteration;
    #: a taxonomy of C = 1172 classes at n = 9794 would need 108 GB
    point_blocks_max_bytes: int = attrs.field(default=2**30, validator=nonnegative_int())
    exact_max_size: int = attrs.field(default=128, validator=nonnegative_int())
    sweep_min_entries: int = attrs.field(default=1 << 18, validator=nonnegative_int())
    #: dense factors up to this order run on one BLAS thread (:func:`dense_blas`)
    dense_one_thread_max: int = attrs.field(default=400, validator=nonnegative_int())


DEFAULT_RULES = PlanRules()


@attrs.frozen
class Hardware:
    """What the plan runs on: ``cores`` this process may use, ``device``, the label of the device that holds
    the kernel matrices (None: the host's memory), and ``compiled``, whether the host can run compiled loops
    (Numba, the ``fast`` extra).  Memory bounds the engine's workers, which the engine plans itself
    (``workers``)."""

    cores: int = attrs.field(validator=positive_int())
    device: str | None = attrs.field(default=None, validator=optional(instance_of(str)))
    compiled: bool = attrs.field(default=False, validator=instance_of(bool))

    @classmethod
    def detect(cls, device: str | None = None) -> Hardware:
        """This process's cores (its affinity mask), ``device`` and whether Numba imports."""
        return cls(usable_cores(), device, COMPILED_AVAILABLE)


@attrs.frozen
class Problem:
    """What the plan decides for: ``n_points`` x ``n_classes`` (the whole training set), ``fit_points`` (the
    points of one fit: a CV fold's |J|, the largest row block of a stacked operator, else n), ``blocks`` (the
    independent row blocks one fit takes outside CV; CV's are its ``folds_per_fit``), ``folds`` (CV folds; 0: no
    CV), ``exact_applies`` (App. C's solver can fit it) and the user's requests, each a name or ``auto``
    (``solver``: the fit's solver, or the CV refits')."""

    n_points: int = attrs.field(validator=positive_int())
    n_classes: int = attrs.field(validator=positive_int())
    fit_points: int | None = attrs.field(default=None, validator=optional(positive_int()))
    folds: int = attrs.field(default=0, validator=nonnegative_int())
    exact_applies: bool = False
    preconditioner: str = "auto"
    solver: str = "auto"
    folds_per_fit: int | str = "auto"
    blocks: int = attrs.field(default=1, validator=positive_int())

    @property
    def points_per_fit(self) -> int:
        return self.n_points if self.fit_points is None else self.fit_points


@attrs.frozen
class Decision:
    """One choice of the plan and why it was made."""

    choice: str | int
    reason: str

    def as_dict(self) -> dict:
        return {"choice": self.choice, "reason": self.reason}


def _same(a):
    return a


@attrs.frozen(eq=False)
class Placement:
    """Where the Newton system (I + V^T K̃ V) β = r (Seeger 2008, eq. 5) of one Hessian factor runs: ``products``,
    the array primitives of K̃ V β, with ``factor`` (the Hessian factor, its V there); ``solve``, those of CG's
    vectors, V^T, the preconditioner and the forcing test, with ``solve_factor``; ``host_factor``, the factor on
    the plan's host primitives (the right-hand side and α' = V β); ``up`` / ``down`` carry CG's arrays to the
    products' and back (the identity where both are the same)."""

    products: object
    factor: object
    solve: object
    solve_factor: object
    host_factor: object
    up: object = _same
    down: object = _same


@attrs.frozen
class ExecutionPlan:
    """The frozen plan of one fit or learning run (module docstring); the CV decisions (``solver``,
    ``folds_per_fit``, ``workers``) are None without CV."""

    hardware: Hardware
    device: Decision = attrs.field(validator=instance_of(Decision))
    cg: Decision = attrs.field(validator=instance_of(Decision))
    host_blas: Decision = attrs.field(validator=instance_of(Decision))
    preconditioner: Decision = attrs.field(validator=instance_of(Decision))
    sweeps: Decision = attrs.field(validator=instance_of(Decision))
    solver: Decision | None = None
    folds_per_fit: Decision | None = None
    workers: Decision | None = None

    @property
    def cg_on_device(self) -> bool:
        """Whether Newton–CG's CG solves run on the device of the kernel matrices."""
        return self.cg.choice == DEVICE

    @property
    def compiled(self) -> bool:
        """Whether the fit's host passes over (n, C) vectors run as compiled row sweeps (``sweeps``)."""
        return self.sweeps.choice == COMPILED

    @property
    def host(self):
        """The primitives of CG's vectors on the host (``sweeps``)."""
        return SWEPT_HOST if self.compiled else HOST_ARRAYS

    def line_values(self, likelihood):
        """The pair line search's (Φ(λ), Φ'(λ)) of ``likelihood`` (``sweeps``)."""
        return likelihood.swept_pair_line_values if self.compiled else likelihood.pair_line_values

    def place(self, op, hf) -> Placement:
        """The :class:`Placement` of the Newton system of the Hessian factor ``hf`` on the operator ``op``: K̃ and V
        on the device of the kernel matrices (``op.device_backend``) where ``hf`` goes there (``hf.on``), else
        on the host's primitives (:attr:`host`); CG and V^T there too where ``cg`` places them, else on the host,
        one transfer each way per product."""
        backend, host = op.device_backend, self.host
        device_hf = None if backend is None else hf.on(backend)
        host_hf = hf.swept() if self.compiled else hf
        if device_hf is None:
            return Placement(host, host_hf, host, host_hf, host_hf)
        if self.cg_on_device:
            return Placement(backend, device_hf, backend, device_hf, host_hf)
        return Placement(backend, device_hf, host, host_hf, host_hf, backend.from_host, backend.to_host)

    def blas_context(self):
        """The BLAS-thread context of the fit's host work (``host_blas``)."""
        return one_blas_thread() if int(self.host_blas.choice) == 1 else contextlib.nullcontext()

    def with_learning(self, learning: ExecutionPlan | None) -> ExecutionPlan:
        """This (final fit's) plan with the CV decisions of the ``learning`` run's plan (None: unchanged)."""
        if learning is None:
            return self
        return attrs.evolve(
            self, solver=learning.solver, folds_per_fit=learning.folds_per_fit, workers=learning.workers
        )

    def with_workers(self, workers: int, reason: str) -> ExecutionPlan:
        """This plan with the engine's decision for the CV fold jobs recorded."""
        return attrs.evolve(self, workers=Decision(int(workers), reason))

    def decisions(self) -> dict[str, Decision]:
        """The plan's decisions by name, in the order they are made (those that were made)."""
        names = ("device", "cg", "host_blas", "sweeps", "preconditioner", "solver", "folds_per_fit", "workers")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}

    def as_dict(self) -> dict:
        """The plan for ``metrics.json``: the hardware and each decision with its reason."""
        return {"hardware": attrs.asdict(self.hardware)} | {k: d.as_dict() for k, d in self.decisions().items()}

    def as_metrics(self) -> dict:
        """The decisions as flat ``metrics.json`` keys: ``plan.<name>`` (the choice), ``plan_reason.<name>``."""
        out = {}
        for name, d in self.decisions().items():
            out[f"plan.{name}"], out[f"plan_reason.{name}"] = d.choice, d.reason
        return out

    def describe(self) -> list[str]:
        """One line per decision, for reports and logs."""
        return [f"{name}: {d.choice} ({d.reason})" for name, d in self.decisions().items()]


def auto_preconditioner(points: int, n_classes: int, rows: int | None = None, rules: PlanRules | None = None):
    """``auto``'s preconditioner for fits of ``points`` points (the largest of the fits that run together) over
    ``rows`` rows in all (None: ``points``) under ``rules`` (None: :data:`DEFAULT_RULES`): (name, reason)
    (module docstring)."""
    rules = rules or DEFAULT_RULES
    block_bytes = 8 * (points if rows is None else rows) * n_classes**2
    if points < rules.lowrank_min_points:
        return "diagonal", f"{points} points per fit < {rules.lowrank_min_points}: deflation would not pay"
    if block_bytes > rules.point_blocks_max_bytes:
        return "diagonal", (
            f"the per-point {n_classes} x {n_classes} blocks would take {block_bytes / 2**30:.3g} GiB "
            f"> {rules.point_blocks_max_bytes / 2**30:.3g} GiB"
        )
    return "lowrank", f"{points} points per fit >= {rules.lowrank_min_points}: deflating the leading eigen-directions"


def dense_blas(order: int, rules: PlanRules | None = None):
    """The BLAS-thread context (a factory) of the dense factorisations and triangular solves of order ``order``
    (the Laplace, VB and MKL criteria's :class:`~gpmodels.linalg.dense_posterior.DensePosterior`): one thread up
    to :attr:`PlanRules.dense_one_thread_max`, else the process's.  OpenBLAS's threaded triangular solve of an
    80 x 80 factor against 80 right-hand sides took 24 ms with two threads on a busy 2-core machine and 0.03 ms
    with one, which made a VB learning of 80 points (6 evaluations) take 4.3 s, 0.45 s."""
    rules = rules or DEFAULT_RULES
    return one_blas_thread if order <= rules.dense_one_thread_max else contextlib.nullcontext


def plan_execution(problem: Problem, hardware: Hardware, rules: PlanRules | None = None) -> ExecutionPlan:
    """The plan for ``problem`` on ``hardware`` under ``rules`` (None: :data:`DEFAULT_RULES`): each choice of
    the module docstring, with its reason."""
    rules = rules or DEFAULT_RULES
    n, C, points = problem.n_points, problem.n_classes, problem.points_per_fit
    if points > n:
        raise InputError(f"a fit of {points} points cannot come from {n} training points")
    on_device = hardware.device is not None
    device = Decision(hardware.device or "cpu", "the representation's device, which holds the kernel matrices")
    solver = folds_per_fit = None
    together = problem.blocks
    if problem.folds:
        solver = _cv_solver(problem, points * C, rules)
        folds_per_fit = _folds_per_fit(problem, solver.choice, on_device)
        together = int(folds_per_fit.choice)
    entries = points * C * together
    vectors = f"{entries} entries per (n, C) vector" + (f" of {together} blocks" if together > 1 else "")
    exact = (problem.solver if solver is None else solver.choice) == "exact"
    if exact:
        cg = Decision(HOST, "exact Newton (App. C) runs no CG: its factorisations are the host's")
    elif not on_device:
        cg = Decision(HOST, "the kernel matrices are in host memory")
    elif entries >= rules.device_cg_min_entries:
        cg = Decision(DEVICE, f"{vectors} >= {rules.device_cg_min_entries}")
    else:
        cg = Decision(HOST, f"{vectors} < {rules.device_cg_min_entries}: the device's launches would dominate")
    if on_device and cg.choice == HOST and not exact:
        blas = Decision(1, "products on the device, CG's small host BLAS calls on one thread")
    else:
        blas = Decision(hardware.cores, f"the {hardware.cores} cores of this process")
    if problem.preconditioner == "auto":
        preconditioner = Decision(*auto_preconditioner(points, C, points * together, rules))
    else:
        preconditioner = Decision(problem.preconditioner, "asked for")
    sweeps = _sweeps(entries, vectors, hardware, rules)
    return ExecutionPlan(hardware, device, cg, blas, preconditioner, sweeps, solver, folds_per_fit)


def _sweeps(entries: int, vectors: str, hardware: Hardware, rules: PlanRules) -> Decision:
    if not hardware.compiled:
        return Decision(NUMPY, "Numba is not installed (the fast extra)")
    if entries < rules.sweep_min_entries:
        return Decision(NUMPY, f"{vectors} < {rules.sweep_min_entries}: a compiled sweep's launch would dominate")
    return Decision(COMPILED, f"{vectors} >= {rules.sweep_min_entries}: one parallel sweep per pass")


def _cv_solver(problem: Problem, size: int, rules: PlanRules) -> Decision:
    if problem.solver != "auto":
        return Decision(problem.solver, "asked for")
    if not problem.exact_applies:
        return Decision("newton-cg", "App. C's exact solve needs a flat prior and the multinomial Hessian")
    if size <= rules.exact_max_size:
        return Decision("exact", f"|J| C = {size} <= {rules.exact_max_size}: the factorisations are cheaper")
    return Decision("newton-cg", f"|J| C = {size} > {rules.exact_max_size}: Newton–CG is cheaper")


def _folds_per_fit(problem: Problem, solver: str, on_device: bool) -> Decision:
    requested = problem.folds_per_fit
    if solver == "exact":
        return Decision(1, "the exact solver refits each fold by its own factorisations")
    if requested != "auto":
        return Decision(min(int(requested), problem.folds), "asked for")
    if problem.folds > 1 and on_device:
        return Decision(problem.folds, "on a device the folds share each CG step's calls")
    return Decision(1, "on the host each fold is its own job, on the engine's workers")


def plan_for(
    op,
    *,
    fit_points: int | None = None,
    folds: int = 0,
    exact_applies: bool = False,
    preconditioner: str = "auto",
    solver: str = "auto",
    folds_per_fit: int | str = "auto",
    hardware: Hardware | None = None,
    rules: PlanRules | None = None,
) -> ExecutionPlan:
    """:func:`plan_execution` for fits on the operator ``op`` (its sizes; its row blocks, each a fit of its own,
    ``op.row_blocks``; the device that holds its kernel matrices, ``op.device_backend``), on this process's
    hardware unless ``hardware`` is given."""
    backend = op.device_backend
    hardware = hardware or Hardware.detect(None if backend is None else backend.label)
    row_blocks, blocks = op.row_blocks, 1
    if row_blocks is not None and fit_points is None:
        fit_points, blocks = max(part.n_points for _, part in row_blocks), len(row_blocks)
    problem = Problem(
        op.n_points,
        op.n_classes,
        fit_points=fit_points,
        folds=folds,
        exact_applies=exact_applies,
        preconditioner=preconditioner,
        solver=solver,
        folds_per_fit=folds_per_fit,
        blocks=blocks,
    )
    return plan_execution(problem, hardware, rules)
