"""The size of the hostile-input corpus per family of issue 27 (``python tests/corpus_sizes.py``).

A case is one call of a test of ``tests/test_hardening_families.py``: its parametrisations times, for a
hypothesis test, the examples it generates (its ``max_examples``; hypothesis stops earlier only when the
strategy has fewer distinct values).  Tests are named ``test_<family>_...``; the families below are the
issue's.  The file corpora read by other tests are counted apart (one case per file).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: the issue's families -> the test-name families that cover them
FAMILIES = {
    "file content leaks (echo)": ("echo", "csv"),
    "sizes declared by files (bounds)": ("bounds",),
    "writes outside the report folder (folder)": ("folder",),
    "silent wrong answers in data and predict (labels)": ("labels",),
    "numerics (non-finite results, loop limits)": ("numerics", "limits"),
    "faults and concurrency (locks, signals, engines, determinism)": ("locks", "signals", "engines", "determinism"),
    "estimators": ("estimators",),
    "spec input (yaml)": ("yaml",),
}
FILE_CORPORA = {
    "data files (tests/data/bad)": HERE / "data" / "bad",
    "specs (tests/driver/bad_specs)": HERE / "driver" / "bad_specs",
}


def _cases(fn) -> tuple[int, bool]:
    """(cases, generated) of one test function."""
    params = [len(m.args[1]) for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
    settings = getattr(fn, "_hypothesis_internal_use_settings", None)
    generated = getattr(fn, "hypothesis", None) is not None
    examples = settings.max_examples if generated and settings is not None else 1
    return math.prod(params) * examples, generated


def corpus_sizes() -> dict[str, dict]:
    """family -> {"cases": N, "generated": cases from hypothesis, "tests": names}."""
    sys.path.insert(0, str(HERE))
    import test_hardening_families as module

    out = {family: {"cases": 0, "generated": 0, "tests": []} for family in FAMILIES}
    for name in sorted(dir(module)):
        if not name.startswith("test_") or name.startswith("test_corpus_"):  # (the check of this count)
            continue
        prefix = name.split("_")[1]
        family = next((f for f, prefixes in FAMILIES.items() if prefix in prefixes), None)
        if family is None:
            raise ValueError(f"{name}: its family {prefix!r} is none of the issue's ({sorted(FAMILIES)})")
        cases, generated = _cases(getattr(module, name))
        out[family]["cases"] += cases
        out[family]["generated"] += cases if generated else 0
        out[family]["tests"].append(name)
    return out


def file_corpora() -> dict[str, int]:
    return {what: sum(1 for p in folder.iterdir() if p.is_file()) for what, folder in FILE_CORPORA.items()}


if __name__ == "__main__":
    sizes = corpus_sizes()
    width = max(map(len, sizes))
    print(f"{'family':<{width}}  {'tests':>5}  {'cases':>6}  {'generated':>9}")
    for family, s in sizes.items():
        print(f"{family:<{width}}  {len(s['tests']):>5}  {s['cases']:>6}  {s['generated']:>9}")
    total = sum(s["cases"] for s in sizes.values())
    print(
        f"{'all':<{width}}  {sum(len(s['tests']) for s in sizes.values()):>5}  {total:>6}  "
        f"{sum(s['generated'] for s in sizes.values()):>9}"
    )
    for what, n in file_corpora().items():
        print(f"{what}: {n} files")
