"""The sections of model and study specs, one module per section; ``docs/specs.md`` is generated from
their declarations (:func:`gpmodels.driver.spec_reference`)."""

from gpmodels.driver.sections.data import DataSpec
from gpmodels.driver.sections.engine import EngineSpec
from gpmodels.driver.sections.evaluation import EvaluationSpec, OutputSpec
from gpmodels.driver.sections.model import KernelSpec, ModelSpec
from gpmodels.driver.sections.objective import ObjectiveSpec
from gpmodels.driver.sections.spec import Spec
from gpmodels.driver.sections.study import StudySpec

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
