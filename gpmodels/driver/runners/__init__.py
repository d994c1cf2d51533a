"""Runners of the spec driver, one per objective type, and ``RUNNERS``: the explicit table
``objective.type`` -> runner that :func:`gpmodels.driver.run.run_spec` dispatches on.  Every runner
starts from :func:`~gpmodels.driver.runners.common.prepare` (the spec and the data -> a
:class:`~gpmodels.driver.runners.common.Problem`); a user's runner (``gpmodels.driver.register_runner``)
may too."""

from gpmodels.driver.runners.baselines import run_crammer_singer, run_hm3
from gpmodels.driver.runners.common import Problem, prepare
from gpmodels.driver.runners.cv import run_cv
from gpmodels.driver.runners.map import run_em, run_map
from gpmodels.driver.runners.one_vs_rest import run_one_vs_rest
from gpmodels.driver.runners.unifying import run_kernel_weights, run_laplace

__all__ = ["RUNNERS", "Problem", "prepare"]

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
