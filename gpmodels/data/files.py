"""Data files given by path: a training file with an optional test file, and prediction inputs.

Formats by suffix (:data:`FILE_FORMATS`): ``.npz`` with arrays ``X``/``y`` (dense; read by the checked
reader of :mod:`gpmodels.data.datasets`), ARFF (``.arff``: numeric features, nominal class attribute;
:mod:`gpmodels.data.arff`), CSV (``.csv``: a header line and a label column; :mod:`gpmodels.data.csvfile`)
and svmlight/libsvm text (``.svm``, ``.svmlight``, ``.libsvm``, ``.txt``; :mod:`gpmodels.data.svmlight`),
whose index base is decided once for a training and test pair.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.data.arff import arff_feature_names, load_arff
from gpmodels.data.csvfile import DEFAULT_LABEL_COLUMN, csv_header, load_csv
from gpmodels.data.datasets import KNOWN_ARRAYS, read_npz
from gpmodels.data.svmlight import MAX_FEATURES, load_svmlight, parse_svmlight, svmlight_matrix
from gpmodels.errors import DataError

__all__ = ["DataFiles", "read_data_files", "load_file", "load_inputs", "file_format", "FILE_FORMATS"]


def _check_pair(path: Path, X, y, role: str):
    """Shapes and rows of one file's (X, y)."""
    if not sp.issparse(X):
        X = np.asarray(X)
        if X.dtype.kind == "O":
            raise DataError(f"{path}: X holds Python objects; features must be numbers")
        if X.ndim != 2:
            raise DataError(f"{path}: X must be 2-D (n, d); got shape {X.shape}")
    if role and X.shape[0] == 0:
        raise DataError(f"the {role} file {path} has no rows")
    if y is not None:
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        if y.ndim != 1:
            raise DataError(f"{path}: y must be 1-D (one label per row); got shape {y.shape}")
        if y.shape[0] != X.shape[0]:
            raise DataError(f"{path}: X has {X.shape[0]} rows but y has {y.shape[0]} labels")
        if y.dtype.kind in "fc" and not np.all(np.isfinite(y)):
            bad = int(np.flatnonzero(~np.isfinite(y))[0])
            raise DataError(f"{path}: labels must be finite; y[{bad}] is {y[bad].item()!r}")
    return X, y


def _npz_pair(path: Path, require_y: bool):
    z = read_npz(path)
    if "X" in z and ("y" in z or not require_y):
        return z["X"], z.get("y")
    if {"data", "indices", "indptr", "shape"} <= set(z):
        raise DataError(
            f"{path} is a sparse matrix without labels; store X and y together, "
            "or use svmlight text for sparse data with labels"
        )
    need = "arrays 'X' and 'y'" if require_y else "an array 'X' (and optionally 'y')"
    known = sorted(set(z) & KNOWN_ARRAYS)
    raise DataError(f"{path} must hold {need}; it has {len(z)} arrays{f' (among them {known})' if known else ''}")


#: file suffix -> format of a data file given by path
FILE_FORMATS = {
    ".npz": "npz",
    ".arff": "arff",
    ".csv": "csv",
    ".svm": "svmlight",
    ".svmlight": "svmlight",
    ".libsvm": "svmlight",
    ".txt": "svmlight",
}


def file_format(path, key: str = "data.path") -> str:
    """The format of a data file by its suffix (``FILE_FORMATS``); DataError naming the suffixes
    read for any other."""
    path = Path(path)
    fmt = FILE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise DataError(
            f"{key}: {path.name[:80]!r} has the suffix {path.suffix[:20]!r}, not a data file format gpmodels "
            "reads; use .npz (arrays X, y), .svm / .svmlight / .libsvm / .txt (svmlight text), .arff or .csv "
            "(a header line and a label column)"
        )
    return fmt


def _load_one(path: Path, role: str, label_column: str = DEFAULT_LABEL_COLUMN, features=None):
    """(X, raw labels) from an .npz (dense X/y), ARFF or CSV (the columns / attributes ``features`` by
    name, when given) or svmlight (1-based) file."""
    if not path.is_file():
        raise DataError(f"data file not found: {path}")
    fmt = file_format(path)
    if fmt == "arff":
        X, y = load_arff(path, features=features)
    elif fmt == "npz":
        X, y = _npz_pair(path, require_y=True)
    elif fmt == "csv":
        X, y = load_csv(path, label_column, features=features)
    else:
        X, y = load_svmlight(path)
    return _check_pair(path, X, y, role)


def _align_test_width(X, Xt, path: Path, test_path: Path, base: str):
    """Pad a narrower sparse test matrix to the training width; refuse a wider one."""
    d, dt = X.shape[1], Xt.shape[1]
    if dt == d:
        return Xt
    if dt > d:
        raise DataError(
            f"the test file {test_path} has {dt} features{base} but the training file {path} has {d}: "
            "the model has no weights for the extra features; give test inputs with the training "
            "file's features"
        )
    if sp.issparse(Xt):  # svmlight files end at their last non-zero feature: pad with zero columns
        return sp.csr_matrix((Xt.data, Xt.indices, Xt.indptr), shape=(Xt.shape[0], d))
    raise DataError(
        f"the test file {test_path} has {dt} features but the training file {path} has {d}; dense "
        "inputs must have the same columns"
    )


@attrs.frozen(eq=False)
class DataFiles:
    """What :func:`read_data_files` read: raw inputs and labels (the test part None without a test
    file) and the svmlight index base used for both files (None when neither is svmlight)."""

    X: object
    y: np.ndarray
    X_test: object | None
    y_test: np.ndarray | None
    zero_based: bool | None
    feature_names: tuple[str, ...] | None = None  # a CSV / ARFF training file's feature columns (None: other formats)


def load_file(
    path,
    test_path=None,
    *,
    zero_based: bool | None = None,
    max_features: int = MAX_FEATURES,
    label_column: str = DEFAULT_LABEL_COLUMN,
) -> tuple[object, np.ndarray, object | None, np.ndarray | None]:
    """Raw (X, y, X_test, y_test) from files (:func:`read_data_files` without the index base)."""
    f = read_data_files(path, test_path, zero_based=zero_based, max_features=max_features, label_column=label_column)
    return f.X, f.y, f.X_test, f.y_test


def read_data_files(
    path,
    test_path=None,
    *,
    zero_based: bool | None = None,
    max_features: int = MAX_FEATURES,
    label_column: str = DEFAULT_LABEL_COLUMN,
) -> DataFiles:
    """Raw inputs and labels from a training file and an optional test file.

    svmlight files: ``zero_based`` True / False is the index base of both files; None (default)
    decides it once for the pair: 0-based when either file uses feature index 0 (a 1-based file
    never does), else 1-based (libsvm's convention).  A file is never read in a base of its own.
    Feature indices above ``max_features`` are refused (see :mod:`gpmodels.data.svmlight`).
    A test file narrower than the training file is padded with zero features up to the training
    width (svmlight files end at their last non-zero feature); a wider one is refused.
    CSV files (``.csv``): a header line, the labels in ``label_column`` (:mod:`gpmodels.data.csvfile`).
    A CSV or ARFF test file is matched to the training file's feature columns / attributes by name.
    Files with no rows, labels that are not finite, object arrays and unknown suffixes
    (:func:`file_format`) are DataErrors.
    """
    path = Path(path)
    test_path = None if test_path is None else Path(test_path)
    paths = [path] + ([test_path] if test_path is not None else [])
    for p in paths:
        if not p.is_file():
            raise DataError(f"data file not found: {p}")
    formats = [file_format(p, key) for p, key in zip(paths, ("data.path", "data.test_path"))]
    svm = [f == "svmlight" for f in formats]
    names = (
        csv_header(path, label_column)
        if formats[0] == "csv"
        else (arff_feature_names(path) or None)
        if formats[0] == "arff"
        else None
    )
    base = ""
    if any(svm):
        raws = [parse_svmlight(p, max_features=max_features) if s else None for p, s in zip(paths, svm)]
        if zero_based is None:
            zero_based = _pair_base(paths, raws)
        base = f" ({'0' if zero_based else '1'}-based indices)"
        loaded = [
            _check_pair(p, *svmlight_matrix(r, zero_based), role)
            if r is not None
            else _load_one(p, role, label_column, names)
            for p, r, role in zip(paths, raws, ("training", "test"))
        ]
    else:
        loaded = [_load_one(p, role, label_column, names) for p, role in zip(paths, ("training", "test"))]
    X, y = loaded[0]
    used = zero_based if any(svm) else None
    if test_path is None:
        return DataFiles(X, y, None, None, used, names)
    Xt, yt = loaded[1]
    return DataFiles(X, y, _align_test_width(X, Xt, path, test_path, base), yt, used, names)


def _pair_base(paths, raws) -> bool:
    """The svmlight index base of a training file and its test file when the spec gives none: 0-based
    when the training file uses feature index 0, else 1-based; a test file that uses index 0 beside a
    training file that does not is refused (re-basing the training file on the test file's evidence, or
    reading the test file in a base of its own, would shift one of them by a column without notice)."""
    train, test = raws[0], raws[1] if len(raws) > 1 else None
    if train is not None and train.uses_index_zero:
        return True
    if test is not None and test.uses_index_zero:
        what = "an svmlight file that never uses index 0" if train is not None else "not an svmlight file"
        raise DataError(
            f"the test file {paths[1]} uses feature index 0 (0-based indices) but the training file {paths[0]} is "
            f"{what}: set data.zero_based: true when both files are 0-based, false when both are 1-based (the "
            "test file is then refused), so that one base reads both"
        )
    return False


def load_inputs(
    path,
    *,
    zero_based: bool = False,
    n_features: int | None = None,
    max_features: int = MAX_FEATURES,
    label_column: str = DEFAULT_LABEL_COLUMN,
    feature_names=None,
) -> tuple[object, np.ndarray | None]:
    """Inputs for prediction: (X, y or None) from an .npz with ``X`` (``y`` optional), ARFF (class
    attribute optional; the attributes ``feature_names`` matched by name when given), CSV (the
    ``label_column`` optional; the columns ``feature_names`` matched by
    header name when given, the model's) or svmlight text (index base ``zero_based``: give the
    training data's).
    ``n_features`` (the training width) pads a narrower svmlight file and refuses a wider one."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file not found: {path}")
    fmt = file_format(path, "input")
    if fmt == "npz":
        X, y = _npz_pair(path, require_y=False)
    elif fmt == "arff":
        X, y = load_arff(path, require_class=False, features=feature_names)
    elif fmt == "csv":
        X, y = load_csv(path, label_column, require_label=False, features=feature_names)
    else:
        raw = parse_svmlight(path, max_features=max_features)
        width = None if n_features is None else max(int(n_features), 0)
        if width is not None and raw.max_index - (0 if zero_based else 1) >= width:
            raise DataError(
                f"{path} uses feature index {raw.max_index} ({'0' if zero_based else '1'}-based) but the "
                f"model was trained on {width} features; give inputs with the training features"
            )
        X, y = svmlight_matrix(raw, zero_based, width)
    X, y = _check_pair(path, X, y, "input")
    if n_features is not None and X.shape[1] != n_features:
        raise DataError(f"{path} has {X.shape[1]} features but the model was trained on {n_features}")
    return X, y
