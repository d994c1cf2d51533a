"""Spec sections of the max-margin objectives: ``objective.crammer_singer`` and ``objective.hm3``.

Keys, defaults and bounds are those of ``CSOptions`` and ``HM3Options`` (derived by
:func:`gpmodels.driver.derive.options_section`); ``hm3.compare`` is the spec's own.
"""

from __future__ import annotations

from gpmodels.baselines.crammer_singer.solver import CSOptions
from gpmodels.baselines.hm3.solver import HM3Options
from gpmodels.driver.derive import Part, options_section
from gpmodels.driver.schema import option
from gpmodels.errors import SpecError
from gpmodels.validation import one_of, sequence_of

__all__ = ["CrammerSingerSpec", "HM3Spec", "HM3_COMPARE"]

HM3_COMPARE = ("svm", "hsvm")


def _check_cs(self, path):
    if self.selection == "cyclic" and (self.active_set or self.cooling != "none"):
        raise SpecError(
            "`selection: cyclic` is the baseline without KKT selection; set active_set: false and cooling: none",
            f"{path}.selection",
        )


CrammerSingerSpec = options_section(
    "CrammerSingerSpec",
    "Crammer–Singer multiclass SVM, dual (15) by the fixed-point algorithm (Crammer & Singer "
    "2001).  Keys, defaults and bounds: `CSOptions`.",
    [Part(CSOptions)],
    check=_check_cs,
    docs={
        "beta": "regularisation β of (7); SVC's C = 1/β",
        "epsilon": "stop when max_i ψ_i < β ε (Fig. 4)",
        "selection": "`kkt`: largest ψ (Fig. 4); `cyclic`: sweep all examples (the baseline)",
        "active_set": "search the active set first (Sec. 7)",
        "cooling": "cooling schedule of ε (Sec. 7)",
        "epsilon0": "initial accuracy of the cooling",
        "cache_mb": "LRU kernel-row cache bound in MB (0: no cache)",
        "sparse": "inputs as CSR (`auto`: when at least 20 % of the entries are zero)",
        "reduced_solver": "reduced problem (34): fixed point (Fig. 3) or exact by sorting",
        "fixed_point_max_iter": "maximal fixed-point iterations of a reduced problem",
        "max_updates": "limit on the number of example updates",
        "max_sweeps": "limit on the sweeps over examples",
        "engine": "inner loop: `compiled` (C extension built at install), `numpy`, or `auto` (compiled when "
        "built); both give the same solution",
    },
)


def _check_hm3(self, path):
    bad = [c for c in self.compare if c not in HM3_COMPARE]
    if bad:
        raise SpecError(f"must list some of {', '.join(map(repr, HM3_COMPARE))}; got {bad[0]!r}", f"{path}.compare")


HM3Spec = options_section(
    "HM3Spec",
    "H-M^3 hierarchical multilabel max-margin learning (Rousu et al. 2006).  Keys, defaults and bounds: "
    "`HM3Options` (its seed is the spec's `seed`), and `compare`.",
    [Part(HM3Options, skip=("seed",))],
    check=_check_hm3,
    extra=(
        (
            "compare",
            option(
                (),
                sequence_of(one_of(HM3_COMPARE), min_len=0, max_len=len(HM3_COMPARE), unique=True),
                doc="also train the baselines `svm` (per node) and `hsvm`",
            ),
        ),
    ),
    docs={
        "C": "box constraint C of (8)",
        "loss": "training loss: ℓ_Δ or ℓ_H̃ (split over edges)",
        "scaling": "node weights c_j of the loss",
        "working_set": "KKT + duality-gap sampling (Sec. 3.2) or cyclic sweeps",
        "chunk_size": "examples drawn per working set",
        "iteration_limit": "Algorithm 2 iterations per draw of an example",
        "direction": "update directions by dynamic programming or by an LP (HiGHS, scipy)",
        "gap_tol": "stop at this relative duality gap",
        "max_passes": "limit on working-set passes",
        "max_seconds": "time limit of the fit in seconds (`.inf`: none)",
    },
)
