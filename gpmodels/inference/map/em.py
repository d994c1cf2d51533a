"""MAP fitting with uncertain (pseudo-)targets by expectation maximisation (Seeger 2008, Sec. 7.4.2).

The criterion is the penalised pseudo-target log-likelihood (the log posterior up to a constant)

    L(α) = -(1/2) α^T K̃ α + Σ_i log Σ_{c ∈ L_ỹi} π_ic(u_i),    u = K̃ α,

which is not concave when some pseudo-target is an inner node.  EM alternates

    E-step:  q_ic ∝ 1{c ∈ L_ỹi} π_ic(u_i)                              (rows are distributions)
    M-step:  Newton–CG (Alg. 1) on the softmax criterion with Y := q, warm-started at the last α,
             i.e. maximise -(1/2) α^T K̃ α + Σ_ic q_ic log π_ic.

Since log Σ_{c ∈ L} π_c >= Σ_c q_c log π_c + H(q) with equality at the E-step's q, any decrease of
the M-step criterion from its warm start increases L: L never decreases (up to round-off), also
when the M-step is truncated.  The loop stops when the relative change of L falls below ``rtol``
(or after ``max_iter`` EM iterations).  With every pseudo-target a leaf, q = Y does not depend on
u and one M-step is the plain fit.  Works with any prior (flat, ANOVA, coupled): the M-step only
sees the operator.
"""

from __future__ import annotations

import time
from operator import attrgetter

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.inference.map.model import MAPModel
from gpmodels.inference.map.newton import NewtonOptions, NewtonResult
from gpmodels.inference.map.newton_cg import NewtonCG
from gpmodels.likelihoods.base import Likelihood
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.likelihoods.uncertain import PseudoTargets
from gpmodels.operators.base import Operator
from gpmodels.validation import instance_of, nonnegative_number, positive_int

__all__ = ["EMOptions", "EMResult", "fit_em", "penalised_log_likelihood"]


@attrs.frozen
class EMOptions:
    """EM settings: iterations, the relative-change tolerance on L and the M-step's Newton options."""

    max_iter: int = attrs.field(default=50, validator=positive_int())
    rtol: float = attrs.field(default=1e-5, validator=nonnegative_number())
    newton: NewtonOptions = attrs.field(factory=NewtonOptions, validator=instance_of(NewtonOptions))


@attrs.frozen
class EMResult:
    """The fitted model (the last M-step), the final q and the traces of L (index 0 = start)."""

    model: MAPModel
    q: np.ndarray  # shape: (n, C)
    trace: tuple[float, ...]  # penalised pseudo-target log-likelihood L after each EM iteration
    loglik_trace: tuple[float, ...]  # its data part Σ_i log Σ_{c ∈ L_ỹi} π_ic (may decrease)
    m_steps: tuple  # NewtonDiagnostics of every M-step
    iterations: int
    converged: bool
    message: str
    seconds: float

    alpha = property(attrgetter("model.alpha"))

    def as_dict(self) -> dict:
        return {
            "trace": list(self.trace),
            "loglik_trace": list(self.loglik_trace),
            "iterations": self.iterations,
            "converged": self.converged,
            "message": self.message,
            "seconds": self.seconds,
            "m_steps": [d.as_dict() for d in self.m_steps],
        }


def penalised_log_likelihood(pseudo: PseudoTargets, alpha, u) -> tuple[float, float]:
    """(L, data part) at (α, u = K̃ α): L = -(1/2) α^T u + Σ_i log Σ_{c ∈ L_ỹi} π_ic."""
    ll = pseudo.log_likelihood(u)
    return -0.5 * float(np.vdot(alpha, u)) + ll, ll


def _check_em_inputs(op: Operator, pseudo: PseudoTargets, lik: Likelihood) -> None:
    """EM needs a multinomial-Hessian likelihood and pseudo-targets over the operator's points and classes."""
    if lik.hessian_form != "multinomial":
        raise InputError(
            f"EM with pseudo-targets is defined for the softmax likelihood (a multinomial Hessian); got "
            f"{type(lik).__name__}"
        )
    if not isinstance(pseudo, PseudoTargets):
        raise InputError(f"pseudo must be PseudoTargets; got {type(pseudo).__name__}")
    pseudo.check_points(op.n_points)
    if pseudo.n_classes != op.n_classes:
        raise InputError(
            f"the pseudo-targets' tree has {pseudo.n_classes} leaves but the operator {op.n_classes} classes"
        )


def _em_start(op: Operator, lik: Likelihood, alpha0) -> tuple[np.ndarray, np.ndarray]:
    """The first M-step's start (α, u = K̃ α): zero, or ``alpha0`` projected onto ran W.  # shape: (n, C) each"""
    n, C = op.n_points, op.n_classes
    if alpha0 is None:
        return np.zeros((n, C)), np.zeros((n, C))
    alpha = lik.project_alpha(np.array(alpha0, dtype=np.float64))
    if alpha.shape != (n, C):
        raise InputError(f"Dimension mismatch: alpha0 must have shape ({n}, {C}); got {alpha.shape}")
    return alpha, op.mvm(alpha)


def fit_em(
    op: Operator,
    pseudo: PseudoTargets,
    options: EMOptions | None = None,
    *,
    likelihood: Likelihood | None = None,
    alpha0=None,
    on_iteration=None,
) -> EMResult:
    """Fit α by EM over pseudo-targets (see the module docstring).  ``on_iteration(iteration, L)`` is
    called after each E- and M-step with the penalised pseudo-target log-likelihood L (progress)."""
    opts = options or EMOptions()
    lik = likelihood or Softmax()
    _check_em_inputs(op, pseudo, lik)
    t0 = time.perf_counter()
    alpha, u = _em_start(op, lik, alpha0)
    L, ll = penalised_log_likelihood(pseudo, alpha, u)
    trace, lls, steps = [L], [ll], []
    res, m_step = None, NewtonCG(opts.newton)
    plan = m_step.plan(op)
    converged, message, it = False, "maximum number of EM iterations reached", 0
    all_certain = bool(np.all(pseudo.certain))
    while it < opts.max_iter:
        it += 1
        q = pseudo.e_step(u)  # E-step
        res: NewtonResult = m_step.fit(op, lik, q, alpha0=alpha, plan=plan)  # M-step, Y := q
        steps.append(res.diagnostics)
        alpha, u = res.alpha, res.u
        L, ll = penalised_log_likelihood(pseudo, alpha, u)
        trace.append(L)
        lls.append(ll)
        if on_iteration is not None:
            on_iteration(it, L)
        if all_certain:
            converged, message = res.converged, "every pseudo-target is a leaf: one M-step is the plain fit"
            break
        if abs(trace[-1] - trace[-2]) <= opts.rtol * max(1.0, abs(trace[-1])):
            converged, message = True, "relative change of the pseudo-target log-likelihood below rtol"
            break
    q = pseudo.e_step(u)
    return EMResult(
        model=MAPModel(op, lik, res, plan),
        q=q,
        trace=tuple(trace),
        loglik_trace=tuple(lls),
        m_steps=tuple(steps),
        iterations=it,
        converged=converged,
        message=message,
        seconds=time.perf_counter() - t0,
    )
