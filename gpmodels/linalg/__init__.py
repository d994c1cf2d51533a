"""Linear algebra over the operator protocol: CG, batched CG and Lanczos quadrature, finite differences, the
MVM counter, the dense factors of B = I + W^½ K W^½; the BLAS threads."""

from gpmodels.linalg.blas_threads import configure_openblas
from gpmodels.linalg.cg import cg
from gpmodels.linalg.counting import MVMCounter
from gpmodels.linalg.slq import batched_cg, slq_logdet

__all__ = ["cg", "batched_cg", "slq_logdet", "MVMCounter", "configure_openblas"]
