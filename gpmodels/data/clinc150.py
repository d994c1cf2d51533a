"""CLINC150 (Larson et al., EMNLP 2019): 150 intents under 10 domains, short queries as sparse term counts.

The staged folder ``clinc150/`` of the data root (its README gives the conversion) holds the data set's
own split: 15 000 train, 3 000 validation and 4 500 test queries, 100 / 20 / 30 per intent, as CSR
term counts over a 2 793-term vocabulary; the class tree ``hierarchy.tsv`` (root -> 10 domains -> 150
intents, all leaves at depth 2); and the 1 200 out-of-scope queries (100 train, 100 validation, 1 000
test), which belong to no class.

:func:`load_clinc150` returns a :class:`~gpmodels.data.datasets.Dataset` whose train and test sets are
the in-scope queries only, inputs as float64 CSR.  The other parts stay reachable on the same object:

- ``validation``: ``(X_val, y_val)``, the validation split (never merged into train or test);
- ``out_of_scope``: ``{"train": X, "val": X, "test": X}``, the out-of-scope queries of each split
  (no labels: for open-set experiments, e.g. rejecting them by the predictive entropy).

``subset``: ``None`` (train / test), ``"small"`` (``subset_small.npz``: the first 20 train and first
10 test queries of every intent, 3 000 / 1 500) or ``"validation"`` (train / validation: the
validation split takes the test set's place, for choosing settings without touching the test set).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpmodels.data.datasets import Dataset, _sparse_npz, read_npz
from gpmodels.errors import DataError

__all__ = ["CLINC150_SUBSETS", "load_clinc150"]

#: the subsets of :func:`load_clinc150` besides the whole train / test split (None)
CLINC150_SUBSETS = ("small", "validation")

_OOS_SPLITS = ("train", "val", "test")  # oos_split codes 0 / 1 / 2


def _lines(path: Path) -> tuple[str, ...]:
    if not path.is_file():
        raise DataError(f"data file not found: {path}")
    return tuple(line for line in path.read_text(encoding="utf-8").split("\n") if line)


def _checked_labels(y: np.ndarray, n_rows: int, C: int, what: str) -> np.ndarray:
    """Labels of one split: one per row, class indices 0..C-1."""
    y = np.asarray(y)
    if y.shape != (n_rows,) or y.dtype.kind not in "iu" or (y.size and (y.min() < 0 or y.max() >= C)):
        raise DataError(
            f"clinc150 labels.npz: {what} must hold {n_rows} class indices in 0..{C - 1} (one per row of "
            f"X_{what.split('_')[1]}.npz); got shape {y.shape}, dtype {y.dtype}"
        )
    return y.astype(np.intp)


def load_clinc150(folder, subset: str | None = None):
    """The CLINC150 data set of ``folder`` as a Dataset (see the module docstring)."""
    folder = Path(folder)
    if subset is not None and subset not in CLINC150_SUBSETS:
        raise DataError(f"clinc150 subset must be one of {', '.join(CLINC150_SUBSETS)} or null; got {subset!r}")
    classes = _lines(folder / "classes.txt")
    C = len(classes)
    X = {s: _sparse_npz(folder / f"X_{s}.npz") for s in ("train", "val", "test")}
    lab = read_npz(folder / "labels.npz")
    y = {s: _checked_labels(lab.get(f"y_{s}"), X[s].shape[0], C, f"y_{s}") for s in X}
    X_oos, oos_split = _sparse_npz(folder / "X_oos.npz"), np.asarray(lab.get("oos_split"))
    if oos_split.shape != (X_oos.shape[0],):
        raise DataError(
            f"clinc150 labels.npz: oos_split must give the split of each of the {X_oos.shape[0]} rows of "
            f"X_oos.npz; got shape {oos_split.shape}"
        )
    out_of_scope = {s: X_oos[np.flatnonzero(oos_split == k)] for k, s in enumerate(_OOS_SPLITS)}
    Xtr, ytr, Xte, yte, name = X["train"], y["train"], X["test"], y["test"], "clinc150"
    if subset == "small":
        idx = read_npz(folder / "subset_small.npz")
        Xtr, ytr = Xtr[idx["train_idx"]], ytr[idx["train_idx"]]
        Xte, yte = Xte[idx["test_idx"]], yte[idx["test_idx"]]
        name = "clinc150-small"
    elif subset == "validation":
        Xte, yte, name = X["val"], y["val"], "clinc150-validation"
    return Dataset(
        name,
        Xtr,
        ytr,
        Xte,
        yte,
        classes,
        str(folder / "hierarchy.tsv"),
        validation=(X["val"], y["val"]),
        out_of_scope=out_of_scope,
    )
