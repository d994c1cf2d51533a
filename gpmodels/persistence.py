"""Saving and loading fitted models without pickle: ``model.npz`` + ``spec.resolved.yaml``.

A model folder (the report folder of ``gpmodels run``) holds the resolved spec — every
hyperparameter at its fitted value — and ``model.npz`` with plain arrays: the model kind, the
training inputs (dense, or the three CSR arrays), the fitted coefficients, the class names and the
feature scaler.  Loading rebuilds the operator from the spec and the stored inputs, so a round trip
reproduces predictions exactly (the kernel matrices are recomputed by the same code on the same
numbers).

Kinds: ``map`` (a MAP fit: α̂ over an operator), ``one_vs_rest`` (C binary MAP fits, each with its
own hyperparameters, over the same inputs), ``crammer_singer`` (the support patterns and their dual
variables τ, Crammer & Singer 2001, eq. (15)) and ``hm3`` (the support patterns and their edge
weights ν with the class tree, Rousu et al. 2006); the kernels of the last two are rebuilt from the
resolved spec.  This module stores and reads arrays and knows nothing
of specs; rebuilding a model from its folder (``load_model``, one loader per kind in ``LOADERS``)
needs the spec builders and lives above it, in :mod:`gpmodels.driver.saved`.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import scipy.sparse as sp

from gpmodels.array_schema import Entry, check_arrays, check_csr
from gpmodels.data.datasets import check_npz
from gpmodels.data.labels import LABEL_KINDS, InputFormat, match_labels
from gpmodels.data.scaling import FEATURE_SCALINGS, SCALING_STATISTICS, FeatureScaler
from gpmodels.errors import DataError, described
from gpmodels.safe_write import write_new
from gpmodels.validation import check_features

__all__ = [
    "FORMAT_VERSION",
    "save_arrays",
    "load_arrays",
    "check_model_arrays",
    "MODEL_SCHEMA",
    "MODEL_KINDS",
    "READ_VERSIONS",
    "save_map_model",
    "StoredPredictor",
    "MAPPredictor",
    "pack_inputs",
    "unpack_inputs",
    "save_one_vs_rest_model",
    "OneVsRestPredictor",
    "MODEL_FILE",
    "SPEC_FILE",
    "label_indices",
    "save_crammer_singer_model",
    "CrammerSingerPredictor",
    "save_hm3_model",
    "HM3Predictor",
]

FORMAT_VERSION = 1
MODEL_FILE = "model.npz"
SPEC_FILE = "spec.resolved.yaml"


def pack_inputs(X, prefix: str = "X_") -> dict:
    """Arrays that store a dense or CSR input matrix."""
    if sp.issparse(X):
        X = X.tocsr()
        return {
            f"{prefix}data": X.data,
            f"{prefix}indices": X.indices,
            f"{prefix}indptr": X.indptr,
            f"{prefix}shape": np.array(X.shape),
        }
    return {f"{prefix}dense": np.asarray(X)}


def unpack_inputs(arrays, prefix: str = "X_"):
    if f"{prefix}dense" in arrays:
        return np.ascontiguousarray(arrays[f"{prefix}dense"])
    index = [arrays[f"{prefix}{k}"] for k in ("indices", "indptr")]
    # (checked in range by the schema; scipy takes int32 and int64 indices only)
    indices, indptr = (a if a.dtype in (np.int32, np.int64) else a.astype(np.int64) for a in index)
    return sp.csr_matrix(
        (arrays[f"{prefix}data"], indices, indptr), shape=tuple(int(v) for v in arrays[f"{prefix}shape"])
    )


def label_indices(y, classes, inputs: InputFormat, positive_class: str | None = None) -> np.ndarray:
    """The model's class index of every raw label in ``y`` (the labels of an input file), -1 for a label
    that is none of the classes: numbers compared by value, text by text, as the model's label kind
    says (:func:`gpmodels.data.labels.match_labels`)."""
    return match_labels(y, classes, inputs.label_kind, positive_class)


def save_arrays(model_dir, kind: str, arrays: dict) -> Path:
    """Write ``model.npz`` by the one safe writer (:func:`gpmodels.safe_write.write_new`: a new file renamed
    into place, never written through a link planted at the name)."""
    model_dir = Path(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    arrays = {"format_version": np.array(FORMAT_VERSION), "kind": np.array(kind), **arrays}
    return write_new(model_dir, MODEL_FILE, lambda fh: np.savez_compressed(fh, **arrays))


def load_arrays(model_dir) -> tuple[str, dict]:
    """The model kind and arrays of ``model_dir/model.npz``; DataError for a missing, truncated,
    non-npz or foreign file (described by its size, never quoted), for array sizes its stored bytes
    cannot hold (checked before loading), for a format version this gpmodels does not read, and for
    any entry that breaks :data:`MODEL_SCHEMA` (:func:`check_model_arrays`)."""
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise DataError(f"model folder {model_dir} {'is not a folder' if model_dir.exists() else 'not found'}")
    path = model_dir / MODEL_FILE
    if not path.is_file():
        raise DataError(f"{model_dir} holds no {MODEL_FILE}: it is not a saved model folder (run `gpmodels run` first)")
    size = path.stat().st_size
    kind = "empty" if size == 0 else f"{size} bytes, truncated or not an .npz archive of plain arrays"
    try:
        check_npz(path)  # every declared array size bounded by the bytes stored, before numpy allocates
    except DataError as exc:
        why = str(exc).removeprefix(str(path)).lstrip(": ")
        raise DataError(f"{path} cannot be read as a model file ({kind}: {why})") from None
    try:
        with np.load(path, allow_pickle=False) as z:
            if not hasattr(z, "files"):
                raise ValueError("a single array, not an archive")
            arrays = {k: z[k] for k in z.files}
    except MemoryError:
        raise
    except Exception as exc:  # OSError, EOFError, BadZipFile, ValueError (object arrays, bad headers), ...
        raise DataError(f"{path} cannot be read as a model file ({kind}; {type(exc).__name__})") from None
    return check_model_arrays(arrays, path), arrays


#: the model format versions this gpmodels reads
READ_VERSIONS = (FORMAT_VERSION,)
#: model kind -> the entries it requires besides the common ones (the inputs: ``X_dense`` or the CSR arrays)
MODEL_KINDS = {
    "map": ("alpha", "classes"),
    "one_vs_rest": ("alphas", "thetas", "classes"),
    "crammer_singer": ("tau_support", "support", "beta", "classes"),
    "hm3": ("nu_support", "classes", "tree_edges", "tree_classes"),
}
_TEXT, _INT, _FLOAT = "U", "iu", "f"
#: every entry a model file may hold (dimensions: n training points or support patterns, d features, C classes,
#: p hyperparameters, E tree edges, L tree leaves, P tree nodes), checked in this order
MODEL_SCHEMA = {
    e.name: e
    for e in (
        Entry("format_version", _INT, ()),
        Entry("kind", _TEXT, (), ("in:" + "|".join(MODEL_KINDS),)),
        Entry("classes", _TEXT, ("C",), ("unique",)),
        Entry("class_labels", "iufbU", ("C",), ("unique",)),
        Entry("X_shape", _INT, (2,), ("nonnegative",)),
        Entry("X_dense", _FLOAT, ("n", "d")),
        Entry("X_indptr", _INT, ("n+1",), ("row_pointer",)),
        Entry("X_indices", _INT, ("nnz",), ("below:d",)),
        Entry("X_data", _FLOAT, ("nnz",)),
        Entry("alpha", _FLOAT, ("n", "*")),
        Entry("alphas", _FLOAT, ("C", "n", 2)),
        Entry("theta", _FLOAT, ("p",)),
        Entry("thetas", _FLOAT, ("C", "p")),
        Entry("likelihood_theta", _FLOAT, ("*",)),
        Entry("tree_edges", _TEXT, ("E", 2)),
        Entry("tree_classes", _TEXT, ("L",), ("unique",)),
        Entry("tau_support", _FLOAT, ("n", "C")),
        Entry("support", _INT, ("n",), ("nonnegative", "unique")),
        Entry("beta", _FLOAT, (), ("positive",)),
        Entry("nu_support", _FLOAT, ("n", "P", 4)),
        Entry("positive_class", _TEXT, ()),
        Entry("svmlight_zero_based", "b", ()),
        Entry("label_kind", _TEXT, (), ("in:" + "|".join(LABEL_KINDS),)),
        Entry("feature_names", _TEXT, ("d",), ("unique",)),
        Entry("scaler_kind", _TEXT, (), ("in:" + "|".join(FEATURE_SCALINGS),)),
        Entry("scaler_mean", _FLOAT, ("d",)),
        Entry("scaler_std", _FLOAT, ("d",), ("positive",)),
        Entry("scaler_idf", _FLOAT, ("d",), ("positive",)),
    )
}
_SPARSE = ("X_data", "X_indices", "X_indptr", "X_shape")


def check_model_arrays(arrays: dict, path) -> str:
    """Check the arrays of a model file against :data:`MODEL_SCHEMA` before any use (the version first:
    one this gpmodels does not read is refused by name); returns the model kind.  The inputs are either
    ``X_dense`` or the four CSR arrays, whose rows hold each column index once."""
    what = f"{path} (a gpmodels model file)"
    if "format_version" not in arrays or "kind" not in arrays:
        raise DataError(f"{path} is not a gpmodels model file (no format_version / kind entries)")
    version = arrays["format_version"]
    if version.shape != () or version.dtype.kind not in "iu" or int(version) not in READ_VERSIONS:
        shown_version = int(version) if version.shape == () and version.dtype.kind in "iu" else "not an integer"
        raise DataError(
            f"{path} has model format version {shown_version}; this gpmodels reads version(s) "
            f"{', '.join(map(str, READ_VERSIONS))}"
        )
    kind = str(arrays["kind"]) if arrays["kind"].shape == () and arrays["kind"].dtype.kind == "U" else None
    if kind not in MODEL_KINDS:
        raise DataError(
            f"{path} names a model kind ({described(str(kind))}) that is none of {sorted(MODEL_KINDS)}, "
            "the kinds this gpmodels reads"
        )
    sparse = [n for n in _SPARSE if n in arrays]
    if sparse and "X_dense" in arrays or not sparse and "X_dense" not in arrays:
        raise DataError(
            f"{what} lacks the array 'X_dense' or the CSR arrays {list(_SPARSE)}: it holds its inputs as one "
            "of the two, not both"
        )
    dims = {}
    if sparse:
        check_arrays(
            {"X_shape": arrays.get("X_shape")} if "X_shape" in arrays else {}, MODEL_SCHEMA, ("X_shape",), what=what
        )
        dims = dict(zip(("n", "d"), (int(v) for v in arrays["X_shape"])))
    required = ("format_version", "kind", "scaler_kind", *MODEL_KINDS[kind], *(_SPARSE if sparse else ("X_dense",)))
    scaler = arrays.get("scaler_kind")
    if scaler is not None and scaler.shape == () and str(scaler) in SCALING_STATISTICS:
        required += tuple(f"scaler_{name}" for name in SCALING_STATISTICS[str(scaler)])
    check_arrays(arrays, MODEL_SCHEMA, required, what=what, dims=dims)
    if sparse:
        check_csr(arrays["X_indptr"], arrays["X_indices"], dims["d"], f"{what}: the CSR inputs")
    if "class_labels" in arrays and [str(v) for v in arrays["class_labels"]] != arrays["classes"].tolist():
        raise DataError(f"{what}: array 'class_labels' must hold the labels whose text is 'classes', in that order")
    return kind


@attrs.frozen(eq=False, kw_only=True)
class StoredPredictor:
    """What every loaded model keeps of its training data, to read prediction inputs and labels as they
    were read at training; each kind of model adds its fitted parts (positional fields) to these
    keyword-only ones."""

    classes: tuple[str, ...]
    scaler: FeatureScaler
    n_features: int  # width of the training inputs: prediction inputs are aligned to it
    zero_based: bool = False  # svmlight index base of the training files
    label_column: str = "label"  # the label column of .csv inputs (data.label_column)
    positive_class: str | None = None  # a binary `data.positive_class` model: classes ("rest", positive_class)
    inputs: InputFormat = InputFormat()  # label kind and CSV feature names, decided at training

    def features(self, X):
        """Raw inputs X, checked, then scaled as the training inputs were."""
        return self.scaler.transform(check_features("X", X))

    def label_indices(self, y) -> np.ndarray:
        """The class index of each raw label of an input file, -1 when unknown (:func:`label_indices`)."""
        return label_indices(y, self.classes, self.inputs, self.positive_class)


@attrs.frozen(eq=False)
class MAPPredictor(StoredPredictor):
    """A loaded MAP model: raw inputs -> scaled -> u_* = K̃_{*,.} α̂ -> probabilities."""

    operator: object
    likelihood: object
    alpha: np.ndarray  # shape: (n, C)

    def predict_proba(self, X) -> np.ndarray:
        return self.likelihood.predict(self.operator.cross_test(self.features(X)).mvm(self.alpha))

    def predict(self, X) -> np.ndarray:
        """Class indices by the argmax rule."""
        return np.argmax(self.predict_proba(X), axis=1)


def save_map_model(
    model_dir,
    X_train,
    alpha,
    classes,
    scaler: FeatureScaler | None,
    *,
    theta=None,
    likelihood_theta=None,
    tree=None,
    zero_based: bool | None = None,
    positive_class: str | None = None,
    inputs: InputFormat | None = None,
    labels=None,
) -> Path:
    """Store α̂ with the inputs, classes (empty for regression), scaler, the class tree (when the
    prior or the scores use one) and the fitted hyperparameters of the operator (``theta``) and of the
    likelihood, so learned values round-trip.  ``positive_class``: the raw label of a binary
    ``data.positive_class`` model (all other raw labels are ``rest``); the loader also reads it from
    the folder's resolved spec.  ``labels``: the classes as values of their own type (an estimator's
    ``classes_``, in the order of ``classes``), stored as ``class_labels`` and given back exactly."""
    arrays = {**training_arrays(X_train, scaler, zero_based, inputs), "alpha": np.asarray(alpha)}
    arrays["classes"] = np.array(classes, dtype=str)
    if labels is not None:
        arrays["class_labels"] = np.asarray(labels)
    if tree is not None:  # the class tree as used (after pruning): (parent, child) name pairs
        arrays["tree_edges"] = np.array(tree.edges(), dtype=str)
    if theta is not None:
        arrays["theta"] = np.asarray(theta, dtype=np.float64)
    if likelihood_theta is not None:
        arrays["likelihood_theta"] = np.asarray(likelihood_theta, dtype=np.float64)
    if positive_class is not None:
        arrays["positive_class"] = np.array(str(positive_class))
    return save_arrays(model_dir, "map", arrays)


def training_arrays(X, scaler: FeatureScaler | None, zero_based: bool | None, inputs: InputFormat | None) -> dict:
    """What every stored model keeps of its training data (read back by :class:`StoredPredictor`): the
    inputs X (training points or support patterns), the feature scaler and the input format."""
    scaler = scaler or FeatureScaler("none")
    return {**pack_inputs(X), **scaler.to_arrays(), **input_format_arrays(zero_based, inputs)}


def input_format_arrays(zero_based: bool | None, inputs: InputFormat | None = None) -> dict:
    """How the model reads its inputs (:class:`~gpmodels.data.labels.InputFormat`: the svmlight index
    base, the label kind, the CSV feature names), so ``gpmodels predict`` reads and compares inputs as
    the model was trained; ``zero_based`` alone when no format is given."""
    if inputs is not None:
        return inputs.to_arrays()
    return {} if zero_based is None else {"svmlight_zero_based": np.array(bool(zero_based))}


def input_format(arrays: dict, X_train) -> tuple[int, bool]:
    """(training width, svmlight index base) of a stored model, for reading its prediction inputs."""
    zero_based = bool(arrays["svmlight_zero_based"]) if "svmlight_zero_based" in arrays else False
    return int(X_train.shape[1]), zero_based


@attrs.frozen(eq=False)
class OneVsRestPredictor(StoredPredictor):
    """A loaded one-vs-rest model: raw inputs -> scaled -> P̂_c(+1 | x) of every binary model ->
    the largest wins (Seeger 2008, Sec. 6.2); ``predict_proba`` normalises the scores per row."""

    operators: tuple  # the binary operator of each class, at its fitted hyperparameters
    likelihood: object
    alphas: np.ndarray  # shape: (C, n, 2)

    def predict_scores(self, X) -> np.ndarray:
        X = self.features(X)
        return np.column_stack(
            [self.likelihood.predict(op.cross_test(X).mvm(a))[:, 0] for op, a in zip(self.operators, self.alphas)]
        )

    def predict_proba(self, X) -> np.ndarray:
        S = self.predict_scores(X)
        return S / S.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """Class indices by the largest binary score."""
        return np.argmax(self.predict_scores(X), axis=1)


def save_one_vs_rest_model(
    model_dir,
    X_train,
    alphas,
    thetas,
    classes,
    scaler: FeatureScaler | None,
    *,
    zero_based: bool | None = None,
    inputs: InputFormat | None = None,
) -> Path:
    """Store the C binary fits: ``alphas`` (C, n, 2) and the hyperparameters ``thetas`` (C, p) of
    each class' operator, with the inputs, classes and scaler."""
    alphas, thetas = np.asarray(alphas, dtype=np.float64), np.asarray(thetas, dtype=np.float64)
    if (
        alphas.ndim != 3
        or alphas.shape[2] != 2
        or thetas.ndim != 2
        or thetas.shape[0] != alphas.shape[0]
        or alphas.shape[0] != len(classes)
    ):
        raise DataError(
            f"one-vs-rest model: need alphas (C, n, 2) and thetas (C, p) for C = {len(classes)} classes; "
            f"got {alphas.shape} and {thetas.shape}"
        )
    arrays = {**training_arrays(X_train, scaler, zero_based, inputs), "alphas": alphas, "thetas": thetas}
    arrays["classes"] = np.array(classes, dtype=str)
    return save_arrays(model_dir, "one_vs_rest", arrays)


def _write_kernel_model(
    model_dir, kind: str, X_support, arrays: dict, scaler, zero_based, tree=None, inputs: InputFormat | None = None
) -> Path:
    arrays = {**training_arrays(X_support, scaler, zero_based, inputs), **arrays}
    if tree is not None:
        arrays["tree_edges"] = np.array(tree.edges(), dtype=str).reshape(-1, 2)
        arrays["tree_classes"] = np.array([tree.nodes[p] for p in tree.leaves], dtype=str)
    return save_arrays(model_dir, kind, arrays)


def save_crammer_singer_model(
    model_dir,
    model,
    classes,
    scaler: FeatureScaler | None,
    *,
    zero_based: bool | None = None,
    positive_class: str | None = None,
    inputs: InputFormat | None = None,
) -> Path:
    """Store a fitted :class:`~gpmodels.baselines.crammer_singer.solver.CrammerSingerModel`: the support
    patterns X_s, their dual variables τ_s (n_s, k) and β, so f(x) = K(x, X_s) τ_s / β (eq. (15))
    is recomputed from the kernel of the resolved spec."""
    arrays = {
        "tau_support": np.asarray(model.tau_support_, dtype=np.float64),
        "support": np.asarray(model.support_, dtype=np.int64),
        "beta": np.array(float(model.beta)),
        "classes": np.array(classes, dtype=str),
    }
    if positive_class is not None:
        arrays["positive_class"] = np.array(str(positive_class))
    return _write_kernel_model(model_dir, "crammer_singer", model.X_support_, arrays, scaler, zero_based, inputs=inputs)


def save_hm3_model(
    model_dir,
    model,
    classes,
    scaler: FeatureScaler | None,
    *,
    zero_based: bool | None = None,
    inputs: InputFormat | None = None,
) -> Path:
    """Store a fitted :class:`~gpmodels.baselines.hm3.solver.HM3Model`: the support patterns, their edge
    weights ν (n_s, P, 4) and the class tree (edges and leaf order), so the edge scores
    H_e(x, u) = Σ_i K(x, x_i) ν_ie(u) and the DP labelings are recomputed.  ``classes``: the classes of a
    single-label data set (its labels as root-to-leaf paths), empty for a multilabel set."""
    arrays = {"nu_support": np.asarray(model.nu_support_, dtype=np.float64), "classes": np.array(classes, dtype=str)}
    return _write_kernel_model(
        model_dir, "hm3", model.X_support_, arrays, scaler, zero_based, tree=model.tree, inputs=inputs
    )


def _csv_cells(values) -> list[str]:
    return [f"{v:.6g}" for v in values]


@attrs.frozen(eq=False)
class CrammerSingerPredictor(StoredPredictor):
    """A loaded Crammer–Singer model: raw inputs -> scaled -> scores f_r(x) -> the largest wins.  It has
    no probabilities: ``gpmodels predict`` writes the scores (``prediction_table``)."""

    model: object  # a CrammerSingerModel over the stored support patterns

    def decision_function(self, X) -> np.ndarray:
        return self.model.decision_function(self.features(X))

    def predict(self, X) -> np.ndarray:
        """Class indices by the largest score."""
        return np.argmax(self.decision_function(X), axis=1)

    def prediction_table(self, X) -> tuple[list[str], list[list], np.ndarray]:
        """(CSV header, rows, predicted class names): the decision and the score of every class."""
        S = self.decision_function(X)
        names = np.array(self.classes)[np.argmax(S, axis=1)]
        rows = [[i, names[i], *_csv_cells(S[i])] for i in range(S.shape[0])]
        return ["row", "prediction"] + [f"score_{c}" for c in self.classes], rows, names


@attrs.frozen(eq=False)
class HM3Predictor(StoredPredictor):
    """A loaded H-M^3 model: raw inputs -> scaled -> edge scores -> the consistent multilabel of maximal
    score (Rousu et al. 2006, Sec. 5), written as 0/1 per tree node; for a single-label model also the
    class whose root-to-leaf path scores highest."""

    model: object  # an HM3Model over the stored support patterns (``classes``: empty for a multilabel model)

    def predict_multilabels(self, X) -> np.ndarray:
        """(n, P) bool over the tree's non-root nodes (``model.tree.nodes``)."""
        return self.model.predict(self.features(X))

    def prediction_table(self, X) -> tuple[list[str], list[list], np.ndarray | None]:
        """(CSV header, rows, predicted class names or None): 0/1 per node, and for a single-label
        model the best single path's class first."""
        Xs = self.features(X)
        U = self.model.predict(Xs).astype(int)
        nodes = list(self.model.tree.nodes)
        if not self.classes:
            return ["row"] + nodes, [[i, *U[i].tolist()] for i in range(U.shape[0])], None
        names = np.array(self.classes)[self.model.predict_single_path(Xs)]
        return ["row", "prediction"] + nodes, [[i, names[i], *U[i].tolist()] for i in range(U.shape[0])], names
