"""bench/taxonomy.py --smoke: the synthetic taxonomy's F1 and H1 fits and CV folds run beside LinearSVC, and
CLINC150's learned flat and ANOVA models run beside the peers on both representations, the goals read from the
final JSON line (no timing or score is asserted: tests never depend on the machine's speed)."""

import json
import sys

from conftest import ROOT, needs_shared_data

sys.path.insert(0, str(ROOT / "bench"))


@needs_shared_data("clinc150")
def test_taxonomy_bench_smoke(capsys):
    import taxonomy

    taxonomy.main(["--smoke"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    (section,) = out["sections"]
    assert set(section["models"]) == {"F1", "H1"} and "LinearSVC" in section["peers"]
    for rec in section["models"].values():
        assert rec["fold_mvms"] > 0 and rec["final_mvms"] > 0 and rec["timed"] == 5
        assert 0.0 <= rec["scores"]["acc"] <= 1.0 and rec["scores"]["log_loss"] > 0
    clinc = out["clinc150"]
    assert set(clinc["models"]) == {"flat (F1, CV)", "ANOVA (H1, CV)"}
    # the specs read tf-idf rows, so the peers also run on the paper's unit-norm counts
    assert {"LinearSVC", "LinearSVC (unit_norm)"} <= set(clinc["peers"])
    assert set(clinc["goals"]) == {
        "anova_acc_ge_linearsvc",
        "anova_logloss_below_calibrated_svc",
        "anova_taxo_below_flat",
        "anova_pacc_above_flat",
        "anova_learning_plus_fit_le_600s",
    }
