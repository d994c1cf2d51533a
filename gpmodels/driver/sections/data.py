"""The `data` section: where the data come from, the test set, scaling, the class tree, pseudo-targets."""

from __future__ import annotations

import attrs

from gpmodels.data.datasets import NAMED_DATASETS
from gpmodels.data.multilabel_sets import MULTILABEL_DATASETS
from gpmodels.data.scaling import FEATURE_SCALINGS
from gpmodels.driver.schema import Node, option
from gpmodels.errors import SpecError
from gpmodels.validation import boolean, integer, number, one_of, positive_int, string

__all__ = ["DataSpec", "PseudoTargetsSpec", "TASKS"]

TASKS = ("classification", "regression")


@attrs.frozen
class PseudoTargetsSpec(Node):
    """Uncertain training targets (Seeger 2008, Sec. 7.4.2): tree nodes instead of leaves, fitted by EM."""

    file: str | None = option(
        None,
        string(),
        doc="text file with one node name per training point (the data set's order; the "
        "root's name = unlabelled); needs `test: given` and no `max_train`",
    )
    fraction: float | None = option(
        None,
        number(0.0, 1.0),
        doc="instead of `file`: replace this seeded fraction of the training labels by an ancestor",
    )
    levels_up: int = option(
        1, integer(1, 1000), doc="with `fraction`: how many levels up (never above a child of the root)"
    )

    def check(self, path):
        if (self.file is None) == (self.fraction is None):
            raise SpecError("give exactly one of `file` (node names) or `fraction` (coarsened labels)", f"{path}.file")


@attrs.frozen
class DataSpec(Node):
    """Where the data come from, how the test set is formed and how inputs are scaled."""

    dataset: str | None = option(
        None,
        one_of(NAMED_DATASETS + MULTILABEL_DATASETS),
        doc="a named data set under the data root (give this or `path`); "
        "enron_corr and *_FUN are hierarchical multilabel sets",
    )
    path: str | None = option(
        None,
        string(),
        doc="a data file: .npz with arrays X, y; .arff (numeric features, nominal class "
        "attribute `class` or the last one); .csv (a header line, numeric features, the labels in "
        "`label_column`); or svmlight/libsvm text (.svm, .svmlight, .libsvm, .txt)",
    )
    label_column: str = option(
        "label",
        string(),
        doc=".csv files: the column holding the labels (every other column is a feature; "
        "optional in the inputs of `gpmodels predict`)",
    )
    test_path: str | None = option(None, string(), doc="test file for `path` (same format) when `test` is `given`")
    root: str | None = option(
        None,
        string(),
        doc="data root for `dataset` (default: $GPMODELS_DATA, ./data, ../shared/data of the "
        "working directory, then data/ and ../shared/data beside the spec's folder "
        "and each of its parents)",
    )
    subset: str | None = option(
        None,
        one_of(("small", "validation")),
        doc="news20, clinc150: `small` uses subset_small.npz (news20 2000 train / 1000 test, clinc150 3000 / "
        "1500); clinc150 `validation`: its validation split as the test set",
    )
    test: str = option(
        "given",
        one_of(("given", "split")),
        doc="`given`: the data set's test set; `split`: a seeded split of the training data",
    )
    test_fraction: float = option(0.3, number(0.0, 0.95, open_low=True), doc="fraction held out when `test` is `split`")
    scaling: str = option("none", one_of(FEATURE_SCALINGS), doc="feature scaling fitted on the training inputs")
    zero_based: bool | None = option(
        None,
        boolean(),
        doc="svmlight files: feature indices start at 0 (true) or 1 (false); null decides "
        "once for the training and test files (0-based when the training file uses index 0; a test file that "
        "alone uses it is refused); "
        "saved with the model for `gpmodels predict`",
    )
    max_train: int | None = option(
        None, integer(2), doc="keep a seeded stratified subsample of this many training points"
    )
    max_test: int | None = option(
        None, positive_int(), doc="keep a seeded stratified subsample of this many test points"
    )
    task: str = option(
        "classification", one_of(TASKS), doc="`regression`: real-valued targets from `path` files (scored by RMSE)"
    )
    positive_class: str | None = option(
        None, string(), doc="binary task one-vs-rest: this label (as in the data) is y = +1, all others -1"
    )
    validation: str = option(
        "merge",
        one_of(("merge", "drop")),
        doc="FunCat sets: train on train + valid (`merge`, Vens et al. 2008) or drop valid",
    )
    hierarchy: str | None = option(
        None,
        string(),
        doc="class tree as `parent<TAB>child` lines (classes = leaves); default: the "
        "named data set's hierarchy.tsv (news20, imclef07a, clinc150)",
    )
    prune_hierarchy: bool = option(False, boolean(), doc="remove inner nodes with a single child (Sec. 3, footnote 5)")
    pseudo_targets: PseudoTargetsSpec | None = option(
        None, node=PseudoTargetsSpec, doc="uncertain training targets for `objective.type: em`"
    )

    def check(self, path):
        if (self.dataset is None) == (self.path is None):
            raise SpecError("give exactly one of `dataset` (a named set) or `path` (a file)", f"{path}.dataset")
        if self.task == "regression" and self.dataset is not None:
            raise SpecError(
                "the named data sets are classification sets; regression needs `path` (an .npz with real-valued y)",
                f"{path}.task",
            )
        if self.task == "regression" and self.positive_class is not None:
            raise SpecError(
                "`positive_class` makes a binary classification task; not for regression", f"{path}.positive_class"
            )
        if self.path is not None and self.test == "given" and self.test_path is None:
            raise SpecError("`test: given` with a `path` needs `test_path`; or use `test: split`", f"{path}.test_path")
        if self.test_path is not None and self.path is None:
            raise SpecError("`test_path` goes with `path`", f"{path}.test_path")
        pt = self.pseudo_targets
        if pt is not None and pt.file is not None and (self.test == "split" or self.max_train is not None):
            raise SpecError(
                "a pseudo-target file lists the training points as stored: it needs `test: given` and no `max_train`",
                f"{path}.pseudo_targets.file",
            )
