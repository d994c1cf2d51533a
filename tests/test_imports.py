"""Every module of gpmodels imports on its own, and module-level imports form no cycle.

Issue 11: registries filled as a side effect of importing another package, and modules that import
each other, make the result of ``import X`` depend on what was imported before.  The checks:

* dynamic: every module imported alone into an interpreter that holds no gpmodels module (one
  forked child per module of a fresh interpreter that pre-imported only numpy, scipy, ...; plain
  ``python -c "import <module>"`` per module where there is no fork);
* static: the graph of module-level imports (``ast``; imports inside functions are lazy and do not
  count, nor do ``if TYPE_CHECKING:`` blocks) has no cycle.  An import of ``a.b.c`` also runs the
  ``__init__`` of the packages ``a.b`` on the way, so those are edges too, except the importer's own
  ancestors (already being imported when the importer runs);
* layers: the graph of the sub-packages (``gpmodels.data``, ``gpmodels.driver``, ...; a top-level module
  is one too), counting every import, those inside functions included, has no cycle either: a lazy
  import hides a cycle from the interpreter, not from the reader;
* no lazy internal imports: no function imports a gpmodels module (only optional third-party extras
  are imported inside functions).
"""

from __future__ import annotations

import ast
import json
import os
import pkgutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import gpmodels

ROOT = Path(gpmodels.__file__).resolve().parent.parent


def _modules() -> dict[str, Path | None]:
    """name -> source file (None for compiled extension modules)."""
    out = {"gpmodels": Path(gpmodels.__file__)}
    for info in pkgutil.walk_packages(gpmodels.__path__, "gpmodels."):
        spec = info.module_finder.find_spec(info.name)
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        out[info.name] = origin if origin is not None and origin.suffix == ".py" else None
    return out


MODULES = _modules()


#: Runs in a fresh interpreter: imports the third-party modules gpmodels uses at module level (numpy,
#: scipy, ...: nearly all of the start-up time), checks that no gpmodels module is loaded, then forks
#: one child per gpmodels module, a few at a time; each child imports its module into an interpreter
#: that holds no gpmodels module, and reports the last line of the error.  Same verdict as one
#: ``python -c "import m"`` per module at a fraction of the time (those cost ~1 CPU-s each).
_FORK_IMPORTER = r"""
import importlib, json, os, sys, traceback
third_party, modules, workers = json.loads(sys.stdin.read())
for m in third_party:
    try:
        importlib.import_module(m)
    except ImportError:
        pass
assert not [m for m in sys.modules if m == "gpmodels" or m.startswith("gpmodels.")], "gpmodels preloaded"
results, running = {}, {}
def reap():
    pid, status = os.wait()
    name, r = running.pop(pid)
    err = os.read(r, 1 << 16).decode(errors="replace")
    os.close(r)
    results[name] = [os.waitstatus_to_exitcode(status), err]
for name in modules:
    while len(running) >= workers:
        reap()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            importlib.import_module(name)
            code = 0
        except BaseException:
            os.write(w, traceback.format_exc().strip().splitlines()[-1].encode()[:60000])
            code = 1
        os._exit(code)
    os.close(w)
    running[pid] = (name, r)
while running:
    reap()
print(json.dumps(results))
"""


def _third_party() -> list[str]:
    """Non-gpmodels modules imported at module level anywhere in gpmodels."""
    out = set()
    for path in MODULES.values():
        if path is None:
            continue
        for node in _module_level_imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            mods = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([] if node.level or not node.module else [node.module])
            )
            out.update(m for m in mods if m.split(".")[0] != "gpmodels")
    return sorted(out)


def _import_alone(name: str) -> tuple[str, int, str]:
    proc = subprocess.run(
        [sys.executable, "-c", f"import {name}"], capture_output=True, text=True, timeout=120, env=_env(), cwd=ROOT
    )
    lines = proc.stderr.strip().splitlines()
    return name, proc.returncode, lines[-1] if lines else ""


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def test_every_module_imports_alone_in_a_fresh_interpreter():
    workers = max(2, min(8, 2 * (os.cpu_count() or 1)))
    names = sorted(MODULES)
    if hasattr(os, "fork"):
        job = json.dumps([_third_party(), names, workers])
        proc = subprocess.run(
            [sys.executable, "-c", _FORK_IMPORTER],
            input=job,
            capture_output=True,
            text=True,
            timeout=600,
            env=_env(),
            cwd=ROOT,
        )
        assert proc.returncode == 0, proc.stderr
        results = [(name, rc, err) for name, (rc, err) in json.loads(proc.stdout).items()]
    else:
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(_import_alone, names))
    assert len(results) == len(names)
    failed = [f"{name}: {err}" for name, rc, err in results if rc != 0]
    assert not failed, "modules that fail to import alone:\n" + "\n".join(failed)


# ---------------------------------------------------------------------- static import graph
def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level_imports(tree: ast.Module):
    """Import nodes executed when the module runs: the module body, class bodies, if/try/with blocks;
    not function bodies (lazy imports) and not ``if TYPE_CHECKING:``."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def _targets(name: str, is_package: bool, node) -> list[str]:
    """gpmodels modules an import node names (before adding the packages on the way)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:  # relative: resolve against the importer's package
        base = name if is_package else name.rpartition(".")[0]
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        mod = f"{base}.{node.module}" if node.module else base
    else:
        mod = node.module or ""
    return [mod] + [f"{mod}.{a.name}" for a in node.names]


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        edges: set[str] = set()
        graph[name] = edges
        if path is None:
            continue
        is_package = path.name == "__init__.py"
        own = {name} | {name.rsplit(".", k)[0] for k in range(1, name.count(".") + 1)}  # itself and its ancestors
        for node in _module_level_imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for target in _targets(name, is_package, node):
                parts = target.split(".")
                for k in range(1, len(parts) + 1):  # a.b.c runs a, a.b and a.b.c
                    mod = ".".join(parts[:k])
                    if mod in MODULES and mod not in own:
                        edges.add(mod)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [m0, m1, ..., m0], or None (iterative depth-first search)."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = dict.fromkeys(graph, WHITE)
    for root in sorted(graph):
        if color[root] != WHITE:
            continue
        path, iters = [root], [iter(sorted(graph[root]))]
        color[root] = GREY
        while path:
            nxt = next(iters[-1], None)
            if nxt is None:
                color[path.pop()] = BLACK
                iters.pop()
            elif color[nxt] == GREY:
                return path[path.index(nxt) :] + [nxt]
            elif color[nxt] == WHITE:
                color[nxt] = GREY
                path.append(nxt)
                iters.append(iter(sorted(graph[nxt])))
    return None


def test_module_level_imports_have_no_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize(
    "lower, upper",
    [
        ("gpmodels.persistence", "gpmodels.driver"),
        ("gpmodels.priors.registry", "gpmodels.driver"),
        ("gpmodels.inference", "gpmodels.driver"),
    ],
)
def test_lower_layers_do_not_import_upper_ones(lower, upper):
    graph = import_graph()
    bad = {
        f"{m} -> {t}"
        for m, ts in graph.items()
        if m == lower or m.startswith(lower + ".")
        for t in ts
        if t == upper or t.startswith(upper + ".")
    }
    assert not bad, f"{lower} imports {upper}: {sorted(bad)}"


# ---------------------------------------------------------------------- sub-package graph
def _all_imports(tree: ast.Module):
    """Every import node, those in function bodies included; not ``if TYPE_CHECKING:`` blocks."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def _unit(module: str) -> str:
    """The sub-package (or top-level module) a module belongs to: gpmodels.inference.map.model -> gpmodels.inference."""
    return ".".join(module.split(".")[:2])


def subpackage_graph() -> dict[str, set[str]]:
    """Sub-package -> the sub-packages its modules import (any import, at any depth of the code)."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        unit = _unit(name)
        edges = graph.setdefault(unit, set())
        if path is None:
            continue
        is_package = path.name == "__init__.py"
        for node in _all_imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names = [t for t in _targets(name, is_package, node) if t in MODULES]
            for target in names[1:] if len(names) > 1 else names:  # `from gpmodels import x`: the module x
                if _unit(target) != unit:
                    edges.add(_unit(target))
    return graph


def test_subpackages_import_each_other_without_cycle_counting_imports_inside_functions():
    graph = subpackage_graph()
    assert {"gpmodels.driver", "gpmodels.data", "gpmodels.kernels", "gpmodels.persistence"} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, "sub-package import cycle: " + " -> ".join(cycle)


def test_the_subpackage_graph_sees_imports_inside_functions(tmp_path):
    tree = ast.parse("def f():\n    from gpmodels.driver import run\n")
    assert [n.module for n in _all_imports(tree)] == ["gpmodels.driver"]
    assert [n.module for n in _module_level_imports(tree)] == []


def test_runners_share_helpers_through_common_and_import_no_other_runner():
    runners = {m: p for m, p in MODULES.items() if m.startswith("gpmodels.driver.runners.")}
    assert "gpmodels.driver.runners.common" in runners and len(runners) >= 6
    bad = []
    for name, path in runners.items():
        for node in _all_imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for target in _targets(name, False, node):
                if target in runners and target not in (name, "gpmodels.driver.runners.common"):
                    bad.append(f"{name} -> {target}")
    assert not bad, bad


# ---------------------------------------------------------------------- no lazy internal imports
#: ``path:line`` of function-level imports of gpmodels modules that must stay, each with its reason.
#: Empty: a function-level import of a gpmodels module only hides a cycle; optional third-party extras
#: (dask, numba, cvxpy, matplotlib, scikit-learn, torch, ...) may be imported inside functions.
LAZY_INTERNAL_ALLOWED: dict[str, str] = {}


def _lazy_internal_imports(name: str, is_package: bool, tree: ast.Module) -> list[tuple[int, str]]:
    """(line, module) of every import of a gpmodels module inside a function body of ``tree``."""
    found = []
    stack = [(node, False) for node in tree.body]
    while stack:
        node, in_function = stack.pop()
        if in_function and isinstance(node, (ast.Import, ast.ImportFrom)):
            internal = [t for t in _targets(name, is_package, node) if t == "gpmodels" or t.startswith("gpmodels.")]
            if internal:
                found.append((node.lineno, internal[0]))
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        stack.extend((child, inside) for child in ast.iter_child_nodes(node))
    return sorted(found)


def test_no_function_imports_a_gpmodels_module():
    found = {}
    for name, path in MODULES.items():
        if path is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, target in _lazy_internal_imports(name, path.name == "__init__.py", tree):
            found[f"{path.relative_to(ROOT).as_posix()}:{line}"] = target
    bad = {where: target for where, target in found.items() if where not in LAZY_INTERNAL_ALLOWED}
    assert not bad, f"imports of gpmodels modules inside functions (import them at module level): {bad}"
    stale = sorted(set(LAZY_INTERNAL_ALLOWED) - set(found))
    assert not stale, f"LAZY_INTERNAL_ALLOWED names imports that no longer exist: {stale}"


def test_the_lazy_import_scan_sees_internal_imports_inside_functions_only():
    source = (
        "import numpy\n"
        "from gpmodels.errors import InputError\n"
        "def f():\n"
        "    import dask\n"
        "    from gpmodels.kernels.composite import KernelSum\n"
        "class C:\n"
        "    def g(self):\n"
        "        if True:\n"
        "            from .rbf import RBF\n"
        "            import gpmodels.engine.dask_gram\n"
    )
    found = _lazy_internal_imports("gpmodels.kernels.base", False, ast.parse(source))
    assert found == [(5, "gpmodels.kernels.composite"), (9, "gpmodels.kernels.rbf"), (10, "gpmodels.engine.dask_gram")]
