"""Linear algebra over the operator protocol: CG, batched CG and Lanczos quadrature, finite differences, the
MVM counter, the dense factors of B = I + W^½ K W^½."""

from gpmodels.linalg.cg import CGResult, cg
from gpmodels.linalg.counting import MVMCounter
from gpmodels.linalg.dense_posterior import DensePosterior
from gpmodels.linalg.finite_differences import central_differences
from gpmodels.linalg.slq import BatchedCGResult, batched_cg, hutchinson_blocks, rademacher, slq_logdet

__all__ = ['CGResult', 'cg', 'central_differences', 'BatchedCGResult', 'batched_cg', 'rademacher', 'slq_logdet',
           'hutchinson_blocks', 'MVMCounter', 'DensePosterior']
