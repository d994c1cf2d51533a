"""The CLINC150 loader: the data set's own split and counts, its tree, the validation split and the
out-of-scope queries kept apart, the small subset, the spec wiring."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import SHARED_DATA, needs_shared_data

from gpmodels.data.datasets import load_clinc150, load_dataset
from gpmodels.driver.build import check_files
from gpmodels.driver.build_data import build_data, build_tree
from gpmodels.driver.loader import spec_from_dict
from gpmodels.errors import DataError, SpecError

pytestmark = needs_shared_data("clinc150")


@pytest.fixture(scope="module")
def clinc():
    return load_dataset("clinc150")


def test_the_split_is_the_data_sets_own_with_100_and_30_queries_per_intent(clinc):
    assert clinc.name == "clinc150" and clinc.n_classes == 150 and clinc.sparse
    assert clinc.X_train.shape == (15000, 2793) and clinc.X_test.shape == (4500, 2793)
    assert sp.isspmatrix_csr(clinc.X_train) and clinc.X_train.dtype == np.float64
    assert np.bincount(clinc.y_train, minlength=150).tolist() == [100] * 150
    assert np.bincount(clinc.y_test, minlength=150).tolist() == [30] * 150
    assert clinc.X_train.nnz == 121833 and clinc.X_test.nnz == 35304  # the README's counts


def test_the_tree_has_10_domains_of_15_intents_in_label_order(clinc):
    from gpmodels.hierarchy import ClassTree

    tree = ClassTree.from_tsv(clinc.hierarchy_path, clinc.classes)
    assert (tree.n_classes, tree.n_nodes, tree.max_depth) == (150, 160, 2)
    parents = tree.class_parents
    # domain j owns labels 15j .. 15j+14
    assert all(np.unique(parents[15 * j : 15 * j + 15]).size == 1 for j in range(10))
    assert np.unique(parents).size == 10


def test_validation_and_out_of_scope_stay_apart_from_train_and_test(clinc):
    X_val, y_val = clinc.validation
    assert X_val.shape == (3000, 2793) and np.bincount(y_val).tolist() == [20] * 150
    oos = clinc.out_of_scope
    assert {k: v.shape[0] for k, v in oos.items()} == {"train": 100, "val": 100, "test": 1000}
    assert all(v.shape[1] == 2793 and v.dtype == np.float64 for v in oos.values())
    # no out-of-scope row is in train or test: 15000 + 4500 in-scope rows, all labelled 0..149
    assert clinc.y_train.max() == 149 and clinc.y_test.size == 4500


def test_subsets_small_and_validation():
    small = load_dataset("clinc150", subset="small")
    assert small.X_train.shape[0] == 3000 and small.X_test.shape[0] == 1500
    assert np.bincount(small.y_train).tolist() == [20] * 150 and np.bincount(small.y_test).tolist() == [10] * 150
    full = load_dataset("clinc150")
    # the first 20 train queries of each intent, in stored order
    assert (small.X_train[:20] != full.X_train[:20]).nnz == 0
    val = load_dataset("clinc150", subset="validation")
    assert val.name == "clinc150-validation" and val.X_test.shape[0] == 3000
    assert (val.X_test != full.validation[0]).nnz == 0
    with pytest.raises(DataError, match="clinc150 subset must be one of small, validation"):
        load_clinc150(SHARED_DATA / "clinc150", "tiny")
    with pytest.raises(DataError, match="only defined for news20 and clinc150"):
        load_dataset("usps", subset="validation")


def test_a_broken_labels_file_is_named(tmp_path):
    folder = tmp_path / "clinc150"
    folder.mkdir()
    for f in (SHARED_DATA / "clinc150").iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    lab = dict(np.load(folder / "labels.npz"))
    lab["y_test"] = lab["y_test"][:-1]
    np.savez(folder / "labels.npz", **lab)
    with pytest.raises(DataError, match="y_test must hold 4500 class indices"):
        load_clinc150(folder)


def _spec(dataset="clinc150", **data):
    return spec_from_dict(
        {
            "name": "c",
            "data": {"dataset": dataset, "root": str(SHARED_DATA), **data},
            "model": {"prior": "anova", "kernel": {"type": "linear"}, "sharing": "level"},
        }
    )


def test_the_spec_source_clinc150_builds_data_and_tree():
    spec = _spec(subset="small", scaling="unit_norm")
    check_files(spec, None)
    data = build_data(spec, None)
    tree = build_tree(spec, data, None)
    assert data.X_train.shape == (3000, 2793) and tree.n_nodes == 160
    np.testing.assert_allclose(sp.linalg.norm(data.X_train[data.X_train.getnnz(axis=1) > 0], axis=1), 1.0)
    with pytest.raises(SpecError, match="not defined for data set 'imclef07a'"):
        check_files(_spec("imclef07a", subset="validation"), None)
