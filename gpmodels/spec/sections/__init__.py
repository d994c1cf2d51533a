"""The sections of model and study specs, one module per section; ``docs/specs.md`` is generated from
their declarations (:func:`gpmodels.spec.spec_reference`)."""

from gpmodels.spec.sections.data import DataSpec
from gpmodels.spec.sections.engine import EngineSpec
from gpmodels.spec.sections.evaluation import EvaluationSpec, OutputSpec
from gpmodels.spec.sections.model import KernelSpec, ModelSpec
from gpmodels.spec.sections.objective import ObjectiveSpec
from gpmodels.spec.sections.spec import Spec
from gpmodels.spec.sections.study import StudySpec

__all__ = [
    "Spec",
    "StudySpec",
    "DataSpec",
    "ModelSpec",
    "KernelSpec",
    "ObjectiveSpec",
    "EvaluationSpec",
    "OutputSpec",
    "EngineSpec",
]
