"""One CG loop in the package (issue 39): every linear solve by conjugate gradients goes through
:func:`gpmodels.linalg.cg.cg`, which batches systems (row blocks, columns) itself.  An AST count finds any other
function whose loop computes a CG recurrence; the planted copies below prove that it sees one."""

import ast
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


def cg_loops(source: str) -> list[str]:
    """The names of the functions of ``source`` that hold a CG loop (innermost function of each loop)."""
    found = []

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
            elif isinstance(child, (ast.For, ast.While)) and func is not None and is_cg_loop(child):
                found.append(func)
                visit(child, func)
            else:
                visit(child, func)

    visit(ast.parse(source), None)
    return found


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
