"""The driver: ``gpmodels run|validate|study|predict|spec-reference``.

``run`` and ``study`` print one-line messages on stdout and show tqdm progress bars on stderr
(Newton iterations, CV outer iterations, study rows); ``--no-progress`` drops the bars,
``--quiet`` both (errors still go to stderr).

Exit codes: 0 success; 2 bad spec, bad input or bad command line; 1 the run failed.
"""

from __future__ import annotations

import argparse
import sys
import traceback

from gpmodels.errors import GPModelsError, InputError

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpmodels", description="Kernel and GP classification with many, structured classes.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="fit and evaluate a spec; writes a report folder")
    r.add_argument("spec", help="path to a YAML spec")
    r.add_argument("--out", default=None, help="report folder (default: the spec's output.dir)")
    r.add_argument("--quiet", action="store_true", help="print nothing but errors: no messages, no progress bars")
    r.add_argument("--no-progress", action="store_true", help="no progress bars on stderr (messages still on stdout)")
    v = sub.add_parser("validate", help="check a spec or study spec (keys, types, files) without running it")
    v.add_argument("spec")
    s = sub.add_parser("study", help="run every model of a study spec on the same data; prints one table")
    s.add_argument("spec", help="path to a YAML study spec (it lists `models`)")
    s.add_argument("--out", default=None, help="study folder (default: the study's output.dir)")
    s.add_argument("--quiet", action="store_true", help="print nothing but errors: no messages, no progress bars")
    s.add_argument("--no-progress", action="store_true", help="no progress bars on stderr (messages still on stdout)")
    pr = sub.add_parser("predict", help="probabilities and decisions of a saved model for new data")
    pr.add_argument("model_dir", help="a report folder of `gpmodels run` (model.npz + spec.resolved.yaml)")
    pr.add_argument("data", help="inputs: .npz with X (y optional), .arff (class optional) or svmlight/libsvm text")
    pr.add_argument("--out", default=None, help="CSV file for the predictions (default: standard output)")
    sub.add_parser("spec-reference", help="print the spec reference (docs/specs.md)")
    return p


def _validate(path) -> None:
    from gpmodels.spec.build import check_files
    from gpmodels.spec.loader import load_any_spec
    from gpmodels.spec.study import StudySpec

    spec, base_dir = load_any_spec(path)
    if isinstance(spec, StudySpec):
        for entry in spec.models:
            check_files(spec.entry_spec(entry, "runs"), base_dir)
        print(f"{path}: valid study of {len(spec.models)} models")
    else:
        check_files(spec, base_dir)
        print(f"{path}: valid")


def _predict(model_dir, data, out) -> None:
    import csv

    import numpy as np

    from gpmodels.data.datasets import load_inputs
    from gpmodels.spec.saved import load_model

    model = load_model(model_dir)
    X, y = load_inputs(data)
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
        truth = np.array([str(v.item() if hasattr(v, "item") else v) for v in np.asarray(y)])
        truth = np.array([t[:-2] if t.endswith(".0") and t[:-2] in names else t for t in truth])
        err = float(np.mean(np.array(names)[pred] != truth))
        print(f"gpmodels: {P.shape[0]} points, error {100 * err:.2f} % against the labels in {data}", file=sys.stderr)


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "spec-reference":
            from gpmodels.spec import spec_reference

            sys.stdout.write(spec_reference())
            return EXIT_OK
        if args.command == "validate":
            _validate(args.spec)
            return EXIT_OK
        if args.command == "predict":
            _predict(args.model_dir, args.data, args.out)
            return EXIT_OK
        if args.command == "study":
            from gpmodels.spec.loader import read_yaml
            from gpmodels.spec.study import StudySpec, run_study

            from pathlib import Path

            study = StudySpec.from_dict(read_yaml(args.spec))
            run_study(study, Path(args.spec).resolve().parent, args.out, quiet=args.quiet,
                      progress=not args.no_progress)
            return EXIT_OK
        from gpmodels.spec.loader import load_spec
        from gpmodels.spec.run import run_spec

        spec, base_dir = load_spec(args.spec)
        run_spec(spec, base_dir, args.out, quiet=args.quiet, progress=not args.no_progress)
        return EXIT_OK
    except InputError as exc:
        print(f"gpmodels: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except GPModelsError as exc:
        print(f"gpmodels: run failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("gpmodels: interrupted", file=sys.stderr)
        return EXIT_FAILED
    except Exception:  # an unexpected failure of the run: show where
        traceback.print_exc()
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
