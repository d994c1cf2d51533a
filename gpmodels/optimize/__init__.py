"""Outer (hyperparameter) optimisation: one projected L-BFGS with failed-evaluation brackets, one
result type, checkpoints and progress for every learner (CV, Laplace, VB, MKL weights)."""

from gpmodels.optimize.checkpoint import (
                                          CHECKPOINT_FORMAT,
                                          Checkpointing,
                                          RunIdentity,
                                          digest_array,
                                          inner_arrays,
                                          probe_operator,
                                          read_checkpoint,
                                          write_checkpoint,
)
from gpmodels.optimize.driver import (
                                          OptimizeResult,
                                          minimize,
                                          outer_options,
                                          run_identity,
)
from gpmodels.optimize.lbfgs import (
                                          OuterOptions,
                                          OuterRecord,
                                          OuterState,
                                          Trial,
                                          minimize_outer,
                                          outer_iteration,
                                          outer_start,
                                          projected_gradient,
)
from gpmodels.optimize.objective import (
                                          DEFAULT_BOX,
                                          FunctionObjective,
                                          JointParams,
                                          as_objective,
                                          log_box,
)

__all__ = [
                                          "CHECKPOINT_FORMAT",
                                          "DEFAULT_BOX",
                                          "Checkpointing",
                                          "FunctionObjective",
                                          "JointParams",
                                          "OptimizeResult",
                                          "OuterOptions",
                                          "OuterRecord",
                                          "OuterState",
                                          "RunIdentity",
                                          "Trial",
                                          "as_objective",
                                          "digest_array",
                                          "inner_arrays",
                                          "log_box",
                                          "minimize",
                                          "minimize_outer",
                                          "outer_iteration",
                                          "outer_options",
                                          "outer_start",
                                          "probe_operator",
                                          "projected_gradient",
                                          "read_checkpoint",
                                          "run_identity",
                                          "write_checkpoint",
]
