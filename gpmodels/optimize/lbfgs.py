"""Outer optimiser for hyperparameter learning: bounded L-BFGS with failed-evaluation brackets.

Minimises f(x) over a box lo <= x <= hi (x: the free log-space hyperparameters) given an
``evaluate(x, seed) -> Trial`` that returns f, ∇f, whether the evaluation *succeeded* and an
opaque inner state (for the CV criterion: α[J_k] of every fold).  Seeger 2008, Sec. 4:

- An evaluation whose inner fits did not converge is *failed*.  Inside a line search it becomes a
  right bracket: no step at or beyond it is tried again in that search.  Its inner state is
  discarded.
- Every evaluation is seeded with the inner state of the last successful evaluation; within a
  line search, the last successful one *to the left* along the search direction (footnote 8):
  the left bracket, which is the current point until a step is accepted.

Why our own line search and not scipy's: scipy's ``minimize(method="L-BFGS-B")`` and its
``line_search`` expect f to be defined everywhere; a failed evaluation (no value, no gradient)
would have to be faked (``inf`` makes L-BFGS-B abort its line search with ABNORMAL_TERMINATION,
a large finite value corrupts its interpolation), they cannot pass a seed chosen by the bracket
to the next evaluation, and their optimiser memory lives inside compiled code, so a run cannot
be checkpointed and resumed exactly.  Here the state (x, f, ∇f, the L-BFGS pairs, the inner
state) is a plain value (:class:`OuterState`) that ``checkpoint.py`` writes and reads.

Method.  Projected L-BFGS on the free variables: variables at a bound whose gradient pushes
outward are held (active set); the direction is the two-loop recursion (Nocedal & Wright 2006,
Alg. 7.4) on the free subspace, scaled by γ = s^T y / y^T y (before any pair exists: a
steepest-descent step of max-norm ``initial_step``; after a memory reset: steepest descent scaled
by the last γ), capped at ``max_step`` in the max-norm (log space: e^3 ≈ 20x
per step by default, so that trial hyperparameters do not jump to values where the inner fits
fail), and cut at the box.  The line search looks for a step satisfying the weak Wolfe
conditions (Armijo ``armijo``, curvature ``wolfe``): it extrapolates by ``extrapolation`` while
the slope is still steep and no right bracket is known (at most ``max_extrapolations`` times and
never beyond ``max_step`` from x: every evaluation is a full set of inner fits, and far steps end
at hyperparameters where they fail), and otherwise interpolates (cubic, safeguarded to the inner
80 % of the bracket; bisection next to a failed bracket).  A sufficient decrease that reached the
extrapolation limit is accepted, and so is one whose extrapolation overshot (no further decrease, or
a failed evaluation) instead of interpolating inside that bracket for the curvature condition.  If it finds
no decrease, the memory is dropped and one steepest-descent search is tried before giving up.
Pairs with s^T y <= 1e-10 ||s|| ||y|| are not stored (BFGS needs positive curvature).

Stopping: max-norm of the projected gradient <= ``gtol`` max(1, |f|), relative decrease of f over
an iteration <= ``ftol``, the decrease predicted by the quasi-Newton model (-g^T d / 2) <= ``ftol``
max(1, |f|) (with an inexactly evaluated f, as Ψ with truncated inner fits, smaller decreases are
noise), ``max_iter`` iterations or ``max_evaluations`` evaluations.  With ``score_patience`` p > 0
also when a held-out score the objective reports with its evaluations (``Trial.info["score"]``,
lower is better; the CV criterion gives its held-out misclassifications) has not improved on its
best for p iterations (by more than ``score_rtol`` of it: a count of held-out errors moves by one
or two between nearby hyperparameters by chance): further decrease of f no longer moves what f
stands for.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs
import numpy as np

from gpmodels.errors import ConvergenceError, InputError
from gpmodels.validation import nonnegative_int, nonnegative_number, number, positive_int, positive_number, probability

__all__ = [
    "OuterOptions",
    "Trial",
    "OuterRecord",
    "OuterState",
    "outer_start",
    "outer_iteration",
    "minimize_outer",
    "projected_gradient",
]


@attrs.frozen
class OuterOptions:
    """Settings of the outer quasi-Newton optimiser (see the module docstring)."""

    max_iter: int = attrs.field(default=30, validator=positive_int())
    max_evaluations: int = attrs.field(default=100, validator=positive_int())
    memory: int = attrs.field(default=10, validator=positive_int())
    ftol: float = attrs.field(default=1e-5, validator=nonnegative_number())
    gtol: float = attrs.field(default=1e-6, validator=nonnegative_number())
    initial_step: float = attrs.field(default=1.0, validator=positive_number())
    max_step: float = attrs.field(default=3.0, validator=positive_number())
    armijo: float = attrs.field(default=1e-4, validator=probability(open_low=True, open_high=True))  # c1
    wolfe: float = attrs.field(default=0.9, validator=probability(open_low=True, open_high=True))  # c2
    line_search_evals: int = attrs.field(default=8, validator=positive_int())
    extrapolation: float = attrs.field(default=4.0, validator=number(1, open_low=True))
    max_extrapolations: int = attrs.field(default=2, validator=nonnegative_int())
    score_patience: int = attrs.field(default=0, validator=nonnegative_int())  # 0: off
    score_rtol: float = attrs.field(default=0.0, validator=number(0, 1))  # smaller relative gains are noise

    def __attrs_post_init__(self):
        if not self.armijo < self.wolfe:
            raise InputError(
                f"OuterOptions.armijo must be below wolfe (armijo < wolfe: 0 < c1 < c2 < 1); "
                f"got armijo={self.armijo!r} and wolfe={self.wolfe!r}"
            )


@attrs.frozen(eq=False)
class Trial:
    """One evaluation: value f, gradient, success flag, inner state and JSON-able info."""

    value: float
    gradient: np.ndarray | None
    ok: bool
    inner: object = None
    info: dict = attrs.field(factory=dict)


@attrs.frozen
class OuterRecord:
    """Progress after one outer iteration (iteration 0: the starting point)."""

    iteration: int
    value: float
    grad_norm: float  # max-norm of the projected gradient
    x: tuple
    step: float  # accepted λ (0 at iteration 0)
    evaluations: int  # in this iteration
    failed: int  # failed evaluations in this iteration
    seconds: float  # this iteration
    elapsed: float  # since the start of learning (over resumes)
    info: dict  # from the accepted evaluation

    def as_dict(self) -> dict:
        return attrs.asdict(self)


@attrs.frozen(eq=False)
class OuterState:
    """Everything the optimiser needs to continue: written to checkpoints (Sec. 4 'inner state').

    ``S``, ``Yd``: the L-BFGS pairs, oldest first, shape (m, p) each.
    """

    x: np.ndarray
    value: float
    gradient: np.ndarray
    S: np.ndarray
    Yd: np.ndarray
    inner: object
    iteration: int
    evaluations: int
    failed: int
    elapsed: float
    history: tuple
    finished: bool = False
    converged: bool = False
    message: str = ""


def _check_bounds(bounds, p: int) -> np.ndarray:
    b = np.asarray(bounds, dtype=np.float64)
    if b.shape != (p, 2):
        raise InputError(f"Dimension mismatch: bounds must have shape ({p}, 2); got {b.shape}")
    if np.any(np.isnan(b)) or np.any(b[:, 0] >= b[:, 1]):
        bad = int(np.flatnonzero(~(b[:, 0] < b[:, 1]))[0])
        raise InputError(f"bounds must satisfy lower < upper; entry {bad} is {b[bad].tolist()}")
    return b


def _at_bounds(x, b):
    tol = 1e-10 * (1.0 + np.abs(np.where(np.isfinite(b), b, 0.0)))
    return x <= b[:, 0] + tol[:, 0], x >= b[:, 1] - tol[:, 1]


def projected_gradient(x, g, bounds) -> np.ndarray:
    """g with the components zeroed where x sits at a bound and -g points outside the box."""
    lo, hi = _at_bounds(x, bounds)
    return np.where((lo & (g > 0)) | (hi & (g < 0)), 0.0, g)


def _two_loop(q, S, Yd, free, gamma_default):
    """-H q by the L-BFGS two-loop recursion on the free coordinates."""
    r = np.where(free, q, 0.0)
    pairs = []
    for s, y in zip(S, Yd):
        s, y = np.where(free, s, 0.0), np.where(free, y, 0.0)
        sy = float(s @ y)
        if sy > 1e-10 * np.linalg.norm(s) * np.linalg.norm(y) and sy > 0:
            pairs.append((s, y, 1.0 / sy))
    if not pairs:
        return -gamma_default * r, False
    a = []
    for s, y, rho in reversed(pairs):
        ai = rho * float(s @ r)
        r = r - ai * y
        a.append(ai)
    s, y, _ = pairs[-1]
    r = r * (float(s @ y) / float(y @ y))
    for (s, y, rho), ai in zip(pairs, reversed(a)):
        bi = rho * float(y @ r)
        r = r + (ai - bi) * s
    return -np.where(free, r, 0.0), True


def _max_step_to_box(x, d, b) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.where(d > 0, (b[:, 1] - x) / d, np.inf)
        down = np.where(d < 0, (b[:, 0] - x) / d, np.inf)
    return float(max(0.0, min(up.min(initial=np.inf), down.min(initial=np.inf))))


def _interpolate(a, fa, ga, b, fb, gb):
    """Minimiser of the cubic (or quadratic) through the bracket ends, safeguarded inside."""
    w = b - a
    lam = None
    if fb is not None and gb is not None:
        d1 = ga + gb - 3.0 * (fa - fb) / (a - b)
        disc = d1 * d1 - ga * gb
        if disc >= 0:
            d2 = np.sqrt(disc)
            denom = gb - ga + 2.0 * d2
            if denom != 0:
                lam = b - w * (gb + d2 - d1) / denom
    if lam is None and fb is not None:
        denom = 2.0 * (fb - fa - ga * w)
        if denom > 0:
            lam = a - ga * w * w / denom
    if lam is None or not np.isfinite(lam):
        lam = a + 0.5 * w
    return float(min(max(lam, a + 0.1 * w), b - 0.1 * w))


def outer_start(
    evaluate: Callable, x0, bounds, options: OuterOptions | None = None, *, seed=None, clock_offset: float = 0.0
) -> OuterState:
    """Evaluate at x0 (seeded with ``seed``, None for a cold start): the state of iteration 0.

    Raises :class:`ConvergenceError` when that first evaluation fails (there is nothing to
    bracket against): raise k1/k2 or relax the failure threshold.
    """
    opts = options or OuterOptions()
    x0 = np.array(x0, dtype=np.float64).ravel()
    b = _check_bounds(bounds, x0.size)
    if np.any(x0 < b[:, 0]) or np.any(x0 > b[:, 1]):
        i = int(np.flatnonzero((x0 < b[:, 0]) | (x0 > b[:, 1]))[0])
        raise InputError(
            f"the starting point lies outside the bounds: x0[{i}] = {x0[i]:g} not in [{b[i, 0]:g}, {b[i, 1]:g}]"
        )
    t = time.perf_counter()
    tr = evaluate(x0, seed)
    if not _usable(tr, x0.size):
        raise ConvergenceError(
            "the first evaluation at the starting hyperparameters failed "
            f"({tr.info.get('message', 'inner fits did not converge')}); start elsewhere, or (CV criterion) raise the "
            "inner iteration limits (k1, k2) or the failure threshold"
        )
    seconds = time.perf_counter() - t
    pg = projected_gradient(x0, tr.gradient, b)
    rec = OuterRecord(
        0,
        float(tr.value),
        float(np.abs(pg).max(initial=0.0)),
        tuple(float(v) for v in x0),
        0.0,
        1,
        0,
        seconds,
        clock_offset + seconds,
        dict(tr.info),
    )
    state = OuterState(
        x=x0,
        value=float(tr.value),
        gradient=np.asarray(tr.gradient, dtype=float),
        S=np.zeros((0, x0.size)),
        Yd=np.zeros((0, x0.size)),
        inner=tr.inner,
        iteration=0,
        evaluations=1,
        failed=0,
        elapsed=clock_offset + seconds,
        history=(rec,),
    )
    return _check_stop(state, b, opts, previous=None)


def _usable(tr: Trial, p: int) -> bool:
    return bool(
        tr.ok
        and np.isfinite(tr.value)
        and tr.gradient is not None
        and np.shape(tr.gradient) == (p,)
        and np.all(np.isfinite(tr.gradient))
    )


def _check_stop(state: OuterState, b, opts: OuterOptions, previous: float | None) -> OuterState:
    pg = projected_gradient(state.x, state.gradient, b)
    gmax = float(np.abs(pg).max(initial=0.0))
    scale = max(1.0, abs(state.value))
    if gmax <= opts.gtol * scale:
        return attrs.evolve(state, finished=True, converged=True, message="projected gradient below gtol")
    if previous is not None and previous - state.value <= opts.ftol * scale:
        return attrs.evolve(
            state, finished=True, converged=True, message="relative decrease of the objective below ftol"
        )
    if opts.score_patience and _score_stalled(state.history, opts.score_patience, opts.score_rtol):
        return attrs.evolve(
            state,
            finished=True,
            converged=True,
            message=f"held-out score not improved for {opts.score_patience} iterations",
        )
    if state.iteration >= opts.max_iter:
        return attrs.evolve(state, finished=True, converged=False, message="maximum number of outer iterations reached")
    if state.evaluations >= opts.max_evaluations:
        return attrs.evolve(state, finished=True, converged=False, message="maximum number of evaluations reached")
    return state


def _score_stalled(history, patience: int, rtol: float = 0.0) -> bool:
    """True when the records' ``info["score"]`` (all present) has not improved on its best for
    ``patience`` iterations by more than ``rtol`` of that best."""
    scores = [rec.info.get("score") for rec in history]
    if len(scores) <= patience or any(s is None for s in scores):
        return False
    best = min(scores[:-patience])
    return min(scores[-patience:]) >= best - rtol * abs(best)


def _line_search(evaluate, state: OuterState, d, b, opts: OuterOptions, budget: int):
    """Weak-Wolfe search along d from state.x; returns (accepted Trial or None, λ, evals, failed)."""
    x, f = state.x, state.value
    gd = float(state.gradient @ d)
    # never farther than the box, nor than max_step (max-norm, log space) from x, extrapolations included
    lam_max = min(_max_step_to_box(x, d, b), opts.max_step / max(float(np.abs(d).max(initial=0.0)), 1e-300))
    lam = min(1.0, lam_max)
    extrapolations = 0
    left = (0.0, f, gd, state.inner, None)  # λ, f, slope, inner state, trial
    right = None  # (λ, f or None, slope or None)
    evals = failed = 0
    while evals < min(opts.line_search_evals, budget) and lam > 0:
        xt = np.clip(x + lam * d, b[:, 0], b[:, 1])
        if np.array_equal(xt, x):
            break  # the step is below the resolution of x
        tr = evaluate(xt, left[3])  # seeded by the last successful evaluation to the left (fn. 8)
        evals += 1
        if not _usable(tr, x.size):
            failed += 1
            right = (lam, None, None)  # a failed evaluation is a right bracket; its state is dropped
        else:
            slope = float(tr.gradient @ d)
            if tr.value > f + opts.armijo * lam * gd:
                right = (lam, float(tr.value), slope)
            elif slope >= opts.wolfe * gd or lam >= lam_max or extrapolations >= opts.max_extrapolations:
                return tr, lam, evals, failed
            else:
                left = (lam, float(tr.value), slope, tr.inner, tr)
        if right is not None and left[4] is not None and left[1] <= (right[1] if right[1] is not None else np.inf):
            # an extrapolation overshot: keep the sufficient decrease already found rather than spend
            # evaluations on the curvature condition inside the bracket (each is a full set of refits)
            return left[4], left[0], evals, failed
        if right is None:
            lam = min(opts.extrapolation * lam, lam_max)
            extrapolations += 1
        elif right[1] is None:
            lam = left[0] + 0.5 * (right[0] - left[0])
        else:
            lam = _interpolate(left[0], left[1], left[2], right[0], right[1], right[2])
        if right is not None and right[0] - left[0] <= 1e-10 * max(1.0, right[0]):
            break
    if left[4] is not None:
        return left[4], left[0], evals, failed  # Armijo holds there; curvature not reached in budget
    return None, 0.0, evals, failed


def _search_direction(pg, g, S, Yd, free, at_bounds, gamma0: float, max_step: float) -> tuple[np.ndarray, bool]:
    """The projected quasi-Newton direction: the two-loop recursion over the memory (S, Yd) on the free
    coordinates, zeroed where it would leave the box (``at_bounds``: the coordinates at their lower and
    upper bounds); steepest descent scaled by ``gamma0`` where that is not a descent direction; the
    largest coordinate capped at ``max_step``.  Returns (direction, whether it used the memory)."""
    lo, hi = at_bounds
    d, used_memory = _two_loop(pg, S, Yd, free, gamma0)
    d = np.where((lo & (d < 0)) | (hi & (d > 0)), 0.0, d)  # never step out of the box
    if not float(g @ d) < 0.0:
        d, used_memory = np.where(free, -gamma0 * pg, 0.0), False
    dmax = float(np.abs(d).max(initial=0.0))
    if dmax > max_step:
        d = d * (max_step / dmax)
    return d, used_memory


def _updated_memory(S, Yd, s, y, memory: int) -> tuple[np.ndarray, np.ndarray]:
    """The memory with the pair (s, y) of the accepted step appended (the oldest dropped beyond
    ``memory`` pairs), where the curvature sᵀy is positive enough to keep the inverse Hessian
    approximation positive definite; unchanged otherwise."""
    if float(s @ y) > 1e-10 * np.linalg.norm(s) * np.linalg.norm(y):
        return np.vstack([S, s])[-memory:], np.vstack([Yd, y])[-memory:]
    return S, Yd


def outer_iteration(evaluate: Callable, state: OuterState, bounds, options: OuterOptions | None = None) -> OuterState:
    """One quasi-Newton iteration (direction, line search, memory update) from ``state``."""
    opts = options or OuterOptions()
    b = _check_bounds(bounds, state.x.size)
    if state.finished:
        return state
    t = time.perf_counter()
    x, g = state.x, state.gradient
    pg = projected_gradient(x, g, b)
    free = pg != 0.0
    lo, hi = _at_bounds(x, b)
    gamma0 = opts.initial_step / max(float(np.abs(pg).max(initial=0.0)), 1e-300)
    if state.S.shape[0]:  # after the first iteration, steepest descent is scaled like L-BFGS' H0
        s, y = state.S[-1], state.Yd[-1]
        gamma0 = float(s @ y) / float(y @ y)
    total_evals = total_failed = 0
    S, Yd = state.S, state.Yd
    accepted, lam, d = None, 0.0, None
    for _ in range(2):
        d, used_memory = _search_direction(pg, g, S, Yd, free, (lo, hi), gamma0, opts.max_step)
        if used_memory and -0.5 * float(g @ d) <= opts.ftol * max(1.0, abs(state.value)):
            # the quasi-Newton model promises less than ftol: below the resolution we asked for
            return attrs.evolve(
                state,
                elapsed=state.elapsed + time.perf_counter() - t,
                finished=True,
                converged=True,
                message="predicted decrease of the objective below ftol",
            )
        budget = opts.max_evaluations - state.evaluations - total_evals
        if budget <= 0 or not d.any():
            break
        accepted, lam, ev, fl = _line_search(evaluate, state, d, b, opts, budget)
        total_evals += ev
        total_failed += fl
        if accepted is not None or not used_memory:
            break
        S, Yd = S[:0], Yd[:0]  # no decrease along the quasi-Newton direction: drop the memory once
    seconds = time.perf_counter() - t
    if accepted is None:
        msg = (
            "line search found no decrease" if total_evals else "no evaluations left"
        ) + f" ({total_failed} of {total_evals} evaluations failed)"
        return attrs.evolve(
            state,
            S=S,
            Yd=Yd,
            evaluations=state.evaluations + total_evals,
            failed=state.failed + total_failed,
            elapsed=state.elapsed + seconds,
            finished=True,
            converged=False,
            message=msg,
        )
    x_new = np.clip(x + lam * d, b[:, 0], b[:, 1])
    g_new = np.asarray(accepted.gradient, dtype=float)
    S, Yd = _updated_memory(S, Yd, x_new - x, g_new - g, opts.memory)
    new = _advanced_state(state, accepted, x_new, g_new, S, Yd, float(lam), (total_evals, total_failed), seconds, b)
    return _check_stop(new, b, opts, previous=state.value)


def _advanced_state(
    state: OuterState, accepted, x_new, g_new, S, Yd, lam: float, counts: tuple[int, int], seconds: float, b
) -> OuterState:
    """The state after an accepted step of length ``lam`` to ``x_new``: its record appended to the history,
    ``counts`` = (evaluations, failed evaluations) of this iteration added to the totals."""
    evals, failed = counts
    it = state.iteration + 1
    elapsed = state.elapsed + seconds
    pg_new = projected_gradient(x_new, g_new, b)
    rec = OuterRecord(
        it,
        float(accepted.value),
        float(np.abs(pg_new).max(initial=0.0)),
        tuple(float(v) for v in x_new),
        lam,
        evals,
        failed,
        seconds,
        elapsed,
        dict(accepted.info),
    )
    return OuterState(
        x=x_new,
        value=float(accepted.value),
        gradient=g_new,
        S=S,
        Yd=Yd,
        inner=accepted.inner,
        iteration=it,
        evaluations=state.evaluations + evals,
        failed=state.failed + failed,
        elapsed=elapsed,
        history=state.history + (rec,),
    )


def minimize_outer(
    evaluate: Callable,
    x0,
    bounds,
    options: OuterOptions | None = None,
    *,
    state: OuterState | None = None,
    on_iteration: Callable[[OuterState], None] | None = None,
    seed=None,
) -> OuterState:
    """Run from x0 (or continue from ``state``) until a stopping rule holds.

    ``on_iteration(state)`` is called after the start and after every successful iteration
    (checkpoints and progress reports hang here); it may raise to interrupt the run.
    """
    opts = options or OuterOptions()
    if state is None:
        state = outer_start(evaluate, x0, bounds, opts, seed=seed)
        if on_iteration is not None:
            on_iteration(state)
    while not state.finished:
        new = outer_iteration(evaluate, state, bounds, opts)
        progressed = new.iteration > state.iteration
        state = new
        if on_iteration is not None and (progressed or state.finished):
            on_iteration(state)
    return state
