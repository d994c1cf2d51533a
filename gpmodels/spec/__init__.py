"""Specs: schema, YAML loading, building objects, running."""

from gpmodels.spec.loader import load_spec, spec_from_dict
from gpmodels.spec.run import run_spec
from gpmodels.spec.sections import Spec

__all__ = ["Spec", "load_spec", "spec_from_dict", "run_spec", "spec_reference"]


def spec_reference() -> str:
    """The whole spec reference (docs/specs.md): model specs, then study specs."""
    from gpmodels.spec.schema import reference_markdown
    from gpmodels.spec.study import StudySpec

    seen: set = set()
    model = reference_markdown(Spec, skip=seen)
    study = reference_markdown(StudySpec, title="Study spec reference", skip=seen,
                               intro="A study spec lists `models`; its `data`, `evaluation` and `output` sections are "
                                     "those above, shared by every model.")
    return model + "\n" + study
