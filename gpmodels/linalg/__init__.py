"""Linear algebra over the operator protocol: CG on a batch of systems (and its Lanczos quadrature), finite
differences, the MVM counter, the dense factors of B = I + W^½ K W^½; the BLAS threads."""

from gpmodels.linalg.blas_threads import configure_openblas
from gpmodels.linalg.cg import Systems, cg
from gpmodels.linalg.counting import MVMCounter
from gpmodels.linalg.slq import slq_logdet

__all__ = ["cg", "Systems", "slq_logdet", "MVMCounter", "configure_openblas"]
