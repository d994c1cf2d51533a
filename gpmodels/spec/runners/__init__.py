"""Runners of the spec driver, one per objective type, and ``RUNNERS``: the explicit table
``objective.type`` -> runner that :func:`gpmodels.spec.run.run_spec` dispatches on."""

from gpmodels.spec.runners.baselines import run_crammer_singer, run_hm3
from gpmodels.spec.runners.cv import (
                                      build_learn_options,
                                      checkpoint_identity,
                                      cv_partition,
                                      iteration_reporter,
                                      learning_metrics,
                                      run_cv,
)
from gpmodels.spec.runners.map import run_em, run_map
from gpmodels.spec.runners.one_vs_rest import run_one_vs_rest
from gpmodels.spec.runners.unifying import evaluate, run_kernel_weights, run_laplace, run_vb, targets

__all__ = ["RUNNERS", "run_map", "run_em", "run_crammer_singer", "run_hm3", "run_cv", "build_learn_options",
           "cv_partition", "checkpoint_identity", "iteration_reporter", "learning_metrics", "run_one_vs_rest",
           "targets", "evaluate", "run_laplace", "run_vb", "run_kernel_weights"]

#: objective.type -> runner
RUNNERS = {
    "map": run_map,
    "em": run_em,
    "cv": run_cv,
    "one_vs_rest": run_one_vs_rest,
    "laplace": run_laplace,
    "vb": run_kernel_weights,  # without model.kernels: run_vb
    "mlm": run_kernel_weights,
    "mkl": run_kernel_weights,
    "joint_map": run_kernel_weights,
    "crammer_singer": run_crammer_singer,
    "hm3": run_hm3,
}
