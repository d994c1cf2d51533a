"""Sparse linear-kernel products and ANOVA's tree products at WIPO-alpha section B's size (issue 40).

1. X (X^T B) with X of section B's size (Seeger NIPS 2007, Sec. 6.2: n = 9794 documents; here d = 30 000
   terms, ~150 distinct terms per document, Zipf-distributed, made by a seeded generator in this file) and
   B of k = 1319 columns (P, the tree's nodes) in the row-major latent layout: the compiled parallel product
   (:mod:`gpmodels.kernels.sparse_products` through :class:`~gpmodels.kernels.feature_gram.FeatureGram`,
   float64 and float32 storage) against scipy.sparse's one-core product, measured side by side (interleaved).
   GB/s counts the bytes the row-major product must move (:func:`~gpmodels.kernels.product_cost.features_cost`:
   X's entries twice, one k-row of the dense operand per stored entry in each product, the outputs written),
   and is given as a fraction of this machine's memory bandwidth measured in the same run (a large numpy copy
   on one thread and on every usable core: bytes read + written per second).
2. Φ_L^T, Φ_L and the class mixing Φ_L D Φ_L^T (:mod:`gpmodels.tree_products`) on an (n, C) vector over a
   seeded 3-level tree with C = 1172 leaves and P = 1319 nodes, compiled against the numpy level walks, in
   GB/s (input read + output written); and r: the peak of new memory of one ANOVA MVM (``level`` sharing,
   linear kernel) in vectors of n C numbers.

Timings are best-of-repeats (noise only adds time); on a loaded machine give the load (printed) with the
figures and read the ratios, which are measured side by side.

Usage: python bench/sparse_products.py [--smoke] [--cores N] [--repeats 3]
Prints a table and a final JSON line.
"""

from __future__ import annotations

from pin_cores import pin_from_argv

CORES = pin_from_argv()  # before numpy starts its threads

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from gpmodels import tree_products  # noqa: E402
from gpmodels.hierarchy import ClassTree  # noqa: E402
from gpmodels.kernels import sparse_products  # noqa: E402
from gpmodels.kernels.feature_gram import FeatureGram  # noqa: E402
from gpmodels.kernels.linear import Linear  # noqa: E402
from gpmodels.kernels.product_cost import features_cost  # noqa: E402
from gpmodels.kernels.representations import RepresentationConfig  # noqa: E402
from gpmodels.linalg.blas_threads import thread_pool, usable_cores  # noqa: E402
from gpmodels.priors.anova import ANOVAPrior  # noqa: E402

FULL = {"n": 9794, "d": 30_000, "terms": 150, "k": 1319, "branching": (10, 137, 1172)}
SMOKE = {"n": 300, "d": 2000, "terms": 20, "k": 40, "branching": (3, 8, 30)}


def bag_of_words(n: int, d: int, terms: int, seed: int = 0) -> sp.csr_matrix:
    """n documents of about ``terms`` distinct terms each over a d-term vocabulary, term ranks Zipf-distributed
    (p ∝ 1 / rank^1.07), weights log(1 + count) scaled to unit row norm; seeded."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, d + 1) ** 1.07
    p /= p.sum()
    cdf = np.cumsum(p)
    lengths = rng.poisson(1.6 * terms, size=n) + 1  # draws per document: ~terms distinct after repeats
    draws = np.minimum(np.searchsorted(cdf, rng.random(lengths.sum())), d - 1)
    rows = np.repeat(np.arange(n), lengths)
    X = sp.csr_matrix((np.ones(draws.size), (rows, draws)), shape=(n, d))  # duplicates summed: counts
    X.data = np.log1p(X.data)
    X = sp.diags(1.0 / np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel() + 1e-300)) @ X
    X = X.tocsr()
    X.sort_indices()
    return X


def three_level_tree(branching: tuple[int, int, int], seed: int = 0) -> ClassTree:
    """A tree with branching[0] top nodes, branching[1] middle nodes and branching[2] leaves, each node
    under a random parent of the level above (every parent keeps at least one child); seeded."""
    rng = np.random.default_rng(seed)
    edges, above = [], ["root"]
    for level, count in enumerate(branching):
        names = [f"L{level}.{j}" for j in range(count)]
        parents = np.concatenate([np.arange(len(above)), rng.integers(0, len(above), count - len(above))])
        edges += [(above[int(q)], name) for q, name in zip(rng.permutation(parents), names)]
        above = names
    return ClassTree(edges)


def best(f, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def interleaved(fs: dict, repeats: int) -> dict:
    """Best time of each callable, run in turns (warm first), so that load changes hit them alike."""
    times = {name: [] for name in fs}
    for f in fs.values():
        f()
    for _ in range(repeats):
        for name, f in fs.items():
            t = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t)
    return {name: min(ts) for name, ts in times.items()}


def memory_bandwidth(mib: int, repeats: int) -> dict:
    """Bytes read + written per second by np.copyto of a large array: one thread, and one slice per usable
    core on a thread pool (numpy's copy releases the GIL)."""
    a = np.ones(mib * 2**20 // 8)
    b = np.empty_like(a)
    one = best(lambda: np.copyto(b, a), repeats)
    cores = usable_cores()
    cuts = np.linspace(0, a.size, cores + 1).astype(int)
    pool = thread_pool(cores)

    def parallel():
        list(pool.map(lambda i: np.copyto(b[cuts[i] : cuts[i + 1]], a[cuts[i] : cuts[i + 1]]), range(cores)))

    many = best(parallel, repeats)
    return {"copy_mib": mib, "one_thread_gbs": 2 * a.nbytes / one / 1e9, "all_cores_gbs": 2 * a.nbytes / many / 1e9}


def sparse_section(cfg: dict, repeats: int, bandwidth: float) -> dict:
    X = bag_of_words(cfg["n"], cfg["d"], cfg["terms"])
    n, d, k = X.shape[0], X.shape[1], cfg["k"]
    B = np.random.default_rng(1).normal(size=(n, k))
    XT = X.T.tocsr()
    rep64, rep32 = FeatureGram(X), FeatureGram(X, dtype="float32")
    times = interleaved(
        {
            "scipy_one_core": lambda: X @ (XT @ B),
            "compiled_float64": lambda: rep64.mvm(B),
            "compiled_float32": lambda: rep32.mvm(B),
        },
        repeats,
    )
    exact = X @ (XT @ B)
    err32 = float(np.abs(rep32.mvm(B) - exact).max() / np.abs(exact).max())
    err64 = float(np.abs(rep64.mvm(B) - exact).max() / np.abs(exact).max())
    bytes64 = features_cost(n, d, X.nnz, k, sparse=True).bytes
    bytes32 = features_cost(n, d, X.nnz, k, sparse=True, itemsize=4).bytes
    out = {"n": n, "d": d, "nnz": int(X.nnz), "nnz_per_row": X.nnz / n, "columns": k, "seconds": times}
    out["gbs"] = {
        "scipy_one_core": bytes64 / times["scipy_one_core"] / 1e9,
        "compiled_float64": bytes64 / times["compiled_float64"] / 1e9,
        "compiled_float32": bytes32 / times["compiled_float32"] / 1e9,
    }
    out["fraction_of_bandwidth"] = {key: v * 1e9 / bandwidth for key, v in out["gbs"].items()}
    out["speedup_vs_scipy"] = {
        key: times["scipy_one_core"] / times[key] for key in ("compiled_float64", "compiled_float32")
    }
    out["relative_error"] = {"compiled_float64": err64, "compiled_float32": err32}
    out["threads"] = sparse_products.compiled_threads() if sparse_products.AVAILABLE else 1
    return out


def tree_section(cfg: dict, repeats: int) -> dict:
    tree = three_level_tree(cfg["branching"])
    n, C, P = cfg["n"], tree.n_classes, tree.n_nodes
    rng = np.random.default_rng(2)
    V, U, w = rng.normal(size=(n, C)), rng.normal(size=(n, P)), rng.random(P)
    ops = {"phi_t": lambda: tree.phi_t(V), "phi": lambda: tree.phi(U), "mix": lambda: tree.mix(V, w)}
    moved = {"phi_t": 8 * n * (C + P), "phi": 8 * n * (P + C), "mix": 16 * n * C}
    compiled = interleaved(ops, repeats) if tree_products.AVAILABLE else {}
    saved = tree_products.AVAILABLE
    tree_products.AVAILABLE = False
    try:
        walks = interleaved(ops, repeats)
    finally:
        tree_products.AVAILABLE = saved
    out = {"n": n, "C": C, "P": P, "numpy_walk_s": walks, "compiled_s": compiled}
    out["gbs"] = {key: moved[key] / t / 1e9 for key, t in (compiled or walks).items()}
    out["speedup_vs_walk"] = {key: walks[key] / t for key, t in compiled.items()}
    return out


def anova_memory(cfg: dict) -> dict:
    """Peak new memory of one ANOVA MVM (level sharing, linear kernel on the bag of words) / (8 n C)."""
    tree = three_level_tree(cfg["branching"])
    X = bag_of_words(cfg["n"], cfg["d"], cfg["terms"])
    groups = tree.node_groups("level")
    prior = ANOVAPrior(
        tree,
        Linear(),
        sharing="level",
        variance=list(np.linspace(1, 2, groups.max() + 1)),
        representation=RepresentationConfig(),
    )
    op = prior.operator(X, tree.n_classes)
    V = np.random.default_rng(3).normal(size=(X.shape[0], tree.n_classes))
    t = time.perf_counter()
    op.mvm(V)
    first = time.perf_counter() - t
    tracemalloc.start()
    tracemalloc.reset_peak()
    op.mvm(V)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rep = op.inner.rep_groups[0][0]
    return {"r": peak / V.nbytes, "vector_mib": V.nbytes / 2**20, "mvm_s": first, "auto": rep.choice.describe()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="a tiny run (seconds) that checks the bench works")
    ap.add_argument("--cores", type=int, default=None, help="pin to this many cores (bench/pin_cores.py)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    cfg = SMOKE if args.smoke else FULL
    load = os.getloadavg()[0]
    bw = memory_bandwidth(32 if args.smoke else 512, args.repeats)
    print(
        f"cores {usable_cores()}, load {load:.1f}; copy bandwidth {bw['one_thread_gbs']:.1f} GB/s one thread, "
        f"{bw['all_cores_gbs']:.1f} GB/s all cores"
    )
    sparse = sparse_section(cfg, args.repeats, bw["all_cores_gbs"] * 1e9)
    print(
        f"X (X^T B): n {sparse['n']}, d {sparse['d']}, {sparse['nnz_per_row']:.0f} per row, k {sparse['columns']}, "
        f"{sparse['threads']} threads"
    )
    for key, t in sparse["seconds"].items():
        print(
            f"  {key:18s} {t:8.3f} s  {sparse['gbs'][key]:6.2f} GB/s  {sparse['fraction_of_bandwidth'][key]:.2f} "
            "of the bandwidth"
        )
    print(f"  relative error float32 {sparse['relative_error']['compiled_float32']:.1e}")
    tree = tree_section(cfg, args.repeats)
    print(f"tree products: n {tree['n']}, C {tree['C']}, P {tree['P']}")
    for key, t in tree["numpy_walk_s"].items():
        c = tree["compiled_s"].get(key)
        print(
            f"  {key:6s} walk {t * 1e3:8.1f} ms"
            + (f"  compiled {c * 1e3:8.1f} ms  {tree['gbs'][key]:.2f} GB/s" if c else "")
        )
    memory = anova_memory(cfg)
    print(f"ANOVA MVM (level sharing): r = {memory['r']:.2f} vectors of n C numbers; auto: {memory['auto']}")
    load_after = os.getloadavg()[0]
    print(
        json.dumps(
            {
                "bench": "sparse_products",
                "smoke": args.smoke,
                "cores": usable_cores(),
                "load": [load, load_after],
                "bandwidth": bw,
                "sparse": sparse,
                "tree": tree,
                "anova_memory": memory,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
