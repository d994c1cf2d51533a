"""Settings of one CV criterion evaluation (:class:`CVOptions`); their ``auto`` choices (the folds' solver, how
many folds are refitted together) are the execution plan's (:mod:`gpmodels.inference.execution_plan`)."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from gpmodels.errors import InputError
from gpmodels.inference.cv.warm_start import scaled_start
from gpmodels.inference.map.exact_newton import ExactNewton
from gpmodels.inference.map.newton import NewtonOptions
from gpmodels.inference.map.solvers import SOLVER_NAMES
from gpmodels.validation import any_of, boolean, instance_of, nonnegative_number, one_of, positive_int, positive_number

__all__ = ["CVOptions", "CV_SOLVERS"]

#: the refits' solvers by name (``auto``: the execution plan's choice, :mod:`gpmodels.inference.execution_plan`)
CV_SOLVERS = (*SOLVER_NAMES, "auto")


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
    integer or ``auto`` (the execution plan's choice).  Where the fits run is the engine's business, not an
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
        ``auto`` resolved first (:func:`~gpmodels.inference.cv.criterion.cv_plan`)."""
        if self.folds_per_fit == "auto":
            raise InputError("folds_per_fit 'auto' is resolved by the execution plan first (cv_plan)")
        size = 1 if self.solver == ExactNewton.name else self.folds_per_fit
        return [tuple(tasks[i : i + size]) for i in range(0, len(tasks), size)]
