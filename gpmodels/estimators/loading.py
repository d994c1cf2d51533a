"""A fitted ``GPClassifier`` from a model folder (:func:`load_classifier`): the reverse of
:func:`~gpmodels.estimators.saving.save_classifier`, and the reader of the MAP folders ``gpmodels run`` writes
(:func:`gpmodels.driver.saved.load_model` rebuilds the predictor, the spec's ``model`` section the prior)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from gpmodels.driver.build import build_prior
from gpmodels.driver.loader import read_yaml, spec_from_dict
from gpmodels.driver.saved import load_model
from gpmodels.errors import InputError
from gpmodels.estimators.gp import GPClassifier
from gpmodels.hierarchy import ClassTree
from gpmodels.inference.map.model import MAPModel
from gpmodels.inference.map.newton_cg import NewtonDiagnostics, NewtonResult
from gpmodels.persistence import SPEC_FILE, MAPPredictor, load_arrays, unpack_inputs
from gpmodels.priors.learned import LearnedPrior

__all__ = ["load_classifier"]


def _labels(names, arrays: dict) -> np.ndarray:
    """The classes as labels: the stored values of their own type (``class_labels``, written by
    ``GPClassifier.save``), else, for a folder of ``gpmodels run``, integers when every name is a
    canonical integer ("1", never "01"; int64, else uint64 when they fit), else text."""
    if "class_labels" in arrays:
        return arrays["class_labels"]
    names = np.array([str(c) for c in names])
    if names.size and all(re.fullmatch(r"-?(0|[1-9][0-9]{0,19})", n) for n in names):
        values = [int(n) for n in names]
        for dtype in (np.int64, np.uint64):
            info = np.iinfo(dtype)
            if all(info.min <= v <= info.max for v in values):
                return np.array(values, dtype=dtype)
    return names


def load_classifier(path, *, allow_import=()):
    """A fitted :class:`~gpmodels.estimators.GPClassifier` (``objective='map'``, its prior the saved one at
    the saved hyperparameters) from a model folder of a MAP model, written by ``gpmodels run`` or by
    ``GPClassifier.save``.  A folder whose inputs were scaled (``data.scaling``) gives a scikit-learn
    Pipeline: the stored scaler, then the classifier.  ``allow_import``: as in ``gpmodels predict``."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer

    predictor = load_model(path, allow_import=allow_import)
    if not isinstance(predictor, MAPPredictor):
        raise InputError(
            f"{path} holds a {type(predictor).__name__[: -len('Predictor')]} model; a GPClassifier "
            "loads the folder of a MAP model (objective map, cv, laplace)"
        )
    op, lik, alpha = predictor.operator, predictor.likelihood, predictor.alpha
    if predictor.positive_class is not None or lik.spec_name != "softmax":
        raise InputError(f"{path} holds a binary or non-softmax model; a GPClassifier loads multi-class softmax models")
    arrays = load_arrays(path)[1]
    X = unpack_inputs(arrays)
    spec = spec_from_dict(read_yaml(Path(path) / SPEC_FILE), allow_import=allow_import)
    tree = None
    if "tree_edges" in arrays:
        tree = ClassTree([tuple(e) for e in arrays["tree_edges"].tolist()], predictor.classes)
    prior = build_prior(spec.model, X, Path(path), tree=tree)
    labels = _labels(predictor.classes, arrays)
    classes = np.sort(labels)
    est = GPClassifier(prior=LearnedPrior(prior, op.params, op.param_names), objective="map")
    u = op.mvm(alpha)
    diagnostics = NewtonDiagnostics(
        phi=(),
        grad_norm=(),
        mvm_trace=(),
        cg_iterations=(),
        step_sizes=(),
        iterations=0,
        stalls=0,
        mvm_count=1,
        seconds=0.0,
        converged=True,
        message=f"loaded from the model folder {path}",
    )
    est.model_ = MAPModel(op, lik, NewtonResult(alpha, u, float("nan"), None, diagnostics))
    est.classes_ = classes
    est.model_class_order_ = np.array([int(np.flatnonzero(labels == c)[0]) for c in classes], dtype=np.intp)
    est.n_features_in_ = X.shape[1]
    est.X_train_, est.alpha_, est.diagnostics_, est.n_iter_ = X, alpha, diagnostics, 0
    est.kernel_ = est.prior
    est.learned_hyperparameters_ = est.kernel_.hyperparameters()
    est.learning_result_, est.folds_, est.predictive_seed_, est.predictive_ = None, None, None, None
    est.plan_ = None  # the saved model records no execution plan: nothing ran in this process
    est.device_ = "cpu"  # a model folder keeps no device: it loads onto the CPU wherever it was fitted
    est._fit_state = (None, None, 0)
    if predictor.scaler.kind == "none":
        return est
    scaler = predictor.scaler
    return Pipeline([("scaler", FunctionTransformer(scaler.transform)), ("gpclassifier", est)])
