"""The resumable Sec. 6.2 protocol of bench/satimage_cv.py (issue 12, goal 3) on tiny settings.

Through the bench's own code path (``main`` with ``--out``): a run interrupted inside a one-vs-rest
row (after a finished mc-tied row) resumes where it stopped and reproduces the uninterrupted
table; a folder of another configuration is refused.
"""

import json
import sys

import pytest
from conftest import ROOT, needs_shared_data

sys.path.insert(0, str(ROOT / "bench"))


pytestmark = needs_shared_data("satimage")

ARGS = ["--partitions", "2", "--methods", "mc-tied,1rest", "--max-train", "90", "--max-iter", "2"]


class Stop(KeyboardInterrupt):
    pass


def _stop_at(marker, seen):
    def say(s):
        seen.append(s)
        if marker in s:
            raise Stop(s)

    return say


def _table(out):
    return {m: (s["test_errors"], s["partitions"]) for m, s in out["methods"].items()}


def test_interrupted_protocol_resumes_and_reproduces_the_table(tmp_path):
    import satimage_cv

    whole = satimage_cv.main([*ARGS, "--out", str(tmp_path / "whole")], say=lambda s: None)
    seen = []
    with pytest.raises(Stop):  # Ctrl-C inside 1rest p0, class 2, after its first outer iteration
        satimage_cv.main([*ARGS, "--out", str(tmp_path / "cut")], say=_stop_at("[1rest p0] class 2 it 1", seen))
    rows = sorted(p.name for p in (tmp_path / "cut" / "rows").iterdir())
    assert rows == ["mc-tied-p0.json"]
    seen.clear()
    resumed = satimage_cv.main([*ARGS, "--out", str(tmp_path / "cut")], say=seen.append)
    assert any(s.startswith("mc-tied") and "partition 0: stored row" in s for s in seen)
    assert not any("[mc-tied p0]" in s for s in seen)  # the finished row was not recomputed
    assert not any("[1rest p0] class 0 " in s for s in seen)  # finished tasks came from their checkpoints
    row = json.loads((tmp_path / "cut" / "rows" / "1rest-p0.json").read_text())
    assert row["resumed_from"][2] == 1 and row["resumed_from"][3] is None
    assert _table(resumed) == _table(whole)
    assert resumed["hyperparameters"] == whole["hyperparameters"]
    assert sorted(resumed["methods"]) == ["1rest", "mc-tied"] and len(whole["methods"]["1rest"]["test_errors"]) == 2


def test_a_changed_configuration_is_refused(tmp_path):
    import satimage_cv

    from gpmodels.errors import OutputError

    args = ["--partitions", "1", "--methods", "mc-tied", "--max-train", "90", "--max-iter", "1", "--out", str(tmp_path)]
    satimage_cv.main(args, say=lambda s: None)
    with pytest.raises(OutputError, match="another configuration"):
        satimage_cv.main([*args[:-3], "2", "--out", str(tmp_path)], say=lambda s: None)
    again = satimage_cv.main(args, say=lambda s: None)  # the same settings: every row read back
    assert again["sklearn_fixed_fit_seconds"] is None


def test_a_row_computed_on_other_folds_is_refused(tmp_path):
    """A row whose folds differ from the partition's folds now (an older kfold_partition) is not reused."""
    import satimage_cv

    from gpmodels.errors import OutputError

    args = ["--partitions", "1", "--methods", "mc-tied", "--max-train", "90", "--max-iter", "1", "--out", str(tmp_path)]
    satimage_cv.main(args, say=lambda s: None)
    path = tmp_path / "rows" / "mc-tied-p0.json"
    row = json.loads(path.read_text())
    path.write_text(json.dumps({**row, "folds_digest": "0" * len(row["folds_digest"])}))
    with pytest.raises(OutputError, match="other folds"):
        satimage_cv.main(args, say=lambda s: None)
