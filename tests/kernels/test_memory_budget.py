"""The `auto` representation within a memory budget (gpmodels/kernels/memory_budget.py): budgets built
to force each choice, the kernel-group count, the refusal to approximate silently, and the spec keys."""

import logging

import numpy as np
import pytest

import gpmodels.kernels.memory_budget as mb
from gpmodels.driver.build import build_representation, representation_choices
from gpmodels.driver.loader import spec_from_dict
from gpmodels.errors import InputError, SpecError
from gpmodels.kernels.blocked_gram import BlockedGram
from gpmodels.kernels.feature_gram import FeatureGram
from gpmodels.kernels.linear import Linear
from gpmodels.kernels.lowrank_gram import LowRankGram
from gpmodels.kernels.rbf import RBF
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.kernels.stored_gram import StoredGram
from gpmodels.operators.blockdiag import BlockDiagonal

N = 100
GIB = 2**30
F64, F32 = 8 * N * N, 4 * N * N  # bytes of one stored n x n matrix


def _auto(budget_bytes, **kw):
    return RepresentationConfig(memory_gb=budget_bytes / GIB, **kw)


@pytest.fixture
def X(rng):
    return rng.normal(size=(N, 3))


def test_auto_picks_each_representation_on_budgets_built_to_force_it(X):
    k = RBF(1.0)
    rep = _auto(F64 + 10).build(X, k)
    assert isinstance(rep, StoredGram) and rep.M.dtype == np.float64 and rep.choice.label() == "stored-float64"
    rep = _auto(F64 - 10).build(X, k)
    assert isinstance(rep, StoredGram) and rep.M.dtype == np.float32 and rep.choice.label() == "stored-float32"
    tiny = 1e-3  # memory_mb of one block: blocked needs 3 x 1e-3 MiB
    rep = _auto(F32 - 10, memory_mb=tiny).build(X, k)
    assert isinstance(rep, BlockedGram) and "recomputes" in rep.choice.reason
    rep = _auto(F32 - 10, memory_mb=tiny, allow_lowrank=True, rank=5, tol=0.0).build(X, k)
    assert isinstance(rep, LowRankGram) and rep.rank == 5 and "allow_lowrank" in rep.choice.reason
    assert isinstance(_auto(10).build(X, Linear()), FeatureGram)


def test_auto_refuses_to_approximate_silently_and_names_the_memory_and_options(X):
    with pytest.raises(InputError) as e:
        _auto(F32 - 10, blocked_max_n=N - 1).build(X, RBF(1.0))
    msg = str(e.value)
    assert "stored float32 needs 39.1 KiB" in msg and "blocked_max_n = 99" in msg
    for option in ("memory_gb", "allow_lowrank: true", "kind: blocked"):
        assert option in msg
    with pytest.raises(InputError, match="blocked needs"):
        _auto(F32 - 10).build(X, RBF(1.0))  # the default 256 MiB blocks do not fit either


def test_an_explicit_dtype_restricts_auto_to_that_storage(X):
    rep = _auto(F64 - 10, dtype="float64", memory_mb=1e-3).build(X, RBF(1.0))
    assert isinstance(rep, BlockedGram)
    rep = _auto(F64 + 10, dtype="float32").build(X, RBF(1.0))
    assert rep.M.dtype == np.float32


def test_auto_budgets_for_every_kernel_group(X, caplog):
    """Separate sharing holds C matrices; tied one: the same budget stores the tied one in float64."""
    C = 4
    cfg = _auto(2 * F64, memory_mb=1e-3)
    tied = BlockDiagonal.from_sharing(X, RBF(1.0), C, "tied", 1.0, cfg)
    with caplog.at_level(logging.INFO, logger="gpmodels"):
        sep = BlockDiagonal.from_sharing(X, RBF(1.0), C, "separate", [1.0] * C, cfg)
    assert [c["label"] for c in representation_choices(tied)] == ["stored-float64"]
    (choice,) = representation_choices(sep)  # equal kernels share one matrix until they are learned apart
    assert choice["label"] == "stored-float32" and choice["n_matrices"] == C
    assert any("stored-float32" in r.getMessage() and "4 kernel matrices" in r.getMessage() for r in caplog.records)


def test_default_budget_is_a_fraction_of_the_available_memory(monkeypatch, X):
    monkeypatch.setattr(mb, "available_memory_bytes", lambda: int((F64 - 10) / mb.SAFETY_FRACTION))
    assert RepresentationConfig().build(X, RBF(1.0)).choice.label() == "stored-float32"
    monkeypatch.setattr(mb, "available_memory_bytes", lambda: None)
    with pytest.raises(InputError, match="give representation.memory_gb"):
        RepresentationConfig().build(X, RBF(1.0))
    monkeypatch.undo()
    assert mb.available_memory_bytes() > 0


def test_spec_keys_reach_the_configuration_and_stored_max_mb_is_retired():
    base = {"name": "t", "data": {"dataset": "satimage"}, "model": {"kernel": {"type": "rbf", "w": 1.0}}}
    spec = spec_from_dict(
        base
        | {
            "model": {
                "kernel": {"type": "rbf", "w": 1.0},
                "representation": {"memory_gb": 12.5, "dtype": "float32", "allow_lowrank": True, "blocked_max_n": 1000},
            }
        }
    )
    cfg = build_representation(spec.model)
    assert (cfg.memory_gb, cfg.dtype, cfg.allow_lowrank, cfg.blocked_max_n) == (12.5, "float32", True, 1000)
    with pytest.raises(SpecError, match="memory_gb"):
        spec_from_dict(base | {"model": {"kernel": {"type": "rbf", "w": 1.0}, "representation": {"stored_max_mb": 10}}})
    with pytest.raises(SpecError, match="dtype"):
        spec_from_dict(base | {"model": {"kernel": {"type": "rbf", "w": 1.0}, "representation": {"dtype": "float16"}}})
