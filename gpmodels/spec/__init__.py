"""Specs: schema, YAML loading, building objects, running."""

from .loader import load_spec, spec_from_dict
from .run import run_spec
from .sections import Spec

__all__ = ["Spec", "load_spec", "spec_from_dict", "run_spec"]
