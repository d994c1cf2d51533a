"""Data sets: the named real sets of ``../shared/data`` and files given by path.

A :class:`Dataset` holds train and test inputs (dense float64 or CSR), integer labels 0..C-1 and
the class names (the original label values as strings).  Named sets are found under a data root:
the ``root`` argument, else ``$GPMODELS_DATA``, else ``./data``, ``../shared/data`` and
``../../shared/data`` relative to the working directory.

Single-label sets: ``satimage``, ``usps``, ``news20`` (sparse counts; ``subset='small'`` uses
``subset_small.npz``), ``imclef07a``.  Files: ``.npz`` with arrays ``X``/``y`` (dense) or a
``scipy.sparse.save_npz`` matrix plus labels, ARFF (``.arff``: numeric features, nominal class
attribute; :mod:`gpmodels.data.arff`) and svmlight/libsvm text (any other suffix).
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.errors import DataError
from gpmodels.validation import check_features
from gpmodels.data.arff import load_arff
from gpmodels.data.svmlight import load_svmlight

__all__ = ["Dataset", "find_data_root", "load_dataset", "load_file", "load_inputs", "NAMED_DATASETS", "encode_labels"]

NAMED_DATASETS = ("satimage", "usps", "news20", "imclef07a")


@attrs.frozen
class Dataset:
    """Train/test inputs with integer labels in 0..C-1 and their class names."""

    name: str
    X_train: object
    y_train: np.ndarray
    X_test: object
    y_test: np.ndarray
    classes: tuple[str, ...]
    hierarchy_path: str | None = None
    scaler: object = None  # the FeatureScaler fitted on X_train, when the data went through one

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def sparse(self) -> bool:
        return sp.issparse(self.X_train)


def find_data_root(root=None) -> Path:
    """The folder holding the named data sets; raises DataError listing where it looked."""
    candidates = []
    if root is not None:
        candidates.append(Path(root))
    else:
        env = os.environ.get("GPMODELS_DATA")
        if env:
            candidates.append(Path(env))
        cwd = Path.cwd()
        candidates += [cwd / "data", cwd.parent / "shared" / "data", cwd.parent.parent / "shared" / "data"]
    for c in candidates:
        if (c / "satimage").is_dir() or any((c / name).is_dir() for name in NAMED_DATASETS):
            return c.resolve()
    raise DataError(
        "no data root found; looked in " + ", ".join(str(c) for c in candidates)
        + ". Set data.root in the spec or the GPMODELS_DATA environment variable."
    )


def encode_labels(y_train, y_test) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Map raw labels to 0..C-1 (sorted by value); test labels must occur in training."""
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    values = np.unique(y_train)
    unknown = np.setdiff1d(np.unique(y_test), values)
    if unknown.size:
        raise DataError(f"test labels {unknown.tolist()[:10]} do not occur in the training labels {values.tolist()[:20]}")
    names = tuple(str(v.item() if hasattr(v, "item") else v) for v in values)
    return np.searchsorted(values, y_train), np.searchsorted(values, y_test), names


def _npz(path: Path) -> dict:
    if not path.is_file():
        raise DataError(f"data file not found: {path}")
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _dense_pair(folder: Path, name: str) -> Dataset:
    tr, te = _npz(folder / "train.npz"), _npz(folder / "test.npz")
    ytr, yte, classes = encode_labels(tr["y"], te["y"])
    return Dataset(name, check_features("X_train", tr["X"]), ytr, check_features("X_test", te["X"]), yte, classes)


def load_dataset(name: str, root=None, *, subset: str | None = None) -> Dataset:
    """Load a named data set from the data root (see the module docstring)."""
    if name not in NAMED_DATASETS:
        import difflib

        near = difflib.get_close_matches(name, NAMED_DATASETS, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise DataError(f"unknown data set {name!r}; known: {', '.join(NAMED_DATASETS)}{hint}")
    folder = find_data_root(root) / name
    if not folder.is_dir():
        raise DataError(f"data set folder not found: {folder}")
    if subset is not None and name != "news20":
        raise DataError(f"subset={subset!r} is only defined for news20 (subset_small.npz); got data set {name!r}")
    if name in ("satimage", "usps"):
        return _dense_pair(folder, name)
    if name == "imclef07a":
        tr, te = _npz(folder / "train.npz"), _npz(folder / "test.npz")
        classes = tuple((folder / "classes.txt").read_text().split())
        return Dataset(name, check_features("X_train", tr["X"]), tr["y"].astype(np.intp),
                       check_features("X_test", te["X"]), te["y"].astype(np.intp), classes,
                       str(folder / "hierarchy.tsv"))
    # news20
    Xtr = sp.load_npz(folder / "X_train.npz").astype(np.float64).tocsr()
    Xte = sp.load_npz(folder / "X_test.npz").astype(np.float64).tocsr()
    lab = _npz(folder / "labels.npz")
    ytr, yte = lab["y_train"].astype(np.intp), lab["y_test"].astype(np.intp)
    classes = tuple(line for line in (folder / "classes.txt").read_text().split("\n") if line)
    if subset is not None:
        if subset != "small":
            raise DataError(f"news20 subset must be 'small' or null; got {subset!r}")
        idx = _npz(folder / "subset_small.npz")
        Xtr, ytr = Xtr[idx["train_idx"]], ytr[idx["train_idx"]]
        Xte, yte = Xte[idx["test_idx"]], yte[idx["test_idx"]]
    return Dataset("news20" if subset is None else "news20-small", Xtr, ytr, Xte, yte, classes,
                   str(folder / "hierarchy.tsv"))


def _load_one(path: Path):
    """(X, raw labels) from an .npz (dense X/y or sparse matrix + labels), ARFF or svmlight file."""
    if not path.is_file():
        raise DataError(f"data file not found: {path}")
    if path.suffix.lower() == ".arff":
        return load_arff(path)
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            files = set(z.files)
            if "X" in files and "y" in files:
                return z["X"], z["y"]
            if {"data", "indices", "indptr", "shape"} <= files:
                raise DataError(f"{path} is a sparse matrix without labels; store X and y together, "
                                "or use svmlight text for sparse data with labels")
            raise DataError(f"{path} must hold arrays 'X' and 'y'; it has {sorted(files)}")
    X, y = load_svmlight(path)
    return X, y


def load_file(path, test_path=None, name: str | None = None) -> tuple[object, np.ndarray, object | None, np.ndarray | None]:
    """Raw (X, y, X_test, y_test) from files; the test part is None when no test file is given."""
    X, y = _load_one(Path(path))
    if test_path is None:
        return X, y, None, None
    Xt, yt = _load_one(Path(test_path))
    if sp.issparse(X) and sp.issparse(Xt) and Xt.shape[1] != X.shape[1]:
        width = max(X.shape[1], Xt.shape[1])
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))
        Xt = sp.csr_matrix((Xt.data, Xt.indices, Xt.indptr), shape=(Xt.shape[0], width))
    return X, y, Xt, yt


def load_inputs(path) -> tuple[object, np.ndarray | None]:
    """Inputs for prediction: (X, y or None) from an .npz with ``X`` (``y`` optional), ARFF (class
    attribute optional) or svmlight text."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file not found: {path}")
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            if "X" not in z.files:
                raise DataError(f"{path} must hold an array 'X' (and optionally 'y'); it has {sorted(z.files)}")
            return z["X"], (z["y"] if "y" in z.files else None)
    if path.suffix.lower() == ".arff":
        return load_arff(path, require_class=False)
    return load_svmlight(path)
