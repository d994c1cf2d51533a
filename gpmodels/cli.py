"""The driver: ``gpmodels run|validate|study|predict|spec-reference``.

``run`` and ``study`` print one-line messages on stdout and show tqdm progress bars on stderr
(Newton iterations, CV outer iterations, study rows); ``--no-progress`` drops the bars,
``--quiet`` both (errors still go to stderr).

Exit codes: 0 success; 2 bad spec, bad input, unusable report folder or bad command line; 1 the
run failed (a study: one of its models failed); 130 interrupted by Ctrl-C (``gpmodels: interrupted``,
no traceback; a CV checkpoint is written atomically, so the last one is kept and resumed); SIGTERM and
SIGHUP are handled the same way and exit 128 + the signal number (143, 129).

``--set key.path=value`` (run, validate, study; repeatable) overrides a spec key before validation
(:mod:`gpmodels.driver.overrides`); ``--fresh`` (run) starts CV learning afresh (``objective.cv.resume:
never``); ``--version`` prints ``gpmodels <version>``; ``python -m gpmodels`` is the same program.
Every run records its command line (``metrics.json`` ``command``; :func:`gpmodels.driver.run.provenance`).

Errors are one line on stderr; a failure the package did not foresee names its type and place, and
shows the traceback only with ``GPMODELS_DEBUG=1``.  No message quotes the content of a file it could not read.

``--allow-import MODULE`` (repeatable) lets a spec's or model folder's ``model.prior:
MODULE:builder`` import that module (and its sub-modules); nothing a file names is imported
without it.  ``--force`` lets ``run`` / ``study`` replace another run's report in the folder.
"""

from __future__ import annotations

import csv
import os
import shlex
import signal
import sys
import threading
import traceback
from pathlib import Path

import attrs
import numpy as np

from gpmodels.cli_parser import build_parser
from gpmodels.data.files import load_inputs
from gpmodels.driver import spec_reference
from gpmodels.driver.build import check_files
from gpmodels.driver.loader import grant_imports, read_yaml, spec_from_dict
from gpmodels.driver.output import written_by_a_run
from gpmodels.driver.overrides import apply_overrides
from gpmodels.driver.run import output_dir, run_spec
from gpmodels.driver.saved import load_model
from gpmodels.driver.sections.study import StudySpec
from gpmodels.driver.study import failed_models, run_study, study_folder
from gpmodels.errors import (
    CheckpointError,
    DataError,
    GPModelsError,
    InputError,
    NumericalError,
    OutputError,
    SpecError,
    Terminated,
)
from gpmodels.kernels.device.backend import device_in_use
from gpmodels.linalg.blas_threads import configure_openblas

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
#: the most characters of an error message printed
MAX_MESSAGE = 2000
EXIT_INTERRUPTED = 130
#: 128 + SIGPIPE, what a shell reports for a Unix tool stopped by a closed pipe
EXIT_BROKEN_PIPE = 141


def _load(path, overrides, allow_import, *, kind=None):
    """The spec (or, ``kind=None``, spec or study spec) of ``path`` with ``--set`` overrides applied before
    validation; with the spec's folder."""
    data = apply_overrides(read_yaml(path), overrides)
    base_dir = Path(path).resolve().parent
    if kind != "model" and isinstance(data, dict) and "models" in data:
        return grant_imports(StudySpec.from_dict(data), allow_import), base_dir
    return spec_from_dict(data, allow_import=allow_import), base_dir


def _validate(path, allow_import=(), overrides=()) -> None:
    spec, base_dir = _load(path, overrides, allow_import)
    if isinstance(spec, StudySpec):
        study_folder(spec)
        for entry in spec.models:
            check_files(spec.entry_spec(entry, "runs"), base_dir)
        print(f"{path}: valid study of {len(spec.models)} models")
    else:
        check_files(spec, base_dir)
        output_dir(spec, None)
        print(f"{path}: valid")


def _check_input_file(path) -> None:
    """``path`` is a readable regular file, else DataError describing it (never quoting it)."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"input file not found: {p}")
    if not p.is_file():
        raise DataError(f"input {p} is not a regular file (a folder or a device)")
    if not os.access(p, os.R_OK):
        raise DataError(f"input file {p} cannot be read (permission denied)")


def _check_predict_out(out, model_dir, data) -> None:
    """``--out`` names a file that can be written and that is neither the input data nor a file of the
    model folder (checked before any work: a prediction never overwrites what it reads)."""
    target = Path(out)
    if target.is_dir():
        raise OutputError(f"--out {target} is a folder; give a CSV file name", "--out")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"--out {target}: the folder {parent} does not exist", "--out")
    if not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise OutputError(f"--out {target} is not writable; choose a file you can write", "--out")
    resolved, folder = target.resolve(), Path(model_dir).resolve()

    def same(p: Path) -> bool:
        return p.resolve() == resolved or (target.exists() and p.exists() and os.path.samefile(p, target))

    if same(Path(data)):
        raise OutputError(
            f"--out {target} is the input data {data}; a prediction never writes over what it reads: "
            "choose another file",
            "--out",
        )
    kept = [p for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []
    if any(same(p) for p in kept) or (resolved.parent == folder and written_by_a_run(resolved.name)):
        raise OutputError(
            f"--out {target} is a file of the model folder {model_dir}; a prediction never writes over "
            "what it reads: choose another file (a new name in the folder is fine)",
            "--out",
        )


def _predict(model_dir, data, out, allow_import=()) -> None:
    if out is not None:  # checked before any work
        _check_predict_out(out, model_dir, data)
    _check_input_file(data)
    model = load_model(model_dir, allow_import=allow_import)
    inputs = getattr(model, "inputs", None)
    try:
        X, y = load_inputs(
            data,
            zero_based=model.zero_based,
            n_features=model.n_features,
            label_column=getattr(model, "label_column", "label"),
            feature_names=None if inputs is None else inputs.feature_names,
        )
    except (GPModelsError, MemoryError):  # messages name the file, line and column, never its content
        raise
    except Exception as exc:  # noqa: BLE001 - a reader's own error may quote the file: describe it instead
        raise DataError(
            f"input file {data} ({Path(data).stat().st_size} bytes) cannot be read as inputs "
            f"(.npz with X, .arff, .csv or svmlight text; {type(exc).__name__})"
        ) from None
    if hasattr(model, "prediction_table"):  # max-margin models: scores or multilabels, no probabilities
        header, rows, decided = model.prediction_table(X)
        _write_rows(out, header, rows)
        if y is not None and decided is not None:
            index = {c: k for k, c in enumerate(model.classes)}
            _score(np.array([index[n] for n in decided]), model.label_indices(y), data)
        return
    P = model.predict_proba(X)
    _check_finite_predictions(P, model_dir)
    names = list(model.classes)
    if not names:  # regression: the likelihood's prediction is the value itself
        _write_rows(out, ["row", "prediction"], ([i, f"{v:.8g}"] for i, v in enumerate(P[:, 0])))
        if y is not None:
            rmse = float(np.sqrt(np.mean((P[:, 0] - np.asarray(y, dtype=float)) ** 2)))
            print(f"gpmodels: {P.shape[0]} points, RMSE {rmse:.6g} against the targets in {data}", file=sys.stderr)
        return
    pred = np.argmax(P, axis=1)
    _write_rows(
        out,
        ["row", "prediction"] + [f"p_{c}" for c in names],
        ([i, names[pred[i]]] + [f"{p:.6g}" for p in P[i]] for i in range(P.shape[0])),
    )
    if y is not None:
        _score(pred, model.label_indices(y), data)


def _check_finite_predictions(P, model_dir) -> None:
    if not np.all(np.isfinite(P)):
        bad = int(np.sum(~np.all(np.isfinite(P), axis=1)))
        raise NumericalError(
            f"the model of {model_dir} gives non-finite predictions for {bad} inputs (an overflowing "
            "kernel on inputs far from the training data?); no predictions were written"
        )


def _write_rows(out, header, rows) -> None:
    """The CSV table on ``out`` (standard output when None)."""
    fh = open(out, "w", newline="") if out else sys.stdout
    try:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    finally:
        if out:
            fh.close()


def _score(pred, truth, data) -> None:
    """The error of the decisions ``pred`` against the class indices ``truth`` of the file's labels; a
    label that is none of the model's classes (-1) is counted apart, never scored."""
    known = truth >= 0
    unknown = int(np.sum(~known))
    extra = (
        f"; {unknown} further points have labels that are none of the model's classes (not scored)" if unknown else ""
    )
    if not known.any():
        print(
            f"gpmodels: {truth.size} points; no label in {data} is one of the model's classes: nothing scored",
            file=sys.stderr,
        )
        return
    err = float(np.mean(pred[known] != truth[known]))
    print(
        f"gpmodels: {int(known.sum())} points, error {100 * err:.2f} % against the labels in {data}{extra}",
        file=sys.stderr,
    )


def _kind_of_spec(path) -> str | None:
    """``study`` when the spec file lists ``models``, ``model`` when it has a ``model`` section, None for
    anything else (the loader then says what is wrong); read with the spec loader's bounds."""
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


def _with_scheduler(args) -> list:
    """The ``--set`` overrides, plus engine.type / engine.scheduler for ``--scheduler`` (validated like
    the same keys in the spec file)."""
    overrides = list(args.overrides)
    if args.scheduler is not None:
        overrides += ["engine.type=dask", f"engine.scheduler={args.scheduler}"]
    return overrides


def _command(args, command: str) -> int:
    if args.command == "spec-reference":
        sys.stdout.write(spec_reference())
        return EXIT_OK
    if args.command == "validate":
        _validate(args.spec, args.allow_import, args.overrides)
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
        study, base_dir = _load(args.spec, _with_scheduler(args), args.allow_import)
        if args.device is not None:
            study = attrs.evolve(
                study, models=tuple(attrs.evolve(e, model=_on_device(e.model, args.device)) for e in study.models)
            )
        rows = run_study(
            study,
            base_dir,
            args.out,
            quiet=args.quiet,
            progress=not args.no_progress,
            force=args.force,
            command=command,
        )
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
    spec, base_dir = _load(args.spec, _with_scheduler(args), args.allow_import, kind="model")
    if args.device is not None:
        spec = attrs.evolve(spec, model=_on_device(spec.model, args.device))
    if args.fresh:  # this run only: the checkpoint is ignored, then replaced by this run's
        spec = attrs.evolve(
            spec, objective=attrs.evolve(spec.objective, cv=attrs.evolve(spec.objective.cv, resume="never"))
        )
    run_spec(
        spec, base_dir, args.out, quiet=args.quiet, progress=not args.no_progress, force=args.force, command=command
    )
    return EXIT_OK


def _on_device(model, device: str):
    """``model`` with its kernel matrices on ``device`` (``--device``; ``cuda`` without a usable GPU
    is a DeviceError here, before any folder is written)."""
    device_in_use(device)
    return attrs.evolve(model, representation=attrs.evolve(model.representation, device=device))


def _command_line(argv) -> str:
    """The command line recorded as a run's provenance: ``sys.argv`` (``python -m gpmodels`` for the
    module's path), or ``gpmodels ARGS`` when ``main`` was called with ``argv``."""
    if argv is not None:
        return shlex.join(["gpmodels", *argv])
    words = list(sys.argv)
    if words and Path(words[0]).name == "__main__.py":
        words[:1] = ["python", "-m", "gpmodels"]
    return shlex.join(words)


#: signals handled like Ctrl-C (SIGINT): the run stops, keeps its checkpoint and exits 128 + the signal number
STOP_SIGNALS = ("SIGTERM", "SIGHUP")


def _raise_terminated(signum, frame):
    raise Terminated(signum)


def _handle_stop_signals() -> dict:
    """Install the handlers of ``STOP_SIGNALS`` (main thread only); returns the previous ones."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {}
    for name in STOP_SIGNALS:
        sig = getattr(signal, name, None)
        if sig is not None:
            previous[sig] = signal.signal(sig, _raise_terminated)
    return previous


def _silence_stdout() -> None:
    """Point stdout at the null device, so that the interpreter's last flush of the buffered output into
    the closed pipe raises nothing at exit (the recipe of Python's signal documentation, "SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is not a file descriptor (captured, replaced)
        pass


def main(argv=None) -> int:
    """The ``gpmodels`` command (``argv``: the arguments after the program name; default ``sys.argv[1:]``);
    returns the exit code (see :data:`gpmodels.cli_parser.EXIT_CODES`).  Run as a program (no ``argv``), it
    first gives idle OpenBLAS threads a short spin (:func:`gpmodels.linalg.blas_threads.configure_openblas`)."""
    if argv is None:
        configure_openblas()
    previous = _handle_stop_signals()
    try:
        args = build_parser().parse_args(argv)
        command = _command_line(argv)
        return _command(args, command)
    except Terminated as exc:  # SIGTERM / SIGHUP, handled like Ctrl-C
        print(f"gpmodels: interrupted ({exc})", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:  # Ctrl-C: no traceback; checkpoints are written atomically, so the last one is kept
        print("gpmodels: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # stdout's reader closed the pipe (`... | head`): nothing more can be shown
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except CheckpointError as exc:  # a file in the report folder, not a failure of the fit
        print(
            f"gpmodels: error: {_bounded(exc)} (pass --fresh or set `objective.cv.resume: never` to start afresh, "
            "or pass --force to clear the folder)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    except InputError as exc:
        print(f"gpmodels: error: {_bounded(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except GPModelsError as exc:
        print(f"gpmodels: run failed: {_bounded(exc)}", file=sys.stderr)
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
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


if __name__ == "__main__":
    sys.exit(main())
