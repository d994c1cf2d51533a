"""Data sets: the named real sets of ``../shared/data``, and the checked .npy / .npz readers.

A :class:`Dataset` holds train and test inputs (dense float64 or CSR), integer labels 0..C-1 and
the class names (the original label values as strings).  Named sets are found under a data root:
the ``root`` argument, else ``$GPMODELS_DATA``, else ``./data``, ``../shared/data`` and
``../../shared/data`` relative to the working directory, else ``data/`` and ``../shared/data``
beside the spec's folder and each of its parents (:func:`data_root_candidates`).

Single-label sets: ``satimage``, ``usps``, ``news20`` (sparse counts; ``subset='small'`` uses
``subset_small.npz``), ``imclef07a``, ``clinc150`` (sparse counts, 150 intents under 10 domains; its
validation split and out-of-scope queries ride along as ``Dataset.validation`` / ``Dataset.out_of_scope``,
``subset='small'`` / ``'validation'``: :func:`load_clinc150`).

CLINC150 (Larson et al., EMNLP 2019; the staged folder's README gives the conversion): the data set's own
split, 15 000 train / 3 000 validation / 4 500 test queries (100 / 20 / 30 per intent) as CSR term counts
over 2 793 terms; the tree ``hierarchy.tsv`` (root -> 10 domains -> 150 intents); and 1 200
out-of-scope queries (100 train, 100 validation, 1 000 test) of no class.  Train and test hold the
in-scope queries only; ``Dataset.validation`` = (X_val, y_val) and ``Dataset.out_of_scope`` =
{"train": X, "val": X, "test": X} keep the rest reachable (open-set experiments).  ``subset``:
``small`` (``subset_small.npz``: the first 20 train / 10 test queries of every intent) or
``validation`` (the validation split in the test set's place, to choose settings without the test set).

Data files given by path are read by :mod:`gpmodels.data.files`.
"""

from __future__ import annotations

import os
import zipfile
import zlib
from pathlib import Path

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.data.labels import InputFormat, label_kind, label_text, label_values
from gpmodels.errors import DataError
from gpmodels.validation import check_features

__all__ = [
    "Dataset",
    "find_data_root",
    "data_root_candidates",
    "load_dataset",
    "NAMED_DATASETS",
    "encode_labels",
    "read_npz",
    "read_npy",
    "check_npz",
    "KNOWN_ARRAYS",
    "DATASET_SUBSETS",
    "load_clinc150",
]

NAMED_DATASETS = ("satimage", "usps", "news20", "imclef07a", "clinc150")

#: the subsets each named set defines (``load_dataset(..., subset=...)``, the spec's ``data.subset``)
DATASET_SUBSETS = {"news20": ("small",), "clinc150": ("small", "validation")}

_OOS_SPLITS = ("train", "val", "test")  # clinc150 oos_split codes 0 / 1 / 2


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
    zero_based: bool | None = None  # the svmlight index base of the files (None: not svmlight)
    positive_class: str | None = None  # a binary data.positive_class task: classes ("rest", positive_class)
    label_kind: str = "text"  # the raw labels' kind, "number" or "text" (gpmodels.data.labels)
    feature_names: tuple[str, ...] | None = None  # a CSV training file's feature columns (None: not CSV)
    validation: tuple | None = None  # (X_val, y_val): a named set's own validation split, apart from train/test
    out_of_scope: dict | None = None  # {split: X}: inputs of no class (clinc150's out-of-scope queries)

    @property
    def input_format(self) -> InputFormat:
        """How a model trained on these data reads its prediction inputs (saved with the model)."""
        return InputFormat(self.zero_based, self.label_kind, self.feature_names)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def sparse(self) -> bool:
        return sp.issparse(self.X_train)


def _has_datasets(folder: Path) -> bool:
    """A data root holds at least one named set (or the FunCat folder of the multilabel sets)."""
    return any((folder / name).is_dir() for name in NAMED_DATASETS + ("funcat", "enron_corr"))


def data_root_candidates(root=None, spec_dir=None) -> list[Path]:
    """Where a data root is looked for, in order: ``root`` alone when given (``data.root``); else
    ``$GPMODELS_DATA``; the working directory's ``data/`` and ``../shared/data`` (and
    ``../../shared/data``); then the spec's own folder and each of its parents, ``data/`` and
    ``../shared/data`` beside each — so a project spec runs by its path from any working directory."""
    if root is not None:
        return [Path(root)]
    candidates = []
    env = os.environ.get("GPMODELS_DATA")
    if env:
        candidates.append(Path(env))
    cwd = Path.cwd()
    candidates += [cwd / "data", cwd.parent / "shared" / "data", cwd.parent.parent / "shared" / "data"]
    if spec_dir is not None:
        folder = Path(spec_dir).expanduser().resolve()
        for d in (folder, *folder.parents):
            candidates += [d / "data", d.parent / "shared" / "data"]
    seen, unique = set(), []
    for c in candidates:
        key = str(c.resolve()) if c.exists() else str(c)
        if key not in seen:
            seen.add(key)
            unique.append(c)
    return unique


def find_data_root(root=None, *, spec_dir=None) -> Path:
    """The folder holding the named data sets (see :func:`data_root_candidates`); raises DataError
    listing every place it looked."""
    candidates = data_root_candidates(root, spec_dir)
    for c in candidates:
        if _has_datasets(c):
            return c.resolve()
    raise DataError(
        "no data root found; looked in "
        + ", ".join(str(c) for c in candidates)
        + ". Set data.root in the spec or the GPMODELS_DATA environment variable."
    )


def encode_labels(y_train, y_test) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Map raw labels to 0..C-1 (sorted by value); test labels must occur in training, and the
    training labels must hold at least two classes (classification of one class is no task: it
    would score 0 % error whatever the model)."""
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    for name, y in (("training", y_train), ("test", y_test)):
        if y.dtype.kind == "O":
            raise DataError(f"the {name} labels are Python objects; labels must be numbers or strings")
        if y.dtype.kind in "fc" and not np.all(np.isfinite(y)):
            bad = int(np.flatnonzero(~np.isfinite(y))[0])
            raise DataError(f"the {name} labels must be finite; label {bad} is {y[bad].item()!r}")
    if y_train.dtype.kind in "iu" and y_test.dtype.kind in "iuf":
        return _encode_exact(y_train, y_test)
    values = np.unique(y_train)
    if values.size < 2:
        shown = repr(str(values[0].item() if hasattr(values[0], "item") else values[0])) if values.size else "none"
        raise DataError(
            f"the training data have {'one class' if values.size else 'no labels'} ({shown}); "
            "classification needs at least two"
        )
    unknown = ~np.isin(y_test, values)
    if unknown.any():
        first = int(np.flatnonzero(unknown)[0])
        shown = f" (e.g. {label_text(y_test[first])})" if label_kind(y_test) == "number" else ""
        raise DataError(
            f"{int(unknown.sum())} test labels{shown} are none of the {values.size} training classes (the first is "
            f"test point {first + 1}); a model predicts only the classes it was trained on"
        )
    names = tuple(str(v.item() if hasattr(v, "item") else v) for v in values)
    return np.searchsorted(values, y_train), np.searchsorted(values, y_test), names


def _encode_exact(y_train: np.ndarray, y_test: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """:func:`encode_labels` of integer training labels, compared as Python numbers: exact for int64 beside
    uint64 and beyond 2^53, where numpy's common type (float64) would merge neighbouring labels."""
    train, test = label_values(y_train), label_values(y_test)
    values = sorted(set(train))
    if len(values) < 2:
        shown = repr(str(values[0])) if values else "none"
        raise DataError(
            f"the training data have {'one class' if values else 'no labels'} ({shown}); "
            "classification needs at least two"
        )
    index = {v: c for c, v in enumerate(values)}
    codes = np.array([index.get(v, -1) for v in test], dtype=np.intp)
    if np.any(codes < 0):
        first = int(np.flatnonzero(codes < 0)[0])
        raise DataError(
            f"{int(np.sum(codes < 0))} test labels (e.g. {label_text(test[first])}) are none of the {len(values)} "
            f"training classes (the first is test point {first + 1}); a model predicts only the classes it was "
            "trained on"
        )
    return np.array([index[v] for v in train], dtype=np.intp), codes, tuple(str(v) for v in values)


#: array names the readers look for: the only member names a message quotes (others are the file's content)
KNOWN_ARRAYS = frozenset(
    {
        "X",
        "y",
        "data",
        "indices",
        "indptr",
        "shape",
        "format",
        "y_train",
        "y_test",
        "train_idx",
        "test_idx",
        "Y",
        "Y_train",
        "Y_test",
    }
)


def _array_name(name: str, k: int) -> str:
    """An .npz member named in a message: ``array 'X'`` for a name the readers know, else by position."""
    return f"array {name!r}" if name in KNOWN_ARRAYS else f"array {k + 1} of the archive"


#: deflate cannot expand data more than about 1032:1; a member declaring more is corrupt (or a bomb)
_DEFLATE_MAX_RATIO = 1100


def check_npz(path) -> Path:
    """Check an .npz archive before numpy allocates anything it declares: a readable zip of .npy
    members, each with a parsable header, no object dtype (never unpickled), and a declared size
    (shape x itemsize) that the member's stored bytes can hold.  Raises DataError naming the file."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file not found: {path}")
    size = path.stat().st_size
    if size == 0:
        raise DataError(f"{path} is empty (0 bytes); expected an .npz archive of arrays (numpy.savez)")
    try:
        with zipfile.ZipFile(path) as zf:
            for k, info in enumerate(zf.infolist()):
                _check_npz_member(path, zf, k, info, size)
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        EOFError,
        OSError,
        zlib.error,
        NotImplementedError,
        RuntimeError,
        ValueError,
        KeyError,
    ) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(
            f"{path} is not a readable .npz archive (truncated or corrupt: {type(exc).__name__}); "
            "expected the output of numpy.savez"
        ) from None
    return path


def _check_npz_member(path: Path, zf: zipfile.ZipFile, k: int, info: zipfile.ZipInfo, size: int) -> None:
    """Member k of an .npz archive of ``size`` bytes: a .npy array whose declared bytes its stored
    bytes can hold, with a parsable header, no object dtype, and a shape that fits in those bytes."""
    name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
    what = _array_name(name, k)
    if not info.filename.endswith(".npy"):
        raise DataError(
            f"{path}: member {k + 1} of the archive is not a .npy array; expected an .npz archive "
            "of arrays (numpy.savez)"
        )
    if (
        info.compress_size > size
        or (info.compress_type == zipfile.ZIP_STORED and info.file_size > info.compress_size)
        or info.file_size > _DEFLATE_MAX_RATIO * max(info.compress_size, 1) + 4096
    ):
        raise DataError(
            f"{path}: {what} declares {info.file_size} bytes that its "
            f"{info.compress_size} stored bytes cannot hold (truncated or corrupt archive)"
        )
    with zf.open(info) as fh:
        try:
            version = np.lib.format.read_magic(fh)
            read_header = (
                np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(fh)
        except (ValueError, TypeError, SyntaxError, EOFError, KeyError, OverflowError):
            raise DataError(f"{path}: {what} has no valid .npy header (truncated or corrupt archive)") from None
        header_bytes = fh.tell() if fh.seekable() else 0
    if dtype.hasobject:
        raise DataError(
            f"{path}: {what} has dtype object (Python objects, which are "
            "never unpickled); store numbers or fixed-width strings"
        )
    n_bytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if n_bytes > info.file_size - header_bytes:
        raise DataError(
            f"{path}: {what} declares shape {tuple(shape)} ({n_bytes} bytes) "
            f"but the archive holds {info.file_size - header_bytes} bytes for it "
            "(truncated or corrupt archive)"
        )


def read_npy(path, what: str = "array") -> np.ndarray:
    """A plain numeric array from a .npy file, its header checked before numpy allocates anything:
    the shape x itemsize it declares must fit in the bytes the file holds, and the dtype must be
    numbers (no objects: never unpickled).  DataError naming the file, never quoting it."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{what} file not found: {path}")
    size = path.stat().st_size
    try:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            read_header = (
                np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(fh)
            header_bytes = fh.tell()
    except (ValueError, TypeError, SyntaxError, EOFError, KeyError, OverflowError, OSError):
        raise DataError(
            f"{path} ({size} bytes) cannot be read as a .npy {what}: no valid .npy header (an .npz "
            "archive or another format?); expected one array written by numpy.save"
        ) from None
    if dtype.hasobject or dtype.kind not in "biuf":
        raise DataError(
            f"{path} cannot be read as a .npy {what}: its dtype kind is {dtype.kind!r}, not real numbers; "
            "store a float or integer array (object arrays are never unpickled)"
        )
    n_bytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if n_bytes > size - header_bytes:
        raise DataError(
            f"{path} cannot be read as a .npy {what}: it declares shape {tuple(shape)} ({n_bytes} bytes) "
            f"but holds {size - header_bytes} bytes after its header (truncated or corrupt)"
        )
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise DataError(f"{path} ({size} bytes) cannot be read as a .npy {what} ({type(exc).__name__})") from None


def read_npz(path) -> dict:
    """All arrays of an .npz archive (checked by :func:`check_npz`, read with allow_pickle=False)."""
    path = check_npz(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, EOFError, OSError, zlib.error, ValueError, KeyError, MemoryError) as exc:
        raise DataError(f"{path} is not a readable .npz archive (truncated or corrupt: {type(exc).__name__})") from None


def _npz(path: Path) -> dict:
    return read_npz(path)


def _sparse_npz(path: Path):
    check_npz(path)
    try:
        return sp.load_npz(path).astype(np.float64).tocsr()
    except (zipfile.BadZipFile, EOFError, OSError, zlib.error, ValueError, KeyError) as exc:
        raise DataError(f"{path} is not a readable scipy.sparse .npz matrix ({type(exc).__name__})") from None


def _dense_pair(folder: Path, name: str) -> Dataset:
    tr, te = _npz(folder / "train.npz"), _npz(folder / "test.npz")
    ytr, yte, classes = encode_labels(tr["y"], te["y"])
    return Dataset(
        name,
        check_features("X_train", tr["X"]),
        ytr,
        check_features("X_test", te["X"]),
        yte,
        classes,
        label_kind=label_kind(tr["y"]),
    )


def _text_lines(path: Path) -> tuple[str, ...]:
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


def load_clinc150(folder, subset: str | None = None) -> Dataset:
    """The CLINC150 data set of ``folder`` as a Dataset: the in-scope train / test queries (``subset``:
    ``small``, ``validation``), with ``validation`` and ``out_of_scope`` (see the module docstring)."""
    folder = Path(folder)
    if subset is not None and subset not in DATASET_SUBSETS["clinc150"]:
        raise DataError(
            f"clinc150 subset must be one of {', '.join(DATASET_SUBSETS['clinc150'])} or null; got {subset!r}"
        )
    classes = _text_lines(folder / "classes.txt")
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


def load_dataset(name: str, root=None, *, subset: str | None = None, spec_dir=None) -> Dataset:
    """Load a named data set from the data root (see the module docstring; ``spec_dir``: the folder
    of the spec that names it, searched with its parents)."""
    if name not in NAMED_DATASETS:
        import difflib

        near = difflib.get_close_matches(name, NAMED_DATASETS, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise DataError(f"unknown data set {name!r}; known: {', '.join(NAMED_DATASETS)}{hint}")
    folder = find_data_root(root, spec_dir=spec_dir) / name
    if not folder.is_dir():
        raise DataError(f"data set folder not found: {folder}")
    if subset is not None and name not in DATASET_SUBSETS:
        raise DataError(
            f"subset={subset!r} is only defined for {' and '.join(DATASET_SUBSETS)} "
            f"(subset_small.npz); got data set {name!r}"
        )
    if name == "clinc150":
        return load_clinc150(folder, subset)
    if name in ("satimage", "usps"):
        return _dense_pair(folder, name)
    if name == "imclef07a":
        tr, te = _npz(folder / "train.npz"), _npz(folder / "test.npz")
        classes = tuple((folder / "classes.txt").read_text().split())
        return Dataset(
            name,
            check_features("X_train", tr["X"]),
            tr["y"].astype(np.intp),
            check_features("X_test", te["X"]),
            te["y"].astype(np.intp),
            classes,
            str(folder / "hierarchy.tsv"),
        )
    # news20
    Xtr = _sparse_npz(folder / "X_train.npz")
    Xte = _sparse_npz(folder / "X_test.npz")
    lab = _npz(folder / "labels.npz")
    ytr, yte = lab["y_train"].astype(np.intp), lab["y_test"].astype(np.intp)
    classes = tuple(line for line in (folder / "classes.txt").read_text().split("\n") if line)
    if subset is not None:
        if subset != "small":
            raise DataError(f"news20 subset must be 'small' or null; got {subset!r}")
        idx = _npz(folder / "subset_small.npz")
        Xtr, ytr = Xtr[idx["train_idx"]], ytr[idx["train_idx"]]
        Xte, yte = Xte[idx["test_idx"]], yte[idx["test_idx"]]
    return Dataset(
        "news20" if subset is None else "news20-small", Xtr, ytr, Xte, yte, classes, str(folder / "hierarchy.tsv")
    )
