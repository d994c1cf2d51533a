"""Runners of the spec driver: one per objective type."""

from gpmodels.spec.runners.baselines import run_crammer_singer, run_hm3
from gpmodels.spec.runners.cv import run_cv, build_learn_options, cv_partition, checkpoint_identity, iteration_reporter, learning_metrics
from gpmodels.spec.runners.one_vs_rest import run_one_vs_rest
from gpmodels.spec.runners.unifying import targets, evaluate, run_laplace, run_vb, run_kernel_weights

__all__ = ['run_crammer_singer', 'run_hm3', 'run_cv', 'build_learn_options', 'cv_partition', 'checkpoint_identity', 'iteration_reporter', 'learning_metrics', 'run_one_vs_rest', 'targets', 'evaluate', 'run_laplace', 'run_vb', 'run_kernel_weights']
