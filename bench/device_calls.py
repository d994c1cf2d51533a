"""What one CG step costs the host when the kernel matrices are on a device (issue 24): host-device
transfers, device calls and wall time per CG step of Newton–CG fits, with CG on the host (the Newton
system's product on the device, one transfer each way per product) and on the device (iterates,
products and preconditioner there), the placement the execution plan chooses by problem size
(``PlanRules.device_cg_min_entries``).

Problems (synthetic, Gaussian inputs, softmax targets from random labels; ``--scale`` shrinks n):

- ``fold``: a satimage CV fold, n = 3548, C = 6, one RBF kernel per class (mc-sep, one device stack,
  float32 storage) with the intercept, preconditioner ``lowrank`` (rank 32), the spec's inner settings
  (k1 = 13, k2 = 25);
- ``wide``: imclef07a's size, n = 10 000, C = 63, one RBF kernel for all classes, the intercept,
  preconditioner ``diagonal``, k1 = 30, k2 = 50;
- ``folds``: satimage's five CV refits (n = 4435 split into 5 folds, each refit on the other four, the
  ``fold`` settings), fitted one after the other (``separate``: CG on the host at their size) or in
  lockstep (``CVOptions.folds_per_fit`` = 5: CG on the device) on the stack of their restricted copies
  (``stacked-copies``: one product call chain per fold) or, as CV runs them, on the stack of their
  restrictions multiplied through K̃ (``stacked``: one product of K̃ with a column per fold,
  :meth:`~gpmodels.operators.stacked.Stacked.restrictions`); Newton iterations, CG steps and MVMs are the
  folds' own, summed (the same in all three, up to round-off).

Per problem and placement: a warm-up fit, then the best of ``--repeat`` timed fits (wall time, Newton
iterations, CG steps, MVMs), the transfers of one fit (arrays to and from the device), and on PyTorch the
calls dispatched per CG step (each an operator call from Python; views included; counted in a separate fit,
as counting slows them).  ``--backend``: ``cuda`` (PyTorch on the GPU, fused products), ``torch-cpu``,
``numpy`` (the CI namespace: transfers and steps only mean something there).

Prints a table and a final JSON line ``{"bench": "device_calls", "backend": ..., "rows": [...]}``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from smoke import SMOKE_HELP  # noqa: E402

from gpmodels.inference.execution_plan import DEFAULT_RULES, PlanRules, plan_for
from gpmodels.inference.map.newton_cg import NewtonCG, NewtonOptions
from gpmodels.kernels.device.backend import cuda_backend, numpy_backend, torch_backend
from gpmodels.kernels.device.config import DeviceRepresentationConfig
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.intercept import Intercept
from gpmodels.operators.stacked import Stacked

#: the module (the package exports its function of the same name)
#: name -> (n, C, separate kernels, storage, preconditioner, k1, k2)
PROBLEMS = {
    "fold": (3548, 6, True, "float32", "lowrank", 13, 25),
    "wide": (10_000, 63, False, "float64", "diagonal", 30, 50),
    "folds": (4435, 6, True, "float32", "lowrank", 13, 25),
}
#: the plan's rules for each placement
PLACEMENTS = {"host-cg": PlanRules(device_cg_min_entries=1 << 62), "device-cg": PlanRules(device_cg_min_entries=0)}
#: the ``folds`` problem's ways to fit its refits, each under the default rules
FOLD_PLACEMENTS = ("separate", "stacked-copies", "stacked")
N_FOLDS = 5
KEYS = ("problem", "placement", "n", "C", "seconds", "newton", "cg_steps", "mvms", "us_per_cg_step")


def make_backend(name: str):
    return {"cuda": cuda_backend, "torch-cpu": lambda: torch_backend("cpu", fused=False), "numpy": numpy_backend}[
        name
    ]()


def build(problem: str, backend, scale: float):
    """The operator (matrices on ``backend``), targets and Newton options of ``problem``."""
    n, C, separate, dtype, preconditioner, k1, k2 = PROBLEMS[problem]
    n = max(50, int(n * scale))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 36))
    w = 1.0 / 36.0
    kernels = [RBF(w * (1.0 + 0.1 * c)) for c in range(C)] if separate else [RBF(w)]
    class_kernel = np.arange(C) if separate else np.zeros(C, dtype=int)
    config = DeviceRepresentationConfig(backend, kind="stored", dtype=dtype)
    inner = BlockDiagonal(X, kernels, class_kernel, np.full(C, 10.0), np.arange(C), representation=config)
    Y = np.eye(C)[rng.integers(0, C, n)]
    options = NewtonOptions(max_iter=k1, cg_max_iter=k2, preconditioner=preconditioner, precond_rank=32)
    return Intercept(inner, 16.0), Y, options


class Transfers:
    """Counts the arrays that ``backend`` moves to and from the host (wraps its two methods)."""

    def __init__(self, backend):
        self.uploads = self.downloads = 0
        up, down = backend.from_host, backend.to_host

        def from_host(a, dtype="float64"):
            self.uploads += 1
            return up(a, dtype)

        def to_host(a):
            self.downloads += 1
            return down(a)

        backend.from_host, backend.to_host = from_host, to_host


def dispatched_calls(backend, fit) -> int | None:
    """PyTorch operator calls of one ``fit()`` (None off PyTorch)."""
    if getattr(backend, "torch", None) is None:
        return None
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.calls += 1
            return func(*args, **(kwargs or {}))

    with Count():
        fit()
    return Count.calls


def _counts(res) -> np.ndarray:
    """(Newton iterations, CG steps, MVMs) of one fit."""
    d = res.diagnostics
    return np.array([d.iterations, int(np.sum(d.cg_iterations)), d.mvm_count])


def fold_fits(op, Y, options, placement: str):
    """The ``folds`` problem's fit: the refits of N_FOLDS CV folds of ``op`` one after the other, or as one
    fit on their stacked operators; it returns (Newton iterations, fold CG steps, fold MVMs)."""
    folds = np.array_split(np.random.default_rng(1).permutation(op.n_points), N_FOLDS)
    Js = [np.setdiff1d(np.arange(op.n_points), I) for I in folds]
    Ys = np.concatenate([Y[J] for J in Js])
    if placement == "stacked":
        stack = Stacked.restrictions(op, Js)
        return lambda: sum(_counts(fit) for fit in NewtonCG(options).fit_blocks(stack, Softmax(), Ys).blocks)
    parts = [op.restrict(J) for J in Js]
    if placement == "stacked-copies":
        stack = Stacked(parts)
        return lambda: sum(_counts(fit) for fit in NewtonCG(options).fit_blocks(stack, Softmax(), Ys).blocks)
    return lambda: sum(_counts(NewtonCG(options).fit(part, Softmax(), Y[J])) for part, J in zip(parts, Js))


def measure(problem: str, placement: str, backend, a) -> dict:
    op, Y, options = build(problem, backend, a.scale)
    if problem == "folds":
        fit = fold_fits(op, Y, options, placement)
    else:
        plan = plan_for(op, preconditioner=options.preconditioner, rules=PLACEMENTS[placement])

        def fit():
            return _counts(NewtonCG(options).fit(op, Softmax(), Y, plan=plan))

    fit()  # warm-up: device matrices, fused kernels compiled, class layout uploaded
    best, counts = np.inf, None
    for _ in range(a.repeat):
        backend.synchronize()
        t = time.perf_counter()
        counts = fit()
        backend.synchronize()
        best = min(best, time.perf_counter() - t)
    newton, steps, mvms = (int(c) for c in counts)
    transfers = Transfers(backend)
    fit()
    uploads, downloads = transfers.uploads, transfers.downloads
    calls = dispatched_calls(backend, fit)
    return {
        "problem": problem,
        "placement": placement,
        "n": op.n_points,
        "C": op.n_classes,
        "seconds": best,
        "newton": newton,
        "cg_steps": steps,
        "mvms": mvms,
        "us_per_cg_step": 1e6 * best / max(1, steps),
        "uploads": uploads,
        "downloads": downloads,
        "calls_per_cg_step": None if calls is None else calls / max(1, steps),
    }


def _cell(v) -> str:
    return "-" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=("cuda", "torch-cpu", "numpy"), default="cuda")
    p.add_argument("--problems", nargs="+", choices=sorted(PROBLEMS), default=sorted(PROBLEMS))
    p.add_argument("--scale", type=float, default=1.0, help="n of each problem times this")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = p.parse_args(argv)
    if a.smoke:
        vars(a).update(backend="numpy", scale=0.02, repeat=1)
    default = DEFAULT_RULES.device_cg_min_entries
    rows = []
    for problem in a.problems:
        for placement in FOLD_PLACEMENTS if problem == "folds" else PLACEMENTS:
            backend = make_backend(a.backend)  # a fresh one per row: the counting wraps its methods
            rows.append(measure(problem, placement, backend, a))
    label = make_backend(a.backend).label
    print(f"backend: {label}; the plan's device_cg_min_entries = {default}")
    cols = (*KEYS, "uploads", "downloads", "calls_per_cg_step")
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(_cell(r[k]) for k in cols))
    print(json.dumps({"bench": "device_calls", "backend": label, "device_cg_min_entries": default, "rows": rows}))
    return 0


if __name__ == "__main__":
    from gpmodels.linalg.blas_threads import configure_openblas

    configure_openblas()  # the short OpenBLAS spin of the `gpmodels` command (re-runs this script with it)
    raise SystemExit(main())
