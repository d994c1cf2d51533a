"""Loaders, splits and scaling."""

from gpmodels.data.datasets import Dataset, load_dataset
from gpmodels.data.files import load_file
from gpmodels.data.scaling import auto_rbf_w, scale_features
from gpmodels.data.splits import kfold_partition, subsample, train_test_split
from gpmodels.data.svmlight import load_svmlight
from gpmodels.data.taxonomy import synthetic_taxonomy

__all__ = [
    "Dataset",
    "load_dataset",
    "load_file",
    "load_svmlight",
    "train_test_split",
    "kfold_partition",
    "subsample",
    "scale_features",
    "auto_rbf_w",
    "synthetic_taxonomy",
]
