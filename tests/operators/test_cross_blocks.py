"""Rectangular operators written once: a cross block of any composite is a block of the square one.

Every composite (block-diagonal, intercept, sum, ANOVA, coupling, and composites of composites)
builds its blocks K_{I,J} (CV folds) and K_{*,X} (prediction) from its one algebra over its parts'
blocks (:class:`gpmodels.operators.base.CompositeBlock`).  Checked against ``dense()`` of the square
operator: rows I and columns J for training subsets, and for test points the block of the same
operator built on the training points followed by the new ones.
"""

import ast
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT
from hypothesis import given
from hypothesis import strategies as st
from operator_cases import CASES, case_strategy, nested_case, on_inputs, stack_inputs, training_inputs

from gpmodels.kernels.rbf import RBF
from gpmodels.kernels.representations import RepresentationConfig
from gpmodels.operators.restriction import Restriction
from gpmodels.operators.stacked import Stacked
from gpmodels.testing import check_cross_blocks

COMPOSITES = {cls.__name__: (lambda cls=cls: case_strategy(cls)) for cls in CASES}
COMPOSITES["nested"] = nested_case


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_cross_blocks_equal_dense_blocks_of_the_square_operator(name):
    @given(case=COMPOSITES[name](), seed=st.integers(0, 2**31 - 1))
    def run(case, seed):
        if isinstance(case.op, (Stacked, Restriction)):  # a prior on point sets of another operator's inputs
            check_cross_blocks(case.op, np.random.default_rng(seed), rtol=1e-7)
            return
        stacked = on_inputs(case.op, stack_inputs(training_inputs(case.op), case.X_new))
        check_cross_blocks(case.op, np.random.default_rng(seed), X_new=case.X_new, stacked=stacked, rtol=1e-7)

    run()


@given(case=nested_case(), seed=st.integers(0, 2**31 - 1))
def test_nested_composites_against_the_kronecker_oracle(case, seed):
    case.check(seed)


def test_no_private_cross_classes_in_operators():
    """The square and rectangular forms of a composite share one class and one algebra."""
    found = []
    for path in sorted((ROOT / "gpmodels" / "operators").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name.startswith("_") and node.name.endswith("Cross"):
                found.append(f"{Path(path).name}:{node.name}")
    assert not found, f"twin cross classes: {found}"


@pytest.mark.parametrize("kind", ["stored", "blocked", "features", "lowrank"])
def test_a_representations_cross_block_is_its_own_rectangular_form(kind, rng):
    """``rep.cross(I, J)`` is an instance of one of the representation's own bases: the MVM of a
    kernel block is written once per representation, for (X, X), (X_I, X_J) alike."""
    from gpmodels.kernels.linear import Linear

    X = rng.normal(size=(12, 3))
    kernel = Linear() if kind == "features" else RBF(0.5)
    rep = RepresentationConfig(kind=kind, rank=5).build(X, kernel)
    block = rep.cross(np.array([0, 3, 5]), np.array([5, 1, 2, 9]))
    assert isinstance(rep, type(block)), f"{type(rep).__name__}.cross gives a {type(block).__name__}"
    np.testing.assert_allclose(block.dense(), rep.dense()[np.ix_([0, 3, 5], [5, 1, 2, 9])], rtol=1e-12, atol=1e-12)
