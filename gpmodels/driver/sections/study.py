"""The schema of a study spec: one data set and split, several models (each its own `model` and
`objective`), one comparison table.  :meth:`StudySpec.entry_spec` turns a model of the study into an
ordinary :class:`~gpmodels.driver.sections.spec.Spec`; :mod:`gpmodels.driver.study` runs them."""

from __future__ import annotations

from pathlib import Path

import attrs

from gpmodels.driver.schema import Node, option
from gpmodels.driver.sections.data import DataSpec
from gpmodels.driver.sections.engine import EngineSpec
from gpmodels.driver.sections.evaluation import EvaluationSpec, OutputSpec
from gpmodels.driver.sections.model import ModelSpec
from gpmodels.driver.sections.objective import ObjectiveSpec
from gpmodels.driver.sections.spec import NamedSpec, Spec, check_name
from gpmodels.errors import SpecError
from gpmodels.validation import nonnegative_int, sequence_of, string

__all__ = ["StudySpec", "StudyEntry", "DEFAULT_COLUMNS"]

DEFAULT_COLUMNS = (
    "test_error",
    "test_log_loss",
    "test_brier",
    "test_ece",
    "test_prec",
    "test_hier_f1_argmax",
    "test_hier_f1_expected_loss",
    "test_hier_f1",
    "fit_seconds",
    "total_seconds",
)


@attrs.frozen
class StudyEntry(Node):
    """One model of a study: its name, model and objective (data and evaluation are the study's)."""

    name: str = option(check=string(), doc="the model's name (its row in the table and its sub-folder)")
    model: ModelSpec = option(node=ModelSpec, doc="model")
    objective: ObjectiveSpec = option(ObjectiveSpec, node=ObjectiveSpec, doc="objective")


@attrs.frozen
class StudySpec(NamedSpec):
    """A study: one data set and split, several models, one comparison table."""

    seed: int = option(0, nonnegative_int(), doc="seed shared by every model (same split and subsamples)")
    data: DataSpec = option(node=DataSpec, doc="data, shared by all models")
    evaluation: EvaluationSpec = option(EvaluationSpec, node=EvaluationSpec, doc="evaluation")
    output: OutputSpec = option(OutputSpec, node=OutputSpec, doc="output folder of the study")
    models: tuple = option(node=StudyEntry, many=True, doc="the compared models")
    columns: tuple = option(
        DEFAULT_COLUMNS, sequence_of(string(), min_len=1, max_len=100, unique=True), doc="metrics shown in the table"
    )
    engine: EngineSpec = option(
        EngineSpec,
        node=EngineSpec,
        doc="where the models run: with `type: processes` or `type: dask, distribute: "
        "tasks` the rows run as parallel jobs, otherwise one after the other, each on the "
        "engine",
    )

    def check(self, path):
        super().check(path)
        for i, e in enumerate(self.models):
            check_name(e.name, f"models[{i}].name")
        e = self.engine
        if e.type == "dask" and e.distribute == "tasks" and (not e.processes or e.threads_per_worker > 1):
            raise SpecError(
                "study rows as tasks need worker processes with one thread each (`processes: true`, "
                "`threads_per_worker: 1`): runs in one process would share the plots and the log",
                "engine.processes" if not e.processes else "engine.threads_per_worker",
            )
        if not self.models:
            raise SpecError("a study needs at least one model", f"{path}.models" if path else "models")
        names = [m.name for m in self.models]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise SpecError(f"model names must be unique; repeated: {dup}", "models")
        for i, e in enumerate(self.models):
            try:
                self.entry_spec(e, "runs")
            except SpecError as exc:
                raise SpecError(
                    str(exc).split(": ", 1)[-1], f"models[{i}].{exc.path}" if exc.path else f"models[{i}]"
                ) from None

    @property
    def rows_as_tasks(self) -> bool:
        """Whether the models run as parallel jobs of the engine (`processes`, or `dask` with
        `distribute: tasks`), each then in its worker with the serial engine."""
        e = self.engine
        return e.type == "processes" or (e.type == "dask" and e.distribute == "tasks")

    def entry_spec(self, entry: StudyEntry, out_dir) -> Spec:
        rows_as_tasks = self.rows_as_tasks
        spec = Spec(
            name=entry.name,
            description=self.description,
            seed=self.seed,
            data=self.data,
            model=entry.model,
            objective=entry.objective,
            evaluation=self.evaluation,
            output=OutputSpec(dir=str(Path(out_dir) / entry.name)),
            engine=EngineSpec(type="local") if rows_as_tasks else self.engine,
        )
        spec.check("")
        return spec
