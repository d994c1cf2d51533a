"""GPU bench (issue 24): MAP fits and CV learning with kernel matrices on a device, against GPyTorch's
Dirichlet exact GP classifier on the same card in the same run.

Jobs (each in its own subprocess, so that its peak device memory is its own and an out-of-memory
job ends only itself):

- ``scale-N``: MAP fits of bench/scale.py's generator (C = 10, d = 20, tied RBF, v = 5, σ² = 1,
  w = 1 / Σ_j Var[x_j], its Newton–CG settings) at each ``--n``; the representation is the device's
  ``auto`` (stored float64, stored float32 or recomputed tiles, from the free device memory), the
  Gram build counted in the seconds; test error and log loss on its 5000 test points;
- ``satimage-mc-sep``: specs/satimage-cv.yaml's mc-sep CV learning (partition 0) plus the final fit,
  test error on the 2000 test points (``--satimage-max-train`` / ``--satimage-max-iter`` shrink it), as the
  spec runs it: on ``cuda`` its ``folds_per_fit: auto`` refits the 5 folds in lockstep in this process, each
  its own Newton–CG fit, every step's product one product of K̃ with a column per fold
  (the execution plan's ``folds_per_fit``; ``--folds-per-fit`` sets it);
  ``satimage-mc-sep-workers`` (on ``cuda``) refits the folds one by one (``--folds-per-fit 1``) on 5 spawned
  worker processes, each with its own CUDA context (their start-up counts in the seconds and is given as
  ``_worker_start_seconds``), and ``satimage-mc-sep-serial`` (after imclef07a) one by one in this process:
  the ways the folds ran before ``auto`` chose lockstep on a device;
- ``float32-product``: the stored float32 MVM with an (n, 10) right-hand side at the largest
  ``--n`` <= 60 000, as n^2 4 bytes / time against the copy bandwidth (goal 4);
- ``float64-vs-cpu``: the float64 device fit against the CPU fit at n = ``--check-n`` (Φ's relative
  difference and whether the predicted labels are identical; goal 5);
- ``imclef07a-anova``: specs/imclef07a-hier.yaml's MAP fit (ANOVA class-tree prior, RBF, subtree
  kernels) on all 10 000 training points (``--imclef-max-train`` shrinks it; goal 6), through the
  driver's own ``model.representation.device``;
- ``gpytorch-*``: where ``gpytorch`` imports, its Dirichlet exact GP (GPyTorch's multiclass example:
  independent RBF per class, ML-II by Adam, lr 0.1) on the scale jobs (``--gpytorch-iters-scale``,
  30) and satimage (``--gpytorch-iters-satimage``, 200), standardised inputs.

``copy_bandwidth_tbps`` is the device-to-device copy of a ``--copy-gib`` buffer, read plus written
bytes over the time (the memory traffic of a copy), best of 10.

``--namespace cuda`` (default: PyTorch's GPU, gpmodels[cuda]) or ``numpy`` / ``strict`` (the CI
namespaces: the same device code on the host, for a smoke run: ``python bench/gpu.py --namespace
numpy --n 400 --satimage-max-train 150 --satimage-max-iter 1 --check-n 200``).

On a GPU machine without network (PyTorch and gpytorch there, array-api-compat perhaps not): before
the run, copy array-api-compat and array-api-strict (pure Python) and the data into the ignored
``bench/out/`` of the checkout and carry ``bench/out/vendor`` and ``bench/out/data``::

    mkdir -p bench/out/vendor bench/out/data
    for m in array_api_compat array_api_strict; do
        cp -r "$(python -c "import $m as a, os; print(os.path.dirname(a.__file__))")" bench/out/vendor/; done
    cp -r ../shared/data/satimage ../shared/data/imclef07a bench/out/data/

then on the device run ``bash bench/gpu_session.sh`` (what the card is doing, the ``gpu`` tests, then this
bench within ``BUDGET`` seconds; ``bench/gpu_profile.sh`` profiles the CV and ANOVA jobs there).

Prints a table and a final JSON line ``{"bench": "gpu", "device", "rows": [{job, library, n, C,
seconds, mvms, seconds_per_mvm, test_error, log_loss, peak_gpu_gib}], "copy_bandwidth_tbps", ...}``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from smoke import SMOKE_HELP, cuda_missing, skipped  # noqa: E402

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
ROOT = BENCH.parent
DEFAULT_N = (20_000, 60_000, 200_000)
ROW_KEYS = ("job", "library", "n", "C", "seconds", "mvms", "seconds_per_mvm", "test_error", "log_loss", "peak_gpu_gib")


# ---------------------------------------------------------------------------- device helpers
def make_backend(namespace: str, fused: bool = True):
    """The namespace's backend; ``fused``: on ``cuda``, the Triton-fused products where Triton imports
    (False: the array-API products only)."""
    from gpmodels.kernels.device.backend import cuda_backend, numpy_backend, strict_backend, torch_backend

    if namespace == "cuda" and not fused:
        cuda_backend()  # the DeviceError naming what is missing, where it is
        return torch_backend("cuda", fused=False)
    return {"cuda": cuda_backend, "numpy": numpy_backend, "strict": strict_backend}[namespace]()


def _torch_cuda(backend):
    return getattr(backend, "torch", None) is not None and not backend.on_host


def _reset_peak(backend) -> None:
    if _torch_cuda(backend):
        backend.torch.cuda.reset_peak_memory_stats(backend.device)


def _peak_gib(backend) -> float | None:
    if _torch_cuda(backend):
        return backend.torch.cuda.max_memory_allocated(backend.device) / 2**30
    return None


def copy_bandwidth_tbps(backend, gib: float) -> float:
    """Best of 10 copies of a ``gib`` buffer: (read + written bytes) / seconds / 1e12."""
    nbytes = int(gib * 2**30) // 8 * 8
    if _torch_cuda(backend):
        torch = backend.torch
        src = torch.empty(nbytes // 4, dtype=torch.float32, device=backend.device).uniform_()
        dst = torch.empty_like(src)

        def copy():
            dst.copy_(src)
            torch.cuda.synchronize(backend.device)
    else:  # host namespaces: the host's own memory copy
        src = np.random.default_rng(0).random(nbytes // 8)
        dst = np.empty_like(src)

        def copy():
            np.copyto(dst, src)

    copy()
    best = min(_timed(copy) for _ in range(10))
    return 2 * nbytes / best / 1e12


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _scores(P, y) -> tuple[float, float]:
    from gpmodels.scoring import metrics as M

    return float(M.error(P, y)), float(M.log_loss(P, y))


# ---------------------------------------------------------------------------- gpmodels jobs
def _scale_problem(n: int, representation):
    from scale import N_TEST, C, synthetic

    from gpmodels import RBF
    from gpmodels.priors.independent import IndependentGP

    X, y = synthetic(n, 1 + n)
    Xt, yt = synthetic(N_TEST, 2)
    w = 1.0 / float(np.sum(np.var(X, axis=0)))
    return IndependentGP(RBF(w), "tied", 5.0, 1.0, representation=representation), X, y, Xt, yt, C


def _map_fit(prior, X, y, Xt, yt, C, backend, newton: dict):
    """Build + Newton–CG fit (seconds include the build), 3 timed MVMs, test scores."""
    from gpmodels import Softmax
    from gpmodels.inference.map.newton_cg import NewtonOptions, newton_cg
    from gpmodels.validation import labels_to_targets

    lik = Softmax()
    t0 = time.perf_counter()
    op = prior.operator(X, C)
    res = newton_cg(op, lik, labels_to_targets(y, C), NewtonOptions(**newton))
    seconds = time.perf_counter() - t0
    V = np.random.default_rng(0).normal(size=(X.shape[0], C))
    per_mvm = float(np.median([_timed(lambda: op.mvm(V)) for _ in range(3)]))  # host results: synchronised
    P = lik.predict(op.cross_test(Xt).mvm(res.alpha))
    err, ll = _scores(P, yt)
    return (
        op,
        res,
        {
            "seconds": seconds,
            "mvms": int(res.diagnostics.mvm_count),
            "seconds_per_mvm": per_mvm,
            "test_error": err,
            "log_loss": ll,
            "_phi": float(res.phi),
            "_converged": bool(res.diagnostics.converged),
            "_predicted": P.argmax(axis=1).tolist(),
        },
    )


def job_scale(a, backend) -> dict:
    from scale import NEWTON

    from gpmodels.driver.build import representation_choices
    from gpmodels.kernels.device.config import DeviceRepresentationConfig

    config = DeviceRepresentationConfig(backend, kind="auto", memory_mb=a.tile_mb)
    prior, X, y, Xt, yt, C = _scale_problem(a.n, config)
    op, _, row = _map_fit(prior, X, y, Xt, yt, C, backend, NEWTON)
    row.pop("_predicted")
    labels = sorted({c["label"] for c in representation_choices(op)})
    return {"n": a.n, "C": C, "_representation": "+".join(labels), **row}


def _best_product(rep, B, backend, repeats: int) -> tuple[float, object]:
    """Best time of ``repeats`` device products M B (after one untimed: compilation, tuning), and M B."""
    out = rep.device_mvm(B)
    backend.synchronize()

    def product():
        rep.device_mvm(B)
        backend.synchronize()

    return min(_timed(product) for _ in range(repeats)), out


def _relative_difference(backend, a, b) -> float:
    a, b = backend.to_host(a), backend.to_host(b)
    return float(np.abs(a - b).max() / np.abs(b).max())


def job_float32_product(a, backend) -> dict:
    """The stored float32 product with an (n, 10) right-hand side, fused (the row) and through the
    array-API tiles (``_array_api_seconds``), on one matrix."""
    from scale import synthetic

    from gpmodels import RBF
    from gpmodels.kernels.device.gram import DeviceMatrixCross, DeviceStoredGram

    X, _ = synthetic(a.n, 1 + a.n)
    rep = DeviceStoredGram(X, RBF(1.0 / float(np.sum(np.var(X, axis=0)))), backend, "float32", a.tile_mb)
    B = backend.from_host(np.random.default_rng(0).normal(size=(a.n, 10)))
    best, out = _best_product(rep, B, backend, 10)
    row = {"n": a.n, "C": 10, "seconds": best, "mvms": 1, "seconds_per_mvm": best}
    row["_float32_tbps"] = a.n * a.n * 4 / best / 1e12
    if backend.fused is not None:
        plain = DeviceMatrixCross(make_backend(a.namespace, fused=False), rep.M, a.tile_mb)
        row["_array_api_seconds"], ref = _best_product(plain, B, backend, 3)
        row["_array_api_tbps"] = a.n * a.n * 4 / row["_array_api_seconds"] / 1e12
        row["_fused_vs_array_api_rel_diff"] = _relative_difference(backend, out, ref)
    return row


def job_recomputed_product(a, backend) -> dict:
    """One recomputed product with an (n, 10) right-hand side at the largest ``--n``, fused (the row)
    and through the array-API tiles (``_array_api_seconds``)."""
    from scale import synthetic

    from gpmodels import RBF
    from gpmodels.kernels.device.gram import DeviceRecomputedGram

    X, _ = synthetic(a.n, 1 + a.n)
    kernel = RBF(1.0 / float(np.sum(np.var(X, axis=0))))
    rep = DeviceRecomputedGram(X, kernel, backend, a.tile_mb)
    B = backend.from_host(np.random.default_rng(0).normal(size=(a.n, 10)))
    best, out = _best_product(rep, B, backend, 3)
    row = {"n": a.n, "C": 10, "seconds": best, "mvms": 1, "seconds_per_mvm": best}
    if backend.fused is not None:
        plain = DeviceRecomputedGram(X, kernel, make_backend(a.namespace, fused=False), a.tile_mb)
        row["_array_api_seconds"], ref = _best_product(plain, B, backend, 1)
        row["_fused_vs_array_api_rel_diff"] = _relative_difference(backend, out, ref)
    return row


def job_float64_vs_cpu(a, backend) -> dict:
    from scale import NEWTON

    from gpmodels.kernels.device.config import DeviceRepresentationConfig
    from gpmodels.kernels.representations import RepresentationConfig

    newton = {**NEWTON, "grad_tol": 1e-8}
    fits = []
    for config in (
        DeviceRepresentationConfig(backend, kind="stored", dtype="float64", memory_mb=a.tile_mb),
        RepresentationConfig(kind="stored", dtype="float64"),
    ):
        prior, X, y, Xt, yt, C = _scale_problem(a.n, config)
        fits.append(_map_fit(prior, X, y, Xt, yt, C, backend, newton)[2])
    dev, cpu = fits
    return {
        "n": a.n,
        "C": 10,
        **{k: dev[k] for k in ("seconds", "mvms", "seconds_per_mvm", "test_error", "log_loss")},
        "_phi_rel_diff": abs(dev["_phi"] - cpu["_phi"]) / abs(cpu["_phi"]),
        "_identical_predictions": dev["_predicted"] == cpu["_predicted"],
    }


def _satimage(a):
    import attrs

    from gpmodels.driver.build import build_likelihood, resolve_kernel
    from gpmodels.driver.build_data import build_data
    from gpmodels.driver.loader import load_spec
    from gpmodels.driver.runners.cv import build_learn_options

    spec, base = load_spec(ROOT / "specs" / "satimage-cv.yaml")
    if a.satimage_max_train:
        spec = attrs.evolve(spec, data=attrs.evolve(spec.data, max_train=a.satimage_max_train))
    if a.satimage_max_iter:
        cv = spec.objective.cv
        spec = attrs.evolve(
            spec,
            objective=attrs.evolve(
                spec.objective, cv=attrs.evolve(cv, outer=attrs.evolve(cv.outer, max_iter=a.satimage_max_iter))
            ),
        )
    data = build_data(spec, base)
    model = attrs.evolve(spec.model, kernel=resolve_kernel(spec.model.kernel, data.X_train))
    options = build_learn_options(spec.objective)
    if a.folds_per_fit:
        options = attrs.evolve(options, cv=attrs.evolve(options.cv, folds_per_fit=a.folds_per_fit))
    return spec, base, data, model, build_likelihood(model), options


def fold_workers(a, q: int) -> int:
    """Worker processes of the satimage folds (``q`` of them): ``--fold-workers``, by default one per
    fold where they are refitted one by one on ``cuda`` (``--folds-per-fit 1``: the folds' host work in
    parallel, each worker with its own CUDA context), else 1 (this process: in lockstep the folds are one job)."""
    if a.fold_workers is not None:
        return min(a.fold_workers, q)
    return q if a.namespace == "cuda" and a.folds_per_fit == 1 else 1


def job_satimage(a, backend) -> dict:
    """mc-sep CV learning + final fit at the spec's settings, partition 0, the folds in this process or
    on ``fold_workers(a, q)`` worker processes (spawned where the matrices are on CUDA: each imports
    PyTorch and rebuilds the operator on the card; their start-up is inside the timed learning and
    reported as ``_worker_start_seconds``)."""
    import attrs
    from cv_common import learn_and_evaluate

    from gpmodels.data.splits import kfold_partition
    from gpmodels.driver.build import build_prior
    from gpmodels.engine import LocalEngine, ProcessEngine
    from gpmodels.kernels.device.config import DeviceRepresentationConfig
    from gpmodels.linalg.blas_threads import usable_cores

    spec, base, data, model, lik, options = _satimage(a)
    config = DeviceRepresentationConfig(backend, kind="auto", dtype=model.representation.dtype, memory_mb=a.tile_mb)
    prior = attrs.evolve(
        build_prior(attrs.evolve(model, sharing="separate"), data.X_train, base), representation=config
    )
    folds = kfold_partition(data.y_train.size, spec.objective.cv.folds, 0, y=data.y_train)
    workers = fold_workers(a, len(folds))
    engine = LocalEngine() if workers <= 1 else ProcessEngine(workers, max(1, usable_cores() // workers))
    with engine:
        r = learn_and_evaluate(prior, lik, data, folds, options, say=lambda s: None, engine=engine)
    seconds = r["learning_seconds"] + r["final_fit_seconds"]
    # the folds' MVMs as they count them (the Timed proxy of this process sees none on workers, and one
    # product of K̃ per lockstep step for up to five folds) and the final fit's
    mvms = int(r["fold_mvms"] + r["final_fit_mvms"])
    return {
        "n": int(data.y_train.size),
        "C": int(data.n_classes),
        "seconds": seconds,
        "mvms": mvms,
        "seconds_per_mvm": seconds / max(1, mvms),
        "test_error": float(r["test_error"]),
        "log_loss": float(r["test_log_loss"]),
        "_learning_seconds": r["learning_seconds"],
        "_final_fit_seconds": r["final_fit_seconds"],
        "_evaluations": r["evaluations"],
        "_seconds_per_evaluation": r["seconds_per_evaluation"],
        # where an evaluation's time went: the folds' refits and accumulation solves, the gradient's trace, the
        # kernel matrices' builds at each θ (shares of the whole when the folds run in this process)
        "_fold_work_seconds": r["fold_work_seconds"],
        "_grad_trace_seconds": r["grad_trace_seconds"],
        "_kernel_build_share": r["kernel_build_share"],
        "_folds_per_fit": r["folds_per_fit"],
        "_fold_workers": workers,
        "_worker_start": getattr(engine, "started_with", None),
        "_worker_start_seconds": getattr(engine, "start_seconds", 0.0),
    }


# ---------------------------------------------------------------------------- GPyTorch
def gpytorch_dirichlet(X, y, Xt, yt, iterations: int, device: str) -> dict:
    """GPyTorch's Dirichlet-based exact GP classifier (its multiclass example): one RBF kernel and
    constant mean per class (batch), learned noise, Adam at lr 0.1 on the exact marginal likelihood;
    class probabilities from 256 posterior samples of the latent functions, as in the example."""
    import gpytorch
    import torch

    dev, dt = torch.device(device), torch.float32
    mu, sd = X.mean(axis=0), X.std(axis=0) + 1e-12  # standardised inputs
    tx = torch.as_tensor((X - mu) / sd, dtype=dt, device=dev)
    ty = torch.as_tensor(y, dtype=torch.long, device=dev)
    tt = torch.as_tensor((Xt - mu) / sd, dtype=dt, device=dev)
    likelihood = gpytorch.likelihoods.DirichletClassificationLikelihood(ty, learn_additional_noise=True).to(dev)
    C = likelihood.num_classes

    class DirichletGP(gpytorch.models.ExactGP):
        def __init__(self):
            super().__init__(tx, likelihood.transformed_targets, likelihood)
            self.mean_module = gpytorch.means.ConstantMean(batch_shape=torch.Size((C,)))
            self.covar_module = gpytorch.kernels.ScaleKernel(
                gpytorch.kernels.RBFKernel(batch_shape=torch.Size((C,))), batch_shape=torch.Size((C,))
            )

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    model = DirichletGP().to(dev)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    t0 = time.perf_counter()
    model.train()
    likelihood.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    for _ in range(iterations):
        optimizer.zero_grad()
        loss = -mll(model(tx), likelihood.transformed_targets).sum()
        loss.backward()
        optimizer.step()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    seconds = time.perf_counter() - t0
    model.eval()
    likelihood.eval()
    with torch.no_grad(), gpytorch.settings.fast_pred_var():
        samples = model(tt).sample(torch.Size((256,))).exp()  # (256, C, n_test)
        P = (samples / samples.sum(-2, keepdim=True)).mean(0).T.double().cpu().numpy()
    err, ll = _scores(P, yt)
    return {"seconds": seconds, "test_error": err, "log_loss": ll, "C": int(C), "n": int(X.shape[0])}


def job_gpytorch(a, backend) -> dict:
    device = str(backend.device) if _torch_cuda(backend) else "cpu"
    if a.problem == "satimage":
        _, _, data, *_ = _satimage(a)
        X, y, Xt, yt = data.X_train, data.y_train, data.X_test, data.y_test
    elif a.problem == "imclef07a":
        import attrs

        from gpmodels.driver.build_data import build_data
        from gpmodels.driver.loader import load_spec

        spec, base = load_spec(ROOT / "specs" / "imclef07a-hier.yaml")
        data = build_data(attrs.evolve(spec, data=attrs.evolve(spec.data, max_train=a.imclef_max_train)), base)
        X, y, Xt, yt = data.X_train, data.y_train, data.X_test, data.y_test
    else:
        from scale import N_TEST, synthetic

        (X, y), (Xt, yt) = synthetic(a.n, 1 + a.n), synthetic(N_TEST, 2)
    return gpytorch_dirichlet(X, y, Xt, yt, a.iterations, device)


def job_imclef(a, backend) -> dict:
    """specs/imclef07a-hier.yaml with ``max_train`` = ``--imclef-max-train`` (None: all 10 000 points),
    its kernel matrices on the device through the driver's ``model.representation.device: cuda``; on a
    CI namespace that namespace stands in for the GPU (the driver's ``cuda`` then builds there)."""
    import attrs

    from gpmodels.driver.build import build_operator, resolve_model
    from gpmodels.driver.build_data import build_data, build_tree
    from gpmodels.driver.loader import load_spec
    from gpmodels.kernels.device import backend as backends

    if a.namespace != "cuda":
        backends.cuda_status, backends.cuda_backend = (lambda: None), (lambda: backend)
    spec, base = load_spec(ROOT / "specs" / "imclef07a-hier.yaml")
    spec = attrs.evolve(spec, data=attrs.evolve(spec.data, max_train=a.imclef_max_train))
    model = attrs.evolve(spec.model, representation=attrs.evolve(spec.model.representation, device="cuda"))
    data = build_data(spec, base)
    model, tree = resolve_model(model, data.X_train), build_tree(spec, data, base)

    class Prior:  # the spec's operator, built inside the timed fit
        def operator(self, X, C):
            return build_operator(model, X, C, base, tree=tree)

    _, _, row = _map_fit(
        Prior(),
        data.X_train,
        data.y_train,
        data.X_test,
        data.y_test,
        data.n_classes,
        backend,
        {"max_iter": 30, "cg_max_iter": 50},
    )
    row.pop("_predicted")
    return {"n": int(data.X_train.shape[0]), "C": int(data.n_classes), **row}


JOBS = {
    "scale": job_scale,
    "satimage": job_satimage,
    "imclef07a": job_imclef,
    "float32-product": job_float32_product,
    "recomputed-product": job_recomputed_product,
    "float64-vs-cpu": job_float64_vs_cpu,
    "gpytorch": job_gpytorch,
}


def run_job(a) -> dict:
    """One job in this process (``--job``): its row, with the peak device memory."""
    backend = make_backend(a.namespace, fused=not a.no_fused)
    _reset_peak(backend)
    row = JOBS[a.job](a, backend)
    return {**row, "peak_gpu_gib": _peak_gib(backend)}


# ---------------------------------------------------------------------------- driver
def _job_argv(a, job: str, **kw) -> list[str]:
    argv = ["--job", job, "--namespace", a.namespace, "--tile-mb", str(a.tile_mb)] + (
        ["--no-fused"] if a.no_fused else []
    )
    for key in ("satimage_max_train", "satimage_max_iter", "imclef_max_train", "fold_workers", "folds_per_fit"):
        if getattr(a, key):
            argv += [f"--{key.replace('_', '-')}", str(getattr(a, key))]
    for key, value in kw.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    return argv


def _in_subprocess(argv: list[str], timeout: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), *argv]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": f"exit {done.returncode}: {tail[:300]}"}
    return json.loads(lines[-1])


def _plan(a, gpytorch: bool) -> list[tuple[str, str, list[str]]]:
    """(job name, library, argv) of every job, in the order they run: the product and precision checks,
    the gpmodels fits (the largest n last), then GPyTorch on the same problems (satimage, the one it fits
    at every size, next to its gpmodels row), so that ``--deadline`` cuts what matters least."""
    largest, small = max(a.n), [n for n in a.n if n <= 60_000]
    plan = [
        ("float32-product", "gpmodels", _job_argv(a, "float32-product", n=max(small or [min(a.n)]))),
        ("recomputed-product", "gpmodels", _job_argv(a, "recomputed-product", n=largest)),
        ("float64-vs-cpu", "gpmodels", _job_argv(a, "float64-vs-cpu", n=a.check_n)),
    ]
    plan += [(f"scale-{n}", "gpmodels", _job_argv(a, "scale", n=n)) for n in sorted(a.n)[:-1]]
    plan.append(("satimage-mc-sep", "gpmodels", _job_argv(a, "satimage")))
    one_by_one = a.namespace == "cuda" and a.folds_per_fit is None and a.fold_workers is None
    if one_by_one:  # the folds refitted one by one, each on its own worker
        plan.append(("satimage-mc-sep-workers", "gpmodels", _job_argv(a, "satimage", folds_per_fit=1)))
    if gpytorch:
        argv = _job_argv(a, "gpytorch", problem="satimage", iterations=a.gpytorch_iters_satimage)
        plan.append(("satimage-mc-sep", "gpytorch", argv))
    if not a.no_imclef:
        plan.append(("imclef07a-anova", "gpmodels", _job_argv(a, "imclef07a")))
    if one_by_one:  # the folds one by one in this process
        plan.append(("satimage-mc-sep-serial", "gpmodels", _job_argv(a, "satimage", fold_workers=1, folds_per_fit=1)))
    plan.append((f"scale-{largest}", "gpmodels", _job_argv(a, "scale", n=largest)))
    if gpytorch:
        for n in sorted(a.n):
            argv = _job_argv(a, "gpytorch", n=n, problem="scale", iterations=a.gpytorch_iters_scale)
            plan.append((f"scale-{n}", "gpytorch", argv))
        if not a.no_imclef:
            argv = _job_argv(a, "gpytorch", problem="imclef07a", iterations=a.gpytorch_iters_scale)
            plan.append(("imclef07a-anova", "gpytorch", argv))
    return plan


def _gpytorch_imports() -> bool:
    try:
        import gpytorch  # noqa: F401
    except ImportError:
        return False
    return True


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--namespace",
        default="cuda",
        choices=("cuda", "numpy", "strict"),
        help="where the device code runs: cuda (PyTorch's GPU) or a CI namespace on the host",
    )
    p.add_argument("--n", type=int, nargs="+", default=list(DEFAULT_N), help="sizes of the scale MAP fits")
    p.add_argument("--check-n", type=int, default=2000, help="n of the float64 device-against-CPU check")
    p.add_argument("--satimage-max-train", type=int, default=None, help="subsample satimage's training set")
    p.add_argument("--satimage-max-iter", type=int, default=None, help="override objective.cv.outer.max_iter")
    p.add_argument("--imclef-max-train", type=int, default=None, help="subsample imclef07a (default: all 10 000)")
    p.add_argument("--no-imclef", action="store_true", help="skip the imclef07a job")
    p.add_argument(
        "--fold-workers",
        type=int,
        default=None,
        help="worker processes of the satimage CV folds (default: one per fold on cuda with --folds-per-fit 1, else 1)",
    )
    p.add_argument(
        "--folds-per-fit",
        type=int,
        default=None,
        help="satimage: folds refitted together in lockstep (CVOptions.folds_per_fit; default: the spec's auto)",
    )
    p.add_argument("--gpytorch-iters-scale", type=int, default=30)
    p.add_argument("--gpytorch-iters-satimage", type=int, default=200)
    p.add_argument("--no-gpytorch", action="store_true", help="skip GPyTorch even where it imports")
    p.add_argument("--copy-gib", type=float, default=2.0, help="buffer of the copy-bandwidth measurement")
    p.add_argument("--tile-mb", type=float, default=1024.0, help="one tile of M on the device (MB)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per job")
    p.add_argument("--deadline", type=float, default=3600.0, help="seconds for the whole bench: later jobs skipped")
    p.add_argument("--no-fused", action="store_true", help="array-API products only (no Triton kernels)")
    p.add_argument("--only", nargs="+", default=None, help="run only these jobs (names of the table's job column)")
    # one job (the driver runs each in a subprocess)
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP + " (needs CUDA; skipped without it)")
    p.add_argument("--job", choices=sorted(JOBS), default=None, help=argparse.SUPPRESS)
    p.add_argument("--problem", choices=("scale", "satimage", "imclef07a"), default="scale", help=argparse.SUPPRESS)
    p.add_argument("--iterations", type=int, default=30, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None, say=print) -> dict:
    start = time.perf_counter()
    a = parse(argv)
    if a.smoke:
        if (why := cuda_missing()) is not None:
            return skipped("gpu", why)
        vars(a).update(
            n=[2000], check_n=500, satimage_max_train=300, satimage_max_iter=2, no_imclef=True, no_gpytorch=True
        )
        vars(a).update(copy_gib=0.25, timeout=120.0, deadline=300.0)
    if a.job is not None:
        a.n = a.n[0]
        print(json.dumps(run_job(a), default=float))
        return {}
    backend = make_backend(a.namespace, fused=not a.no_fused)  # `cuda` without a GPU: the DeviceError first
    gpytorch = not a.no_gpytorch and _gpytorch_imports()
    say(f"device: {backend.label}; GPyTorch: {'yes' if gpytorch else 'no (not installed or --no-gpytorch)'}")
    bandwidth = copy_bandwidth_tbps(backend, a.copy_gib)
    say(f"copy bandwidth: {bandwidth:.3g} TB/s (read + written bytes, {a.copy_gib} GiB buffer)")
    del backend
    rows, extra = [], {}
    say(" | ".join(ROW_KEYS))
    for job, library, argv in [p for p in _plan(a, gpytorch) if not a.only or p[0] in a.only]:
        left = a.deadline - (time.perf_counter() - start)
        if left < 20:
            out = {"error": f"skipped: under 20 s left of the {a.deadline:.0f} s deadline"}
        else:
            out = _in_subprocess(argv, min(a.timeout, left - 5))
        row = {"job": job, "library": library, **{k: None for k in ROW_KEYS[2:]}, **out}
        rows.append(row)
        say(" | ".join(_fmt(row.get(k)) for k in ROW_KEYS) + (f"  ({row['error']})" if "error" in row else ""))
        if "_float32_tbps" in row:
            extra["float32_product_tbps"] = row["_float32_tbps"]
            extra["float32_product_over_copy"] = row["_float32_tbps"] / bandwidth
            if "_array_api_tbps" in row:
                extra["float32_array_api_over_copy"] = row["_array_api_tbps"] / bandwidth
        if "_phi_rel_diff" in row:
            extra["float64_phi_rel_diff"] = row["_phi_rel_diff"]
            extra["float64_identical_predictions"] = row["_identical_predictions"]
    result = {
        "bench": "gpu",
        "device": make_backend(a.namespace, fused=not a.no_fused).label,
        "rows": [{k: r.get(k) for k in ROW_KEYS} | ({"error": r["error"]} if "error" in r else {}) for r in rows],
        "copy_bandwidth_tbps": bandwidth,
        **extra,
        "details": [{k: v for k, v in r.items() if k.startswith("_")} for r in rows],
    }
    print(json.dumps(result, default=float))
    return result


if __name__ == "__main__":
    from gpmodels.linalg.blas_threads import configure_openblas

    configure_openblas()  # the short OpenBLAS spin of the `gpmodels` command (re-runs this script with it)
    main()
