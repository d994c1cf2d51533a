"""The spec driver: the schema of model and study specs, YAML loading, building objects, running."""

from gpmodels.driver.loader import load_any_spec, load_spec, spec_from_dict
from gpmodels.driver.run import register_runner, run_spec
from gpmodels.driver.schema import reference_markdown
from gpmodels.driver.sections.spec import Spec
from gpmodels.driver.sections.study import StudySpec
from gpmodels.driver.study import run_study

__all__ = [
    "Spec",
    "StudySpec",
    "load_spec",
    "load_any_spec",
    "spec_from_dict",
    "run_spec",
    "run_study",
    "register_runner",
    "spec_reference",
]


def spec_reference() -> str:
    """The whole spec reference (docs/specs.md): model specs, then study specs."""
    seen: set = set()
    model = reference_markdown(Spec, skip=seen)
    study = reference_markdown(
        StudySpec,
        title="Study spec reference",
        skip=seen,
        intro="A study spec lists `models`; its `data`, `evaluation` and `output` sections are "
        "those above, shared by every model.",
    )
    return model + "\n" + study
