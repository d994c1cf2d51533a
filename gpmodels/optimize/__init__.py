"""Outer (hyperparameter) optimisation: projected L-BFGS with failed-evaluation brackets, checkpoints."""

from gpmodels.optimize.checkpoint import CHECKPOINT_FORMAT, RunIdentity, write_checkpoint, read_checkpoint, digest_array, probe_operator
from gpmodels.optimize.hyperopt import HyperResult, JointParams, minimize_lbfgs, DEFAULT_BOX
from gpmodels.optimize.lbfgs import OuterOptions, Trial, OuterRecord, OuterState, outer_start, outer_iteration, minimize_outer, projected_gradient

__all__ = ['CHECKPOINT_FORMAT', 'RunIdentity', 'write_checkpoint', 'read_checkpoint', 'digest_array', 'probe_operator', 'HyperResult', 'JointParams', 'minimize_lbfgs', 'DEFAULT_BOX', 'OuterOptions', 'Trial', 'OuterRecord', 'OuterState', 'outer_start', 'outer_iteration', 'minimize_outer', 'projected_gradient']
