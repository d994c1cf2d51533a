"""Rebuilding saved models: a model folder (``model.npz`` + ``spec.resolved.yaml``) -> a predictor.

The arrays are read by :mod:`gpmodels.persistence` (which knows nothing of specs); the operator and
likelihood are rebuilt here from the resolved spec and the stored inputs by the same builders a run
uses (:mod:`gpmodels.driver.build`), then set to the stored hyperparameters, so a round trip
reproduces predictions exactly.  One loader per model kind in ``LOADERS``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gpmodels.baselines.crammer_singer.solver import CrammerSingerModel
from gpmodels.baselines.hm3.solver import HM3Model
from gpmodels.data.labels import InputFormat
from gpmodels.data.scaling import FeatureScaler
from gpmodels.driver.build import build_binary_operator, build_kernel, build_likelihood, build_operator
from gpmodels.driver.loader import read_yaml, spec_from_dict
from gpmodels.driver.output import read_identity
from gpmodels.errors import DataError, GPModelsError, SpecError, described
from gpmodels.hierarchy import ClassTree
from gpmodels.persistence import (
    MODEL_FILE,
    SPEC_FILE,
    CrammerSingerPredictor,
    HM3Predictor,
    MAPPredictor,
    OneVsRestPredictor,
    input_format,
    load_arrays,
    unpack_inputs,
)

__all__ = ["load_model", "LOADERS"]


def _reading(arrays: dict, spec, X, classes, positive_class: str | None = None) -> dict:
    """The :class:`~gpmodels.persistence.StoredPredictor` fields of a stored model: how it reads its
    prediction inputs and labels (scaler, training width, svmlight base, the spec's label column, the
    input format) and its classes."""
    n_features, zero_based = input_format(arrays, X)
    return dict(
        classes=classes,
        scaler=FeatureScaler.from_arrays(arrays),
        n_features=n_features,
        zero_based=zero_based,
        label_column=spec.data.label_column,
        positive_class=positive_class,
        inputs=InputFormat.from_arrays(arrays, classes),
    )


def _load_map(model_dir: Path, arrays: dict, spec) -> MAPPredictor:
    X = unpack_inputs(arrays)
    classes = tuple(str(c) for c in arrays["classes"])
    tree = None
    if "tree_edges" in arrays:
        tree = ClassTree([tuple(e) for e in arrays["tree_edges"].tolist()], classes)
    op = build_operator(spec.model, X, len(classes), model_dir, tree=tree)
    likelihood = build_likelihood(spec.model)
    if "theta" in arrays:
        op = op.with_params(arrays["theta"])
    if "likelihood_theta" in arrays:
        likelihood = likelihood.with_params(arrays["likelihood_theta"])
    alpha = arrays["alpha"]
    if alpha.shape != (op.n_points, op.n_classes):
        raise DataError(
            f"stored alpha has shape {alpha.shape}; the rebuilt operator needs {(op.n_points, op.n_classes)}"
        )
    return MAPPredictor(
        op, likelihood, alpha, **_reading(arrays, spec, X, classes, _positive_class(arrays, spec, classes))
    )


def _positive_class(arrays: dict, spec, classes) -> str | None:
    """The raw label of a binary ``data.positive_class`` model (stored array, else the resolved spec):
    its classes are ``("rest", <label>)`` and every other raw label of an input file is ``rest``."""
    positive = str(arrays["positive_class"]) if "positive_class" in arrays else spec.data.positive_class
    if positive is None:
        return None
    if tuple(classes) != ("rest", positive):
        raise DataError(
            f"a data.positive_class {positive!r} model has the classes ('rest', {positive!r}); "
            f"the stored model has {tuple(classes)[:5]}"
        )
    return positive


def _load_one_vs_rest(model_dir: Path, arrays: dict, spec) -> OneVsRestPredictor:
    X = unpack_inputs(arrays)
    classes = tuple(str(c) for c in arrays["classes"])
    op = build_binary_operator(spec, X, model_dir)
    alphas, thetas = arrays["alphas"], arrays["thetas"]
    if alphas.shape != (len(classes), op.n_points, 2) or thetas.shape != (len(classes), op.params.size):
        raise DataError(
            f"stored one-vs-rest arrays alphas {alphas.shape} and thetas {thetas.shape} do not fit "
            f"{len(classes)} classes, {op.n_points} points and {op.params.size} hyperparameters per class"
        )
    ops = tuple(op.with_params(t) for t in thetas)
    return OneVsRestPredictor(ops, build_likelihood(spec.model), alphas, **_reading(arrays, spec, X, classes))


def _stored_kernel(model_dir: Path, spec, X_support):
    """The kernel of the resolved spec (its ``w`` resolved at the run, so the support patterns do not
    change it; a precomputed Gram matrix is read from its file, the inputs being point indices)."""
    return build_kernel(spec.model.kernel, X_support, model_dir)


def _load_crammer_singer(model_dir: Path, arrays: dict, spec) -> CrammerSingerPredictor:
    X = unpack_inputs(arrays)
    classes = tuple(str(c) for c in arrays["classes"])
    tau = arrays["tau_support"]
    if tau.shape != (X.shape[0], len(classes)):
        raise DataError(
            f"stored tau_support has shape {tau.shape}; {X.shape[0]} support patterns and "
            f"{len(classes)} classes need {(X.shape[0], len(classes))}"
        )
    model = CrammerSingerModel(
        _stored_kernel(model_dir, spec, X), X, tau, arrays["support"], float(arrays["beta"]), len(classes), None
    )
    positive = str(arrays["positive_class"]) if "positive_class" in arrays else None
    return CrammerSingerPredictor(model, **_reading(arrays, spec, X, classes, positive))


def _load_hm3(model_dir: Path, arrays: dict, spec) -> HM3Predictor:
    X = unpack_inputs(arrays)
    classes = tuple(str(c) for c in arrays["classes"])
    tree = ClassTree([tuple(e) for e in arrays["tree_edges"].tolist()], [str(c) for c in arrays["tree_classes"]])
    nu = arrays["nu_support"]
    if nu.shape != (X.shape[0], tree.n_nodes, 4):
        raise DataError(
            f"stored nu_support has shape {nu.shape}; {X.shape[0]} support patterns and a tree of "
            f"{tree.n_nodes} nodes need {(X.shape[0], tree.n_nodes, 4)}"
        )
    model = HM3Model(_stored_kernel(model_dir, spec, X), X, nu, tree, None)
    return HM3Predictor(model, **_reading(arrays, spec, X, classes))


#: model kind -> loader(model_dir, arrays, resolved spec) returning an object with predict_proba / predict
LOADERS: dict[str, Callable] = {
    "map": _load_map,
    "one_vs_rest": _load_one_vs_rest,
    "crammer_singer": _load_crammer_singer,
    "hm3": _load_hm3,
}


def load_model(model_dir, *, allow_import=()):
    """Load a saved model folder; returns a predictor with ``predict_proba`` and ``predict``.

    The folder's ``spec.resolved.yaml`` runs no code: a ``model.prior: module:builder`` path in it is
    imported only when its module is in ``allow_import`` (``gpmodels predict --allow-import``)."""
    model_dir = Path(model_dir)
    ident = read_identity(model_dir)
    if ident is not None and not (model_dir / MODEL_FILE).is_file():
        raise DataError(
            f"{model_dir} holds the report of run {ident.get('name')!r} (objective "
            f"{ident.get('objective')!r}), which saved no {MODEL_FILE}: there is no model for this run "
            "to predict with"
        )
    kind, arrays = load_arrays(model_dir)
    if kind not in LOADERS:
        raise DataError(
            f"{model_dir}: {MODEL_FILE} names a model kind ({described(kind)}) that is none of "
            f"{sorted(LOADERS)}, the kinds this gpmodels reads"
        )
    spec_path = model_dir / SPEC_FILE
    if not spec_path.is_file():
        raise DataError(f"{model_dir} holds no {SPEC_FILE}; a model folder needs both {MODEL_FILE} and {SPEC_FILE}")
    try:
        spec = spec_from_dict(read_yaml(spec_path), allow_import=allow_import)
    except SpecError as exc:
        message = str(exc) if str(spec_path) in str(exc) else f"{spec_path}: {exc}"
        raise SpecError(f"{message} (a model folder's spec as written by `gpmodels run`)") from None
    try:
        return LOADERS[kind](model_dir, arrays, spec)
    except GPModelsError:
        raise
    except KeyError as exc:
        raise DataError(
            f"{model_dir / MODEL_FILE} lacks the array {str(exc.args[0])[:50]!r} of a {kind!r} model"
        ) from None
    except (ValueError, IndexError, TypeError) as exc:  # arrays that do not fit each other or the spec
        raise DataError(
            f"{model_dir / MODEL_FILE} does not hold a consistent {kind!r} model for its "
            f"{SPEC_FILE} ({type(exc).__name__}); was one of the two files replaced?"
        ) from None
