"""What a spec runner returns, and the ``save`` callback of runners whose model is α̂ over an operator.

Below both the driver (:mod:`gpmodels.driver.run`) and the runners (:mod:`gpmodels.driver.runners`),
so neither imports the other for these.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import numpy as np

from gpmodels.data.datasets import Dataset
from gpmodels.driver.sections.spec import Spec
from gpmodels.inference.execution_plan import ExecutionPlan
from gpmodels.persistence import save_map_model
from gpmodels.progress import Console

__all__ = ["RunOutcome", "Runner", "map_saver"]


@attrs.frozen
class RunOutcome:
    """What a runner returns (see the module docstring)."""

    metrics: dict
    probabilities: np.ndarray | None
    diagnostics: dict
    resolved: Spec
    save: Callable[[Path], object] | None = None  # writes model.npz into a folder
    traces: dict = attrs.field(
        factory=dict
    )  # name -> values over iterations, or -> {line label: values}: trace_<name>.png
    paths: tuple | None = None  # (parameter names, (iterations, p) values), plotted as hyperparameters.png
    #: trace name -> what one point of it is (x-axis label of trace_<name>.png); default "iteration"
    trace_units: dict = attrs.field(factory=dict)
    #: trace name -> (what the norm is, gradient norm of each iterate, or {line label: norms} as in ``traces``):
    #: the log-axis panel of trace_<name>.png
    trace_gradients: dict = attrs.field(factory=dict)
    #: where and how the fit ran, and why (metrics.json's ``plan.*`` keys, report.md's plan section)
    plan: ExecutionPlan | None = None


#: a runner: (spec, loaded data, the spec's folder, console) -> outcome
Runner = Callable[[Spec, Dataset, "Path | None", Console], RunOutcome]


def map_saver(data: Dataset, op, likelihood, alpha, tree=None) -> Callable[[Path], object]:
    """A ``save`` callback for any runner whose model is α̂ over an operator: the fitted
    hyperparameters are stored with α̂, so any objective's learned values round-trip."""

    def save(folder: Path):
        return save_map_model(
            folder,
            data.X_train,
            alpha,
            data.classes,
            data.scaler,
            theta=op.params,
            likelihood_theta=likelihood.params,
            tree=tree,
            zero_based=data.zero_based,
            positive_class=data.positive_class,
            inputs=data.input_format,
        )

    return save
