"""The command line of ``gpmodels``: its commands, their options and the help texts (argparse).

``run`` and ``study`` share the output, progress and execution options (``--quiet``, ``--no-progress``,
``--force``, ``--scheduler``, ``--device``); every command that reads a spec takes ``--set`` and
``--allow-import``; ``predict`` takes ``--allow-import``.  :mod:`gpmodels.cli` runs the parsed command.
"""

from __future__ import annotations

import argparse

from gpmodels.driver.run import package_version
from gpmodels.priors.registry import check_allow_import

__all__ = ["build_parser", "EXIT_CODES"]

ALLOW_IMPORT_HELP = (
    "let a `model.prior: MODULE:builder` path import MODULE or a sub-module of it (repeatable); "
    "without it nothing a spec or model folder names is imported"
)


def _module_name(text: str) -> str:
    try:
        return check_allow_import(text)[0]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


EXIT_CODES = """exit codes:
  0    success
  1    the run failed (a study: one of its models failed; an unforeseen error)
  2    bad input: spec, data, command line, report folder or checkpoint
  130  interrupted (Ctrl-C); a CV learning checkpoint written so far is kept and resumed by the next run
  143  terminated (SIGTERM), 129 hung up (SIGHUP): handled as Ctrl-C (checkpoint kept, run.json final, lock
       released)
  141  the reader of the output went away (`gpmodels predict ... | head`): stopped quietly, as Unix tools do
"""
ENVIRONMENT = """environment variables:
  GPMODELS_DEBUG=1     show the traceback of an unforeseen error
  GPMODELS_DATA=DIR    folder of the named data sets (`data.dataset`) when the spec sets no `data.root`
  OPENBLAS_THREAD_TIMEOUT=N  idle OpenBLAS threads spin 2^N cycles; unset, the command runs with 4
"""
_EXAMPLES = {
    None: """examples:
  gpmodels validate specs/satimage-map.yaml
  gpmodels run specs/satimage-cv.yaml --out runs/cv --set objective.cv.folds=3
  gpmodels study specs/study-objectives.yaml --no-progress
  gpmodels predict runs/cv data/new.npz --out predictions.csv
  python -m gpmodels --version
""",
    "run": """examples:
  gpmodels run specs/satimage-map.yaml
  gpmodels run specs/satimage-cv.yaml --out runs/cv --set objective.cv.folds=3 --set seed=7
  gpmodels run specs/satimage-cv.yaml --fresh          # ignore and replace the CV checkpoint
  gpmodels run specs/satimage-map.yaml --quiet --force

The report folder gets metrics.json (scores and provenance: gpmodels_version, started_at, command,
spec_sha256), spec.resolved.yaml (with the --set overrides), diagnostics.json, run.log (the run's
messages), plots, model.npz and, for CV learning, checkpoint.npz (resumed when the run is repeated).
""",
    "validate": """examples:
  gpmodels validate specs/satimage-map.yaml
  gpmodels validate specs/study-objectives.yaml --set data.max_train=500
""",
    "study": """examples:
  gpmodels study specs/study-objectives.yaml
  gpmodels study specs/study-objectives.yaml --out runs/study --set seed=3 --set models.0.objective.type=map

Writes study.md / study.csv / study.json (the table, provenance in study.json), report.md, run.log and
one sub-folder per model (its own report).
""",
    "predict": """examples:
  gpmodels predict runs/satimage-map data/new.npz
  gpmodels predict runs/satimage-map data/new.svm --out predictions.csv
""",
    "spec-reference": """examples:
  gpmodels spec-reference > docs/specs.md
""",
}
SET_HELP = (
    "override a spec key before validation (repeatable; a later one wins): KEY.PATH=VALUE, VALUE read as "
    "YAML (3, 0.5, true, [1, 2], null, text); list entries by index (models.0.name); recorded in "
    "spec.resolved.yaml"
)


def _epilog(command) -> str:
    return "\n".join((_EXAMPLES[command], EXIT_CODES, ENVIRONMENT))


def _add(sub, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    return sub.add_parser(
        name,
        help=summary,
        description=description,
        epilog=_epilog(name),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _add_run_options(q: argparse.ArgumentParser, what: str) -> None:
    """The output, progress and execution options that `run` and `study` share (``what``: whose report)."""
    q.add_argument("--quiet", action="store_true", help="print nothing but errors: no messages, no progress bars")
    q.add_argument("--no-progress", action="store_true", help="no progress bars on stderr (messages still on stdout)")
    q.add_argument("--force", action="store_true", help=f"replace another {what} report in the folder")
    q.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run on the Dask cluster of this scheduler (tcp://host:8786, started by `dask scheduler`); "
        "sets engine.scheduler and engine.type: dask (pip install gpmodels[dask])",
    )
    q.add_argument(
        "--device",
        default=None,
        choices=("cpu", "cuda", "auto"),
        help="where kernel matrices live (model.representation.device of every model): cuda (a GPU "
        "through PyTorch, pip install gpmodels[cuda]; exit 2 without one), auto (the GPU when "
        "there is one; metrics.json says which), cpu",
    )


def _add_allow_import(q: argparse.ArgumentParser) -> None:
    q.add_argument(
        "--allow-import", action="append", default=[], type=_module_name, metavar="MODULE", help=ALLOW_IMPORT_HELP
    )


def _add_spec_options(q: argparse.ArgumentParser) -> None:
    """``--set`` and ``--allow-import``: the options of every command that reads a spec."""
    q.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY.PATH=VALUE", help=SET_HELP)
    _add_allow_import(q)


def _add_spec_runner(sub, name: str, summary: str, description: str, spec_help: str, out_help: str):
    """A command that runs a spec (`run`, `study`): the spec's path, ``--out``, and the run and spec options."""
    q = _add(sub, name, summary, description)
    q.add_argument("spec", help=spec_help)
    q.add_argument("--out", default=None, help=out_help)
    _add_run_options(q, f"{name}'s")
    _add_spec_options(q)
    return q


def _add_run(sub) -> None:
    r = _add_spec_runner(
        sub,
        "run",
        "fit and evaluate a spec; writes a report folder",
        "Fit and evaluate the model of a YAML spec and write its report folder (default: the spec's "
        "output.dir).  Messages on stdout, progress bars on stderr.",
        "path to a YAML spec",
        "report folder (default: the spec's output.dir)",
    )
    r.add_argument(
        "--fresh",
        action="store_true",
        help="start CV learning afresh: ignore and replace a checkpoint in the report folder "
        "(objective.cv.resume: never for this run)",
    )


def _add_study(sub) -> None:
    _add_spec_runner(
        sub,
        "study",
        "run every model of a study spec on the same data; prints one table",
        "Run every model of a study spec on the same data and split; a model that fails is marked in the "
        "table and the others still run.",
        "path to a YAML study spec (it lists `models`)",
        "study folder (default: the study's output.dir)",
    )


def _add_predict(sub) -> None:
    pr = _add(
        sub,
        "predict",
        "probabilities and decisions of a saved model for new data",
        "Write one CSV row per input (the decision and the class probabilities) of a model saved by "
        "`gpmodels run`; with labels in the input, the error is printed on stderr.",
    )
    pr.add_argument("model_dir", help="a report folder of `gpmodels run` (model.npz + spec.resolved.yaml)")
    pr.add_argument("data", help="inputs: .npz with X (y optional), .arff (class optional) or svmlight/libsvm text")
    pr.add_argument("--out", default=None, help="CSV file for the predictions (default: standard output)")
    _add_allow_import(pr)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``gpmodels COMMAND ...`` (module docstring)."""
    p = argparse.ArgumentParser(
        prog="gpmodels",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_epilog(None),
        description="Kernel and GP classification with many, structured classes: run a YAML spec (fit, evaluate, "
        "report), compare models in a study, predict with a saved model.  `gpmodels COMMAND --help` "
        "describes each command; `python -m gpmodels` is the same program.",
    )
    p.add_argument("--version", action="version", version=f"gpmodels {package_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run(sub)
    v = _add(
        sub,
        "validate",
        "check a spec or study spec (keys, types, files) without running it",
        "Check a model spec or study spec (keys, types, values, the files it names) without running it.",
    )
    v.add_argument("spec", help="path to a YAML spec or study spec")
    _add_spec_options(v)
    _add_study(sub)
    _add_predict(sub)
    _add(
        sub,
        "spec-reference",
        "print the spec reference (docs/specs.md)",
        "Print the reference of every spec key (type, default, allowed values), as in docs/specs.md.",
    )
    return p
