"""The likelihood protocol: per point, over the C latent values of that point.

A likelihood gives ``value(U, Y)`` = Σ_i -log P(y_i | u_i) (the Φ_lh of Seeger 2008, eq. 1),
``gradient(U, Y)`` = ∇_u Φ_lh with shape (n, C), ``hessian_factor(U, Y)`` and ``predict(U)``.

The Hessian factor is what Newton–CG needs from W = ∇∇_u Φ_lh (Seeger 2008, Sec. 5.1.1): a V with
W = V V^T, its transpose, and g̃ with V g̃ = g, so that the Newton system becomes the symmetric
positive definite system (I + V^T K̃ V) β = V^T u - g̃, α' = V β  (eq. 5).

A factor may *fix* some components of γ = D^{1/2} β where the symmetric form is ill-conditioned
(Seeger 2008, App. B, the set I): then ``V``/``Vt`` act on the free components only (``free``
mask), and α' = V β + ``fixed_alpha``; the right-hand side gets -V^T K̃ ``fixed_alpha``.

Hooks that let every objective treat a new likelihood without editing inference (each has a
correct generic default, so a new likelihood works first and gets fast later):

* ``exact_hessian_factor(U, Y)``: V with V V^T = W = ∇∇_u Φ_lh *exactly* and nothing fixed (no
  App. B set, no majoriser).  The CV accumulation solve (Seeger 2008, Sec. 5.2) and the Laplace
  criterion (R&W Sec. 3.4-3.5, 5.5) need the true W, not the Newton safeguards.
* ``trace_hessian_derivative(U, Y, S)``: ∂/∂u_ic Σ_j tr(S_j W_j(u_j)) for fixed per-point C x C
  blocks S_j: the third-derivative term s2 = -½ ∂_f tr(Σ W) of the Laplace gradient (R&W Alg. 5.1
  line 9; softmax: Sec. 3.5).  Default: central differences of the exact W blocks.
* ``value_per_point(U, Y)``: the terms -log P(y_i | u_i) of Φ_lh, shape (n,).
* ``check_laplace()``: raise when the Laplace approximation is not defined for the likelihood.
* ``param_derivatives(U, Y)``: derivatives by the likelihood's own log-space hyperparameters ψ.

A factor may also expose structure that faster exact algorithms use: ``diagonal_W()`` (W diagonal:
R&W Alg. 3.1) and ``multinomial_pi()`` (W_i = diag π_i - π_i π_i^T: R&W Alg. 3.3, Seeger App. C);
both are None by default, which selects the generic dense / MVM paths.
"""

from __future__ import annotations

import abc

import numpy as np

from gpmodels.errors import InputError
from gpmodels.hyperparameters import ParameterFree, Parameterised
from gpmodels.linalg.point_blocks import point_blocks
from gpmodels.validation import check_targets

__all__ = ["Likelihood", "HessianFactor"]


class HessianFactor(abc.ABC):
    """W = V V^T at one point (U, Y); all arrays have shape (n, C)."""

    #: boolean mask of the free components of β (all True unless App. B fixes some).
    free: np.ndarray
    #: α-contribution of the fixed components (A γ_I), or None when nothing is fixed.
    fixed_alpha: np.ndarray | None = None
    #: True when V beta_init(α) = α for every α in ran W (the Newton iterates): then K̃ V β_init = K̃ α = u,
    #: and the Newton system's start residual needs no product (Newton–CG's ``start_residual``)
    beta_init_exact: bool = False
    #: True when ``W`` is the exact Hessian; False when it is the curvature of a quadratic majoriser
    #: of Φ_lh touching it at U (W >= the Hessian, W > 0): Newton then stays a descent (MM) method
    #: for likelihoods that are not log-concave or not twice differentiable.
    exact: bool = True

    @abc.abstractmethod
    def V(self, x: np.ndarray) -> np.ndarray:
        """V x (β-space to α-space), on the free components of x."""

    def V_into(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """V x written into ``out`` (n, C; None from a device's ``buffer``: a new array) and returned, for callers
        that reuse one buffer for a product they consume at once (the CG products): a fresh (n, C) array per
        product costs page faults at large n C.
        Default: V(x) copied in; a factor overrides it to write in place."""
        np.copyto(out, self.V(x))
        return out

    def on(self, ops):
        """This factor with ``V``, ``Vt`` and ``rows`` on the arrays of the primitives ``ops`` (a device backend,
        :mod:`gpmodels.linalg.arrays`), so that the Newton system's product runs there beside a device operator;
        None (the default): the factor multiplies host arrays only."""
        return None

    def swept(self) -> HessianFactor:
        """This factor with ``V`` and ``Vt`` as compiled sweeps over the rows of host arrays, where the execution
        plan runs a fit's host passes so (``sweeps``); the default: this factor (no such form)."""
        return self

    def rows(self, rows: slice) -> HessianFactor | None:
        """The factor of the points ``rows`` alone (the likelihood is per point, so V is block-diagonal over
        points), for a preconditioner built per block of points (a stacked operator's parts); None (the
        default): this factor does not give its rows."""
        return None

    @abc.abstractmethod
    def Vt(self, y: np.ndarray) -> np.ndarray:
        """V^T y, zero on the fixed components."""

    def Vt_plus(self, y: np.ndarray, x: np.ndarray) -> np.ndarray:
        """x + V^T y, a new array: the Newton system's product β + V^T (K̃ V β) (Seeger 2008, eq. 5).
        Default: ``x + Vt(y)``; a factor overrides it to do both in one pass."""
        return x + self.Vt(y)

    @abc.abstractmethod
    def W(self, x: np.ndarray) -> np.ndarray:
        """W x: the Hessian of Φ_lh in u applied to x (or the majoriser curvature, see ``exact``)."""

    @abc.abstractmethod
    def g_tilde(self, g: np.ndarray) -> np.ndarray:
        """g̃ with V g̃ = g for g in ran W (zero on fixed components)."""

    @abc.abstractmethod
    def beta_init(self, alpha: np.ndarray) -> np.ndarray:
        """A β with V β ≈ α: the warm start that makes β's CG start at the current α (Sec. 5.1.1)."""

    @abc.abstractmethod
    def precond_diag(self, diag_K: np.ndarray, point_block_mvm) -> np.ndarray:
        """diag(I + V^T K̃ V) (App. B), from diag K̃ (n, C) and P -> (K̃_i p_i)_i."""

    def diagonal_W(self) -> np.ndarray | None:
        """The diagonal of W (n, C) when W is diagonal (a factorised likelihood), else None.

        The values are W's own (not floored to keep V = W^{1/2} finite; negative where the
        likelihood is not log-concave), for exact algorithms that work with W itself (R&W Alg. 3.1).
        """
        return None

    def multinomial_pi(self) -> np.ndarray | None:
        """π (n, C) when W_i = diag π_i - π_i π_i^T at every point with π_i a distribution (the
        softmax Hessian), else None; enables R&W Alg. 3.3 / Seeger 2008 App. C."""
        return None

    def point_V(self) -> np.ndarray:
        """The per-point C x C factors V_i as (n, C, C) (column c = V applied to e_c at every point).

        The likelihood is per point, so V is block-diagonal over points; the generic default
        applies V to the C unit vectors (zero columns at fixed components).
        """
        n, C = self.free.shape
        return point_blocks(self.V, n, C)

    def precond_blocks(self, blocks_K: np.ndarray) -> np.ndarray:
        """Per-point blocks I + V_i^T K̃_i V_i of the system matrix of (5), shape (n, C, C).

        ``blocks_K`` (n, C, C) holds the per-point blocks K̃_i.  Their diagonals are
        :meth:`precond_diag`; the whole blocks give the block-Jacobi preconditioner of Newton–CG
        (``NewtonOptions.preconditioner = "block"``).  Fixed components (App. B) get identity
        rows and columns, as in the reduced system.
        """
        Vb = self.point_V()  # shape: (n, C, C)
        out = np.matmul(np.transpose(Vb, (0, 2, 1)), np.matmul(blocks_K, Vb))
        out += np.eye(out.shape[1])[None]
        return out


class Likelihood(ParameterFree, Parameterised):
    """Per-point likelihood P(y_i | u_i) over C latent values; see the module docstring."""

    #: whether -log P is convex in u (Newton with the true Hessian is then a descent method).
    log_concave: bool = True
    #: the structure of the exact W = ∇∇_u Φ_lh, which faster exact algorithms use: ``multinomial``
    #: (W_i = diag π_i - π_i π_i^T, the softmax: R&W Alg. 3.3, Seeger 2008 App. C; its factors give
    #: ``multinomial_pi()``), ``diagonal`` (a factorised likelihood: ``diagonal_W()``), or ``general``.
    hessian_form: str = "general"
    #: how the labels of a data set become targets Y: ``distribution`` (rows of (n, C) are distributions:
    #: one-hot labels or soft q), ``signed`` (binary y = ±1, (n, 1)) or ``real`` (values, (n, 1)).
    target_encoding: str = "distribution"
    #: whether the likelihood has a super-Gaussian (variational) lower bound (VB, Nickisch & Seeger
    #: 2011): the ``_sg_*`` hooks of a factorised likelihood (:mod:`gpmodels.likelihoods.diagonal`)
    has_super_gaussian: bool = False
    #: whether the likelihood is Gaussian in u (the posterior is Gaussian: the closed-form marginal likelihood)
    conjugate: bool = False
    #: the likelihood's name in the spec language (``model.likelihood``); None where a spec cannot name it
    spec_name: str | None = None

    @abc.abstractmethod
    def value(self, U: np.ndarray, Y: np.ndarray) -> float:
        """Σ_i -log P(y_i | u_i)."""

    @abc.abstractmethod
    def gradient(self, U: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """∇_u Σ_i -log P(y_i | u_i), shape (n, C)."""

    def pair_line_values(self, alpha, s, u, s_tilde, Y, lam: float) -> tuple[float, float]:
        """(Φ(λ), Φ'(λ)) along the pair (α + λ s, u + λ s̃) of the line search (Seeger 2008, Sec. 5.1.2):
        Φ(λ) = ½ α_λ^T u_λ + Φ_lh(u_λ), Φ'(λ) = s̃^T (α_λ + ∇_u Φ_lh(u_λ)), all arrays (n, C), from ``value``
        and ``gradient``."""
        a = alpha + lam * s
        uu = u + lam * s_tilde
        phi = 0.5 * float(np.vdot(a, uu)) + self.value(uu, Y)
        return phi, float(np.vdot(s_tilde, a + self.gradient(uu, Y)))

    def swept_pair_line_values(self, alpha, s, u, s_tilde, Y, lam: float) -> tuple[float, float]:
        """:meth:`pair_line_values` as one compiled sweep over the rows, where the execution plan runs a fit's host
        passes so (``sweeps``); default: :meth:`pair_line_values` (a likelihood with a sweep overrides it)."""
        return self.pair_line_values(alpha, s, u, s_tilde, Y, lam)

    @abc.abstractmethod
    def hessian_factor(self, U: np.ndarray, Y: np.ndarray) -> HessianFactor:
        """The factor V of W = ∇∇_u Φ_lh at (U, Y)."""

    @abc.abstractmethod
    def predict(self, U: np.ndarray) -> np.ndarray:
        """Predictive summary at latent values U (class probabilities for classification)."""

    # ------------------------------------------------------------------ hooks of the criteria (module docstring)
    def exact_hessian_factor(self, U: np.ndarray, Y: np.ndarray) -> HessianFactor:
        """V with V V^T = ∇∇_u Φ_lh exactly at (U, Y), all components free (no App. B fixing).

        Default: ``hessian_factor`` when that is already exact with nothing fixed; a likelihood whose
        Newton factor is a majoriser or fixes components overrides this.
        """
        hf = self.hessian_factor(U, Y)
        if hf.exact and hf.fixed_alpha is None and bool(np.all(hf.free)):
            return hf
        raise InputError(
            f"{type(self).__name__}.hessian_factor is not the exact Hessian with every component free "
            "(a majoriser or App. B fixing); define exact_hessian_factor for the CV gradient and the "
            "Laplace criterion"
        )

    def trace_hessian_derivative(self, U: np.ndarray, Y: np.ndarray, S: np.ndarray) -> np.ndarray:
        """∂/∂u_ic of Σ_j tr(S_j W_j(u_j)) with the per-point blocks S (n, C, C) held fixed, shape (n, C).

        W is per point, so u_ic moves only W_i: the result is tr(S_i ∂W_i/∂u_ic).  Default: central
        differences of the exact per-point blocks W_i = V_i V_i^T (diagonal W: ``diagonal_W``), all points
        at once per class.
        """
        U = np.asarray(U, dtype=np.float64)
        out = np.empty(U.shape)
        for c in range(U.shape[1]):
            h = 1e-5 * np.maximum(1.0, np.abs(U[:, c]))
            traces = []
            for sign in (1.0, -1.0):
                Uc = U.copy()
                Uc[:, c] += sign * h
                hf = self.exact_hessian_factor(Uc, Y)
                w = hf.diagonal_W()  # signed: V = W^{1/2} cannot carry negative curvature
                if w is not None:
                    traces.append(np.einsum("icc,ic->i", S, w))
                else:
                    Vb = hf.point_V()  # shape: (n, C, C)
                    traces.append(np.einsum("icd,ice,ide->i", S, Vb, Vb))  # tr(S_i V_i V_i^T)
            out[:, c] = (traces[0] - traces[1]) / (2.0 * h)
        return out

    def value_per_point(self, U: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """-log P(y_i | u_i) per point, shape (n,); the terms of ``value``.  Default: ``value`` row by row."""
        return np.array([self.value(U[i : i + 1], Y[i : i + 1]) for i in range(np.shape(U)[0])])

    def check_laplace(self) -> None:
        """Raise :class:`InputError` when the Laplace approximation is not defined for this likelihood
        (not twice differentiable, or not a normalised density).  Default: defined."""
        return None

    def param_derivatives(self, U: np.ndarray, Y: np.ndarray):
        """(∂_ψ Φ_lh (p,), ∂_ψ g (p, n, C), ∂_ψ W (p, n, C)) for the log-space hyperparameters ψ of the
        likelihood (Laplace MLM gradient).  Default: none (a likelihood with parameters defines it)."""
        if self.params.size:
            raise InputError(
                f"{type(self).__name__} has hyperparameters {self.param_names} but no "
                "param_derivatives; define it to learn them by the Laplace criterion"
            )
        z = np.zeros((0,) + np.shape(U))
        return np.zeros(0), z, z

    def check_targets(self, Y, n: int, n_classes: int) -> np.ndarray:
        """Validate targets for this likelihood; default: rows are distributions."""
        return check_targets(Y, n, n_classes)

    def project_alpha(self, alpha: np.ndarray) -> np.ndarray:
        """Project a starting α onto the set where the fit lives (identity by default)."""
        return alpha
