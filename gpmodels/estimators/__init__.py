"""scikit-learn estimators over the composed models and the max-margin baselines.

``GPClassifier`` composes a prior, a likelihood, a hyperparameter objective and a MAP solver;
``HierarchicalGPClassifier`` fits it to label paths (a class tree built from them, the ANOVA prior);
``CrammerSingerSVC`` wraps the multiclass SVM of :mod:`gpmodels.baselines.crammer_singer.solver` and
``HM3Classifier`` the hierarchical multilabel learner of :mod:`gpmodels.baselines.hm3.solver`.  All derive
from scikit-learn's ``ClassifierMixin`` and ``BaseEstimator`` and keep their protocol, so they drop into
pipelines, grid searches and ``clone``; randomness is set by ``random_state``.
"""

from gpmodels.estimators._common import ConvergenceWarning
from gpmodels.estimators.crammer_singer import CrammerSingerSVC
from gpmodels.estimators.gp import GPClassifier, LaplacePredictive
from gpmodels.estimators.hierarchical import HierarchicalGPClassifier
from gpmodels.estimators.hm3 import HM3Classifier
from gpmodels.estimators.learners import CV, Laplace
from gpmodels.estimators.loading import load_classifier

__all__ = [
    "GPClassifier",
    "HierarchicalGPClassifier",
    "CrammerSingerSVC",
    "HM3Classifier",
    "CV",
    "Laplace",
    "LaplacePredictive",
    "load_classifier",
    "ConvergenceWarning",
]
