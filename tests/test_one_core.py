"""One CG loop in the package (issue 39): every linear solve by conjugate gradients goes through
:func:`gpmodels.linalg.cg.cg`, which batches systems (row blocks, columns) itself.  An AST count finds any other
function whose loop computes a CG recurrence; the planted copies below prove that it sees one.  Likewise one
Newton loop, and one place that decides where work runs: the execution plan, with no branch on a device or a
backend in the packages whose algebra it places."""

import ast
import re
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gpmodels"
#: the one function allowed to hold a CG loop: (module path under gpmodels/, function name): the steps of
#: :func:`gpmodels.linalg.cg.cg`
THE_CG = ("linalg/cg.py", "iterate")


def _names(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _body_nodes(loop):
    """The statements and expressions of a loop's body, not entering nested functions or classes."""
    todo = list(loop.body) + list(getattr(loop, "orelse", []))
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                todo.append(child)


def _assignments(nodes) -> list[tuple[str, ast.AST, bool]]:
    """(target name, value, augmented) of the loop's assignments to plain names (tuples unpacked)."""
    out = []
    for node in nodes:
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            out.append((node.target.id, node.value, True))
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.append((target.id, node.value, False))
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    for t, v in zip(target.elts, node.value.elts):
                        if isinstance(t, ast.Name):
                            out.append((t.id, v, False))
    return out


def is_cg_loop(loop) -> bool:
    """The structural signature of a CG recurrence in one loop: the product Q = A(P) of a direction P (a call or
    a matrix product of P, stored apart from it), an iterate X updated from itself along P (x += α p), a residual
    R updated from itself along Q (r -= α A p), and P updated from itself (p = z + β p)."""
    assigned = _assignments(list(_body_nodes(loop)))

    def updated_along(along: str, exclude: set) -> set:
        return {t for t, v, aug in assigned if t not in exclude and along in _names(v) and (aug or t in _names(v))}

    for q, value, augmented in assigned:
        is_product = isinstance(value, ast.Call) or (isinstance(value, ast.BinOp) and isinstance(value.op, ast.MatMult))
        if augmented or not is_product or q in _names(value):
            continue
        for p in _names(value):
            if p not in updated_along(p, set()) and not any(t == p and aug for t, _, aug in assigned):
                continue  # P is not updated from itself
            xs = updated_along(p, {p, q})
            if any(updated_along(q, {p, q, x}) for x in xs):
                return True
    return False


def loops_matching(source: str, is_loop) -> list[str]:
    """The names of the functions of ``source`` holding a loop that ``is_loop`` recognises (innermost function of
    each loop)."""
    found = []

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
            elif isinstance(child, (ast.For, ast.While)) and func is not None and is_loop(child):
                found.append(func)
                visit(child, func)
            else:
                visit(child, func)

    visit(ast.parse(source), None)
    return found


def cg_loops(source: str) -> list[str]:
    """The names of the functions of ``source`` that hold a CG loop."""
    return loops_matching(source, is_cg_loop)


def test_the_package_has_one_cg_loop():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for func in cg_loops(path.read_text()):
            found.append((path.relative_to(PACKAGE).as_posix(), func))
    assert sorted(set(found)) == [THE_CG], f"CG loops outside {THE_CG}: {found}"


PLANTED = {
    "textbook": """
        def solve(A, b, n):
            x = np.zeros_like(b)
            r = b.copy()
            p = r.copy()
            rr = r @ r
            for _ in range(n):
                Ap = A @ p
                a = rr / (p @ Ap)
                x += a * p
                r -= a * Ap
                rr_new = r @ r
                p = r + (rr_new / rr) * p
                rr = rr_new
            return x
    """,
    "preconditioned, renamed, in a method": """
        class Solver:
            def run(self, matvec, rhs, M):
                sol, res = 0 * rhs, rhs.copy()
                z = M(res)
                d, rho = z.copy(), np.vdot(res, z)
                while np.linalg.norm(res) > 1e-8:
                    q = matvec(d)
                    gamma = rho / np.vdot(d, q)
                    sol, res = sol + gamma * d, res - gamma * q
                    z = M(res)
                    rho, old = np.vdot(res, z), rho
                    d = z + (rho / old) * d
                return sol
    """,
    "through vector primitives": """
        def lockstep(apply_A, b, vec):
            x, r = vec.zeros_like(b), vec.copy(b)
            p = vec.copy(r)
            rz = vec.dots(r, r)
            while True:
                Ap = apply_A(p, None)
                step = rz / vec.dots(p, Ap)
                x = vec.add_scaled(x, step, p)
                r = vec.add_scaled(r, -step, Ap)
                rz_new = vec.dots(r, r)
                p = vec.scale_add(p, rz_new / rz, r)
                rz = rz_new
    """,
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_the_detector_sees_a_planted_cg_loop(name):
    assert cg_loops(textwrap.dedent(PLANTED[name])) != []


def test_the_detector_passes_loops_that_are_not_cg():
    """Power iteration (the product replaces the vector), Lanczos (the new vector comes from the product),
    an accumulation and a Newton loop with its line search."""
    source = """
        def power(A, v, n):
            for _ in range(n):
                w = A @ v
                v = w / np.linalg.norm(w)
            return v

        def lanczos(A, v, n):
            prev, beta = 0 * v, 0.0
            for _ in range(n):
                w = A @ v
                alpha = v @ w
                w = w - alpha * v - beta * prev
                beta = np.linalg.norm(w)
                prev, v = v, w / beta

        def newton(f, grad, solve, x, n):
            for _ in range(n):
                g = grad(x)
                s = solve(x, g)
                t = line_search(f, x, s)
                x = x + t * s
            return x

        def total(xs):
            acc = 0.0
            for x in xs:
                acc += f(x)
            return acc
    """
    assert cg_loops(textwrap.dedent(source)) == []


# --- one Newton loop ------------------------------------------------------------------------------------------------

#: the one function allowed to hold a Newton loop: the block-axis loop of every MAP solver
THE_NEWTON = ("inference/map/newton.py", "newton_loop")


def _called_names(nodes) -> set[str]:
    """The names of the functions called in ``nodes`` and the attributes read there (``res.line_search``)."""
    out = set()
    for node in nodes:
        if isinstance(node, ast.Call):
            f = node.func
            out.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
    return out


def _target_name(target) -> str | None:
    """The array a target writes: ``x`` of ``x`` and of ``x[rows]``."""
    while isinstance(target, ast.Subscript):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _steps_along(nodes, by_step_length: bool = False) -> bool:
    """An iterate moved from itself by a scaled step: ``x = x + t * s``, ``x += t * s`` or ``x[r] += t * s``;
    ``by_step_length``: the factor a result's ``step`` (a line search's λ)."""
    for node in nodes:
        if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
            targets, value, own = [node.target], node.value, True
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.BinOp):
            targets, value, own = node.targets, node.value, False
        else:
            continue
        scaled = any(
            isinstance(n, ast.BinOp)
            and isinstance(n.op, ast.Mult)
            and (
                not by_step_length or any(isinstance(f, ast.Attribute) and f.attr == "step" for f in (n.left, n.right))
            )
            for n in ast.walk(value)
        )
        for target in targets:
            name = _target_name(target)
            if scaled and name is not None and (own or name in _names(value)):
                return True
    return False


def is_newton_loop(loop) -> bool:
    """The structural signature of a damped Newton iteration in one loop: an iterate moved from itself by a
    line search's step length times the step, the search called in the loop (or a result's ``line_search``
    read there) or its result's ``step`` the factor (``alpha[r] += ls.step * s``)."""
    nodes = list(_body_nodes(loop))
    searches = any("line_search" in name for name in _called_names(nodes))
    return _steps_along(nodes, by_step_length=not searches)


def newton_loops(source: str) -> list[str]:
    """The names of the functions of ``source`` that hold a Newton loop."""
    return loops_matching(source, is_newton_loop)


def test_the_package_has_one_newton_loop():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for func in newton_loops(path.read_text()):
            found.append((path.relative_to(PACKAGE).as_posix(), func))
    assert sorted(set(found)) == [THE_NEWTON], f"Newton loops outside {THE_NEWTON}: {found}"


PLANTED_NEWTON = {
    "textbook": """
        def newton(f, grad, hess, x, n):
            for _ in range(n):
                g = grad(x)
                s = -np.linalg.solve(hess(x), g)
                t = backtracking_line_search(f, x, s)
                x = x + t * s
            return x
    """,
    "the folds one by one, in place": """
        def refit_folds(blocks, lik, Y, alpha, u, phi, step):
            while True:
                g = lik.gradient(u, Y)
                active = [k for k in range(len(blocks)) if norm(alpha[blocks[k]] + g[blocks[k]]) > 1e-6]
                if not active:
                    break
                for k, res in step(alpha, u, g, active).items():
                    r = blocks[k]
                    alpha[r] += res.line_search.step * res.s
                    u[r] += res.line_search.step * res.s_tilde
                    phi[k] = res.line_search.phi
    """,
    "the update in a helper of the loop": """
        def _advance(blocks, active, best, alpha, u, phi):
            for k in np.flatnonzero(active):
                b, (ls, s, s_tilde) = blocks[k], best[k]
                if ls.success:
                    alpha[b.rows] += ls.step * s
                    u[b.rows] += ls.step * s_tilde
                    phi[k] = ls.phi
    """,
    "lockstep's best attempts, augmented": """
        def lockstep(lik, Y, products, alpha, u, opts):
            for it in range(opts.max_iter):
                ls = pair_line_search(lik, Y, alpha, u, *direction(alpha, u))
                if not ls.success:
                    break
                alpha += ls.step * ls.s
                u += ls.step * ls.s_tilde
            return alpha
    """,
}


@pytest.mark.parametrize("name", sorted(PLANTED_NEWTON))
def test_the_detector_sees_a_planted_newton_loop(name):
    assert newton_loops(textwrap.dedent(PLANTED_NEWTON[name])) != []


def test_the_newton_detector_passes_cg_a_line_search_and_stall_restarts():
    """A CG loop (steps along p without a line search), the line search's own loop (trial points, not
    updates) and stall restarts (line searches without moving the iterate) are not Newton loops."""
    source = """
        def solve(A, b, n):
            x, r = 0 * b, b.copy()
            p = r.copy()
            for _ in range(n):
                Ap = A @ p
                a = (r @ r) / (p @ Ap)
                x += a * p
                r -= a * Ap
                p = r + p

        def search(f, alpha, s, lo, hi):
            while hi - lo > 1e-12:
                lam = 0.5 * (lo + hi)
                a = alpha + lam * s
                if f(a) < 0:
                    lo = lam
                else:
                    hi = lam

        def restarts(problem, point, x0, n):
            for _ in range(n):
                res = cg(problem, x0)
                ls = line_search_step(problem, point, res.x)
                if ls.success:
                    break
                x0 = res.x
    """
    assert newton_loops(textwrap.dedent(source)) == []


#: the packages whose algebra runs on whatever arrays it is given, and the one module that decides placement
PLACED_PACKAGES = ("inference", "linalg", "operators", "likelihoods")
THE_PLAN = "inference/execution_plan.py"
#: a branch on where the work runs names one of these in its test
PLACEMENT_NAME = re.compile(r"device|backend|(^|_)(xp|dev)($|_)|cuda|torch")


def placement_branches(source: str) -> list[int]:
    """The lines of ``source``'s ``if`` / ``elif`` / conditional expressions / ``while`` whose test names a device,
    a backend, an array namespace, CUDA or PyTorch (a variable or an attribute): the host/device forks that
    the plan (:meth:`~gpmodels.inference.execution_plan.ExecutionPlan.place`) decides once instead."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.If, ast.IfExp, ast.While)):
            continue
        names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(node.test) if isinstance(n, ast.Attribute)}
        if any(PLACEMENT_NAME.search(name) for name in names):
            lines.append(node.lineno)
    return lines


def test_placement_is_decided_only_by_the_plan():
    found = []
    for sub in PLACED_PACKAGES:
        for path in sorted((PACKAGE / sub).rglob("*.py")):
            rel = path.relative_to(PACKAGE).as_posix()
            if rel != THE_PLAN:
                found += [f"{rel}:{line}" for line in placement_branches(path.read_text())]
    assert found == [], f"branches on a device or backend outside {THE_PLAN}: {found}"


@pytest.mark.parametrize(
    "source",
    [
        "if backend is not None:\n    x = backend.from_host(x)",
        "ops = HOST if device_backend is None else device_backend",
        "if a.dtype == xp.bool:\n    pass",
        "while dev.solves and k < 3:\n    k += 1",
        "if plan.cg_on_device:\n    pass\nelif torch_available:\n    pass",
    ],
)
def test_the_placement_detector_sees_a_planted_branch(source):
    assert placement_branches(source)


def test_the_placement_detector_passes_other_branches():
    source = "if on.any() and x.ndim == 2:\n    y = ops.take(x, idx) if gather is None else x\nwhile k < n:\n    k += 1"
    assert placement_branches(source) == []
