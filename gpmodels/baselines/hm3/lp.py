"""The marginal polytope of one example as explicit linear constraints, solved by cvxpy.

Two uses (Rousu et al. 2006):
- :class:`DirectionLP` — the update direction argmax_{v ∈ F_i} g·v (eq. 11) as a linear programme,
  the paper's LIPSOL alternative to the dynamic programme (Sec. 3.3, Fig. 3); one parametrised
  cvxpy problem re-solved per call.
- :func:`solve_marginal_qp` — the whole marginal dual (8) as a QP, the reference for small problems.

Constraints per example (edge arrays (P, 4), labeling index u = 2a + b, see :mod:`.inference`):
v ≥ 0; Σ_u v_e(u) ≤ C (box, eq. 6); for node j and each child c, the node marginal of j from its
parent edge equals that from the child edge: Σ_a v_j(a, y) = Σ_b v_c(y, b), y ∈ {0, 1} (eq. 7 on
the edge pairs E2 of (8)); the root is positive: v_j(0, ·) = 0 on top-level edges, whose root
marginals Σ_b v_j(1, b) all agree.
"""

from __future__ import annotations

import numpy as np

from gpmodels.hierarchy import ClassTree

__all__ = ["DirectionLP", "solve_marginal_qp", "polytope_constraints"]


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
        neg_j = v[j, 0] + v[j, 2]      # y_j = 0 seen from the parent edge
        pos_j = v[j, 1] + v[j, 3]
        cons += [v[ch, 0] + v[ch, 1] == neg_j, v[ch, 2] + v[ch, 3] == pos_j]
    return cons


class DirectionLP:
    """argmax_{v ∈ F_i} g·v as a parametrised cvxpy LP (HiGHS when installed)."""

    def __init__(self, tree: ClassTree, C: float):
        import cvxpy as cp

        self._cp = cp
        P = tree.n_nodes
        self.v = cp.Variable((P, 4))
        self.g = cp.Parameter((P, 4))
        self.problem = cp.Problem(cp.Maximize(cp.sum(cp.multiply(self.g, self.v))),
                                  polytope_constraints(self.v, tree, C))
        self.solver = "HIGHS" if "HIGHS" in cp.installed_solvers() else None

    def solve(self, g: np.ndarray) -> np.ndarray:
        """The maximising point v* (P, 4) for the gradient g (P, 4)."""
        self.g.value = np.asarray(g, dtype=np.float64)
        self.problem.solve(solver=self.solver)
        v = np.asarray(self.v.value, dtype=np.float64)
        return np.maximum(v, 0.0)


def solve_marginal_qp(
    K: np.ndarray, L: np.ndarray, Yoh: np.ndarray, tree: ClassTree, C: float
) -> tuple[np.ndarray, float]:
    """Solve (8) with cvxpy: max μ·ℓ − ½ Σ_{e,u} ν_{:,e,u}ᵀ K ν_{:,e,u}, ν = m Y − μ; returns (μ, value).

    K: x-kernel (m, m); L, Yoh: losses and one-hot true labelings (m, P, 4).  Small problems only.
    """
    import cvxpy as cp

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
