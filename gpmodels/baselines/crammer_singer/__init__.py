"""Crammer–Singer multiclass SVM (Crammer & Singer 2001, Fig. 3, 4, Sec. 7)."""

from gpmodels.baselines.crammer_singer.kernel_cache import KernelRows
from gpmodels.baselines.crammer_singer.loops import (
    ENGINES,
    CompiledLoop,
    LoopState,
    NumpyLoop,
    compiled_available,
    resolve_engine,
)
from gpmodels.baselines.crammer_singer.reduced_problem import (
    FixedPointResult,
    fixed_point_list,
    solve_exact,
    solve_fixed_point,
    tau_from_nu,
    theta_exact,
)
from gpmodels.baselines.crammer_singer.solver import (
    COOLINGS,
    REDUCED_SOLVERS,
    SELECTIONS,
    SPARSE_MODES,
    CrammerSingerModel,
    CSOptions,
    CSResult,
    cooling_schedule,
    dual_objective,
    duality_gap,
    fit_crammer_singer,
    run_cooling_rounds,
    run_cyclic_sweeps,
)

__all__ = ["KernelRows", "ENGINES", "LoopState", "NumpyLoop", "CompiledLoop", "compiled_available", "resolve_engine",
           "FixedPointResult", "fixed_point_list", "solve_fixed_point", "solve_exact", "theta_exact", "tau_from_nu",
           "CSOptions", "CSResult", "CrammerSingerModel", "fit_crammer_singer", "COOLINGS", "SELECTIONS",
           "SPARSE_MODES", "REDUCED_SOLVERS", "cooling_schedule", "dual_objective", "duality_gap", "run_cyclic_sweeps",
           "run_cooling_rounds"]
