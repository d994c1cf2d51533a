"""The softmax (multiple logistic) likelihood, Seeger 2008 Sec. 2 and 5.1.1, App. B.

P(y_ic = 1 | u_i) = π_ic = exp(u_ic - l_i), l_i = log 1^T exp(u_i).  Targets are distributions
(rows of Y sum to 1, entries >= 0), so EM pseudo-targets q work unchanged (Sec. 7.4.2).

  Φ_lh = Σ_i (l_i - y_i^T u_i),   g = π - y,   W = D - D P_cls D,  D = diag π.
  W = V V^T with V = A D^{1/2}, A = I - D P_cls;  g̃ = D^{-1/2} g (then V g̃ = A g = g).

Per point: (V x)_i = s_i - π_i (1^T s_i) with s_i = π_i^{1/2} ∘ x_i, and
(V^T y)_i = π_i^{1/2} ∘ (y_i - (π_i^T y_i) 1).

App. B safeguards with a threshold κ < 0:
  I  = {(i,c) : log π_ic < κ, y_ic > 0}: g̃_ic ≈ y_ic / π_ic^{1/2} explodes.  From the system,
       γ = D^{1/2} β satisfies γ_I ≈ -g_I; we fix γ_I = -g_I = y_I - π_I and solve the reduced
       system on the free components; α' = V β_free + A γ_I.
  I0 = {(i,c) : log π_ic < κ, y_ic = 0}: the warm start D^{-1/2} α is set to 0 there (β ≈ 0).
The preconditioner is diag(I + V^T K̃ V)_ic = 1 + π_ic (K̃_i,cc - 2 w_ic + π_i^T w_i),
w_i = K̃_i π_i (App. B; for block-diagonal K̃, w = diag(K̃) ∘ π).
"""

from __future__ import annotations

import copy

import attrs
import numpy as np

from gpmodels.likelihoods.base import HessianFactor, Likelihood
from gpmodels.linalg import row_kernels
from gpmodels.linalg.arrays import HOST, Made
from gpmodels.validation import number, to_float

__all__ = ["Softmax", "SoftmaxFactor", "log_softmax"]

#: floor of log π when dividing by π^{1/2}: keeps D^{-1/2} finite (e^{300} < float max).
_LOG_PI_FLOOR = -600.0


def _logsumexp_rows(U: np.ndarray) -> np.ndarray:
    """log Σ_c exp(u_ic) per row, shape (n, 1), shifted by the row maximum.

    Plain numpy: scipy.special.logsumexp costs about 4x more on (n, C) arrays (array-API
    dispatch), and this runs in every line-search evaluation of Newton–CG and CV learning.
    """
    m = U.max(axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return m + np.log(np.exp(U - m).sum(axis=1, keepdims=True))


def log_softmax(U: np.ndarray) -> np.ndarray:
    """log π = u - logsumexp(u) per row, shape (n, C)."""
    return U - _logsumexp_rows(U)


@attrs.frozen
class Softmax(Likelihood):
    """Multiple logistic likelihood over C classes with App. B threshold ``kappa`` on log π."""

    kappa: float = attrs.field(default=-20.0, converter=to_float, validator=number(high=0, open_high=True))  # App. B
    log_concave = True
    hessian_form = "multinomial"
    target_encoding = "distribution"
    spec_name = "softmax"

    def value(self, U, Y) -> float:
        lse = _logsumexp_rows(U)[:, 0]
        return float(np.sum(lse) - np.sum(Y * U))

    def gradient(self, U, Y) -> np.ndarray:
        return np.exp(log_softmax(U)) - Y

    def swept_pair_line_values(self, alpha, s, u, s_tilde, Y, lam: float) -> tuple[float, float]:
        """(Φ(λ), Φ'(λ)) of the pair line search in one compiled sweep over the rows
        (:func:`~gpmodels.linalg.row_kernels.softmax_line`)."""
        return row_kernels.softmax_line(alpha, s, u, s_tilde, Y, lam)

    def hessian_factor(self, U, Y) -> SoftmaxFactor:
        return SoftmaxFactor(log_softmax(U), np.asarray(Y), self.kappa)

    def predict(self, U) -> np.ndarray:
        return np.exp(log_softmax(np.asarray(U, dtype=np.float64)))

    def project_alpha(self, alpha):
        """Project onto ran W = {α : Σ_c α_ic = 0 for every i} (Alg. 1, first line)."""
        return alpha - alpha.mean(axis=1, keepdims=True)

    def value_per_point(self, U, Y) -> np.ndarray:
        """l_i - y_i^T u_i per point."""
        return _logsumexp_rows(U)[:, 0] - np.sum(Y * U, axis=1)

    def exact_hessian_factor(self, U, Y) -> SoftmaxFactor:
        """The factor with κ = -∞: nothing fixed, so V V^T = W exactly.  V = A D^{1/2} is bounded for any
        π; only g̃ = D^{-1/2} g needs the App. B safeguard, and the callers of this factor do not use g̃."""
        return SoftmaxFactor(log_softmax(U), np.asarray(Y), -np.inf)

    def trace_hessian_derivative(self, U, Y, S) -> np.ndarray:
        """tr(S_i ∂W_i/∂u_ic) for W_i = diag π_i - π_i π_i^T (R&W Sec. 3.5): with
        q_i = diag S_i - 2 S_i π_i this is (W_i q_i)_c = π_ic q_ic - π_ic π_i^T q_i."""
        pi = np.exp(log_softmax(U))
        q = np.einsum("icc->ic", S) - 2.0 * np.einsum("icd,id->ic", S, pi)
        return pi * q - pi * np.sum(pi * q, axis=1, keepdims=True)


@attrs.frozen(eq=False)
class _FactorArrays:
    """V and V^T on the arrays of the primitives ``ops``, from π, π^{1/2}, the App. B fixed mask (None where
    nothing is fixed), a ones vector (row sums as products with it: numpy's reduction along a short axis 1 costs
    about 7x more) and a scratch array for temporaries (``ops.buffer``: the host's; a device allocates)."""

    ops: object
    pi: object
    sqrt_pi: object
    fixed: object
    ones: object
    scratch: object

    @classmethod
    def of(cls, ops, hf: SoftmaxFactor) -> _FactorArrays:
        fixed = None if hf.all_free else ops.from_host(hf.fixed, dtype="bool")
        ones, scratch = ops.from_host(np.ones(hf.pi.shape[1])), ops.buffer(hf.pi.shape)
        return cls(ops, ops.from_host(hf.pi), ops.from_host(hf.sqrt_pi), fixed, ones, scratch)

    def row_sums(self, x):
        """Σ_c x_ic per point as (n, 1)."""
        return (x @ self.ones)[:, None]

    def sub_pi_times(self, out, col):
        """out -= π ∘ col (col: (n, 1)) in place, through the scratch array."""
        out -= self.ops.multiply(self.pi, col, self.scratch)
        return out

    def zero_fixed(self, out, value=0.0):
        """out with the App. B fixed components set to ``value`` (in place on the host)."""
        return out if self.fixed is None else self.ops.fill_where(out, self.fixed, value)

    def V_into(self, x, out):
        s = self.zero_fixed(self.ops.multiply(self.sqrt_pi, x, out))  # D^{1/2} x on the free components
        return self.sub_pi_times(s, self.row_sums(s))  # A s

    def Vt(self, y):
        pi_y = self.row_sums(self.ops.multiply(self.pi, y, self.scratch))  # π_i^T y_i
        t = y - pi_y
        t *= self.sqrt_pi
        return self.zero_fixed(t)

    def Vt_plus(self, y, x):
        return x + self.Vt(y)


class _SweptFactorArrays(_FactorArrays):
    """The same on host arrays with nothing fixed by App. B, V and V^T each one compiled sweep over the rows
    (:mod:`gpmodels.linalg.row_kernels`)."""

    def V_into(self, x, out):
        return row_kernels.softmax_v(x, self.pi, self.sqrt_pi, out)

    def Vt(self, y):
        return row_kernels.softmax_vt(y, self.pi, self.sqrt_pi)

    def Vt_plus(self, y, x):
        return row_kernels.softmax_vt(y, self.pi, self.sqrt_pi, plus=x)


class SoftmaxFactor(HessianFactor):
    """V = A D^{1/2} at one point, with the App. B sets I (fixed) and I0 (zero warm start).

    V, V^T and ``rows`` take the arrays of the primitives of ``on(ops)`` (:mod:`gpmodels.linalg.arrays`; as made,
    the host's), written once: π, π^{1/2} and the App. B mask go there once per factor, so that the Newton
    system's product β + V^T K̃ V β runs beside a device operator with one transfer each way
    (:func:`gpmodels.inference.map.newton_cg.newton_system`); the other methods take host arrays.  These
    products run once or twice per CG step of every Newton–CG and CV solve, so on the host each allocates only
    the array it returns, its temporaries going to a scratch array of the factor (``ops.multiply`` into it),
    the fixed mask is applied only where App. B fixed a component (``all_free``), and without one they run as
    compiled row sweeps in the factor's ``swept`` form.  The factor is therefore not for use from several threads
    at once (each fit builds its own).
    """

    def __init__(self, log_pi: np.ndarray, Y: np.ndarray, kappa: float):
        self.log_pi, self._Y, self._kappa = log_pi, Y, kappa
        self.pi = np.exp(log_pi)
        self.sqrt_pi = np.exp(0.5 * log_pi)
        small = log_pi < kappa
        self.fixed = small & (Y > 0)  # App. B set I
        self.zero_start = small & (Y <= 0)  # App. B set I0
        self.free = ~self.fixed
        #: True when App. B fixed no component (the usual case): the products then skip the free mask
        self.all_free = not self.fixed.any()
        self._unstarted = self.fixed | self.zero_start  # β_init = 0 there (App. B sets I and I0)
        self._all_started = not self._unstarted.any()
        self._inv_sqrt_pi = np.exp(-0.5 * np.maximum(log_pi, _LOG_PI_FLOOR))
        # V D^{-1/2} α = A α = α for α in ran W (rows summing to 0) when nothing is fixed, zeroed or floored
        self.beta_init_exact = self.all_free and self._all_started and bool(np.all(log_pi >= _LOG_PI_FLOOR))
        self._host = self._held = _FactorArrays.of(HOST, self)  # the host's arrays; V and V^T take those of _held
        self._row_factors = Made()  # per (ops, rows): asked for by a row-blocks preconditioner's set-up and apply
        self.fixed_alpha = None
        if not self.all_free:
            gamma = np.where(self.fixed, Y - self.pi, 0.0)  # γ_I = -g_I
            self.fixed_alpha = self._A(gamma)

    def on(self, ops) -> SoftmaxFactor:
        """This factor with V, V^T and ``rows`` on the arrays of ``ops`` (the arrays they take uploaded once)."""
        return self._with(_FactorArrays.of(ops, self))

    def swept(self) -> SoftmaxFactor:
        """This factor with V and V^T as compiled row sweeps on host arrays (its ``rows`` too), where App. B fixed
        nothing (the sweeps apply no mask); else this factor."""
        return self._with(_SweptFactorArrays.of(HOST, self)) if self.all_free else self

    def _with(self, held: _FactorArrays) -> SoftmaxFactor:
        out = copy.copy(self)
        out._held = held
        return out

    def _A(self, x):
        """A x = x - D P_cls x, per point x_i - π_i (1^T x_i)."""
        out = np.multiply(self.pi, self._host.row_sums(x))
        return np.subtract(x, out, out=out)

    def V(self, x):
        return self.V_into(x, self._held.ops.buffer(np.shape(x)))

    def V_into(self, x, out):
        return self._held.V_into(x, out)

    def Vt(self, y):
        return self._held.Vt(y)

    def Vt_plus(self, y, x):
        return self._held.Vt_plus(y, x)

    def W(self, x):
        out = np.multiply(self.pi, x)
        return self._host.sub_pi_times(out, self._host.row_sums(out))  # π x - π (π^T x)

    def g_tilde(self, g):
        return self._host.zero_fixed(np.multiply(g, self._inv_sqrt_pi))

    def beta_init(self, alpha):
        out = np.multiply(alpha, self._inv_sqrt_pi)
        if not self._all_started:
            np.copyto(out, 0.0, where=self._unstarted)
        return out

    def multinomial_pi(self) -> np.ndarray:
        return self.pi

    def rows(self, rows: slice) -> SoftmaxFactor:
        held = self._held
        return self._row_factors.get(
            (held.ops, type(held), rows.start, rows.stop, rows.step), lambda: self._sub(rows, type(held), held.ops)
        )

    def _sub(self, rows: slice, kind, ops) -> SoftmaxFactor:
        """The factor of the points ``rows``, its arrays of ``kind`` on ``ops`` (as this factor's)."""
        sub = SoftmaxFactor(self.log_pi[rows], self._Y[rows], self._kappa)
        return sub._with(kind.of(ops, sub))

    def point_V(self) -> np.ndarray:
        """V_i = (I - π_i 1^T) diag(π_i^{1/2}) per point, (n, C, C): entry (c, d) = (δ_cd - π_ic) π_id^{1/2},
        column d zero where d is fixed (App. B)."""
        n, C = self.pi.shape
        sqrt_pi = self.sqrt_pi if self.all_free else np.where(self.free, self.sqrt_pi, 0.0)
        out = np.multiply(self.pi[:, :, None], sqrt_pi[:, None, :])
        np.negative(out, out=out)
        diag = out.reshape(n, C * C)[:, :: C + 1]  # view of the diagonals
        diag += sqrt_pi
        return out

    def precond_diag(self, diag_K, point_block_mvm):
        w = point_block_mvm(self.pi)
        d = np.multiply(w, -2.0)
        d += diag_K
        d += self._host.row_sums(np.multiply(self.pi, w, out=self._host.scratch))  # π_i^T w_i
        d *= self.pi
        d += 1.0
        return self._host.zero_fixed(d, 1.0)
