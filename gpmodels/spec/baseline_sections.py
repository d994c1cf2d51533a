"""Spec sections of the max-margin objectives: ``objective.crammer_singer`` and ``objective.hm3``."""

from __future__ import annotations

import attrs

from gpmodels.baselines.crammer_singer.solver import COOLINGS, ENGINES, REDUCED_SOLVERS, SELECTIONS, SPARSE_MODES
from gpmodels.baselines.hm3.solver import DIRECTIONS, WORKING_SETS
from gpmodels.baselines.hm3.inference import TRAIN_LOSSES
from gpmodels.errors import SpecError
from gpmodels.scoring.multilabel import NODE_WEIGHTINGS
from gpmodels.spec.schema import Node, option

__all__ = ["CrammerSingerSpec", "HM3Spec", "HM3_COMPARE"]

HM3_COMPARE = ("svm", "hsvm")


@attrs.frozen
class CrammerSingerSpec(Node):
    """Crammer–Singer multiclass SVM, dual (15) by the fixed-point algorithm (Crammer & Singer 2001)."""

    beta: float = option(1.0, kind="float", exclusive_minimum=0.0, doc="regularisation β of (7); SVC's C = 1/β")
    epsilon: float = option(1e-3, kind="float", exclusive_minimum=0.0, doc="stop when max_i ψ_i < β ε (Fig. 4)")
    selection: str = option("kkt", kind="str", choices=SELECTIONS,
                            doc="`kkt`: largest ψ (Fig. 4); `cyclic`: sweep all examples (the baseline)")
    active_set: bool = option(True, kind="bool", doc="search the active set first (Sec. 7)")
    cooling: str = option("logarithmic", kind="str", choices=COOLINGS, doc="cooling schedule of ε (Sec. 7)")
    epsilon0: float = option(0.999, kind="float", exclusive_minimum=0.0, doc="initial accuracy of the cooling")
    cache_mb: float = option(200.0, kind="float", minimum=0.0, doc="LRU kernel-row cache bound in MB (0: no cache)")
    sparse: str = option("auto", kind="str", choices=SPARSE_MODES,
                         doc="inputs as CSR (`auto`: when at least 20 % of the entries are zero)")
    reduced_solver: str = option("fixed_point", kind="str", choices=REDUCED_SOLVERS,
                                 doc="reduced problem (34): fixed point (Fig. 3) or exact by sorting")
    max_updates: int = option(10_000_000, kind="int", minimum=1, doc="limit on the number of example updates")
    engine: str = option("auto", kind="str", choices=ENGINES,
                         doc="inner loop: `compiled` (C extension built at install), `numpy`, or `auto` "
                             "(compiled when built); both give the same solution")

    def check(self, path):
        if self.selection == "cyclic" and (self.active_set or self.cooling != "none"):
            raise SpecError("`selection: cyclic` is the baseline without KKT selection; set active_set: false "
                            "and cooling: none", f"{path}.selection")


@attrs.frozen
class HM3Spec(Node):
    """H-M^3 hierarchical multilabel max-margin learning (Rousu et al. 2006)."""

    C: float = option(1.0, kind="float", exclusive_minimum=0.0, doc="box constraint C of (8)")
    loss: str = option("delta", kind="str", choices=TRAIN_LOSSES, doc="training loss: ℓ_Δ or ℓ_H̃ (split over edges)")
    scaling: str = option("uniform", kind="str", choices=NODE_WEIGHTINGS, doc="node weights c_j of the loss")
    working_set: str = option("gap_sampling", kind="str", choices=WORKING_SETS,
                              doc="KKT + duality-gap sampling (Sec. 3.2) or cyclic sweeps")
    chunk_size: int = option(200, kind="int", minimum=1, doc="examples drawn per working set")
    iteration_limit: int = option(10, kind="int", minimum=1, doc="Algorithm 2 iterations per draw of an example")
    direction: str = option("dp", kind="str", choices=DIRECTIONS,
                            doc="update directions by dynamic programming or by an LP (cvxpy)")
    gap_tol: float = option(1e-2, kind="float", exclusive_minimum=0.0, doc="stop at this relative duality gap")
    max_passes: int = option(200, kind="int", minimum=1, doc="limit on working-set passes")
    max_seconds: float | None = option(None, kind="float", exclusive_minimum=0.0, doc="time limit of the fit")
    compare: tuple = option((), kind="list[str]", doc="also train the baselines `svm` (per node) and `hsvm`")

    def check(self, path):
        bad = [c for c in self.compare if c not in HM3_COMPARE]
        if bad:
            raise SpecError(f"must list some of {', '.join(map(repr, HM3_COMPARE))}; got {bad[0]!r}", f"{path}.compare")
