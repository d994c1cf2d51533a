"""bench/sparse_products.py --smoke: the compiled products agree with scipy's, float32 storage stays within
one rounding, the tree sweeps run, and the ANOVA MVM's memory r is reported."""

import json
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))


def test_sparse_products_bench_smoke(capsys):
    import sparse_products

    assert sparse_products.main(["--smoke", "--repeats", "1"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    sparse = out["sparse"]
    assert set(sparse["seconds"]) == {"scipy_one_core", "compiled_float64", "compiled_float32"}
    assert sparse["relative_error"]["compiled_float64"] < 1e-12
    assert 0 < sparse["relative_error"]["compiled_float32"] < 1e-6
    assert out["bandwidth"]["all_cores_gbs"] > 0 and all(v > 0 for v in sparse["fraction_of_bandwidth"].values())
    tree = out["tree"]
    assert tree["C"] == 30 and tree["P"] == 41 and set(tree["numpy_walk_s"]) == {"phi_t", "phi", "mix"}
    assert 1.0 <= out["anova_memory"]["r"] <= 4.0
