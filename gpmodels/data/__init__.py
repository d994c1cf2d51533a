"""Loaders, splits and scaling."""

from .datasets import NAMED_DATASETS, Dataset, find_data_root, load_dataset, load_file
from .scaling import SCALINGS, auto_rbf_w, scale_features
from .splits import kfold_partition, subsample, train_test_split
from .svmlight import load_svmlight

__all__ = ["Dataset", "NAMED_DATASETS", "find_data_root", "load_dataset", "load_file", "load_svmlight",
           "train_test_split", "kfold_partition", "subsample", "scale_features", "auto_rbf_w", "SCALINGS"]
