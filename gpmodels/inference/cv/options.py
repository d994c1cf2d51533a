"""Settings of one CV criterion evaluation (:class:`CVOptions`) and ``auto``'s choices of the folds' solver
(:func:`choose_solver`) and of how many folds are refitted together (:func:`choose_folds_per_fit`)."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from gpmodels.errors import InputError
from gpmodels.inference.cv.warm_start import scaled_start
from gpmodels.inference.map.exact_newton import ExactNewton
from gpmodels.inference.map.newton import NewtonOptions
from gpmodels.inference.map.solvers import SOLVER_NAMES
from gpmodels.likelihoods.base import Likelihood
from gpmodels.operators.base import Operator
from gpmodels.validation import any_of, boolean, instance_of, nonnegative_number, one_of, positive_int, positive_number

__all__ = ["CVOptions", "CV_SOLVERS", "EXACT_MAX_SIZE", "choose_folds_per_fit", "choose_solver"]

#: the refits' solvers by name (``auto``: :func:`choose_solver`)
CV_SOLVERS = (*SOLVER_NAMES, "auto")
# ``auto`` picks the exact fold solve when the largest fold's |J| · C is at most this (flat softmax
# only).  Measured (one evaluation, 5 folds, RBF mc-sep, k1 = 13, k2 = 25, one BLAS thread, load
# ~12): time exact / Newton–CG = 0.84, 1.63, 2.71, 7.43 at C = 3 and |J| = 40, 80, 160, 320;
# 2.26, 1.79, 6.9, 10.3 at C = 10 (|J| = 40 ... 320): App. C's O(C |J|^3) factorisations win only
# while the per-MVM overhead of Newton–CG dominates, about |J| C <= 128.
EXACT_MAX_SIZE = 128


@attrs.frozen
class CVOptions:
    """Settings of one Ψ evaluation (Seeger 2008, Sec. 4 and 6.2: k1, k2 and k3 during learning).

    ``newton``: the inner fits (k1 = ``max_iter``, k2 = ``cg_max_iter``); ``k3``: CG steps of the
    accumulation solve, stopped at relative residual ``accumulation_tol``; ``fail_tol``: an
    evaluation fails when the mean over folds of the per-point RMS of ∇_u Φ_J is above it;
    ``abort_on_failure``: stop at the first fold that makes the failure certain (saves the rest);
    ``solver``: the refits' and accumulation solves' solver by name (``newton-cg``, ``exact`` or
    ``auto``, built with ``newton``); ``warm_start`` (a policy callable, :func:`scaled_start` by
    default), ``retry_cold``: how refits use the inner state (:mod:`gpmodels.inference.cv.warm_start`);
    ``folds_per_fit``: folds refitted together in lockstep (:mod:`gpmodels.inference.cv.stacked`), a positive
    integer or ``auto`` (:func:`choose_folds_per_fit`).  Where the fits run is the engine's business, not an
    option (:func:`~gpmodels.inference.cv.criterion.cv_criterion`).
    """

    newton: NewtonOptions = attrs.field(
        factory=lambda: NewtonOptions(max_iter=13, cg_max_iter=25, grad_tol=1e-6), validator=instance_of(NewtonOptions)
    )
    k3: int = attrs.field(default=40, validator=positive_int())
    accumulation_tol: float = attrs.field(default=1e-6, validator=nonnegative_number())
    fail_tol: float = attrs.field(default=1e-3, validator=positive_number())
    solver: str = attrs.field(default="newton-cg", validator=one_of(CV_SOLVERS))
    abort_on_failure: bool = attrs.field(default=True, validator=boolean())
    warm_start: Callable = attrs.field(
        default=scaled_start,
        validator=instance_of(
            Callable, what="a warm-start policy: a callable (op_J, likelihood, Y_J, α[J]) -> (start or None, MVMs)"
        ),
    )
    retry_cold: bool = attrs.field(default=True, validator=boolean())
    folds_per_fit: int | str = attrs.field(default="auto", validator=any_of(positive_int(), one_of(("auto",))))

    def __attrs_post_init__(self):
        if self.folds_per_fit != "auto" and self.folds_per_fit > 1 and self.solver == ExactNewton.name:
            raise InputError(
                f"folds_per_fit={self.folds_per_fit} refits folds together by Newton–CG in lockstep; the solver "
                "'exact' refits each fold by its own factorisations (use folds_per_fit: 1, or the solver 'newton-cg')"
            )

    def fold_jobs(self, tasks: list) -> list[tuple]:
        """The folds ``tasks`` in fold order, grouped into jobs of ``folds_per_fit`` (one each for ``exact``);
        ``auto`` resolved first (:func:`choose_folds_per_fit`)."""
        if self.folds_per_fit == "auto":
            raise InputError("folds_per_fit 'auto' is resolved on the operator first (choose_folds_per_fit)")
        size = 1 if self.solver == ExactNewton.name else self.folds_per_fit
        return [tuple(tasks[i : i + size]) for i in range(0, len(tasks), size)]


def choose_solver(op: Operator, likelihood: Likelihood, fold_size: int) -> str:
    """``auto``'s choice: ``exact`` (App. C) where it applies (a flat prior and the multinomial
    Hessian form, :meth:`ExactNewton.supports`) and |J| · C <= EXACT_MAX_SIZE (where it was measured
    cheaper), else ``newton-cg``."""
    if fold_size * op.n_classes <= EXACT_MAX_SIZE and ExactNewton.supports(op, likelihood):
        return ExactNewton.name
    return "newton-cg"


def choose_folds_per_fit(op: Operator, folds: int, solver: str) -> int:
    """``auto``'s choice of ``folds_per_fit``: all ``folds`` in one lockstep fit where the operator's kernel
    matrices live on a device (``op.device_backend``) and the refits are Newton–CG, else 1 (each fold alone,
    on the engine's workers where it has them).

    On a device a fold's CG step is bound by its fixed costs, not by reading the matrices: on one H100 a
    satimage fold step (3548 x 6) took about 1.5 ms, of which the card read the matrices in 0.1 ms
    (bench/RESULTS.md, issue 24, sixth session).  In lockstep the folds share each step's calls, and the
    product is one product of K̃ with a column per fold; counted with PyTorch on the CPU, satimage's five
    refits take 28.9 dispatched calls per fold CG step against 60.6 one by one, 310 downloads against 456,
    and 9.7 s against 27.3 s (``bench/device_calls.py --backend torch-cpu --scale 0.65``).  On the host the
    folds' own worker processes are faster (``bench/cv_lockstep.py``: 2 workers 1.49 s, lockstep 2.31 s per
    cold evaluation on 2 cores)."""
    if folds > 1 and solver != ExactNewton.name and op.device_backend is not None:
        return int(folds)
    return 1
