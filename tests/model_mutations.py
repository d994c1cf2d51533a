"""Mutations of a valid saved model, entry by entry, run as a program (``python tests/model_mutations.py
FAMILY EXAMPLES``) so a crash by signal (a segmentation fault of code that trusted an index) fails the
calling test instead of killing pytest.

For every entry of :data:`gpmodels.persistence.MODEL_SCHEMA` a saved model holds (and for entries it
does not hold), hypothesis draws a mutation of one family: ``dtype`` (another dtype), ``shape`` (a row
dropped or added, flattened, an axis added), ``values`` (a value that breaks the entry's declared rule:
non-finite, negative, zero, an index out of range, a duplicate, an unknown word) or ``entries`` (an
entry removed, an undeclared one added, the format version changed).  Each mutated folder must be
refused with a gpmodels error, or load and predict exactly as the original: probabilities bit for bit,
labels equal as text.  Exit status 0: every example held; 1: a counterexample (printed).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpmodels.errors import GPModelsError
from gpmodels.estimators import GPClassifier, load_classifier
from gpmodels.persistence import MODEL_FILE, MODEL_SCHEMA

DTYPES = ("float32", "float64", "int32", "int64", "uint64", "bool", "complex128", "<U5")


def _models(root: Path) -> dict:
    """name -> (folder, test inputs, probabilities, labels) of two saved models: dense with int labels,
    sparse with text labels."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((24, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.3)
    Xt = rng.standard_normal((7, 3))
    out = {}
    for name, Xf, Xp, labels in (
        ("dense", X, Xt, np.array([7, 2**60, 3], dtype=np.int64)[y]),
        ("sparse", sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0)), sp.csr_matrix(Xt), np.array(["b", "a", "01"])[y]),
    ):
        est = GPClassifier(objective="map").fit(Xf, labels)
        folder = est.save(root / name)
        out[name] = (folder, Xp, est.predict_proba(Xp), est.predict(Xp))
    return out


def _save(folder: Path, arrays: dict) -> None:
    with open(folder / MODEL_FILE, "wb") as fh:
        np.savez(fh, **arrays)


def _retype(a: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        try:
            return a.astype(dtype)
        except (ValueError, TypeError, OverflowError):
            return np.full(a.shape, 1, dtype=dtype)


def _reshape(a: np.ndarray, how: str) -> np.ndarray:
    if how == "add_axis" or a.ndim == 0:
        return a[None]
    if how == "flatten":
        return a.reshape(-1) if a.ndim > 1 else a.reshape(-1, 1)
    if how == "drop_row":
        return a[:-1]
    return np.concatenate([a, a[-1:]])  # add_row


#: how to break each kind of declared rule (and floats: their finiteness)
BREAKING = {
    "float": ("nan", "inf"),
    "positive": ("zero", "negative"),
    "nonnegative": ("negative",),
    "unique": ("duplicate",),
    "below": ("past_end", "huge", "negative"),
    "row_pointer": ("negative", "huge", "past_end"),
    "in": ("unknown-word", "empty", "long"),
}


def breaking(name: str, a: np.ndarray) -> tuple:
    """The value mutations that break a rule MODEL_SCHEMA declares for ``name`` (so a model that loads after
    one of them and predicts otherwise was accepted silently); empty when it declares none."""
    entry = MODEL_SCHEMA[name]
    rules = [r.split(":")[0] for r in entry.rules] + (["float"] if a.dtype.kind == "f" else [])
    return tuple(h for r in rules for h in BREAKING[r])


def _broken_value(a: np.ndarray, how: str, i: int) -> np.ndarray:
    """``a`` with element ``i`` (mod size) replaced by a value that breaks a declared rule."""
    if a.size == 0:
        return a
    b = a.copy().reshape(-1)
    i %= b.size
    if b.dtype.kind == "U":
        b = b.astype("<U400")
        b[i] = {"duplicate": b[(i + 1) % b.size], "empty": "", "long": "x" * 400}.get(how, "unknown-word")
    elif how in ("nan", "inf"):
        b[i] = np.nan if how == "nan" else -np.inf
    elif how == "duplicate":
        b[i] = b[(i + 1) % b.size]
    else:
        big = {"negative": -1, "zero": 0, "huge": 2**31 - 1, "past_end": b.max(initial=0) + 1}[how]
        b[i] = big if b.dtype.kind != "u" or big >= 0 else 2**31 - 1
    return b.reshape(a.shape)


MUTATIONS = {
    "dtype": st.sampled_from(DTYPES),
    "shape": st.sampled_from(("add_axis", "flatten", "drop_row", "add_row")),
    "values": st.just("by rule"),
    "entries": st.sampled_from(("remove", "add", "version")),
}


def mutate(arrays: dict, name: str, family: str, how: str, i: int) -> dict:
    out = dict(arrays)
    if family == "entries":
        if how == "remove":
            out.pop(name, None)
        elif how == "add":
            out[f"{name}_extra"] = np.ones(2)
        else:
            out["format_version"] = np.array(i % 4 if i % 4 != 1 else 2)
        return out
    if name not in out:
        return out
    a = out[name]
    if family == "values":
        hows = breaking(name, a)
        if hows:
            out[name] = _broken_value(a, hows[i % len(hows)], i // len(hows))
        return out
    out[name] = {"dtype": _retype, "shape": _reshape}[family](a, how)
    return out


def _check(model, arrays: dict, work: Path) -> str | None:
    """None when the mutated folder is refused by a gpmodels error or predicts exactly as the original."""
    folder, Xt, P, labels = model
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(folder, work)
    _save(work, arrays)
    try:
        back = load_classifier(work)
        P2, labels2 = back.predict_proba(Xt), back.predict(Xt)
    except GPModelsError:
        return None
    except Exception as exc:  # noqa: BLE001 - what the test looks for
        return f"{type(exc).__name__}: {str(exc)[:300]}"
    if not np.array_equal(P, P2) or [str(v) for v in labels] != [str(v) for v in labels2]:
        return "loads and predicts differently"
    return None


def main(family: str, examples: int) -> int:
    root = Path(tempfile.mkdtemp(prefix="model-mutations-"))
    try:
        models = _models(root)
        originals = {k: dict(np.load(m[0] / MODEL_FILE, allow_pickle=False)) for k, m in models.items()}
        failures = []

        @settings(max_examples=examples, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
        @given(
            model=st.sampled_from(sorted(models)),
            name=st.sampled_from(sorted(MODEL_SCHEMA)),
            how=MUTATIONS[family],
            i=st.integers(0, 1000),
        )
        def run(model, name, how, i):
            why = _check(models[model], mutate(originals[model], name, family, how, i), root / "work")
            if why is not None:
                failures[:] = [f"{model} {name} {family}:{how} i={i}: {why}"]  # the last: the shrunk example
                raise AssertionError(failures[0])

        try:
            run()
        except AssertionError:
            pass
        print("\n".join(failures) or f"ok: {examples} {family} mutations")
        return 1 if failures else 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
