"""Host-side glue of Newton–CG and CV: the softmax Hessian factor's products, the preconditioners and CG's
vector updates, old formula against the library's, and whole Newton–CG fits where the kernel product is
cheap (so that the glue dominates, as on a GPU).

1. Per function, at the shapes of a satimage mc-sep CV fold (3548, 6) and of imclef07a (10000, 63): the
   plain formulas the library used before (written out below as the yardstick: np.sum row sums, np.where
   masks, a fresh array per operation) against the library's, side by side in one run, interleaved,
   best of ``--repeat`` rounds.
2. Whole fits: Newton–CG MAP fits on a linear kernel over 10 features (an MVM is X (X^T B), microseconds):
   (3548, 6) separate kernels with the ``lowrank`` preconditioner, (10000, 63) tied with ``diagonal``.
   With ``--baseline PATH`` (a checkout of the code before, e.g. /work/main) each fit also runs on that
   code, in alternating subprocesses, best of ``--fits`` fits each.

Usage: OPENBLAS_NUM_THREADS=1 python bench/host_glue.py [--repeat 7] [--fits 3] [--baseline PATH]
Prints tables and a final JSON line {"bench": "host_glue", ...}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg as sla
from cv_common import Timed
from smoke import SMOKE_HELP  # noqa: E402

from gpmodels.inference.map.newton_cg import NewtonOptions, newton_cg
from gpmodels.inference.map.preconditioners import make_preconditioner
from gpmodels.kernels.linear import Linear
from gpmodels.likelihoods.base import HessianFactor
from gpmodels.likelihoods.softmax import Softmax
from gpmodels.linalg.arrays import HOST
from gpmodels.priors.independent import IndependentGP

SHAPES = [(3548, 6), (10000, 63)]
#: (name, n, C, prior: sharing, features, v, σ², Newton options): satimage's CV refits (specs/satimage-cv.yaml:
#: k1 = 13, k2 = 25, v = 10, σ² = 16, lowrank) on 60 features (rank 8: a partial deflation, so that CG takes
#: about 20 steps per Newton iteration, as on the RBF kernel), and imclef07a's shape with the diagonal
FITS = [
    (
        "satimage-like",
        3548,
        6,
        ("separate", 60, 10.0, 16.0),
        dict(max_iter=13, cg_max_iter=25, preconditioner="lowrank"),
    ),
    ("imclef-like", 10000, 63, ("tied", 10, 1.0, 1.0), dict(max_iter=8, preconditioner="diagonal")),
]
RANK = 32  # the lowrank preconditioner's rank in the per-function table (satimage's CV)


class Old:
    """The factor's products as the library wrote them before (the yardstick)."""

    def __init__(self, hf):
        self.hf, self.pi, self.sqrt_pi, self.free = hf, hf.pi, hf.sqrt_pi, hf.free
        self.inv = hf._inv_sqrt_pi
        self.zero_start = hf.zero_start

    def A(self, x):
        return x - self.pi * x.sum(axis=1, keepdims=True)

    def V(self, x):
        return self.A(self.sqrt_pi * np.where(self.free, x, 0.0))

    def Vt(self, y):
        t = y - np.sum(self.pi * y, axis=1, keepdims=True)
        return np.where(self.free, self.sqrt_pi * t, 0.0)

    def W(self, x):
        return self.pi * x - self.pi * np.sum(self.pi * x, axis=1, keepdims=True)

    def g_tilde(self, g):
        return np.where(self.free, g * self.inv, 0.0)

    def beta_init(self, alpha):
        return np.where(self.free & ~self.zero_start, alpha * self.inv, 0.0)

    def precond_diag(self, diag_K, point_block_mvm):
        w = point_block_mvm(self.pi)
        d = 1.0 + self.pi * (diag_K - 2.0 * w + np.sum(self.pi * w, axis=1, keepdims=True))
        return np.where(self.free, d, 1.0)

    def point_V(self):
        return HessianFactor.point_V(self)  # the generic default: V on the C unit vectors

    def lowrank_for_factor(self, pc):
        """The lowrank preconditioner's set-up and P^{-1} as they were: pair weights per call, scipy's cho_solve."""
        A, n, C = pc.A, *self.pi.shape
        R0, R = A.shape[1], int(pc.offsets[-1])
        Vb = self.point_V()
        D = np.maximum(self.precond_diag(pc.diag_res, pc._res_point_block_mvm), 1.0)
        G = np.matmul(Vb / D[:, None, :], np.transpose(Vb, (0, 2, 1)))
        L_rows, Fs = pc.L_rows, pc.F_stack
        F_big = pc.F_big() if L_rows is None and Fs is None else None
        if L_rows is not None:
            H = np.eye(R) + L_rows.T @ np.matmul(G, L_rows.reshape(n, C, R)).reshape(n * C, R)
        else:
            AA = (A[:, :, None] * A[:, None, :]).reshape(n, R0 * R0)
            G_sum = (AA.T @ G.reshape(n, C * C)).reshape(R0, R0, C, C)
            if Fs is not None:
                blocks = np.matmul(np.matmul(np.swapaxes(Fs, 1, 2)[:, None], G_sum), Fs[None])
                H = np.eye(R) + blocks.transpose(0, 2, 1, 3).reshape(R, R)
            else:
                H = np.eye(R) + F_big.T @ G_sum.transpose(0, 2, 1, 3).reshape(R0 * C, R0 * C) @ F_big
        chol = sla.cho_factor(H, lower=True)

        def apply_lowrank(r):
            y = r / D
            Vy = self.V(y)
            if L_rows is not None:
                LZ = (L_rows @ sla.cho_solve(chol, L_rows.T @ Vy.ravel())).reshape(n, C)
            elif Fs is not None:
                z = sla.cho_solve(chol, np.einsum("kcs,kc->ks", Fs, A.T @ Vy).ravel())
                LZ = A @ np.einsum("kcs,ks->kc", Fs, z.reshape(R0, -1))
            else:
                z = sla.cho_solve(chol, F_big.T @ (A.T @ Vy).ravel())
                LZ = A @ (F_big @ z).reshape(R0, C)
            return y - self.Vt(LZ) / D

        return apply_lowrank


def _cg_update_old(x, r, p, Ap, step):
    x += step * p
    r -= step * Ap


def _cg_update_new(x, r, p, Ap, step, scaled):
    x += np.multiply(p, step, out=scaled)
    r -= np.multiply(Ap, step, out=scaled)


def _problem(n, C, prior=("separate", 10, 1.0, 1.0), seed=0):
    """A linear kernel over ``d`` features (an MVM is X (X^T B): cheap) on Gaussian classes."""
    sharing, d, v, sigma2 = prior
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, n)
    X = rng.normal(size=(C, d))[y] + rng.normal(size=(n, d))
    return IndependentGP(Linear(), sharing, v, sigma2).operator(X, C), np.eye(C)[y]


def _lowrank(pc, hf):
    """r -> P^{-1} r of the preconditioner ``pc`` at the Hessian factor ``hf`` on host arrays."""
    return pc.inverse(hf).on(HOST, hf)


def _pairs(n, C, rng):
    """(name, old thunk, new thunk, agreement) per function at one shape."""
    op, Y = _problem(n, C, FITS[0][3] if C < 10 else FITS[1][3])  # the fits' problems
    U = 3.0 * rng.normal(size=(n, C))
    hf = Softmax().hessian_factor(U, Y)
    old = Old(hf)
    x, y = rng.normal(size=(n, C)), rng.normal(size=(n, C))
    diag_K = op.diag()
    pbm = op.point_block_mvm
    rows = [
        ("V", lambda: old.V(x), lambda: hf.V(x)),
        ("Vt", lambda: old.Vt(y), lambda: hf.Vt(y)),
        ("_A", lambda: old.A(x), lambda: hf._A(x)),
        ("W", lambda: old.W(x), lambda: hf.W(x)),
        ("g_tilde", lambda: old.g_tilde(x), lambda: hf.g_tilde(x)),
        ("beta_init", lambda: old.beta_init(x), lambda: hf.beta_init(x)),
        ("precond_diag", lambda: old.precond_diag(diag_K, pbm), lambda: hf.precond_diag(diag_K, pbm)),
        ("point_V", old.point_V, hf.point_V),
    ]
    bufs = [rng.normal(size=(n, C)) for _ in range(4)] + [np.empty((n, C))]
    rows.append(
        (
            "cg update",
            lambda: _cg_update_old(*bufs[:4], 1e-3),
            lambda: _cg_update_new(*bufs[:4], 1e-3, bufs[4]),
        )
    )
    if C < 10:  # the lowrank preconditioner at the satimage shape (the fits use it there)
        pc = make_preconditioner("lowrank", op, rank=RANK)
        rows.append(("lowrank set-up", lambda: old.lowrank_for_factor(pc), lambda: _lowrank(pc, hf)))
        a_old, a_new = old.lowrank_for_factor(pc), _lowrank(pc, hf)
        rows.append(("lowrank apply", lambda: a_old(x), lambda: a_new(x)))
        pc_rows = make_preconditioner("lowrank", op, rank=8)  # R = 54 columns of L, as satimage's R0 = 32 + 6
        pc_rows.use_rows(True)  # Z^T B^{-1} Z from L's rows: the way taken where the F_k have one column
        rows.append(("lowrank set-up rows", lambda: old.lowrank_for_factor(pc_rows), lambda: _lowrank(pc_rows, hf)))
        b_old, b_new = old.lowrank_for_factor(pc_rows), _lowrank(pc_rows, hf)
        rows.append(("lowrank apply rows", lambda: b_old(x), lambda: b_new(x)))
    return rows


def _best(fn, number, repeat):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t) / number)
    return best


def micro(repeat: int) -> list[dict]:
    rng = np.random.default_rng(0)
    out = []
    print(f"{'function':<24} {'shape':>11} {'old µs':>10} {'new µs':>10} {'speed-up':>9} {'max rel diff':>13}")
    for n, C in SHAPES:
        for name, f_old, f_new in _pairs(n, C, rng):
            a, b = f_old(), f_new()
            diff = 0.0
            if isinstance(a, np.ndarray):
                diff = float(np.max(np.abs(a - b)) / max(np.max(np.abs(a)), 1e-300))
            number = max(1, int(0.02 / max(_best(f_new, 1, 1), 1e-7)))
            t_old, t_new = np.inf, np.inf
            for _ in range(repeat):  # interleaved rounds: the machine's load hits both alike
                t_old = min(t_old, _best(f_old, number, 1))
                t_new = min(t_new, _best(f_new, number, 1))
            row = dict(function=name, n=n, C=C, old_us=t_old * 1e6, new_us=t_new * 1e6, rel_diff=diff)
            out.append(row)
            print(
                f"{name:<24} {f'({n}, {C})':>11} {row['old_us']:10.1f} {row['new_us']:10.1f} "
                f"{t_old / t_new:8.2f}x {diff:13.1e}"
            )
    return out


def fits(n_fits: int) -> list[dict]:
    """Best of ``n_fits`` Newton–CG fits per problem with the gpmodels on the path."""
    out = []
    for name, n, C, prior, options in FITS:
        op, Y = _problem(n, C, prior)
        opts = NewtonOptions(**options)
        pc = opts.preconditioner
        best = None
        for _ in range(n_fits):
            clock = {"mvm": 0.0, "mvm_calls": 0, "grad_trace": 0.0}
            t = time.perf_counter()
            res = newton_cg(Timed(op, clock), Softmax(), Y, opts)
            t = time.perf_counter() - t
            if best is None or t < best["seconds"]:
                d = res.diagnostics
                best = dict(fit=name, n=n, C=C, preconditioner=pc, seconds=t, mvm_seconds=clock["mvm"])
                best.update(glue_seconds=t - clock["mvm"], mvms=d.mvm_count, phi=res.phi)
        out.append(best)
    return out


def _fits_in(path: str, n_fits: int, smoke: bool = False) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=path)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--fits-json", "--fits", str(n_fits)] + ["--smoke"] * smoke
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the fits on {path} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def compare_fits(baseline: str | None, n_fits: int, rounds: int = 2, smoke: bool = False) -> list[dict]:
    """The fits on this checkout and on ``baseline``, in alternating subprocesses, best per side."""
    here = str(Path(__file__).resolve().parent.parent)
    sides = {"after": here} | ({"before": baseline} if baseline else {})
    best: dict[str, list[dict]] = {}
    for _ in range(rounds):
        for side, path in sides.items():
            rows = _fits_in(path, n_fits, smoke)
            if side not in best:
                best[side] = rows
            else:
                best[side] = [min(a, b, key=lambda r: r["seconds"]) for a, b in zip(best[side], rows)]
    out = []
    head = ("fit", "shape", "precond", "side", "seconds", "MVM s", "glue s", "MVMs", "Φ")
    print("\n{:<14} {:>11} {:>9} {:>7} {:>8} {:>7} {:>7} {:>5} {:>18}".format(*head))
    for i, (name, n, C, _, options) in enumerate(FITS):
        pc = options["preconditioner"]
        row = dict(fit=name, n=n, C=C, preconditioner=pc)
        for side in sides:
            r = best[side][i]
            row[side] = {k: r[k] for k in ("seconds", "mvm_seconds", "glue_seconds", "mvms", "phi")}
            print(
                f"{name:<14} {f'({n}, {C})':>11} {pc:>9} {side:>7} {r['seconds']:8.3f} {r['mvm_seconds']:7.3f} "
                f"{r['glue_seconds']:7.3f} {r['mvms']:5d} {r['phi']:18.10g}"
            )
        if baseline:
            row["speed_up"] = row["before"]["seconds"] / row["after"]["seconds"]
            row["glue_speed_up"] = row["before"]["glue_seconds"] / row["after"]["glue_seconds"]
        out.append(row)
    return out


def _shrink_for_smoke() -> None:
    """Problems of the same kinds at a few hundred points (the --smoke run)."""
    SHAPES[:] = [(300, 6), (400, 12)]
    FITS[:] = [(name, min(n, 300), min(C, 12), prior, options) for name, n, C, prior, options in FITS]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--fits", type=int, default=3)
    ap.add_argument("--baseline", default=None, help="a checkout of the code before (its root)")
    ap.add_argument("--fits-json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = ap.parse_args()
    if a.smoke:
        vars(a).update(repeat=1, fits=1)
        _shrink_for_smoke()
    if a.fits_json:
        print(json.dumps(fits(a.fits)))
        return
    rows = micro(a.repeat)
    fit_rows = compare_fits(a.baseline, a.fits, rounds=1 if a.smoke else 2, smoke=a.smoke)
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    print(json.dumps({"bench": "host_glue", "openblas_threads": threads, "functions": rows, "fits": fit_rows}))


if __name__ == "__main__":
    main()
