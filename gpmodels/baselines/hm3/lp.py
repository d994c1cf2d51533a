"""The marginal polytope of one example as explicit linear constraints.

Two uses (Rousu et al. 2006):
- :class:`DirectionLP` — the update direction argmax_{v ∈ F_i} g·v (eq. 11) as a linear programme,
  the paper's LIPSOL alternative to the dynamic programme (Sec. 3.3, Fig. 3), solved by HiGHS
  through :func:`scipy.optimize.linprog` (the constraint matrices of :func:`polytope_matrices` are
  built once per tree, each call changes only the objective).
- :func:`solve_marginal_qp` — the whole marginal dual (8) as a QP, the reference for small problems;
  it needs cvxpy (``pip install 'gpmodels[reference]'``), imported only when it is called.

Constraints per example (edge arrays (P, 4), labeling index u = 2a + b, see :mod:`.inference`):
v ≥ 0; Σ_u v_e(u) ≤ C (box, eq. 6); for node j and each child c, the node marginal of j from its
parent edge equals that from the child edge: Σ_a v_j(a, y) = Σ_b v_c(y, b), y ∈ {0, 1} (eq. 7 on
the edge pairs E2 of (8)); the root is positive: v_j(0, ·) = 0 on top-level edges, whose root
marginals Σ_b v_j(1, b) all agree.
"""

from __future__ import annotations

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.errors import ConvergenceError
from gpmodels.hierarchy import ClassTree

__all__ = ["DirectionLP", "PolytopeMatrices", "polytope_matrices", "solve_marginal_qp", "polytope_constraints"]


@attrs.frozen
class PolytopeMatrices:
    """The marginal polytope of one example over the flattened v (index 4 j + u) in linprog's form:
    A_ub v ≤ b_ub, A_eq v = b_eq, lower ≤ v ≤ upper (module docstring)."""

    A_ub: sp.csr_matrix  # shape: (P, 4P)
    b_ub: np.ndarray  # shape: (P,)
    A_eq: sp.csr_matrix  # shape: (n_eq, 4P)
    b_eq: np.ndarray  # shape: (n_eq,)
    bounds: np.ndarray  # shape: (4P, 2)


def polytope_matrices(tree: ClassTree, C: float) -> PolytopeMatrices:
    """The constraints of :func:`polytope_constraints` as sparse matrices (module docstring)."""
    P = tree.n_nodes
    A_ub = sp.kron(sp.eye(P), np.ones((1, 4)), format="csr")  # Σ_u v_j(u) ≤ C
    b_ub = np.full(P, float(C))
    rows: list[dict[int, float]] = []
    top = list(tree.root_children)
    for t in top[1:]:  # equal root marginals: v_t(1, ·) sums agree with the first top edge's
        rows.append({4 * t + 2: 1.0, 4 * t + 3: 1.0, 4 * top[0] + 2: -1.0, 4 * top[0] + 3: -1.0})
    for j in range(P):
        for c in tree.children[j]:
            # y_j = 0: v_c(0, 0) + v_c(0, 1) = v_j(0, 0) + v_j(1, 0); y_j = 1: v_c(1, ·) = v_j(0, 1) + v_j(1, 1)
            rows.append({4 * c + 0: 1.0, 4 * c + 1: 1.0, 4 * j + 0: -1.0, 4 * j + 2: -1.0})
            rows.append({4 * c + 2: 1.0, 4 * c + 3: 1.0, 4 * j + 1: -1.0, 4 * j + 3: -1.0})
    A_eq = sp.lil_matrix((len(rows), 4 * P))
    for r, row in enumerate(rows):
        for col, val in row.items():
            A_eq[r, col] += val
    bounds = np.tile([0.0, np.inf], (4 * P, 1))
    for t in top:  # the root is positive: v_t(0, ·) = 0
        bounds[4 * t + 0] = bounds[4 * t + 1] = 0.0
    return PolytopeMatrices(A_ub, b_ub, A_eq.tocsr(), np.zeros(len(rows)), bounds)


def _cvxpy():
    """cvxpy, imported on use: it is an optional dependency (the ``reference`` and ``test`` extras)."""
    try:
        import cvxpy
    except ImportError as e:
        raise ImportError(
            "gpmodels.baselines.hm3.lp.solve_marginal_qp needs cvxpy: pip install 'gpmodels[reference]'"
        ) from e
    return cvxpy


def polytope_constraints(v, tree: ClassTree, C: float) -> list:
    """cvxpy constraints of the marginal polytope for a (P, 4) expression v (module docstring)."""
    cons = [v >= 0, v[:, 0] + v[:, 1] + v[:, 2] + v[:, 3] <= C]
    top = list(tree.root_children)
    cons += [v[top, 0] == 0, v[top, 1] == 0]
    if len(top) > 1:
        root_marg = v[top, 2] + v[top, 3]
        cons.append(root_marg[1:] == root_marg[0])
    for j in range(tree.n_nodes):
        ch = list(tree.children[j])
        if not ch:
            continue
        neg_j = v[j, 0] + v[j, 2]  # y_j = 0 seen from the parent edge
        pos_j = v[j, 1] + v[j, 3]
        cons += [v[ch, 0] + v[ch, 1] == neg_j, v[ch, 2] + v[ch, 3] == pos_j]
    return cons


class DirectionLP:
    """argmax_{v ∈ F_i} g·v (Rousu et al. 2006, eq. 11) by HiGHS (:func:`scipy.optimize.linprog`).

    HiGHS writes nothing to stdout through linprog (its log is off there).
    """

    def __init__(self, tree: ClassTree, C: float):
        self.tree, self.C = tree, float(C)
        self.matrices = polytope_matrices(tree, C)

    def solve(self, g: np.ndarray) -> np.ndarray:
        """The maximising point v* (P, 4) for the gradient g (P, 4)."""
        from scipy.optimize import linprog

        g = np.asarray(g, dtype=np.float64)
        m = self.matrices
        res = linprog(-g.ravel(), A_ub=m.A_ub, b_ub=m.b_ub, A_eq=m.A_eq, b_eq=m.b_eq, bounds=m.bounds, method="highs")
        if res.status != 0:
            raise ConvergenceError(f"H-M^3 LP direction: HiGHS stopped with status {res.status} ({res.message})")
        return np.maximum(res.x.reshape(g.shape), 0.0)


def solve_marginal_qp(
    K: np.ndarray, L: np.ndarray, Yoh: np.ndarray, tree: ClassTree, C: float
) -> tuple[np.ndarray, float]:
    """Solve (8) with cvxpy: max μ·ℓ − ½ Σ_{e,u} ν_{:,e,u}ᵀ K ν_{:,e,u}, ν = m Y − μ; returns (μ, value).

    K: x-kernel (m, m); L, Yoh: losses and one-hot true labelings (m, P, 4).  Small problems only; needs
    cvxpy (the ``reference`` extra).
    """
    cp = _cvxpy()

    m, P, _ = L.shape
    w, V = np.linalg.eigh(0.5 * (K + K.T))
    R = V * np.sqrt(np.clip(w, 0.0, None))  # K = R Rᵀ
    mu = cp.Variable((m, 4 * P))
    ones4 = np.kron(np.eye(P), np.ones((4, 1)))  # (4P, P): per-edge sums
    expand = np.kron(np.eye(P), np.ones((1, 4)))  # (P, 4P)
    mass = mu @ ones4  # (m, P)
    nu = cp.multiply(mass @ expand, Yoh.reshape(m, -1)) - mu
    obj = cp.sum(cp.multiply(L.reshape(m, -1), mu)) - 0.5 * cp.sum_squares(R.T @ nu)
    cons = []
    for i in range(m):
        cons += polytope_constraints(cp.reshape(mu[i], (P, 4), order="C"), tree, C)
    prob = cp.Problem(cp.Maximize(obj), cons)
    prob.solve(solver="CLARABEL" if "CLARABEL" in cp.installed_solvers() else None)
    return np.asarray(mu.value).reshape(m, P, 4), float(prob.value)
