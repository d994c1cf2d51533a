"""Registry of hypothesis strategies producing operator cases with independent dense oracles.

Every concrete Operator class of the package must have an entry (see test_completeness).  A case
is (operator, dense oracle, X_new, cross oracle).
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from hypothesis import assume
from hypothesis import strategies as st
from oracles import block_diagonal_cross, block_diagonal_dense, naive_gram, nystrom_gram

from gpmodels.kernels.composite import KernelProduct, KernelSum
from gpmodels.kernels.constant import Constant
from gpmodels.kernels.linear import Linear, Polynomial
from gpmodels.kernels.lowrank_gram import LowRankGram
from gpmodels.kernels.matern import Matern, MaternARD
from gpmodels.kernels.precomputed import Precomputed, index_inputs
from gpmodels.kernels.rational_quadratic import RationalQuadratic
from gpmodels.kernels.rbf import ARD, RBF
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.intercept import Intercept
from gpmodels.operators.sum import Sum
from gpmodels.testing import check_operator

CASES = {}


def register(cls):
    def deco(fn):
        CASES.setdefault(cls, []).append(fn)
        return fn

    return deco


@dataclass
class Case:
    op: object
    dense: np.ndarray
    X_new: object
    cross_dense: np.ndarray

    def check(self, seed: int, rtol: float = 1e-7) -> None:
        """The operator conformance check of ``op`` against this case's dense oracles."""
        check_operator(
            self.op,
            np.random.default_rng(seed),
            dense=self.dense,
            X_new=self.X_new,
            cross_dense=self.cross_dense,
            rtol=rtol,
        )


log_uniform = st.floats(min_value=-2.0, max_value=2.0).map(lambda t: float(np.exp(t)))


#: kernels of the shapes' own parameters (w, nu, alpha) and their sums and products (Matérn + RBF,
#: scaled RQ): every representation and grad_trace runs over them
STATIONARY_KINDS = ("matern", "matern_ard", "rq", "sum", "product")


@st.composite
def kernels(draw, d, kinds=("rbf", "ard", "linear", "poly") + STATIONARY_KINDS):
    kind = draw(st.sampled_from(kinds))
    if kind in ("matern", "matern_ard"):
        w = draw(log_uniform) if kind == "matern" else [draw(log_uniform) for _ in range(d)]
        return (Matern if kind == "matern" else MaternARD)(w=w, nu=draw(st.sampled_from([0.5, 1.5, 2.5])))
    if kind == "rq":
        return RationalQuadratic(w=draw(log_uniform), alpha=draw(log_uniform))
    if kind == "sum":
        return KernelSum((draw(kernels(d, ("matern", "rbf"))), draw(kernels(d, ("rbf", "rq", "poly")))))
    if kind == "product":
        return KernelProduct((Constant(draw(log_uniform)), draw(kernels(d, ("matern", "rq", "rbf")))))
    if kind == "rbf":
        return RBF(w=draw(log_uniform))
    if kind == "ard":
        return ARD(w=[draw(log_uniform) for _ in range(d)])
    if kind == "linear":
        return Linear()
    return Polynomial(
        degree=draw(st.integers(1, 3)), scale=draw(log_uniform), offset=draw(st.sampled_from([0.0, draw(log_uniform)]))
    )


@st.composite
def partitions(draw, C):
    """A random partition of range(C) into groups (list of lists)."""
    labels = draw(st.lists(st.integers(0, C - 1), min_size=C, max_size=C))
    _, inv = np.unique(labels, return_inverse=True)
    return [list(np.flatnonzero(inv == g)) for g in range(inv.max() + 1)]


@st.composite
def block_diagonal_case(draw, with_intercept=False):
    n = draw(st.integers(2, 7))
    C = draw(st.integers(1, 4))
    d = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**31 - 1))
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, d))
    X_new = r.normal(size=(draw(st.integers(1, 4)), d))
    rep_kind = draw(st.sampled_from(["stored", "blocked", "features", "lowrank", "auto"]))
    if rep_kind == "features":
        kinds = ("linear",)
    elif rep_kind == "lowrank":
        kinds = ("rbf", "ard", "poly") + STATIONARY_KINDS
    else:
        kinds = ("rbf", "ard", "linear", "poly") + STATIONARY_KINDS
    if rep_kind in ("features", "blocked", "auto") and draw(st.booleans()):
        X, X_new = sp.csr_matrix(X * (r.random(X.shape) < 0.6)), sp.csr_matrix(X_new)
        kinds = tuple(k for k in kinds if k not in ("ard", "matern_ard")) or ("linear",)
    mode = draw(st.sampled_from(["tied", "semi", "separate", "groups"]))
    rep = RepresentationConfig(kind=rep_kind, memory_mb=8 * 2 * n / 2**20, rank=draw(st.integers(1, n)), tol=0.0)
    if mode == "groups":
        kgroups, vgroups = draw(partitions(C)), draw(partitions(C))
        kers = [draw(kernels(d, kinds)) for _ in kgroups]
        v = np.array([draw(log_uniform) for _ in vgroups])
        op = BlockDiagonal(X, kers, kgroups, v, vgroups, rep)
    else:
        op = BlockDiagonal.from_sharing(
            X,
            draw(kernels(d, kinds)),
            C,
            mode,
            draw(log_uniform) if mode == "tied" else [draw(log_uniform) for _ in range(C)],
            rep,
        )
    grams, cross = [], []
    for c in range(C):
        k = op.kernels[op.class_kernel[c]]
        rep_obj = op._rep_list[op._rep_of_group[op.class_kernel[c]]]
        if isinstance(rep_obj, LowRankGram):
            grams.append(nystrom_gram(k, X, X, rep_obj.Xp, rep_obj.jitter, True))
            cross.append(nystrom_gram(k, X_new, X, rep_obj.Xp, rep_obj.jitter, False))
        else:
            grams.append(naive_gram(k, X, X))
            cross.append(naive_gram(k, X_new, X))
    sigma2 = 0.0
    if with_intercept:
        sigma2 = draw(log_uniform)
        op = Intercept(op, sigma2, learn=draw(st.booleans()))
    v = op.inner.class_variances if with_intercept else op.class_variances
    return Case(op, block_diagonal_dense(grams, v, sigma2), X_new, block_diagonal_cross(cross, v, sigma2))


register(BlockDiagonal)(lambda: block_diagonal_case(False))
register(Intercept)(lambda: block_diagonal_case(True))


@st.composite
def precomputed_case(draw):
    """Block-diagonal over a Precomputed Gram: points are indices into a universe of N points."""
    N = draw(st.integers(4, 9))
    r = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    Z = r.normal(size=(N, N))
    G = Z @ Z.T / N
    kern = Precomputed(G)
    perm = r.permutation(N)
    n = draw(st.integers(2, N - 1))
    train, test = perm[:n], perm[n:]
    C = draw(st.integers(1, 3))
    v = [draw(log_uniform) for _ in range(C)]
    op = BlockDiagonal.from_sharing(index_inputs(train), kern, C, "semi", v, RepresentationConfig(kind="stored"))
    grams = [G[np.ix_(train, train)]] * C
    cross = [G[np.ix_(test, train)]] * C
    return Case(
        op,
        block_diagonal_dense(grams, op.class_variances),
        index_inputs(test),
        block_diagonal_cross(cross, op.class_variances),
    )


register(BlockDiagonal)(precomputed_case)


@st.composite
def sum_case(draw):
    """K_θ = Σ_m θ_m K_m over 1-3 block-diagonal components (stored/blocked, tied or separate) on
    the same inputs, the last possibly wrapped in an Intercept; oracle Σ_m θ_m (dense oracle of m)."""
    n, C, d = draw(st.integers(2, 6)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    r = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    X, X_new = r.normal(size=(n, d)), r.normal(size=(draw(st.integers(1, 3)), d))
    M = draw(st.integers(1, 3))
    ops, oracles = [], []
    for m in range(M):
        k = draw(kernels(d, ("rbf", "ard", "linear", "poly")))
        mode = draw(st.sampled_from(["tied", "separate"]))
        v = draw(log_uniform) if mode == "tied" else [draw(log_uniform) for _ in range(C)]
        rep = RepresentationConfig(kind=draw(st.sampled_from(["stored", "blocked"])), memory_mb=8 * 2 * n / 2**20)
        op = BlockDiagonal.from_sharing(X, k, C, mode, v, rep)
        cv = op.class_variances
        sigma2 = 0.0
        if m == M - 1 and draw(st.booleans()):
            sigma2 = draw(log_uniform)
            op = Intercept(op, sigma2, learn=draw(st.booleans()))
        ops.append(op)
        grams = [naive_gram(k, X, X)] * C
        crosses = [naive_gram(k, X_new, X)] * C
        oracles.append((block_diagonal_dense(grams, cv, sigma2), block_diagonal_cross(crosses, cv, sigma2)))
    theta = np.array([draw(log_uniform) for _ in range(M)])
    dense = sum(t * o[0] for t, o in zip(theta, oracles))
    cross = sum(t * o[1] for t, o in zip(theta, oracles))
    return Case(Sum(ops, theta), dense, X_new, cross)


register(Sum)(sum_case)


def case_strategy(cls):
    return st.one_of(*[f() for f in CASES[cls]])


# ---------------------------------------------------------------------------- structured priors
from tree_strategies import random_trees  # noqa: E402

from gpmodels.hierarchy import ClassTree  # noqa: E402
from gpmodels.operators.anova import ANOVA  # noqa: E402
from gpmodels.operators.coupled import Coupled  # noqa: E402
from gpmodels.priors.anova import ANOVAPrior  # noqa: E402


def _kron_rows(n, T):
    """I_n ⊗ T: maps the flat (i, q) index of an inner operator to the flat (i, c) index."""
    return np.kron(np.eye(n), T)


@st.composite
def _inputs(draw, n_max=5, allow_sparse=True):
    n = draw(st.integers(2, n_max))
    d = draw(st.integers(1, 3))
    r = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    X = r.normal(size=(n, d))
    X_new = r.normal(size=(draw(st.integers(1, 3)), d))
    rep_kind = draw(st.sampled_from(["stored", "blocked", "features", "auto"]))
    kinds = ("linear",) if rep_kind == "features" else ("rbf", "ard", "linear", "poly")
    if allow_sparse and rep_kind in ("features", "blocked", "auto") and draw(st.booleans()):
        X, X_new = sp.csr_matrix(X * (r.random(X.shape) < 0.6)), sp.csr_matrix(X_new)
        kinds = tuple(k for k in kinds if k != "ard") or ("linear",)
    rep = RepresentationConfig(kind=rep_kind, memory_mb=8 * 2 * n / 2**20)
    return X, X_new, d, kinds, rep, r


@st.composite
def _node_block_diagonal(draw, X, d, kinds, rep, n_blocks):
    """A BlockDiagonal over n_blocks with random kernel and variance groups; its per-block
    (kernel, variance) for the oracle."""
    kgroups, vgroups = draw(partitions(n_blocks)), draw(partitions(n_blocks))
    kers = [draw(kernels(d, kinds)) for _ in kgroups]
    v = np.array([draw(log_uniform) for _ in vgroups])
    op = BlockDiagonal(X, kers, kgroups, v, vgroups, rep)
    ker_of = {c: kers[g] for g, members in enumerate(kgroups) for c in members}
    v_of = {c: v[g] for g, members in enumerate(vgroups) for c in members}
    return op, [ker_of[c] for c in range(n_blocks)], np.array([v_of[c] for c in range(n_blocks)])


def _block_oracles(X, X_new, kers, v):
    grams = [naive_gram(k, X, X) for k in kers]
    cross = [naive_gram(k, X_new, X) for k in kers]
    return block_diagonal_dense(grams, v), block_diagonal_cross(cross, v)


@st.composite
def anova_case(draw, with_intercept=False):
    """K = (Φ_L ⊗ I) K̆ (Φ_L^T ⊗ I) against the explicit Kronecker product with Φ_L from the paths."""
    tree = ClassTree(draw(random_trees(max_nodes=8)))
    X, X_new, d, kinds, rep, r = draw(_inputs())
    n, m, P = X.shape[0], X_new.shape[0], tree.n_nodes
    Phi = tree.phi_leaf_matrix()
    how = draw(st.sampled_from(["prior", "groups", "coupled-inner"]))
    if how == "prior":  # the factory with a tree sharing mode: one base kernel, a variance per group
        mode = draw(st.sampled_from(["tied", "level", "subtree", "node"]))
        groups = tree.node_groups(mode)
        v_groups = np.array([draw(log_uniform) for _ in range(int(groups.max()) + 1)])
        kern = draw(kernels(d, kinds))
        op = ANOVAPrior(tree, kern, sharing=mode, variance=list(v_groups), representation=rep).operator(
            X, tree.n_classes
        )
        inner_dense, inner_cross = _block_oracles(X, X_new, [kern] * P, v_groups[groups])
    elif how == "groups":  # arbitrary kernel / variance groups over the nodes
        inner, kers, v = draw(_node_block_diagonal(X, d, kinds, rep, P))
        op = ANOVA(inner, tree, merge_gemm=draw(st.booleans()))
        inner_dense, inner_cross = _block_oracles(X, X_new, kers, v)
    else:  # a non-block-diagonal K̆: coupled nodes (exercises the generic diag / block paths)
        p = draw(st.integers(1, P))
        inner, kers, v = draw(_node_block_diagonal(X, d, kinds, rep, p))
        Bn = r.normal(size=(P, p))
        op = ANOVA(Coupled(inner, Bn, learn=draw(st.booleans())), tree)
        bd, bc = _block_oracles(X, X_new, kers, v)
        inner_dense = _kron_rows(n, Bn) @ bd @ _kron_rows(n, Bn).T
        inner_cross = _kron_rows(m, Bn) @ bc @ _kron_rows(n, Bn).T
    dense = _kron_rows(n, Phi) @ inner_dense @ _kron_rows(n, Phi).T
    cross = _kron_rows(m, Phi) @ inner_cross @ _kron_rows(n, Phi).T
    if with_intercept:
        sigma2 = draw(log_uniform)
        op = Intercept(op, sigma2, learn=draw(st.booleans()))
        C = tree.n_classes
        dense = dense + sigma2 * np.kron(np.ones((n, n)), np.eye(C))
        cross = cross + sigma2 * np.kron(np.ones((m, n)), np.eye(C))
    return Case(op, dense, X_new, cross)


@st.composite
def coupled_case(draw):
    """K(B) = (B ⊗ I) K (B^T ⊗ I) against the explicit Kronecker product; random B (square or
    loadings), random learned-entry mask, inner block-diagonal or itself an ANOVA operator."""
    X, X_new, d, kinds, rep, r = draw(_inputs())
    n, m = X.shape[0], X_new.shape[0]
    if draw(st.booleans()):
        p = draw(st.integers(1, 4))
        inner, kers, v = draw(_node_block_diagonal(X, d, kinds, rep, p))
        inner_dense, inner_cross = _block_oracles(X, X_new, kers, v)
    else:
        tree = ClassTree(draw(random_trees(max_nodes=6)))
        bd, kers, v = draw(_node_block_diagonal(X, d, kinds, rep, tree.n_nodes))
        inner = ANOVA(bd, tree)
        p, Phi = tree.n_classes, tree.phi_leaf_matrix()
        a, b = _block_oracles(X, X_new, kers, v)
        inner_dense = _kron_rows(n, Phi) @ a @ _kron_rows(n, Phi).T
        inner_cross = _kron_rows(m, Phi) @ b @ _kron_rows(n, Phi).T
    C = p + draw(st.integers(0, 3))
    B = r.normal(size=(C, p))
    learn = draw(st.sampled_from([True, False, "mask"]))
    if learn == "mask":
        learn = r.random(B.shape) < 0.5
    op = Coupled(inner, B, learn=learn)
    dense = _kron_rows(n, B) @ inner_dense @ _kron_rows(n, B).T
    cross = _kron_rows(m, B) @ inner_cross @ _kron_rows(n, B).T
    return Case(op, dense, X_new, cross)


register(ANOVA)(lambda: anova_case(False))
register(Intercept)(lambda: anova_case(True))
register(Coupled)(coupled_case)


# ---------------------------------------------------------------------------- composites of composites
@st.composite
def _nested(draw, X, X_new, d, kinds, rep, r, depth, C=None):
    """(operator, dense oracle, cross oracle): a BlockDiagonal leaf or, while depth > 0, an Intercept,
    Sum, Coupled or ANOVA around nested operators; C: the classes the caller needs (None: any)."""
    n, m = X.shape[0], X_new.shape[0]
    how = ["leaf"] if depth == 0 else ["leaf", "intercept", "sum", "coupled"] + (["anova"] if C is None else [])
    how = draw(st.sampled_from(how))
    if how == "leaf":
        op, kers, v = draw(_node_block_diagonal(X, d, kinds, rep, draw(st.integers(1, 3)) if C is None else C))
        return (op, *_block_oracles(X, X_new, kers, v))
    if how == "intercept":
        op, dense, cross = draw(_nested(X, X_new, d, kinds, rep, r, depth - 1, C))
        s2, Cop = draw(log_uniform), op.n_classes
        return (
            Intercept(op, s2, learn=draw(st.booleans())),
            dense + s2 * np.kron(np.ones((n, n)), np.eye(Cop)),
            cross + s2 * np.kron(np.ones((m, n)), np.eye(Cop)),
        )
    if how == "sum":
        first = draw(_nested(X, X_new, d, kinds, rep, r, depth - 1, C))
        parts = [first] + [
            draw(_nested(X, X_new, d, kinds, rep, r, depth - 1, first[0].n_classes))
            for _ in range(draw(st.integers(0, 1)))
        ]
        theta = np.array([draw(log_uniform) for _ in parts])
        return (
            Sum([p[0] for p in parts], theta),
            sum(t * p[1] for t, p in zip(theta, parts)),
            sum(t * p[2] for t, p in zip(theta, parts)),
        )
    if how == "coupled":
        p = draw(st.integers(1, 3 if C is None else C))
        op, dense, cross = draw(_nested(X, X_new, d, kinds, rep, r, depth - 1, p))
        B = r.normal(size=(p + draw(st.integers(0, 2)) if C is None else C, p))
        return (
            Coupled(op, B, learn=draw(st.booleans())),
            _kron_rows(n, B) @ dense @ _kron_rows(n, B).T,
            _kron_rows(m, B) @ cross @ _kron_rows(n, B).T,
        )
    tree = ClassTree(draw(random_trees(max_nodes=5)))
    op, dense, cross = draw(_nested(X, X_new, d, kinds, rep, r, depth - 1, tree.n_nodes))
    Phi = tree.phi_leaf_matrix()
    return (
        ANOVA(op, tree, merge_gemm=draw(st.booleans())),
        _kron_rows(n, Phi) @ dense @ _kron_rows(n, Phi).T,
        _kron_rows(m, Phi) @ cross @ _kron_rows(n, Phi).T,
    )


@st.composite
def nested_case(draw):
    """Composites of composites (depth 2-3) over block-diagonal leaves, against the Kronecker oracle."""
    X, X_new, d, kinds, rep, r = draw(_inputs(n_max=4))
    op, dense, cross = draw(_nested(X, X_new, d, kinds, rep, r, draw(st.integers(2, 3))))
    return Case(op, dense, X_new, cross)


def stack_inputs(X, X_new):
    """The training inputs followed by the new points (dense or sparse)."""
    return sp.vstack([X, X_new]).tocsr() if sp.issparse(X) else np.vstack([X, X_new])


def on_inputs(op, X):
    """The same operator (structure, kernels, hyperparameters) built on the inputs X; a low-rank
    representation keeps its pivot points, so that its blocks at new points are the Nyström ones."""
    if isinstance(op, BlockDiagonal):
        reps = {
            key: LowRankGram(X, r.kernel, r.Xp, None, r.jitter)
            for key, r in op._rep_by_key.items()
            if isinstance(r, LowRankGram)
        }
        if reps:  # every kernel of a low-rank operator is low-rank (one RepresentationConfig)
            return BlockDiagonal(
                X, op.kernels, op.class_kernel, op.variances, op.class_variance, op.representation, _reps=reps
            )
        return BlockDiagonal(X, op.kernels, op.class_kernel, op.variances, op.class_variance, op.representation)
    if isinstance(op, Intercept):
        return Intercept(on_inputs(op.inner, X), op.sigma2, op.learn)
    if isinstance(op, Sum):
        return Sum([on_inputs(o, X) for o in op.ops], op.theta)
    if isinstance(op, Coupled):
        return Coupled(on_inputs(op.inner, X), op.B, op.learn, op.class_names)
    if isinstance(op, ANOVA):
        return ANOVA(on_inputs(op.inner, X), op.tree, op._names, merge_gemm=op.merge_gemm)
    raise TypeError(f"no rebuild for {type(op).__name__}: add it here with its case")


def training_inputs(op):
    """The inputs X of the first block-diagonal leaf of a composite."""
    while not isinstance(op, BlockDiagonal):
        op = op.ops[0] if isinstance(op, Sum) else op.inner
    return op.X


# ---------------------------------------------------------------------------- stacked copies (CV folds)
from gpmodels.operators.stacked import Stacked  # noqa: E402


def _flat(points, C):
    return (np.asarray(points, dtype=np.intp)[:, None] * C + np.arange(C)[None, :]).ravel()


@st.composite
def _stack_case(draw, views: bool):
    """diag(K_{J_1}, ..., K_{J_F}) of 1-3 restrictions of one block-diagonal (or intercept) case to random,
    possibly overlapping point sets (the refits of CV folds), against the blocks of its dense oracle; at new
    points the parts' oracle blocks side by side.  ``views``: :meth:`Stacked.restrictions` (multiplied
    through the case's operator), else a stack of its restricted copies."""
    base = draw(block_diagonal_case(draw(st.booleans())))
    if not views:
        inner = base.op.inner if isinstance(base.op, Intercept) else base.op
        # a restricted Nyström copy's grad_trace departs from finite differences of its own with_params
        # (found here; the copies' behaviour, not the stack's): copies are checked on the others, views on all
        assume(not any(isinstance(rep, LowRankGram) for rep in inner._rep_list))
    n, C = base.op.n_points, base.op.n_classes
    r = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    sets = [r.permutation(n)[: r.integers(1, n + 1)] for _ in range(draw(st.integers(1, 3)))]
    op = Stacked.restrictions(base.op, sets) if views else Stacked([base.op.restrict(J) for J in sets])
    N = sum(J.size for J in sets)
    dense, at = np.zeros((N * C, N * C)), 0
    for J in sets:
        idx = _flat(J, C)
        dense[at : at + idx.size, at : at + idx.size] = base.dense[np.ix_(idx, idx)]
        at += idx.size
    cross = np.hstack([base.cross_dense[:, _flat(J, C)] for J in sets])
    return Case(op, dense, base.X_new, cross)


register(Stacked)(lambda: _stack_case(False))
register(Stacked)(lambda: _stack_case(True))

# ---------------------------------------------------------------------------- restriction views
from gpmodels.operators.restriction import Restriction  # noqa: E402


@st.composite
def restriction_case(draw):
    """K_J of a block-diagonal, intercept, ANOVA or coupled case on random points J, multiplied through it."""
    kind = draw(st.sampled_from(["blockdiag", "intercept", "anova", "coupled"]))
    strategy = {
        "blockdiag": lambda: block_diagonal_case(False),
        "intercept": lambda: block_diagonal_case(True),
        "anova": lambda: anova_case(False),
        "coupled": coupled_case,
    }[kind]
    base = draw(strategy())
    n, C = base.op.n_points, base.op.n_classes
    r = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    J = r.permutation(n)[: r.integers(1, n + 1)]
    idx = _flat(J, C)
    return Case(Restriction(base.op, J), base.dense[np.ix_(idx, idx)], base.X_new, base.cross_dense[:, idx])


register(Restriction)(restriction_case)
