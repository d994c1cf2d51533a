"""The cross-validation criterion Ψ and its gradient ∇Ψ (Seeger 2008, Sec. 4, 5.2, App. C, D.2).

A fixed partition {I_k} of the n training points into q folds, J_k = {1..n} \\ I_k.  For every
fold the dual vector α[J] (independent per fold, not part of a common α) minimises the criterion
Φ_J of the training subset J, and Ψ is the held-out negative log likelihood:

    Ψ = Σ_k Ψ_{I_k},   Ψ_I = -y_I^T u[I] + 1^T l[I],   u[I] = K̃_{I,J} α[J]        (eq. 3)

Gradient (Sec. 5.2).  With r_I = π[I] - y_I and V[J] the Hessian factor at α[J] (W[J] = V V^T),

    f = I_{·,I} r_I - I_{·,J} V[J] (I + V[J]^T K̃_J V[J])^{-1} V[J]^T K̃_{J,I} r_I,
    e = I_{·,J} α[J],         dΨ_I = e^T (dK̃) f,

so that with E, F collecting e_k, f_k as columns (shape (n, C, q))

    dΨ = tr E^T (dK̃) F                                                          (eq. 6)

which is ``op.grad_trace(E, F)``: the per-fold work ("accumulation": the refit of α[J] and one
more symmetric solve) is independent of the number of hyperparameters.

Per evaluation the caller builds the operator at the new hyperparameters once (``with_params``);
here every fold restricts it once (``op.restrict(J)``: a contiguous re-layout, App. D.2
"covariance shuffling", never index-mapped per MVM) and takes the rectangular block K̃_{I,J}
(``op.cross``; K̃_{J,I} is its transpose, ``rmvm``).  All of it is generic over the operator protocol: flat,
hierarchical (ANOVA) and coupled priors only differ in their operators.

Inner solves, by the solver ``CVOptions.solver`` names (:mod:`gpmodels.inference.map.solvers`), which
both refits α[J] and solves the accumulation system z = (I + W K̃_J)^{-1} W K̃_{J,I} r_I
(``solve_weighted``; V (I + V^T K̃ V)^{-1} V^T = (I + W K̃)^{-1} W):
- ``newton-cg``: Newton–CG (Alg. 1) warm-started from the previous α[J] (the inner
  state), then the accumulation system (I + V^T K̃_J V) β = V^T K̃_{J,I} r_I by preconditioned CG
  with at most k3 steps, started from the fold's previous solution β (kept in the inner state
  next to α[J]; it changes little between neighbouring hyperparameters).
- ``auto``: ``exact`` on small flat problems (|J| C <= ``EXACT_MAX_SIZE``, measured), else
  ``newton-cg`` (:func:`choose_solver`).
- ``exact`` (flat priors only, App. C): exact Newton per fold and the accumulation solve by
  Cholesky factors and Woodbury.  The test reference.

App. B and the accumulation solve: the Hessian factor of the softmax fixes components
(i, c) with log π_ic < κ, y_ic > 0 because the Newton right-hand side contains
g̃ = D^{-1/2} g, which explodes there.  The accumulation system has no g̃: its right-hand side is
V^T K̃_{J,I} r_I, bounded for any π.  Masking those components out of V would drop A D_I A^T from
W (an O(e^κ) error of the gradient), so the accumulation solve uses the likelihood's
``exact_hessian_factor`` (nothing fixed, W = V V^T exactly; for factorised likelihoods the true
second derivative, not a majoriser); ``fixed_alpha`` belongs to the Newton step only.

Warm starts (Sec. 4: every refit starts from α[J] of the last successful evaluation).  After a
large move of the hyperparameters the old α[J] can be a *worse* start than α = 0: u = K̃_J(θ') α[J]
may saturate the softmax (π_ic ~ 1e-50 seen on satimage when w doubled), where W ≈ 0 makes the
Newton model poor and the line searches take tiny steps, while α = 0 (π uniform) converges in the
usual number of iterations.  The warm-start policy ``CVOptions.warm_start`` is a callable
(op_J, likelihood, Y_J, α[J]) -> (start or None for α = 0, MVMs it took).  The default,
:func:`scaled_start`, starts from the best t α[J], t >= 0, by Φ_J (:func:`scaled_warm_start`: one
MVM, t = 0 and t = 1 among the candidates): a variance step rescales u, and the old direction
rescaled is a far better start than either α[J] or 0.  Digits mc-sep, all log variances up by
0.5 / 1.5 / 3.0: 335 / 518 / 951 MVMs per evaluation against 374 / 749 / failed when starting from
whichever of {α[J], 0} has the lower Φ_J.  :func:`unscaled_start` is the paper's rule, α[J] as it
is.  With ``retry_cold`` a warm-started refit that misses ``fail_tol`` is repeated once from
α = 0, and the better of the two is kept; the folds stay independent tasks (a retry never depends
on other folds), and ``abort_on_failure`` keeps failing evaluations cheap.

Folds are independent: :func:`evaluate_fold` is a pure function ``FoldTask -> FoldResult`` and the
loop over folds is a map of an engine (:mod:`gpmodels.engine`): :func:`run_fold` over the jobs
(task, θ, options) with the shared state :class:`FoldContext` (the operator at the learning run's
start, the likelihood, the targets; shipped to each worker once per run), whose results are taken
in fold order by the accumulation of Ψ, E, F and the failure rule.  The engine does not change the
numbers: with the same BLAS threads per fold they are the same arrays, bit for bit.

An evaluation *fails* when its inner fits did not converge: the mean over folds of the final
per-point RMS of ∇_u Φ_J (= α[J] + g[J]) is above ``fail_tol`` (Sec. 4).  A failed evaluation has
no gradient; the outer optimiser treats it as a right bracket and discards its inner state.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import attrs
import numpy as np
from scipy.optimize import minimize_scalar

from gpmodels.engine.auto import resident_bytes
from gpmodels.engine.base import Engine, LocalEngine, Workload
from gpmodels.errors import InputError
from gpmodels.inference.map.exact_newton import ExactNewton
from gpmodels.inference.map.newton import NewtonOptions, NewtonSolver
from gpmodels.inference.map.solvers import SOLVER_NAMES, make_solver
from gpmodels.likelihoods.base import Likelihood
from gpmodels.operators.base import Operator
from gpmodels.validation import boolean, instance_of, nonnegative_number, one_of, positive_int, positive_number

__all__ = ["CVOptions", "CVState", "CVEvaluation", "FoldDiagnostics", "FoldResult", "FoldTask", "FoldContext",
           "cv_criterion", "criterion_on", "check_partition", "fold_tasks", "evaluate_fold", "run_fold",
           "fold_workload", "choose_solver", "CV_SOLVERS", "EXACT_MAX_SIZE", "scaled_warm_start", "scaled_start",
           "unscaled_start"]

#: the refits' solvers by name (``auto``: :func:`choose_solver`)
CV_SOLVERS = (*SOLVER_NAMES, "auto")
# ``auto`` picks the exact fold solve when the largest fold's |J| · C is at most this (flat softmax
# only).  Measured (one evaluation, 5 folds, RBF mc-sep, k1 = 13, k2 = 25, one BLAS thread, load
# ~12): time exact / Newton–CG = 0.84, 1.63, 2.71, 7.43 at C = 3 and |J| = 40, 80, 160, 320;
# 2.26, 1.79, 6.9, 10.3 at C = 10 (|J| = 40 ... 320): App. C's O(C |J|^3) factorisations win only
# while the per-MVM overhead of Newton–CG dominates, about |J| C <= 128.
EXACT_MAX_SIZE = 128


def scaled_warm_start(op_J, lik, Y_J, alpha0):
    """The best multiple t α[J] (t >= 0) of the old inner state as the refit's start, by Φ_J.

    After an outer step the old α[J] keeps its direction but not its scale: when the variances
    grow by a factor s, u = K̃(θ') α[J] grows about s-fold and saturates the softmax.  With
    u = K̃_J α (one MVM), Φ_J(t α) = (t²/2) α^T u + Φ_lh(t u) (Seeger 2008, eq. 1) is convex in t
    for log-concave likelihoods and costs no further MVM; t = 1 is the paper's warm start, t = 0 the
    cold start.  Returns (t α or None for the cold start, t)."""
    a = lik.project_alpha(alpha0)
    u = op_J.mvm(a)
    quad = float(np.vdot(a, u))
    phi_cold = lik.value(np.zeros_like(u), Y_J)

    def phi(t):
        return 0.5 * t * t * quad + lik.value(t * u, Y_J)

    res = minimize_scalar(phi, bracket=(0.0, 1.0))
    candidates = {0.0: phi_cold, 1.0: phi(1.0)}  # the cold and the paper's start are always candidates
    if np.isfinite(res.fun) and res.x > 0:
        candidates[float(res.x)] = float(res.fun)
    t = min(candidates, key=candidates.get)
    return (None, 0.0) if t == 0.0 else (t * a, t)


def scaled_start(op_J, lik, Y_J, alpha0) -> tuple[np.ndarray | None, int]:
    """Warm-start policy (the default): the best multiple t α[J] by Φ_J (:func:`scaled_warm_start`);
    one MVM.  Returns (start or None for α = 0, MVMs)."""
    return scaled_warm_start(op_J, lik, Y_J, alpha0)[0], 1


def unscaled_start(op_J, lik, Y_J, alpha0) -> tuple[np.ndarray | None, int]:
    """Warm-start policy: α[J] as it is, the paper's rule (Sec. 4); no MVM."""
    return alpha0, 0


@attrs.frozen
class CVOptions:
    """Settings of one Ψ evaluation (Seeger 2008, Sec. 4 and 6.2: k1, k2 and k3 during learning).

    ``newton``: the inner fits (k1 = ``max_iter``, k2 = ``cg_max_iter``); ``k3``: CG steps of the
    accumulation solve, stopped at relative residual ``accumulation_tol``; ``fail_tol``: an
    evaluation fails when the mean over folds of the per-point RMS of ∇_u Φ_J is above it;
    ``abort_on_failure``: stop at the first fold that makes the failure certain (saves the rest);
    ``solver``: the refits' and accumulation solves' solver by name (``newton-cg``, ``exact`` or
    ``auto``, built with ``newton``); ``warm_start`` (a policy callable, :func:`scaled_start` by
    default), ``retry_cold``: how refits use the inner state (module docstring).  Where the folds
    run is the engine's business, not an option (:func:`cv_criterion`).
    """

    newton: NewtonOptions = attrs.field(factory=lambda: NewtonOptions(max_iter=13, cg_max_iter=25, grad_tol=1e-6),
                                        validator=instance_of(NewtonOptions))
    k3: int = attrs.field(default=40, validator=positive_int())
    accumulation_tol: float = attrs.field(default=1e-6, validator=nonnegative_number())
    fail_tol: float = attrs.field(default=1e-3, validator=positive_number())
    solver: str = attrs.field(default="newton-cg", validator=one_of(CV_SOLVERS))
    abort_on_failure: bool = attrs.field(default=True, validator=boolean())
    warm_start: Callable = attrs.field(default=scaled_start, validator=instance_of(
        Callable, what="a warm-start policy: a callable (op_J, likelihood, Y_J, α[J]) -> (start or None, MVMs)"))
    retry_cold: bool = attrs.field(default=True, validator=boolean())


@attrs.frozen(eq=False)
class CVState:
    """The inner state: α[J_k] of every fold, shape (|J_k|, C) each (Sec. 4), and optionally the
    last accumulation solutions β_k (same shapes), which warm-start the next accumulation CG, and
    the ``lowrank`` preconditioner's eigensolver subspaces of every fold's K̃_J, shape (|J_k|, m),
    which start the next evaluation's eigensolvers (:func:`~gpmodels.inference.map.newton_cg`)."""

    alphas: tuple
    betas: tuple | None = None
    bases: tuple | None = None

    def __attrs_post_init__(self):
        object.__setattr__(self, "alphas", tuple(np.asarray(a, dtype=np.float64) for a in self.alphas))
        if self.betas is not None:
            betas = tuple(np.asarray(b, dtype=np.float64) for b in self.betas)
            if len(betas) != len(self.alphas) or any(b.shape != a.shape for a, b in zip(self.alphas, betas)):
                raise InputError("CVState.betas must match alphas: one array of the same shape per fold")
            object.__setattr__(self, "betas", betas)
        if self.bases is not None:
            bases = tuple(np.asarray(b, dtype=np.float64) for b in self.bases)
            if len(bases) != len(self.alphas) or any(b.ndim != 2 or b.shape[0] != a.shape[0]
                                                     for a, b in zip(self.alphas, bases)):
                raise InputError("CVState.bases must match alphas: one (|J_k|, m) array per fold")
            object.__setattr__(self, "bases", bases)

    def to_arrays(self) -> dict:
        """Named arrays for checkpoints: ``alpha_<k>`` and (when kept) ``beta_<k>`` and ``basis_<k>``
        per fold k."""
        out = {f"alpha_{k}": a for k, a in enumerate(self.alphas)}
        out.update({f"beta_{k}": b for k, b in enumerate(self.betas or ())})
        out.update({f"basis_{k}": b for k, b in enumerate(self.bases or ())})
        return out

    @classmethod
    def from_arrays(cls, arrays: dict) -> CVState:
        """The inverse of :meth:`to_arrays`; a missing fold raises :class:`InputError`."""
        q = sum(1 for name in arrays if name.startswith("alpha_"))

        def optional(prefix):
            return tuple(arrays[f"{prefix}_{k}"] for k in range(q)) if any(n.startswith(f"{prefix}_")
                                                                           for n in arrays) else None

        try:
            alphas = tuple(arrays[f"alpha_{k}"] for k in range(q))
            betas, bases = optional("beta"), optional("basis")
        except KeyError as exc:
            raise InputError(f"CVState arrays must hold alpha_0..alpha_{q - 1} (and beta_k, basis_k alike); {exc} is "
                             "missing") from None
        return cls(alphas, betas, bases)


@attrs.frozen
class FoldDiagnostics:
    """What one fold cost and how well its inner fit converged."""

    psi: float
    grad_norm: float  # final per-point RMS of ∇_u Φ_J
    newton_iterations: int
    fit_mvms: int
    accumulation_iterations: int
    accumulation_residual: float
    accumulation_mvms: int
    fit_seconds: float
    accumulation_seconds: float
    restrict_seconds: float
    start: str = "cold"  # where the refit started: "warm", "cold" or "warm+cold" (retried)
    held_out_errors: int = -1  # misclassified held-out points of the fold (-1: single-latent likelihood)


@attrs.frozen(eq=False)
class CVEvaluation:
    """Ψ, ∇Ψ (None when failed or not asked for), the new inner state and diagnostics."""

    psi: float
    gradient: np.ndarray | None
    state: CVState | None
    ok: bool
    mean_grad_norm: float
    folds: tuple
    seconds: float
    grad_trace_seconds: float
    message: str
    solver: str = "newton-cg"  # the refits' solver (``auto`` resolved)

    @property
    def mvm_count(self) -> int:
        """Kernel MVMs of the accumulation phase (fits, cross blocks, accumulation solves)."""
        return int(sum(f.fit_mvms + f.accumulation_mvms for f in self.folds))

    def summary(self) -> dict:
        """JSON-friendly scalars."""
        f = self.folds
        return {
            "psi": float(self.psi), "ok": bool(self.ok), "mean_grad_norm": float(self.mean_grad_norm),
            "mvms": self.mvm_count, "newton_iterations": int(sum(x.newton_iterations for x in f)),
            "accumulation_iterations": int(sum(x.accumulation_iterations for x in f)),
            "fit_seconds": float(sum(x.fit_seconds for x in f)),
            "accumulation_seconds": float(sum(x.accumulation_seconds for x in f)),
            "restrict_seconds": float(sum(x.restrict_seconds for x in f)),
            "grad_trace_seconds": float(self.grad_trace_seconds), "seconds": float(self.seconds),
            "warm_starts": sum(x.start == "warm" for x in f), "cold_retries": sum(x.start == "warm+cold" for x in f),
            "held_out_errors": int(sum(x.held_out_errors for x in f)) if all(x.held_out_errors >= 0 for x in f) else -1,
        }


def check_partition(folds: Sequence, n: int) -> tuple[np.ndarray, ...]:
    """Validate a q-partition of range(n): q >= 2 non-empty, disjoint folds covering every point."""
    if isinstance(folds, np.ndarray) or len(folds) < 2:
        raise InputError(
            f"folds must be a list of q >= 2 index arrays (a partition of 0..{n - 1}); got {type(folds).__name__}"
            f"{'' if isinstance(folds, np.ndarray) else f' of length {len(folds)}'}"
        )
    out, seen = [], np.zeros(n, dtype=np.intp)
    for k, I in enumerate(folds):
        I = np.asarray(I)
        if I.ndim != 1 or I.size == 0 or I.dtype.kind not in "iu":
            raise InputError(
                f"fold {k} must be a non-empty 1-D integer index array; got dtype {I.dtype}, shape {I.shape}"
            )
        if I.min() < 0 or I.max() >= n:
            raise InputError(f"fold {k} must index range(0, {n}); got values from {I.min()} to {I.max()}")
        np.add.at(seen, I, 1)
        out.append(np.sort(I.astype(np.intp)))
    if np.any(seen != 1):
        twice, never = np.flatnonzero(seen > 1), np.flatnonzero(seen == 0)
        raise InputError(
            f"folds must partition 0..{n - 1}: {twice.size} points lie in more than one fold "
            f"(first {twice[:5].tolist()}), {never.size} in none (first {never[:5].tolist()})"
        )
    return tuple(out)


def _complements(folds, n):
    mask = np.ones(n, dtype=bool)
    out = []
    for I in folds:
        mask[I] = False
        out.append(np.flatnonzero(mask))
        mask[I] = True
    return out


@attrs.frozen(eq=False)
class FoldProblem:
    """The operators and targets of one fold: K̃_J (restricted), the cross block K̃_{I,J} (its
    transpose K̃_{J,I} by ``rmvm``), the likelihood and the targets Y_J, Y_I."""

    op_J: Operator
    cross_IJ: Operator
    likelihood: Likelihood
    Y_J: np.ndarray
    Y_I: np.ndarray


def _refit(solver: NewtonSolver, fp: FoldProblem, task, opts: CVOptions):
    """The fold's refit with the warm-start policy from the task's α[J] (and, for Newton–CG, its
    preconditioner subspaces); returns (result, MVMs, Newton iterations, start)."""
    op_J, lik, Y_J = fp.op_J, fp.likelihood, fp.Y_J
    alpha0, extra, start = task.alpha0, 0, "cold"
    if alpha0 is not None:
        alpha0, extra = opts.warm_start(op_J, lik, Y_J, alpha0)
    if alpha0 is not None:
        start = "warm"
    res = solver.fit(op_J, lik, Y_J, alpha0=alpha0, precond_start=task.basis0)
    mvms, its = res.diagnostics.mvm_count + extra, res.diagnostics.iterations
    if alpha0 is not None and opts.retry_cold and not res.diagnostics.grad_norm[-1] <= opts.fail_tol:
        cold = solver.fit(op_J, lik, Y_J, precond_start=task.basis0)
        mvms += cold.diagnostics.mvm_count
        its += cold.diagnostics.iterations
        start = "warm+cold"
        if cold.diagnostics.grad_norm[-1] < res.diagnostics.grad_norm[-1]:
            res = cold
    return res, mvms, its, start


@attrs.frozen(eq=False)
class FoldResult:
    """One fold's inner fit (α[J], Seeger 2008 Sec. 4), held-out part (Ψ_I, r_I = ∇_u Φ_lh at u[I],
    eq. 3) and accumulation vector z of f = I_{·,I} r_I - I_{·,J} z (Sec. 5.2), with their costs."""

    alpha: np.ndarray
    grad_norm: float
    newton_iterations: int
    fit_mvms: int
    fit_seconds: float
    start: str
    psi: float
    r_I: np.ndarray
    z: np.ndarray | None = None
    beta: np.ndarray | None = None  # the accumulation CG solution (warm start of the next evaluation)
    accumulation_iterations: int = 0
    accumulation_residual: float = 0.0
    accumulation_mvms: int = 1
    accumulation_seconds: float = 0.0
    restrict_seconds: float = 0.0
    held_out_errors: int = -1  # misclassified held-out points (-1: not defined for this likelihood)
    basis: np.ndarray | None = None  # the refit's preconditioner subspaces (start of the next evaluation's)

    def diagnostics(self) -> FoldDiagnostics:
        return FoldDiagnostics(psi=float(self.psi), grad_norm=float(self.grad_norm),
                               newton_iterations=int(self.newton_iterations), fit_mvms=int(self.fit_mvms),
                               accumulation_iterations=int(self.accumulation_iterations),
                               accumulation_residual=float(self.accumulation_residual),
                               accumulation_mvms=int(self.accumulation_mvms), fit_seconds=float(self.fit_seconds),
                               accumulation_seconds=float(self.accumulation_seconds),
                               restrict_seconds=float(self.restrict_seconds),
                               held_out_errors=int(self.held_out_errors),
                               start=self.start)


def _held_out_errors(u_I, Y_I) -> int:
    """Held-out points whose largest latent is not their target's largest entry (C >= 2; the
    misclassifications of the fold's MAP predictor), -1 for single-latent likelihoods."""
    if u_I.ndim != 2 or u_I.shape[1] < 2:
        return -1
    return int(np.count_nonzero(np.argmax(u_I, axis=1) != np.argmax(Y_I, axis=1)))


def _fit_and_hold_out(solver: NewtonSolver, fp: FoldProblem, task, opts: CVOptions):
    """The fold's refit of α[J], then Ψ_I = Φ_lh(u[I]) and r_I at u[I] = K̃_{I,J} α[J] (eq. 3);
    returns (Newton result, FoldResult without the accumulation, time at the end of the fit)."""
    t = time.perf_counter()
    res, mvms, its, start = _refit(solver, fp, task, opts)
    t_fit = time.perf_counter()
    lik = fp.likelihood
    u_I = fp.cross_IJ.mvm(res.alpha)  # Seeger 2008, eq. (3): u[I] = K̃_{I,J} α[J]
    fold = FoldResult(
        alpha=res.alpha,
        grad_norm=res.diagnostics.grad_norm[-1],
        newton_iterations=its,
        fit_mvms=mvms,
        fit_seconds=t_fit - t,
        start=start,
        psi=lik.value(u_I, fp.Y_I),
        r_I=lik.gradient(u_I, fp.Y_I),
        held_out_errors=_held_out_errors(u_I, fp.Y_I),
        basis=res.precond_basis,
    )  # r_I = π[I] - y_I for the softmax
    return res, fold, t_fit


def _fold(solver: NewtonSolver, fp: FoldProblem, task, opts: CVOptions, gradient: bool) -> FoldResult:
    """Fit α[J] with ``solver``, then Ψ_I and (optionally) the accumulation vector
    z = (I + W K̃_J)^{-1} W K̃_{J,I} r_I = V (I + V^T K̃_J V)^{-1} V^T K̃_{J,I} r_I (Sec. 5.2), by the
    solver's ``solve_weighted`` (CG from the fold's last β with k3 steps, or App. C's Cholesky and
    Woodbury), W the likelihood's *exact* Hessian at α[J] (module docstring)."""
    res, fold, t = _fit_and_hold_out(solver, fp, task, opts)
    if not gradient:
        return attrs.evolve(fold, accumulation_seconds=time.perf_counter() - t)
    hf = fp.likelihood.exact_hessian_factor(res.u, fp.Y_J)  # W = V V^T exactly: no App. B set in this solve
    b = fp.cross_IJ.rmvm(fold.r_I)  # K̃_{J,I} r_I, K̃_{J,I} = K̃_{I,J}^T
    sol = solver.solve_weighted(fp.op_J, hf, b, x0=task.beta0, tol=opts.accumulation_tol, max_iter=opts.k3)
    return attrs.evolve(fold, z=sol.z, beta=sol.beta, accumulation_iterations=sol.iterations,
                        accumulation_residual=sol.residual, accumulation_mvms=2 + sol.mvms,
                        accumulation_seconds=time.perf_counter() - t)


def _new_state(alphas, betas, bases) -> CVState:
    def kept(arrays):
        return None if any(b is None for b in arrays) else tuple(arrays)

    return CVState(tuple(alphas), kept(betas), kept(bases))


def choose_solver(op: Operator, likelihood: Likelihood, fold_size: int) -> str:
    """``auto``'s choice: ``exact`` (App. C) where it applies (a flat prior and the multinomial
    Hessian form, :meth:`ExactNewton.supports`) and |J| · C <= EXACT_MAX_SIZE (where it was measured
    cheaper), else ``newton-cg``."""
    if fold_size * op.n_classes <= EXACT_MAX_SIZE and ExactNewton.supports(op, likelihood):
        return ExactNewton.name
    return "newton-cg"


def _check_call(op: Operator, folds, opts: CVOptions, state: CVState | None) -> tuple[np.ndarray, ...]:
    """The validated partition; the state must have one α per fold, App. C a flat prior."""
    folds = check_partition(folds, op.n_points)
    q = len(folds)
    if state is not None and (not isinstance(state, CVState) or len(state.alphas) != q):
        raise InputError(
            f"state must be a CVState with one α per fold ({q}); got "
            f"{len(state.alphas) if isinstance(state, CVState) else type(state).__name__}"
        )
    if opts.solver == ExactNewton.name and not op.is_class_diagonal:
        raise InputError("the exact CV criterion (App. C) needs a block-diagonal (flat) prior; use the solver "
                         "'newton-cg'")
    return folds


@attrs.frozen(eq=False)
class FoldTask:
    """What fold k needs besides the evaluation's common inputs: its held-out set I_k, training set
    J_k = {1..n} \\ I_k and its part of the inner state (α[J_k] and β_k, or None: cold)."""

    k: int
    I: np.ndarray
    J: np.ndarray
    alpha0: np.ndarray | None = None
    beta0: np.ndarray | None = None
    basis0: np.ndarray | None = None


def fold_tasks(folds, n: int, C: int, state: CVState | None) -> list[FoldTask]:
    """One :class:`FoldTask` per fold, with the state's α[J_k], β_k checked against |J_k| x C."""
    tasks = []
    for k, (I, J) in enumerate(zip(folds, _complements(folds, n))):
        alpha0 = None if state is None else state.alphas[k]
        if alpha0 is not None and alpha0.shape != (J.size, C):
            raise InputError(f"state.alphas[{k}] must have shape ({J.size}, {C}); got {alpha0.shape}")
        beta0 = None if state is None or state.betas is None else state.betas[k]
        basis0 = None if state is None or state.bases is None else state.bases[k]
        if basis0 is not None and basis0.shape[0] != J.size:
            raise InputError(f"state.bases[{k}] must have {J.size} rows; got {basis0.shape[0]}")
        tasks.append(FoldTask(k, I, J, alpha0, beta0, basis0))
    return tasks


def evaluate_fold(task: FoldTask, op: Operator, likelihood: Likelihood, Y, opts: CVOptions,
                  gradient: bool) -> FoldResult:
    """All the work of one fold, a pure function of its inputs: restrict K̃ to J once (contiguous
    copy, App. D.2) and take the cross blocks, refit α[J] (Sec. 4), hold out (eq. 3) and, with
    ``gradient``, solve the accumulation system (Sec. 5.2).  It reads nothing of other folds, so
    the folds may run in any order or at once (:func:`run_fold` on an engine)."""
    I, J = task.I, task.J
    t = time.perf_counter()
    op_J = op.restrict(J)
    cross_IJ = op.cross(I, J)  # its transpose is K̃_{J,I} (rmvm): one copy per fold, not two
    restrict_s = time.perf_counter() - t
    solver = make_solver(opts.solver, opts.newton)
    fold = _fold(solver, FoldProblem(op_J, cross_IJ, likelihood, Y[J], Y[I]), task, opts, gradient)
    return attrs.evolve(fold, restrict_seconds=restrict_s)


@attrs.define
class _Accumulator:
    """Ψ, the inner state and E, F of eq. (6) over the folds, with the failure rules of Sec. 4."""

    q: int
    opts: CVOptions
    E: np.ndarray | None
    F: np.ndarray | None
    psi: float = 0.0
    norm_sum: float = 0.0
    alphas: list = attrs.field(factory=list)
    betas: list = attrs.field(factory=list)
    bases: list = attrs.field(factory=list)
    diags: list = attrs.field(factory=list)
    ok: bool = True
    message: str = "ok"

    def add(self, task: FoldTask, fold: FoldResult) -> bool:
        """Take fold k (in fold order); False when the evaluation has failed (stop)."""
        opts, k, I, J = self.opts, task.k, task.I, task.J
        self.diags.append(fold.diagnostics())
        self.norm_sum += fold.grad_norm if np.isfinite(fold.grad_norm) else np.inf
        self.psi += fold.psi
        self.alphas.append(fold.alpha)
        self.betas.append(fold.beta)
        self.bases.append(fold.basis)
        if not (np.isfinite(fold.psi) and np.all(np.isfinite(fold.alpha))):
            return self.fail(f"fold {k}: non-finite inner fit")
        if opts.abort_on_failure and self.norm_sum > self.q * opts.fail_tol:
            return self.fail(
                f"inner fits did not converge: after fold {k} the mean gradient RMS over {self.q} "
                f"folds is already above fail_tol {opts.fail_tol:g}"
            )
        if self.E is not None:
            self.E[J, :, k] = fold.alpha  # e = I_{·,J} α[J]
            self.F[I, :, k] = fold.r_I  # f = I_{·,I} r_I - I_{·,J} z
            self.F[J, :, k] = -fold.z
        return True

    def fail(self, message: str) -> bool:
        self.ok, self.message = False, message
        return False

    def mean_norm(self) -> float:
        """Mean final gradient RMS over the folds (inf when not every fold ran); fails the evaluation when
        above ``fail_tol``."""
        mean = self.norm_sum / self.q if len(self.diags) == self.q else np.inf
        if self.ok and not mean <= self.opts.fail_tol:
            self.fail(
                f"inner fits did not converge: mean gradient RMS {mean:.3g} over folds > fail_tol "
                f"{self.opts.fail_tol:g}"
            )
        return mean


class FoldContext:
    """The shared state of a CV learning run's fold jobs: the operator at the run's start
    hyperparameters ``base``, the likelihood and the targets Y (n, C), shipped to each worker of an
    engine once (:meth:`~gpmodels.engine.base.Engine.imap_shared`).

    :meth:`operator_at` gives the operator at θ, built once per θ and process by ``base.with_params``
    (the same call as the learner's, so the same numbers); :meth:`prime` gives it the operator the
    caller already built at θ, which the jobs run in this process then use."""

    def __init__(self, base: Operator, likelihood: Likelihood, Y: np.ndarray):
        self.base, self.likelihood, self.Y = base, likelihood, Y
        self._at: tuple | None = (np.array(base.params, dtype=np.float64), base)
        self._lock = threading.Lock()

    def prime(self, theta, op: Operator) -> None:
        """``op`` is the operator at θ (built by ``base.with_params(θ)``)."""
        with self._lock:
            self._at = (np.array(theta, dtype=np.float64), op)

    def operator_at(self, theta: np.ndarray) -> Operator:
        """The operator at θ, kept for the next jobs at the same θ (the previous one is freed first)."""
        with self._lock:
            if self._at is None or not np.array_equal(self._at[0], theta):
                self._at = None
                self._at = (np.array(theta, dtype=np.float64), self.base.with_params(theta))
            return self._at[1]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def run_fold(context: FoldContext, job: tuple) -> tuple:
    """One fold as an independent job of an engine's map: (FoldResult, None), or (None, message) when
    its exact solves failed.  ``job`` = (task, θ, opts, gradient); the operator at θ comes from the
    shared :class:`FoldContext`.  Module-level so that a process or Dask engine can ship it."""
    task, theta, opts, gradient = job
    op = context.operator_at(theta)
    try:
        return evaluate_fold(task, op, context.likelihood, context.Y, opts, gradient), None
    except np.linalg.LinAlgError as exc:  # exact solves at extreme hyperparameters
        return None, str(exc)


def fold_workload(op: Operator, q: int) -> Workload:
    """What q fold jobs on ``op`` ask of an engine's workers: each builds the operator at new
    hyperparameters (the arrays of ``op``) and a fold's restricted copy of it (at most as large)."""
    return Workload(tasks=q, worker_bytes=2 * resident_bytes(op), points=op.n_points)


def cv_criterion(op: Operator, likelihood: Likelihood, Y, folds, options: CVOptions | None = None, *,
                 state: CVState | None = None, gradient: bool = True, engine: Engine | None = None) -> CVEvaluation:
    """Ψ (eq. 3) and ∇Ψ = op.grad_trace(E, F) (eq. 6) at the operator's hyperparameters.

    ``op``: the full operator K̃ at the hyperparameters to evaluate (build it once per evaluation
    with ``with_params``).  ``Y``: targets, shape (n, C).  ``folds``: the fixed partition, q index
    arrays.  ``state``: the inner state to warm-start from (α[J_k] of the last successful
    evaluation), or None for α = 0.  Returns ``ok=False`` (and no gradient) when the inner fits
    did not converge to ``options.fail_tol``; ``state`` is then None (discarded).

    ``engine`` (:mod:`gpmodels.engine`; None: this process, one fold after the other): where the
    folds run, each as an independent job; the results are taken in fold order, so Ψ and ∇Ψ do not
    depend on it.  A learning run evaluates through :func:`criterion_on` with one
    :class:`FoldContext` for all its evaluations, so that a worker gets the shared state once.
    """
    Y = likelihood.check_targets(Y, op.n_points, op.n_classes)
    return criterion_on(FoldContext(op, likelihood, Y), op, folds, options, state=state, gradient=gradient,
                        engine=engine)


def criterion_on(context: FoldContext, op: Operator, folds, options: CVOptions | None = None, *,
                 state: CVState | None = None, gradient: bool = True, engine: Engine | None = None) -> CVEvaluation:
    """:func:`cv_criterion` with the fold jobs' shared state ``context`` (its likelihood and checked
    targets); ``op`` is the operator at the evaluated θ, built by ``context.base.with_params(θ)``."""
    opts = options or CVOptions()
    t_start = time.perf_counter()
    n, C = op.n_points, op.n_classes
    folds = _check_call(op, folds, opts, state)
    if opts.solver == "auto":
        opts = attrs.evolve(opts, solver=choose_solver(op, context.likelihood, n - min(I.size for I in folds)))
    q = len(folds)
    acc = _Accumulator(q, opts, np.zeros((n, C, q)) if gradient else None, np.zeros((n, C, q)) if gradient else None)
    tasks = fold_tasks(folds, n, C, state)
    theta = np.array(op.params, dtype=np.float64)
    context.prime(theta, op)
    engine = engine or LocalEngine()
    results = engine.imap_shared(run_fold, context, [(task, theta, opts, gradient) for task in tasks],
                                 fold_workload(op, q) if engine.workers_for(Workload(q)) > 1 else Workload(q))
    for task in tasks:
        fold, err = next(results)
        if err is not None:
            acc.fail(f"fold {task.k}: {err}")
            break
        if not acc.add(task, fold):
            break
    results.close()  # a stopped evaluation leaves the remaining folds undone (or cancelled)
    mean_norm = acc.mean_norm()
    grad, gt_s = None, 0.0
    if acc.ok and gradient:
        t = time.perf_counter()
        grad = op.grad_trace(acc.E, acc.F)  # Seeger 2008, eq. (6): dΨ = tr E^T (dK̃) F
        gt_s = time.perf_counter() - t
        if not np.all(np.isfinite(grad)):
            grad = None
            acc.fail("non-finite gradient")
    ok = acc.ok
    return CVEvaluation(psi=float(acc.psi) if ok else float("nan"), gradient=grad,
                        state=_new_state(acc.alphas, acc.betas, acc.bases) if ok else None, ok=ok,
                        mean_grad_norm=float(mean_norm),
                        folds=tuple(acc.diags), seconds=time.perf_counter() - t_start, grad_trace_seconds=gt_s,
                        message=acc.message, solver=opts.solver)
