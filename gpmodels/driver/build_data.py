"""From a validated spec to its data: file paths, the data set (loaded, split, subsampled, scaled),
the class tree and the pseudo-targets.

Relative file paths in a spec are looked up in the working directory first, then next to the
spec file (:func:`resolve_path`).  The model's objects are built in :mod:`gpmodels.driver.build`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpmodels.data.datasets import Dataset, encode_labels, find_data_root, load_dataset
from gpmodels.data.files import read_data_files
from gpmodels.data.labels import label_kind, match_labels
from gpmodels.data.multilabel_sets import MULTILABEL_DATASETS, MultilabelDataset, load_multilabel
from gpmodels.data.scaling import FeatureScaler
from gpmodels.data.splits import subsample, train_test_split
from gpmodels.data.svmlight import check_line_lengths
from gpmodels.driver.output import expanded_path
from gpmodels.driver.sections.spec import Spec
from gpmodels.errors import DataError, HierarchyError, InputError, OutputError, SpecError, at
from gpmodels.hierarchy import ClassTree
from gpmodels.likelihoods.uncertain import PseudoTargets, coarsen_labels
from gpmodels.numerals import decode_text
from gpmodels.validation import check_features

__all__ = [
    "resolve_path",
    "data_root",
    "build_data",
    "build_multilabel_data",
    "tree_needed_by",
    "missing_tree_error",
    "hierarchy_path",
    "build_tree",
    "build_pseudo_targets",
]


def resolve_path(value: str, base_dir: Path | None, key: str, must_exist: bool = True, kind: str = "file") -> Path:
    """The path a spec's path key names, the same in ``validate`` and ``run``: ``~`` expanded
    (:func:`~gpmodels.driver.output.expanded_path`: an empty path, a NUL byte, an unknown ``~user`` refused),
    a relative path looked up in the working directory, then next to the spec; what is found must be a
    regular file (``kind="file"``: never a folder, a FIFO or a device, which a reader would block on) or a
    folder (``kind="folder"``).  SpecError naming ``key``."""
    try:
        p = expanded_path(value, key)
    except OutputError as exc:
        raise SpecError(str(exc).removeprefix(key).lstrip(": "), key) from None
    candidates = [p] if p.is_absolute() else [Path.cwd() / p] + ([base_dir / p] if base_dir else [])
    for c in candidates:
        if c.exists():
            found = "a folder" if c.is_dir() else "a regular file" if c.is_file() else "a FIFO, device or socket"
            if found != {"file": "a regular file", "folder": "a folder"}[kind]:
                raise SpecError(f"{c} is {found}; a {kind} is needed here", key)
            return c
    if must_exist:
        raise SpecError(f"file not found: {value!r} (looked at {', '.join(str(c) for c in candidates)})", key)
    return candidates[0]


def data_root(spec: Spec, base_dir: Path | None) -> Path:
    """The data root of a named data set: ``data.root`` (relative to the working directory or the
    spec's folder), else the places of :func:`gpmodels.data.datasets.data_root_candidates`, the spec's
    own folder and its parents among them.  DataError listing every place looked."""
    d = spec.data
    root = resolve_path(d.root, base_dir, "data.root", kind="folder") if d.root else None
    return find_data_root(root, spec_dir=base_dir)


def build_data(spec: Spec, base_dir: Path | None) -> Dataset:
    """Load, split, subsample and scale the data as the spec says."""
    d = spec.data
    if d.dataset in MULTILABEL_DATASETS:
        return build_multilabel_data(spec, base_dir)
    if d.dataset is not None:
        ds = load_dataset(d.dataset, data_root(spec, base_dir), subset=d.subset)
        Xtr, ytr, Xte, yte, classes = ds.X_train, ds.y_train, ds.X_test, ds.y_test, ds.classes
        if d.test == "split":
            tr, te = train_test_split(ytr.size, d.test_fraction, spec.seed, y=ytr)
            Xtr, ytr, Xte, yte = Xtr[tr], ytr[tr], Xtr[te], ytr[te]
        name, hier, zero_based = ds.name, ds.hierarchy_path, ds.zero_based
        kind, feature_names = ds.label_kind, ds.feature_names
    elif d.task == "regression":
        return _regression_data(spec, base_dir)
    else:
        files = _read_files(d, base_dir)
        X, y, Xt, yt, zero_based = files.X, files.y, files.X_test, files.y_test, files.zero_based
        kind, feature_names = label_kind(y), files.feature_names
        if d.test == "split":
            if Xt is not None:
                raise SpecError("`test: split` splits `path`; drop `test_path` or use `test: given`", "data.test")
            _, y_enc, _ = encode_labels(y, y)
            tr, te = train_test_split(len(y), d.test_fraction, spec.seed, y=y_enc)
            X, y, Xt, yt = X[tr], np.asarray(y)[tr], X[te], np.asarray(y)[te]
        ytr, yte, classes = encode_labels(y, yt)
        Xtr, Xte = check_features("X_train", X), check_features("X_test", Xt)
        name, hier = Path(d.path).stem, None
    Xtr, ytr, Xte, yte = _subsampled(spec, Xtr, ytr, Xte, yte)
    if d.positive_class is not None:
        ytr, yte, classes = _positive_class_task(d.positive_class, ytr, yte, classes, kind)
    _check_classes_present(ytr, classes)
    scaler = FeatureScaler.fit(d.scaling, Xtr)
    return Dataset(
        name,
        scaler.transform(Xtr),
        ytr,
        scaler.transform(Xte),
        yte,
        tuple(classes),
        hier,
        scaler,
        zero_based,
        d.positive_class,
        kind,
        feature_names,
    )


def _subsampled(spec: Spec, Xtr, ytr: np.ndarray, Xte, yte: np.ndarray):
    """(Xtr, ytr, Xte, yte) cut to ``data.max_train`` / ``data.max_test`` points by seeded stratified subsamples."""
    d = spec.data
    if d.max_train is not None and d.max_train < ytr.size:
        keep = subsample(ytr.size, d.max_train, spec.seed, y=ytr, what="data.max_train")
        Xtr, ytr = Xtr[keep], ytr[keep]
    if d.max_test is not None and d.max_test < yte.size:
        keep = subsample(yte.size, d.max_test, spec.seed + 1, y=yte)
        Xte, yte = Xte[keep], yte[keep]
    return Xtr, ytr, Xte, yte


def _positive_class_task(positive_class: str, ytr: np.ndarray, yte: np.ndarray, classes, kind: str):
    """The binary task of ``data.positive_class``: labels 1 for that class, 0 for the rest; classes
    ("rest", positive_class).  The class is matched by value for numbers ("3" is 3.0)."""
    pos = int(match_labels([positive_class], classes, kind)[0])
    if pos < 0:
        raise SpecError(
            f"positive_class {positive_class!r} is not a label of the data (labels: {', '.join(classes[:20])})",
            "data.positive_class",
        )
    return (ytr == pos).astype(np.intp), (yte == pos).astype(np.intp), ("rest", positive_class)


def _check_classes_present(ytr: np.ndarray, classes) -> None:
    """Every class has a training point (a subsample may have dropped one)."""
    present = np.unique(ytr)
    if present.size < len(classes):
        missing = [classes[c] for c in np.setdiff1d(np.arange(len(classes)), present)]
        raise SpecError(
            f"the training data lack classes {missing}; raise max_train or drop the subsample", "data.max_train"
        )


def _read_files(d, base_dir: Path | None):
    """The files of the data section ``d`` (``path``, ``test_path``) read as its keys say."""
    test_path = resolve_path(d.test_path, base_dir, "data.test_path") if d.test_path else None
    return read_data_files(
        resolve_path(d.path, base_dir, "data.path"), test_path, zero_based=d.zero_based, label_column=d.label_column
    )


def _regression_data(spec: Spec, base_dir: Path | None) -> Dataset:
    """Real-valued targets from files: random (unstratified) split and subsample, no label encoding."""
    d = spec.data
    files = _read_files(d, base_dir)
    X, y, Xt, yt = files.X, files.y, files.X_test, files.y_test
    try:
        y = np.asarray(y, dtype=np.float64)
        yt = None if yt is None else np.asarray(yt, dtype=np.float64)
    except (TypeError, ValueError):
        raise SpecError("regression targets must be numbers", "data.path") from None
    for name, v in (("y", y), ("y_test", yt)):
        if v is not None and not np.all(np.isfinite(v)):
            raise SpecError(
                f"regression targets {name} must be finite; found {int(np.sum(~np.isfinite(v)))} non-finite values",
                "data.path",
            )
    if d.test == "split":
        if Xt is not None:
            raise SpecError("`test: split` splits `path`; drop `test_path` or use `test: given`", "data.test")
        tr, te = train_test_split(y.size, d.test_fraction, spec.seed)
        X, y, Xt, yt = X[tr], y[tr], X[te], y[te]
    Xtr, Xte = check_features("X_train", X), check_features("X_test", Xt)
    if d.max_train is not None and d.max_train < y.size:
        keep = subsample(y.size, d.max_train, spec.seed)
        Xtr, y = Xtr[keep], y[keep]
    if d.max_test is not None and d.max_test < yt.size:
        keep = subsample(yt.size, d.max_test, spec.seed + 1)
        Xte, yt = Xte[keep], yt[keep]
    scaler = FeatureScaler.fit(d.scaling, Xtr)
    return Dataset(
        Path(d.path).stem,
        scaler.transform(Xtr),
        y,
        scaler.transform(Xte),
        yt,
        (),
        None,
        scaler,
        files.zero_based,
        label_kind="number",
        feature_names=files.feature_names,
    )


def build_multilabel_data(spec: Spec, base_dir: Path | None) -> MultilabelDataset:
    """A hierarchical multilabel set (enron_corr, *_FUN): given test set, seeded subsamples, scaling."""
    d = spec.data
    if d.test != "given":
        raise SpecError(f"multilabel data set {d.dataset!r} has a given test set; use `test: given`", "data.test")
    ds = load_multilabel(d.dataset, data_root(spec, base_dir), validation=d.validation)
    Xtr, Ytr, Xte, Yte = ds.X_train, ds.Y_train, ds.X_test, ds.Y_test
    if d.max_train is not None and d.max_train < Ytr.shape[0]:
        keep = subsample(Ytr.shape[0], d.max_train, spec.seed)
        Xtr, Ytr = Xtr[keep], Ytr[keep]
    if d.max_test is not None and d.max_test < Yte.shape[0]:
        keep = subsample(Yte.shape[0], d.max_test, spec.seed + 1)
        Xte, Yte = Xte[keep], Yte[keep]
    scaler = FeatureScaler.fit(d.scaling, Xtr)
    return MultilabelDataset(ds.name, scaler.transform(Xtr), Ytr, scaler.transform(Xte), Yte, ds.tree, scaler)


# ---------------------------------------------------------------------------- class trees
def tree_needed_by(spec: Spec) -> str | None:
    """The key whose setting needs a class tree, or None (a user prior may use one without saying so)."""
    m = spec.model
    if m.prior == "anova":
        return "model.prior"
    if m.sharing in ("level", "subtree"):
        return "model.sharing"
    if m.prior in ("coupled", "loadings") and m.coupling.init == "tree":
        return "model.coupling.init"
    if spec.data.pseudo_targets is not None:
        return "data.pseudo_targets"
    return None


def missing_tree_error(spec: Spec) -> SpecError:
    """The error of a spec that needs a class tree (:func:`tree_needed_by`) and names none."""
    return SpecError(
        "needs a class hierarchy: set `data.hierarchy` (a file of parent<TAB>child lines whose leaves "
        "are the classes) or use a named data set that has one (news20, imclef07a, clinc150)",
        tree_needed_by(spec),
    )


def hierarchy_path(spec: Spec, base_dir: Path | None, data: Dataset | None = None) -> Path | None:
    """The class tree file: ``data.hierarchy``, else the named data set's ``hierarchy.tsv``, else None."""
    d = spec.data
    if d.hierarchy is not None:
        return resolve_path(d.hierarchy, base_dir, "data.hierarchy")
    if data is not None and data.hierarchy_path:
        return Path(data.hierarchy_path)
    if d.dataset is not None:
        try:
            root = data_root(spec, base_dir)
        except InputError:
            return None
        p = root / d.dataset / "hierarchy.tsv"
        return p if p.is_file() else None
    return None


def build_tree(spec: Spec, data: Dataset, base_dir: Path | None) -> ClassTree | None:
    """The class tree over the data's classes (pruned when asked), or None when there is none.

    Raises SpecError when the model needs a tree and none is known, or when the file does not fit
    the classes (a class that is not a leaf, a leaf that is not a class, ...).
    """
    path = hierarchy_path(spec, base_dir, data)
    if path is None:
        if tree_needed_by(spec) is not None:
            raise missing_tree_error(spec)
        return None
    try:
        tree = ClassTree.from_tsv(path, data.classes)
    except HierarchyError as exc:
        raise SpecError(str(exc) if str(exc).startswith(str(path)) else f"{path}: {exc}", "data.hierarchy") from None
    return tree.pruned() if spec.data.prune_hierarchy else tree


def build_pseudo_targets(spec: Spec, data: Dataset, tree: ClassTree, base_dir: Path | None) -> PseudoTargets:
    """Pseudo-targets of the training points from ``data.pseudo_targets`` (a file or coarsened labels)."""
    pt = spec.data.pseudo_targets
    key = "data.pseudo_targets"
    if pt.file is not None:
        path = resolve_path(pt.file, base_dir, f"{key}.file")
        check_line_lengths(path)
        try:
            lines = decode_text(path.read_bytes(), path, "a pseudo-target file").split("\n")
        except DataError as exc:
            raise SpecError(f"{exc}; give one node name per line", f"{key}.file") from None
        numbered = [(k, line.strip(" \t\r")) for k, line in enumerate(lines, start=1) if line.strip(" \t\r")]
        names = [name for _, name in numbered]
        if len(names) != data.y_train.size:
            raise SpecError(
                f"{path} lists {len(names)} pseudo-targets but there are {data.y_train.size} training "
                "points; give one node name per line in the data set's order",
                f"{key}.file",
            )
        known = set(tree.nodes) | {tree.root}
        unknown = [k for k, name in numbered if name not in known]
        if unknown:  # (the file's lines are never quoted: the spec may name any file)
            raise SpecError(
                f"{at(path, unknown[0])}: not a node of the class tree ({len(unknown)} such lines); give "
                "one node name of data.hierarchy per line",
                f"{key}.file",
            )
        try:
            return PseudoTargets.from_names(tree, names)
        except HierarchyError as exc:
            raise SpecError(f"{path}: {exc}", f"{key}.file") from None
    return coarsen_labels(tree, data.y_train, pt.fraction, pt.levels_up, seed=spec.seed)
