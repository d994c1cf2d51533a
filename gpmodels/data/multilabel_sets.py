"""Hierarchical multilabel data sets of ``../shared/data``: ``enron_corr`` and the FunCat sets.

A :class:`MultilabelDataset` holds train/test inputs, multilabels (n, P) bool over the non-root
nodes of a :class:`~gpmodels.hierarchy.ClassTree` in the tree's (breadth-first) node order (the
files' column order, ``nodes.txt``, is mapped onto it), and the tree.  Labels are checked to be
ancestor-closed (:func:`gpmodels.scoring.multilabel.check_multilabels`).

- ``enron_corr``: binary word-presence features, CSR float64.
- ``<name>_FUN`` (cellcycle, church, derisi, eisen, gasch1, gasch2, pheno, seq, spo): dense
  features with NaN for missing values and nominal columns coded as value indices
  (``features.tsv``).  As the data README suggests: numeric columns are mean-imputed and
  standardised with training statistics, nominal columns one-hot encoded (a missing nominal value
  gets no 1).  ``validation``: ``merge`` trains on train + valid (Vens et al. 2008 train their
  final model so), ``drop`` ignores the valid split.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.data.datasets import _sparse_npz, find_data_root, read_npz
from gpmodels.errors import DataError
from gpmodels.hierarchy import ClassTree
from gpmodels.scoring.multilabel import check_multilabels

__all__ = ["MultilabelDataset", "MULTILABEL_DATASETS", "FUNCAT_SETS", "load_multilabel", "encode_funcat_features"]

FUNCAT_SETS = ("cellcycle", "church", "derisi", "eisen", "gasch1", "gasch2", "pheno", "seq", "spo")
MULTILABEL_DATASETS = ("enron_corr",) + tuple(f"{s}_FUN" for s in FUNCAT_SETS)


@attrs.frozen
class MultilabelDataset:
    """Train/test inputs with (n, P) bool multilabels over ``tree``'s nodes."""

    name: str
    X_train: object
    Y_train: np.ndarray
    X_test: object
    Y_test: np.ndarray
    tree: ClassTree
    scaler: object = None  # the FeatureScaler fitted on X_train, when the data went through one

    @property
    def n_classes(self) -> int:
        """P, the number of microlabels (non-root nodes)."""
        return self.tree.n_nodes

    @property
    def classes(self) -> tuple[str, ...]:
        return self.tree.nodes

    @property
    def sparse(self) -> bool:
        return sp.issparse(self.X_train)


def _reorder(Y: np.ndarray, file_nodes: list[str], tree: ClassTree, name: str) -> np.ndarray:
    if Y.shape[1] != len(file_nodes):
        raise DataError(
            f"{name}: the label matrix has {Y.shape[1]} columns but nodes.txt lists {len(file_nodes)} nodes"
        )
    col = {v: c for c, v in enumerate(file_nodes)}
    missing = [v for v in tree.nodes if v not in col]
    if missing:
        raise DataError(f"{name}: tree node {missing[0]!r} has no column in nodes.txt")
    return check_multilabels(np.asarray(Y)[:, [col[v] for v in tree.nodes]] != 0, tree, f"{name} labels")


def _npz(path: Path) -> dict:
    return read_npz(path)


def encode_funcat_features(
    X_train: np.ndarray, X_test: np.ndarray, types: list[tuple[str, int]]
) -> tuple[np.ndarray, np.ndarray]:
    """Mean-impute and standardise numeric columns, one-hot nominal ones (module docstring).

    ``types``: per column ("numeric", 0) or ("nominal", number of values).
    """
    out_tr, out_te = [], []
    for j, (kind, n_values) in enumerate(types):
        a, b = X_train[:, j].astype(np.float64), X_test[:, j].astype(np.float64)
        if kind == "nominal":
            for v in range(n_values):
                out_tr.append((a == v).astype(np.float64))
                out_te.append((b == v).astype(np.float64))
            continue
        ok = np.isfinite(a)
        mean = float(a[ok].mean()) if ok.any() else 0.0
        a = np.where(ok, a, mean)
        b = np.where(np.isfinite(b), b, mean)
        std = float(a.std())
        if std > 0:
            a, b = (a - mean) / std, (b - mean) / std
        else:
            a, b = a - mean, b - mean
        out_tr.append(a)
        out_te.append(b)
    return np.ascontiguousarray(np.column_stack(out_tr)), np.ascontiguousarray(np.column_stack(out_te))


def load_multilabel(name: str, root=None, *, validation: str = "merge") -> MultilabelDataset:
    """Load ``enron_corr`` or ``<set>_FUN`` from the data root (module docstring)."""
    if name not in MULTILABEL_DATASETS:
        import difflib

        near = difflib.get_close_matches(name, MULTILABEL_DATASETS, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise DataError(f"unknown multilabel data set {name!r}; known: {', '.join(MULTILABEL_DATASETS)}{hint}")
    if validation not in ("merge", "drop"):
        raise DataError(f"validation must be 'merge' or 'drop'; got {validation!r}")
    base = find_data_root(root)
    folder = base / name if name == "enron_corr" else base / "funcat" / name
    if not folder.is_dir():
        raise DataError(f"data set folder not found: {folder}")
    tree = ClassTree.from_tsv(folder / "hierarchy.tsv")
    nodes = (folder / "nodes.txt").read_text(encoding="utf-8").split()
    if name == "enron_corr":
        Xtr = _sparse_npz(folder / "X_train.npz")
        Xte = _sparse_npz(folder / "X_test.npz")
        lab = _npz(folder / "labels.npz")
        return MultilabelDataset(
            name,
            Xtr,
            _reorder(lab["Y_train"], nodes, tree, name),
            Xte,
            _reorder(lab["Y_test"], nodes, tree, name),
            tree,
        )
    tr, te = _npz(folder / "train.npz"), _npz(folder / "test.npz")
    Xtr, Ytr = tr["X"], tr["Y"]
    if validation == "merge":
        va = _npz(folder / "valid.npz")
        Xtr, Ytr = np.vstack([Xtr, va["X"]]), np.vstack([Ytr, va["Y"]])
    types = []
    for line in (folder / "features.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        parts = line.split("\t")
        if len(parts) < 3:
            continue
        kind = parts[2].strip()
        types.append((kind, len(parts[3].split(",")) if kind == "nominal" and len(parts) > 3 else 0))
    if len(types) != Xtr.shape[1]:
        raise DataError(f"{name}: features.tsv lists {len(types)} attributes but X has {Xtr.shape[1]} columns")
    Xtr, Xte = encode_funcat_features(Xtr, te["X"], types)
    return MultilabelDataset(
        name, Xtr, _reorder(Ytr, nodes, tree, name), Xte, _reorder(te["Y"], nodes, tree, name), tree
    )
