"""The driver: ``gpmodels run|validate|study|predict|spec-reference``.

``run`` and ``study`` print one-line messages on stdout and show tqdm progress bars on stderr
(Newton iterations, CV outer iterations, study rows); ``--no-progress`` drops the bars,
``--quiet`` both (errors still go to stderr).

Exit codes: 0 success; 2 bad spec, bad input, unusable report folder or bad command line; 1 the
run failed (a study: one of its models failed).  Errors are one line on stderr; a failure the
package did not foresee names its type and place, and shows the traceback only with
``GPMODELS_DEBUG=1``.  No message quotes the content of a file it could not read.

``--allow-import MODULE`` (repeatable) lets a spec's or model folder's ``model.prior:
MODULE:builder`` import that module (and its sub-modules); nothing a file names is imported
without it.  ``--force`` lets ``run`` / ``study`` replace another run's report in the folder.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from pathlib import Path

from gpmodels.errors import CheckpointError, GPModelsError, InputError

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
#: a quoted token of 12 or more characters in a reader's message (replaced by its length at predict)
_QUOTED = re.compile(r"'[^'\n]{12,}'|\"[^\"\n]{12,}\"")
#: the most characters of an error message printed
MAX_MESSAGE = 2000
ALLOW_IMPORT_HELP = ("let a `model.prior: MODULE:builder` path import MODULE or a sub-module of it (repeatable); "
                     "without it nothing a spec or model folder names is imported")


def _module_name(text: str) -> str:
    from gpmodels.priors.registry import check_allow_import

    try:
        return check_allow_import(text)[0]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpmodels",
                                description="Kernel and GP classification with many, structured classes.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="fit and evaluate a spec; writes a report folder")
    r.add_argument("spec", help="path to a YAML spec")
    r.add_argument("--out", default=None, help="report folder (default: the spec's output.dir)")
    r.add_argument("--quiet", action="store_true", help="print nothing but errors: no messages, no progress bars")
    r.add_argument("--no-progress", action="store_true", help="no progress bars on stderr (messages still on stdout)")
    v = sub.add_parser("validate", help="check a spec or study spec (keys, types, files) without running it")
    v.add_argument("spec")
    for q in (r, v):
        q.add_argument("--allow-import", action="append", default=[], type=_module_name, metavar="MODULE",
                       help=ALLOW_IMPORT_HELP)
    r.add_argument("--force", action="store_true", help="replace another run's report in the folder")
    s = sub.add_parser("study", help="run every model of a study spec on the same data; prints one table")
    s.add_argument("spec", help="path to a YAML study spec (it lists `models`)")
    s.add_argument("--out", default=None, help="study folder (default: the study's output.dir)")
    s.add_argument("--quiet", action="store_true", help="print nothing but errors: no messages, no progress bars")
    s.add_argument("--no-progress", action="store_true", help="no progress bars on stderr (messages still on stdout)")
    s.add_argument("--force", action="store_true", help="replace another study's report in the folder")
    pr = sub.add_parser("predict", help="probabilities and decisions of a saved model for new data")
    pr.add_argument("model_dir", help="a report folder of `gpmodels run` (model.npz + spec.resolved.yaml)")
    pr.add_argument("data", help="inputs: .npz with X (y optional), .arff (class optional) or svmlight/libsvm text")
    pr.add_argument("--out", default=None, help="CSV file for the predictions (default: standard output)")
    for q in (s, pr):
        q.add_argument("--allow-import", action="append", default=[], type=_module_name, metavar="MODULE",
                       help=ALLOW_IMPORT_HELP)
    sub.add_parser("spec-reference", help="print the spec reference (docs/specs.md)")
    return p


def _validate(path, allow_import=()) -> None:
    from gpmodels.spec.build import check_files
    from gpmodels.spec.loader import load_any_spec
    from gpmodels.spec.study import StudySpec

    spec, base_dir = load_any_spec(path, allow_import=allow_import)
    if isinstance(spec, StudySpec):
        for entry in spec.models:
            check_files(spec.entry_spec(entry, "runs"), base_dir)
        print(f"{path}: valid study of {len(spec.models)} models")
    else:
        check_files(spec, base_dir)
        print(f"{path}: valid")


def _check_input_file(path) -> None:
    """``path`` is a readable regular file, else DataError describing it (never quoting it)."""
    from gpmodels.errors import DataError

    p = Path(path)
    if not p.exists():
        raise DataError(f"input file not found: {p}")
    if not p.is_file():
        raise DataError(f"input {p} is not a regular file (a folder or a device)")
    if not os.access(p, os.R_OK):
        raise DataError(f"input file {p} cannot be read (permission denied)")


def _predict(model_dir, data, out, allow_import=()) -> None:
    import csv

    import numpy as np

    from gpmodels.data.datasets import load_inputs
    from gpmodels.spec.saved import load_model

    if out is not None:  # checked before any work
        from gpmodels.errors import OutputError

        target = Path(out)
        if target.is_dir():
            raise OutputError(f"--out {target} is a folder; give a CSV file name", "--out")
        parent = target.parent if str(target.parent) else Path(".")
        if not parent.is_dir():
            raise OutputError(f"--out {target}: the folder {parent} does not exist", "--out")
        if not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
            raise OutputError(f"--out {target} is not writable; choose a file you can write", "--out")
    _check_input_file(data)
    model = load_model(model_dir, allow_import=allow_import)
    try:
        X, y = load_inputs(data, zero_based=model.zero_based, n_features=model.n_features,
                           label_column=getattr(model, "label_column", "label"))
    except InputError as exc:  # the reader's message may quote a token of the file: long quotes are described
        raise type(exc)(_QUOTED.sub(lambda m: f"<{len(m.group(0)) - 2} characters of the file>", str(exc))) from None
    except (GPModelsError, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - a reader's own error may quote the file: describe it instead
        from gpmodels.errors import DataError

        raise DataError(
            f"input file {data} ({Path(data).stat().st_size} bytes) cannot be read as inputs "
            f"(.npz with X, .arff, .csv or svmlight text; {type(exc).__name__})"
        ) from None
    if hasattr(model, "prediction_table"):  # max-margin models: scores or multilabels, no probabilities
        _write_table(out, data, model, y, *model.prediction_table(X))
        return
    P = model.predict_proba(X)
    names = list(model.classes)
    if not names:  # regression: the likelihood's prediction is the value itself
        fh = open(out, "w", newline="") if out else sys.stdout
        try:
            w = csv.writer(fh)
            w.writerow(["row", "prediction"])
            w.writerows([i, f"{v:.8g}"] for i, v in enumerate(P[:, 0]))
        finally:
            if out:
                fh.close()
        if y is not None:
            rmse = float(np.sqrt(np.mean((P[:, 0] - np.asarray(y, dtype=float)) ** 2)))
            print(f"gpmodels: {P.shape[0]} points, RMSE {rmse:.6g} against the targets in {data}", file=sys.stderr)
        return
    pred = np.argmax(P, axis=1)
    fh = open(out, "w", newline="") if out else sys.stdout
    try:
        w = csv.writer(fh)
        w.writerow(["row", "prediction"] + [f"p_{c}" for c in names])
        for i in range(P.shape[0]):
            w.writerow([i, names[pred[i]]] + [f"{p:.6g}" for p in P[i]])
    finally:
        if out:
            fh.close()
    if y is not None:
        truth = model.class_names(y)  # raw labels as the model's classes (binary positive_class: "rest")
        err = float(np.mean(np.array(names)[pred] != truth))
        print(f"gpmodels: {P.shape[0]} points, error {100 * err:.2f} % against the labels in {data}", file=sys.stderr)


def _write_table(out, data, model, y, header, rows, decided) -> None:
    """Write a predictor's own CSV table; score its decisions against the file's labels when both exist."""
    import csv

    import numpy as np

    fh = open(out, "w", newline="") if out else sys.stdout
    try:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    finally:
        if out:
            fh.close()
    if y is not None and decided is not None:
        err = float(np.mean(np.asarray(decided) != model.class_names(y)))
        print(f"gpmodels: {len(rows)} points, error {100 * err:.2f} % against the labels in {data}", file=sys.stderr)


def _kind_of_spec(path) -> str | None:
    """``study`` when the spec file lists ``models``, ``model`` when it has a ``model`` section, None for
    anything else (the loader then says what is wrong); read with the spec loader's bounds."""
    from gpmodels.spec.loader import read_yaml

    data = read_yaml(path)
    if not isinstance(data, dict):
        return None
    return "study" if "models" in data else "model" if "model" in data else None


def _bounded(text: str) -> str:
    text = str(text)
    return text if len(text) <= MAX_MESSAGE else f"{text[:MAX_MESSAGE]}... ({len(text) - MAX_MESSAGE} more characters)"


def _where(exc: BaseException) -> str:
    """``file.py:line`` where ``exc`` was raised (the innermost frame)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}" if tb is not None else "?"


def _command(args) -> int:
    from gpmodels.errors import SpecError

    if args.command == "spec-reference":
        from gpmodels.spec import spec_reference

        sys.stdout.write(spec_reference())
        return EXIT_OK
    if args.command == "validate":
        _validate(args.spec, args.allow_import)
        return EXIT_OK
    if args.command == "predict":
        _predict(args.model_dir, args.data, args.out, args.allow_import)
        return EXIT_OK
    kind = _kind_of_spec(args.spec)
    if args.command == "study":
        if kind == "model":
            raise SpecError(
                f"{args.spec} is a model spec (a `model` section, no `models` list); run it with "
                f"`gpmodels run {args.spec}`"
            )
        from gpmodels.spec.loader import load_any_spec
        from gpmodels.spec.study import failed_models, run_study

        study, base_dir = load_any_spec(args.spec, allow_import=args.allow_import)
        rows = run_study(study, base_dir, args.out, quiet=args.quiet, progress=not args.no_progress, force=args.force)
        failed = failed_models(rows)
        if failed:
            print(
                f"gpmodels: run failed: study {study.name!r}: {len(failed)} of {len(rows)} models failed "
                f"({', '.join(failed)}); the table and report are written",
                file=sys.stderr,
            )
            return EXIT_FAILED
        return EXIT_OK
    if kind == "study":
        raise SpecError(f"{args.spec} is a study spec (it lists `models`); run it with `gpmodels study {args.spec}`")
    from gpmodels.spec.loader import load_spec
    from gpmodels.spec.run import run_spec

    spec, base_dir = load_spec(args.spec, allow_import=args.allow_import)
    run_spec(spec, base_dir, args.out, quiet=args.quiet, progress=not args.no_progress, force=args.force)
    return EXIT_OK


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _command(args)
    except CheckpointError as exc:  # a file in the report folder, not a failure of the fit
        print(
            f"gpmodels: error: {_bounded(exc)} (set `objective.cv.resume: never` to start afresh, or pass "
            "--force to clear the folder)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    except InputError as exc:
        print(f"gpmodels: error: {_bounded(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except GPModelsError as exc:
        print(f"gpmodels: run failed: {_bounded(exc)}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("gpmodels: interrupted", file=sys.stderr)
        return EXIT_FAILED
    except MemoryError:
        print("gpmodels: run failed: out of memory (MemoryError)", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:  # the system refused a read or write (disk full, permissions)
        name = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(f"gpmodels: run failed: {exc.strerror or type(exc).__name__}{name}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # not foreseen: name it without quoting its message (it may hold file content)
        if os.environ.get("GPMODELS_DEBUG"):
            traceback.print_exc()
        else:
            print(
                f"gpmodels: run failed: internal error {type(exc).__name__} at {_where(exc)} (set GPMODELS_DEBUG=1 "
                "to see the traceback; please report it)",
                file=sys.stderr,
            )
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
