"""Exact Newton for the flat softmax model: O(n^3 C) time, O(n^2 C) memory (Seeger 2008, App. C).

The Newton system (I + W K̃) α' = W u - g, with W = D - Π Π^T (Π stacks the D_c), is solved
exactly with one Cholesky factor per class and the Sherman–Morrison–Woodbury formula.  We use the
form of Rasmussen & Williams (2006), Alg. 3.3, which is the same identity written without D^{-1/2}
(so it stays finite when some π_ic underflow):

    A_c = I + D_c^{1/2} K̃_c D_c^{1/2} = L_c L_c^T,      E_c = D_c^{1/2} A_c^{-1} D_c^{1/2},
    M M^T = Σ_c E_c,    b = W u - g,    c = E K̃ b,
    α' = b - c + E R (M M^T)^{-1} R^T c,    R = stacked identities (R^T x = Σ_c x_c).

The step α' - α then goes through the same pair line search as Newton–CG.  This is the reference
that Newton–CG is tested against; it needs a class-diagonal operator (flat prior) and the softmax.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import scipy.linalg as sla

from gpmodels.errors import InputError
from gpmodels.inference.map.line_search import objective, pair_line_search
from gpmodels.inference.map.newton_cg import NewtonDiagnostics, NewtonOptions, NewtonResult, NewtonStep, gradient_rms
from gpmodels.likelihoods.base import Likelihood
from gpmodels.operators.base import Operator

__all__ = ["exact_newton", "exact_newton_solve"]


def exact_newton_solve(blocks: list[np.ndarray], pi: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """α' = (I + W K̃)^{-1} rhs for block-diagonal K̃ = diag(blocks), W = D - Π Π^T at π.

    E_c is applied as D_c^{1/2} L_c^{-T} L_c^{-1} D_c^{1/2} (two triangular solves), never through an
    explicit A_c^{-1}: c = E K̃ b must nearly cancel b when K̃ is large (variance 1e12), and the
    solves keep that cancellation backward stable, where an explicit inverse has an error of
    eps cond(A_c) ||A_c^{-1}|| that K̃ then multiplies (the step would be garbage).  The small
    system M M^T = Σ_c E_c (bounded entries) may use E_c formed by the same solves.
    """
    n, C = pi.shape
    factors, E_sum = [], np.zeros((n, n))
    for c in range(C):
        sd = np.sqrt(pi[:, c])
        A = sd[:, None] * blocks[c] * sd[None, :]
        A[np.diag_indices(n)] += 1.0
        L, info = sla.lapack.dpotrf(A, lower=1, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"Cholesky of I + D^1/2 K D^1/2 failed for class {c} (info {info})")
        factors.append((sd, (L, True)))
        V = sla.solve_triangular(L, np.diag(sd), lower=True)
        E_sum += V.T @ V  # E_c = D^{1/2} A^{-1} D^{1/2} = V^T V with V = L^{-1} D^{1/2}

    def apply_E(c, x):
        sd, F = factors[c]
        return sd * sla.cho_solve(F, sd * x)

    Mchol = sla.cho_factor(E_sum, lower=True)
    c_vec = np.column_stack([apply_E(c, blocks[c] @ rhs[:, c]) for c in range(C)])
    z = sla.cho_solve(Mchol, c_vec.sum(axis=1))
    return rhs - c_vec + np.column_stack([apply_E(c, z) for c in range(C)])


def exact_newton(op: Operator, likelihood: Likelihood, Y, options: NewtonOptions | None = None, *,
                 alpha0=None, on_iteration: Callable[[NewtonStep], None] | None = None) -> NewtonResult:
    """Fit α̂ by exact Newton steps with line search (App. C); same result type as ``newton_cg``.
    ``on_iteration`` gets a :class:`NewtonStep` at the start and after every iteration.

    The likelihood's exact Hessian must have the softmax form W_i = diag π_i - π_i π_i^T (its
    ``exact_hessian_factor`` gives ``multinomial_pi``); App. C's Woodbury identity rests on it."""
    if not op.is_class_diagonal:
        raise InputError(
            "exact Newton (App. C) needs a block-diagonal (flat) prior; use newton_cg for coupled or hierarchical "
            "priors"
        )
    opts = options or NewtonOptions()
    n, C = op.n_points, op.n_classes
    Y = likelihood.check_targets(Y, n, C)
    t0 = time.perf_counter()
    blocks = [op.class_block(c) for c in range(C)]

    def kmvm(V):
        return np.column_stack([blocks[c] @ V[:, c] for c in range(C)])

    alpha = np.zeros((n, C)) if alpha0 is None else likelihood.project_alpha(np.array(alpha0, dtype=float))
    u = kmvm(alpha)
    mvms = 1
    if likelihood.exact_hessian_factor(u, Y).multinomial_pi() is None:
        raise InputError(
            "exact Newton (App. C) needs a likelihood whose Hessian is W_i = diag π_i - π_i π_i^T "
            f"(the softmax); {type(likelihood).__name__}'s is not: use newton_cg"
        )
    phi = objective(likelihood, Y, alpha, u)
    phis, grads, steps, mvm_trace = [phi], [], [], [mvms]
    converged, message, it = False, "maximum number of Newton iterations reached", 0
    while True:
        g = likelihood.gradient(u, Y)
        grads.append(gradient_rms(alpha, g))
        if on_iteration is not None:
            on_iteration(NewtonStep(it, float(phi), grads[-1], mvms))
        if grads[-1] <= opts.grad_tol:
            converged, message = True, "gradient below grad_tol"
            break
        if it >= opts.max_iter:
            break
        it += 1
        hf = likelihood.exact_hessian_factor(u, Y)
        pi = hf.multinomial_pi()
        Wu = hf.W(u)
        new_alpha = exact_newton_solve(blocks, pi, Wu - g)
        s = new_alpha - alpha
        s_tilde = kmvm(s)
        mvms += 2
        ls = pair_line_search(likelihood, Y, alpha, u, s, s_tilde, phi, armijo=opts.armijo,
                              max_evals=opts.line_search_evals)
        steps.append(ls.step)
        if not ls.success:
            phis.append(phi)
            mvm_trace.append(mvms)
            converged = grads[-1] <= max(opts.grad_tol, 1e-9)
            message = (
                "no further decrease of Phi (round-off level)"
                if converged
                else f"not converged: the line search found no decrease of Phi along the Newton direction at "
                f"gradient RMS {grads[-1]:.3g} > grad_tol {opts.grad_tol:g}"
            )
            break
        alpha, u, phi = alpha + ls.step * s, u + ls.step * s_tilde, ls.phi
        phis.append(phi)
        mvm_trace.append(mvms)
    diag = NewtonDiagnostics(phi=tuple(phis), grad_norm=tuple(grads), mvm_trace=tuple(mvm_trace), cg_iterations=(),
                             step_sizes=tuple(steps), iterations=it, stalls=0, mvm_count=mvms,
                             seconds=time.perf_counter() - t0, converged=converged, message=message)
    return NewtonResult(alpha=alpha, u=u, phi=phi, beta=None, diagnostics=diag)
