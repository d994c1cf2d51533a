"""The `objective` section: what is optimised, and one sub-section per options class of the objectives
(`newton`, `em`, `cv` with `cv.newton` and `cv.outer`, `laplace`, `vb`, `mkl`, `crammer_singer`, `hm3`)."""

from __future__ import annotations

import attrs

from gpmodels.driver.derive import Part, options_section
from gpmodels.driver.schema import Node, option
from gpmodels.driver.sections.baselines import CrammerSingerSpec, HM3Spec
from gpmodels.errors import SpecError
from gpmodels.inference.cv.learn import LearnOptions
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.map.em import EMOptions
from gpmodels.inference.map.newton_cg import NewtonOptions
from gpmodels.inference.map.solvers import SOLVER_NAMES
from gpmodels.inference.marginal.laplace import LaplaceOptions
from gpmodels.inference.marginal.vb import VBOptions
from gpmodels.inference.mkl.algorithms import MKLOptions
from gpmodels.optimize.lbfgs import OuterOptions
from gpmodels.validation import boolean, integer, nonnegative_int, nonnegative_number, one_of, positive_int

__all__ = [
    "ObjectiveSpec",
    "NewtonSpec",
    "CVNewtonSpec",
    "OuterSpec",
    "CVSpec",
    "EMSpec",
    "LaplaceSpec",
    "LaplaceNewtonSpec",
    "VBSpec",
    "VBNewtonSpec",
    "MKLSpec",
    "OBJECTIVES",
    "SOLVERS",
    "SECTION_TYPES",
]

OBJECTIVES = ("map", "em", "cv", "one_vs_rest", "laplace", "vb", "mlm", "mkl", "joint_map", "crammer_singer", "hm3")
SOLVERS = ("algorithm1", "alternating", "lbfgs")


# ---------------------------------------------------------------------------- objective settings
# One sub-section per options class; its keys, defaults and bounds are derived from the class
# (gpmodels/driver/derive.py), so the spec cannot disagree with it.  The docs below are the spec's
# lines for fields whose class gives none.

_NEWTON_DOCS = {
    "max_iter": "k1: maximal Newton iterations",
    "cg_max_iter": "k2: maximal CG steps per Newton direction",
    "cg_tol": "CG: relative residual tolerance",
    "cg_forcing": "CG: stop once the residual fell by this factor from its start (truncated Newton)",
    "grad_tol": "stop when the per-point RMS of ∇_u Φ is below",
    "phi_rtol": "stop when the relative decrease of Φ is below",
    "max_stall_restarts": "restarts from a cold CG start when a Newton step makes no progress",
    "stall_step": "a line-search step below this counts as a stall (CG is restarted without the forcing term)",
    "armijo": "line search: sufficient-decrease constant",
    "line_search_evals": "line search: maximal evaluations of Φ",
    "preconditioner": "CG preconditioner: App. B `diagonal`; per-point `block`s; `lowrank` deflation of the leading "
    "kernel eigen-directions with the diagonal (`lowrank`) or the per-point blocks "
    "(`lowrank_block`) for the rest; `auto`: `lowrank` from 1500 points on, else `diagonal`",
    "precond_rank": "`lowrank*`: number of kernel eigenpairs deflated",
    "precond_seed": "`lowrank*`: seed of the randomized eigensolver",
}


def _newton_section(name: str, doc: str, defaults: NewtonOptions | None = None):
    """A section of `NewtonOptions`' keys: the MAP fit's, or an inner fit's (CV refits, Laplace mode, VB inner
    problem) with that learner's defaults."""
    return options_section(name, doc, [Part(NewtonOptions, defaults=defaults)], docs=_NEWTON_DOCS)


NewtonSpec = _newton_section(
    "NewtonSpec",
    "Newton–CG (Alg. 1; k1, k2 and tolerances of Seeger 2008, Sec. 2, 6) of the MAP fit: `map`, the "
    "M-step of `em`, the final fit of `cv` and `one_vs_rest` (and `one_vs_rest` with `learn: false`).  Keys, "
    "defaults and bounds: `NewtonOptions`.",
)

CVNewtonSpec = _newton_section(
    "CVNewtonSpec",
    "Newton–CG of the refits inside every Ψ evaluation (Sec. 4, 6.2: k1, k2 during learning).  Keys "
    "and bounds: `NewtonOptions`; defaults: `CVOptions().newton`.",
    CVOptions().newton,
)

OuterSpec = options_section(
    "OuterSpec",
    "The outer quasi-Newton optimiser of Ψ (projected L-BFGS in log space).  Keys and bounds: "
    "`OuterOptions`; defaults: `LearnOptions().outer`.",
    [Part(OuterOptions, defaults=LearnOptions().outer)],
    docs={
        "max_iter": "maximal outer (quasi-Newton) iterations",
        "max_evaluations": "maximal Ψ evaluations",
        "memory": "L-BFGS memory (pairs)",
        "ftol": "stop when Ψ decreases (or the quasi-Newton model predicts a decrease) by less than this fraction",
        "gtol": "stop when max |projected ∇Ψ| <= gtol · max(1, |Ψ|)",
        "initial_step": "max-norm of the first step (log space)",
        "max_step": "max-norm cap of every trial step (log space)",
        "armijo": "line search: sufficient-decrease constant",
        "wolfe": "line search: curvature constant",
        "line_search_evals": "line search: maximal Ψ evaluations per iteration",
        "extrapolation": "line search: growth factor of an extrapolated step",
        "max_extrapolations": "line search: maximal extrapolations",
        "score_patience": "stop when the held-out misclassifications of Ψ's folds have not improved for this "
        "many iterations (0: off)",
        "score_rtol": "`score_patience`: a smaller gain than this fraction of the best count is no improvement",
    },
)


def _check_cv(self, path):
    if not self.lower < self.upper:
        raise SpecError(f"must be below `upper` ({self.upper}); got {self.lower}", f"{path}.lower")


CVSpec = options_section(
    "CVSpec",
    "Hyperparameter learning by the CV criterion Ψ (`objective.type: cv` and `one_vs_rest`; Seeger 2008, "
    "Sec. 4, 5.2, 6.2).  Keys, defaults and bounds: `CVOptions` (one Ψ evaluation) and `LearnOptions` (`lower`, "
    "`upper`); the refits in `newton`, the outer optimiser in `outer`.",
    [Part(CVOptions, skip=("solver", "warm_start")), Part(LearnOptions, only=("lower", "upper", "inner_tolerances"))],
    nested=(("newton", CVNewtonSpec, "Newton–CG of the refits inside Ψ"), ("outer", OuterSpec, "the outer optimiser")),
    extra=(
        ("folds", option(5, integer(2), doc="q: folds of the fixed random partition of the training set")),
        (
            "partition_seed",
            option(None, nonnegative_int(), doc="seed of the partition (default: the spec's `seed`)"),
        ),
        (
            "learn_sigma2",
            option(False, boolean(), doc="also learn the intercept variance σ² (needs `model.sigma2` > 0)"),
        ),
        (
            "checkpoint",
            option(
                True,
                boolean(),
                doc="write `checkpoint.npz` in the report folder after every successful outer iteration",
            ),
        ),
        (
            "resume",
            option(
                "auto",
                one_of(("auto", "never")),
                doc="`auto`: continue from an existing checkpoint (a corrupt or foreign one is an "
                "error); `never`: start afresh",
            ),
        ),
    ),
    docs={
        "k3": "k3: maximal CG steps of a fold's gradient accumulation solve",
        "accumulation_tol": "relative residual of the accumulation solve",
        "fail_tol": "an evaluation fails when the mean over folds of the refits' gradient RMS is above",
        "abort_on_failure": "stop an evaluation at the first fold that makes its failure certain",
        "retry_cold": "retry a failed warm refit from a cold start",
        "folds_per_fit": "folds refitted together in lockstep, each with its own steps and stopping rules but one "
        "product, CG update and preconditioner call for all (1: each alone, on the engine's workers); fewer, larger "
        "calls, for a GPU.  `auto`: all folds together where the kernel matrices are on a device "
        "(`model.representation.device`) and the refits are Newton–CG, else 1",
        "lower": "lower bound of every log-space hyperparameter",
        "upper": "upper bound of every log-space hyperparameter",
        "inner_tolerances": "`adaptive`: refit and accumulation tolerances loosened far from the optimum "
        "(`gpmodels.inference.cv.tolerances`); `fixed`: the configured ones throughout",
    },
    check=_check_cv,
)

EMSpec = options_section(
    "EMSpec",
    "EM over uncertain targets (`objective.type: em`, Seeger 2008, Sec. 7.4.2); the M-step runs "
    "`objective.newton`.  Keys, defaults and bounds: `EMOptions`.",
    [Part(EMOptions, skip=("newton",))],
    docs={
        "max_iter": "maximal EM iterations",
        "rtol": "stop when the relative change of the pseudo-target log-likelihood is below",
    },
)

_LEARN = (
    (
        "learn_max_iter",
        option(
            100,
            positive_int(),
            doc="iterations of the outer projected L-BFGS (gpmodels.optimize) learning the hyperparameters",
        ),
    ),
    (
        "learn_tol",
        option(1e-8, nonnegative_number(), doc="outer tolerance of the learning (relative criterion decrease)"),
    ),
)

LaplaceNewtonSpec = _newton_section(
    "LaplaceNewtonSpec",
    "The Laplace mode at every evaluation of the marginal likelihood: chord Newton on the exact path with a "
    "flat softmax model (the CG keys unused), Newton–CG otherwise.  Keys and bounds: "
    "`NewtonOptions`; defaults: `LaplaceOptions().newton`.",
    LaplaceOptions().newton,
)

VBNewtonSpec = _newton_section(
    "VBNewtonSpec",
    "Newton–CG of the double loop's inner problem at every φ_VB evaluation.  Keys and bounds: "
    "`NewtonOptions`; defaults: `VBOptions().newton`.",
    VBOptions().newton,
)

LaplaceSpec = options_section(
    "LaplaceSpec",
    "Laplace marginal likelihood (`objective.type: laplace`; R&W Alg. 3.1-3.4, 5.1).  Keys, defaults "
    "and bounds: `LaplaceOptions` (its probe seed is the spec's `seed`), and the learning's `learn_*`.",
    [Part(LaplaceOptions, skip=("seed",))],
    nested=(("newton", LaplaceNewtonSpec, "Newton–CG of the mode found at every evaluation"),),
    extra=_LEARN,
    docs={
        "path": "`exact` (Cholesky) or `mvm` (CG, Lanczos log-determinant, Hutchinson traces)",
        "n_probes": "mvm: Hutchinson / Lanczos probes (seeded by the spec's `seed`)",
        "cg_max_iter": "mvm: maximal CG steps",
        "cg_tol": "mvm: CG relative residual tolerance",
    },
)

VBSpec = options_section(
    "VBSpec",
    "Variational bound φ_VB (`objective.type: vb` and `mlm`, without `model.kernels`; Nickisch & Seeger "
    "2009).  Keys, defaults and bounds: `VBOptions`, and the learning's `learn_*`; the inner Newton–CG in `newton`.",
    [Part(VBOptions)],
    nested=(("newton", VBNewtonSpec, "Newton–CG of the inner loop (the variance-smoothed MAP problem)"),),
    extra=_LEARN,
    docs={"max_outer": "maximal double-loop iterations", "tol": "double loop: relative tolerance on φ"},
)

MKLSpec = options_section(
    "MKLSpec",
    "Kernel-weight learning (`objective.type: mkl`, `joint_map`, and `vb` / `mlm` with `model.kernels`; "
    "Nickisch & Seeger 2011); the criterion is the objective type.  Keys, defaults and bounds: `MKLOptions`.",
    [Part(MKLOptions, skip=("criterion",))],
    extra=(
        (
            "solver",
            option(
                None,
                one_of(SOLVERS),
                doc="`algorithm1` (Nickisch & Seeger, the default), `alternating`; `lbfgs` (the outer projected L-BFGS "
                "of gpmodels.optimize on the criterion)",
            ),
        ),
    ),
    docs={
        "lam": "weight λ of the penalty λ ||θ||_p^p",
        "p": "the norm p >= 1",
        "jitter": "jitter added to K_θ",
        "max_iter": "maximal outer iterations",
        "tol": "stop when the relative decrease of the criterion is below",
        "grad_tol": "... and the gradient is below",
        "inner_newton": "Algorithm 1: Newton steps in u per iteration",
        "inner_max": "alternating: Newton steps per block",
        "max_log_step": "cap on |Δ log θ| per step",
        "time_limit": "time limit in seconds (`.inf`: none)",
    },
)


@attrs.frozen
class ObjectiveSpec(Node):
    """What is optimised, and the settings of each objective in its own sub-section, derived from its
    options class: `newton` (MAP fits), `em`, `cv` (with `cv.newton`, `cv.outer`), `laplace`, `vb`, `mkl`,
    `crammer_singer`, `hm3`."""

    type: str = option(
        "map",
        one_of(OBJECTIVES),
        doc="`map`: MAP fit at the given hyperparameters (section `newton`); `laplace`: Laplace MLM "
        "(`laplace`); `vb`: variational bound, `mlm`: Gaussian marginal likelihood (`vb`); `mkl`, "
        "`joint_map`: kernel-weight criteria (Nickisch & Seeger 2011; `mkl`); `crammer_singer`, "
        "`hm3`: max-margin baselines (their sections); `em`: MAP fit with uncertain targets by EM "
        "(`em`, needs `data.pseudo_targets`); `cv`: learn the hyperparameters by the CV criterion "
        "Ψ (`cv`), then the MAP fit (`newton`); `one_vs_rest`: C binary softmax models (class c "
        "against the rest), each with its own hyperparameters learned by Ψ (`cv`; with `learn: "
        "false` fitted at the given ones), combined by the largest P_c(+1|x) (Sec. 6.2)",
    )
    solver: str = option(
        "newton-cg",
        one_of(SOLVER_NAMES),
        doc="the inner MAP solver of the fits (and the CV refits): `newton-cg` (Alg. 1) or `exact` Newton (App. C, "
        "flat prior, O(n^3 C))",
    )
    learn: bool = option(
        True,
        boolean(),
        doc="laplace/vb/mlm/mkl/joint_map/one_vs_rest: learn the hyperparameters "
        "(false: evaluate the criterion, or fit, at the given ones)",
    )
    newton: NewtonSpec = option(NewtonSpec, node=NewtonSpec, doc="Newton–CG of the MAP fit")
    em: EMSpec = option(EMSpec, node=EMSpec, doc="settings of `type: em`")
    cv: CVSpec = option(CVSpec, node=CVSpec, doc="settings of `type: cv` and `type: one_vs_rest`")
    laplace: LaplaceSpec = option(LaplaceSpec, node=LaplaceSpec, doc="settings of `type: laplace`")
    vb: VBSpec = option(VBSpec, node=VBSpec, doc="settings of `type: vb` and `type: mlm`")
    mkl: MKLSpec = option(
        MKLSpec, node=MKLSpec, doc="settings of `type: mkl`, `joint_map` (and `vb` / `mlm` with `model.kernels`)"
    )
    crammer_singer: CrammerSingerSpec = option(
        CrammerSingerSpec, node=CrammerSingerSpec, doc="settings of `type: crammer_singer`"
    )
    hm3: HM3Spec = option(HM3Spec, node=HM3Spec, doc="settings of `type: hm3`")

    def check(self, path):
        for name, types in SECTION_TYPES.items():
            section = getattr(self, name)
            if self.type not in types and section != type(section)():
                raise SpecError(
                    f"holds settings of `type: {' / '.join(types)}`; this objective is {self.type!r} "
                    f"(drop the section or change `type`)",
                    f"{path}.{name}" if path else name,
                )


#: the objective types that use each sub-section of `objective` (giving another type's settings is an error)
SECTION_TYPES = {
    "newton": ("map", "em", "cv", "one_vs_rest"),
    "em": ("em",),
    "cv": ("cv", "one_vs_rest"),
    "laplace": ("laplace",),
    "vb": ("vb", "mlm"),
    "mkl": ("mkl", "joint_map", "vb", "mlm"),
    "crammer_singer": ("crammer_singer",),
    "hm3": ("hm3",),
}
