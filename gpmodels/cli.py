"""The driver: ``gpmodels run|validate|spec-reference``.

Exit codes: 0 success; 2 bad spec, bad input or bad command line; 1 the run failed.
"""

from __future__ import annotations

import argparse
import sys
import traceback

from .errors import GPModelsError, InputError

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpmodels", description="Kernel and GP classification with many, structured classes.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="fit and evaluate a spec; writes a report folder")
    r.add_argument("spec", help="path to a YAML spec")
    r.add_argument("--out", default=None, help="report folder (default: the spec's output.dir)")
    r.add_argument("--quiet", action="store_true", help="print nothing but errors")
    v = sub.add_parser("validate", help="check a spec (keys, types, files) without running it")
    v.add_argument("spec")
    sub.add_parser("spec-reference", help="print the spec reference (docs/specs.md)")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "spec-reference":
            from .spec.schema import reference_markdown
            from .spec.sections import Spec

            sys.stdout.write(reference_markdown(Spec))
            return EXIT_OK
        from .spec.build import check_files
        from .spec.loader import load_spec

        spec, base_dir = load_spec(args.spec)
        if args.command == "validate":
            check_files(spec, base_dir)
            print(f"{args.spec}: valid")
            return EXIT_OK
        from .spec.run import run_spec

        run_spec(spec, base_dir, args.out, quiet=args.quiet)
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
