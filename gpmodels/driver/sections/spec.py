"""The root of a model spec, :class:`Spec` (data, model, objective, evaluation, output, engine), and the
rules that tie its sections together."""

from __future__ import annotations

import re

import attrs

from gpmodels.driver.schema import Node, option
from gpmodels.driver.sections.data import DataSpec
from gpmodels.driver.sections.engine import EngineSpec
from gpmodels.driver.sections.evaluation import EvaluationSpec, OutputSpec
from gpmodels.driver.sections.model import REGRESSION_LIKELIHOODS, ModelSpec
from gpmodels.driver.sections.objective import ObjectiveSpec
from gpmodels.errors import SpecError, shown
from gpmodels.validation import nonnegative_int, string

__all__ = ["Spec", "NamedSpec", "check_name", "NAME_PATTERN", "check_predictive", "check_one_vs_rest", "check_unifying"]

#: a run's, study's or study model's name: it becomes a folder name, so it is a name, never a path
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,99}$")
NAME_RULE = "letters, digits, '-', '_' and '.' (not first), at most 100 characters: a folder name, without '/' or '..'"


@attrs.frozen
class NamedSpec(Node):
    """What a model spec and a study spec share: a name (a folder name, checked by :func:`check_name`) and free text."""

    name: str = option(check=string(), doc="the run's or study's name (`{name}` in `output.dir`)")
    description: str | None = option(None, string(), doc="free text")

    def check(self, path):
        check_name(self.name, "name")


@attrs.frozen
class Spec(NamedSpec):
    """A model spec: data, model, objective, evaluation and output."""

    seed: int = option(0, nonnegative_int(), doc="seed of every random choice (splits, subsamples)")
    data: DataSpec = option(node=DataSpec, doc="data")
    model: ModelSpec = option(node=ModelSpec, doc="model")
    objective: ObjectiveSpec = option(ObjectiveSpec, node=ObjectiveSpec, doc="objective")
    evaluation: EvaluationSpec = option(EvaluationSpec, node=EvaluationSpec, doc="evaluation")
    output: OutputSpec = option(OutputSpec, node=OutputSpec, doc="output")
    engine: EngineSpec = option(EngineSpec, node=EngineSpec, doc="where the work runs")

    def check(self, path):
        super().check(path)
        if self.objective.solver == "exact" and self.model.builtin_prior and self.model.prior != "independent":
            raise SpecError("exact Newton needs the independent (flat) prior", "objective.solver")
        if self.objective.type == "em" and self.data.pseudo_targets is None:
            raise SpecError("objective type 'em' needs `data.pseudo_targets`", "objective.type")
        if self.data.pseudo_targets is not None and self.objective.type != "em":
            raise SpecError(
                f"pseudo-targets are fitted by `objective.type: em`; got {self.objective.type!r}", "data.pseudo_targets"
            )
        if self.objective.type == "em" and self.objective.solver != "newton-cg":
            raise SpecError("the EM M-step runs Newton-CG", "objective.solver")
        if self.objective.type in ("cv", "one_vs_rest") and self.objective.cv.learn_sigma2 and self.model.sigma2 <= 0:
            raise SpecError("learning σ² needs a starting `model.sigma2` > 0", "objective.cv.learn_sigma2")
        if self.objective.type == "one_vs_rest":
            check_one_vs_rest(self)
        check_unifying(self)
        check_predictive(self)


def check_predictive(spec: Spec) -> None:
    """`evaluation.predictive: laplace` needs a MAP model whose likelihood has a latent predictive here."""
    if spec.evaluation.predictive != "laplace":
        return
    if spec.objective.type not in ("map", "cv"):
        raise SpecError(
            f"the Laplace predictive is computed for objectives map and cv; got objective "
            f"{spec.objective.type!r} (use `predictive: plugin`)",
            "evaluation.predictive",
        )
    if spec.data.task != "classification" or spec.model.likelihood not in ("softmax", "logistic"):
        raise SpecError(
            f"the Laplace predictive averages the softmax or logistic likelihood; got likelihood "
            f"{spec.model.likelihood!r} (use `predictive: plugin`)",
            "evaluation.predictive",
        )


def check_name(name: str, key: str) -> None:
    """``name`` is a safe folder name (``NAME_RULE``), else SpecError naming ``key``."""
    if not NAME_PATTERN.match(name) or ".." in name:
        raise SpecError(f"must be a name of {NAME_RULE}; got {shown(name)}", key)


def check_one_vs_rest(spec: Spec) -> None:
    """Cross-key rules of `objective.type: one_vs_rest`: binary softmax models of the flat prior."""
    m, d = spec.model, spec.data
    if m.prior != "independent":
        raise SpecError(f"one-vs-rest builds binary models of the independent prior; got {m.prior!r}", "model.prior")
    if m.likelihood != "softmax":
        raise SpecError(
            f"one-vs-rest fits binary softmax models (C = 2); got likelihood {m.likelihood!r}", "model.likelihood"
        )
    if m.kernels is not None:
        raise SpecError("one-vs-rest takes one `kernel`, not a kernel combination", "model.kernels")
    if m.sharing in ("level", "subtree"):
        raise SpecError(
            f"a binary task has no class tree to share over: use tied, semi or separate; got {m.sharing!r}",
            "model.sharing",
        )
    groups = 1 if m.sharing == "tied" else 2
    if isinstance(m.variance, tuple) and len(m.variance) != groups:
        raise SpecError(
            f"a one-vs-rest model has 2 classes (c and the rest), so {groups} variance group(s) with "
            f"sharing {m.sharing!r}: give one number or a list of {groups}; got {len(m.variance)} values",
            "model.variance",
        )
    if d.task != "classification" or d.positive_class is not None:
        raise SpecError(
            "one-vs-rest is for multiclass classification; drop `positive_class` (it makes one binary task)",
            "data.positive_class" if d.positive_class is not None else "data.task",
        )


def check_unifying(spec: Spec) -> None:
    """Cross-key rules of the unifying-paper objectives and the single-latent likelihoods."""
    m, o, d = spec.model, spec.objective, spec.data
    lik = m.likelihood
    if d.task == "regression" and lik not in REGRESSION_LIKELIHOODS:
        raise SpecError(f"a regression task needs one of {REGRESSION_LIKELIHOODS}; got {lik!r}", "model.likelihood")
    if d.task == "classification" and lik in REGRESSION_LIKELIHOODS:
        raise SpecError(f"likelihood {lik!r} is for regression; set data.task: regression", "model.likelihood")
    if m.kernels is not None and m.prior != "independent":
        raise SpecError(
            f"kernel combinations build independent GPs; prior {m.prior!r} takes one `kernel`", "model.kernels"
        )
    if m.builtin_prior and m.prior != "independent" and lik != "softmax":
        raise SpecError(
            f"prior {m.prior!r} couples the C class functions of the softmax; got likelihood {lik!r}", "model.prior"
        )
    if m.kernels is not None and lik == "softmax":
        raise SpecError(
            "kernel combinations are for a single latent function (logistic, hinge, gaussian, laplace, student_t)",
            "model.kernels",
        )
    t = o.type
    if t == "laplace" and lik in ("hinge", "laplace"):
        raise SpecError(
            f"the Laplace approximation needs a smooth, normalised likelihood; got {lik!r} (use vb)", "model.likelihood"
        )
    if t in ("vb",) and lik in ("softmax", "hinge"):
        raise SpecError(
            f"VB needs a super-Gaussian likelihood (logistic, gaussian, laplace, student_t); got {lik!r}",
            "model.likelihood",
        )
    if t == "mlm" and lik != "gaussian":
        raise SpecError(
            f"`mlm` is the Gaussian marginal likelihood; got likelihood {lik!r} (use vb or laplace)", "model.likelihood"
        )
    if t in ("mkl", "joint_map") and m.kernels is None:
        raise SpecError(f"objective {t!r} learns kernel weights: give model.kernels", "model.kernels")
    if o.mkl.solver in ("algorithm1", "alternating") and (m.kernels is None or t in ("map", "laplace")):
        raise SpecError(
            f"solver {o.mkl.solver!r} learns the weights of model.kernels with mkl, joint_map, mlm or vb",
            "objective.mkl.solver",
        )
