"""Every operator and composition against independent dense oracles and finite differences."""

import importlib
import inspect
import pkgutil

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from minimal_operator import DenseTestOperator
from operator_cases import CASES, case_strategy

import gpmodels
from gpmodels.operators.base import Operator
from gpmodels.testing import check_grad_trace, check_operator


def _all_operator_classes():
    for mod in pkgutil.walk_packages(gpmodels.__path__, "gpmodels."):
        importlib.import_module(mod.name)
    seen, stack = set(), [Operator]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                stack.append(sub)
    return {c for c in seen if c.__module__.startswith("gpmodels.") and not inspect.isabstract(c)}


def test_completeness_every_operator_is_registered():
    missing = sorted(c.__qualname__ for c in _all_operator_classes() if c not in CASES)
    assert not missing, f"operators without a conformance case in tests/operator_cases.py: {missing}"


@pytest.mark.parametrize("cls", sorted(CASES, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_operator_against_dense_oracle(cls):
    @given(case=case_strategy(cls), seed=st.integers(0, 2**31 - 1))
    def run(case, seed):
        case.check(seed)

    run()


@pytest.mark.parametrize("cls", sorted(CASES, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_grad_trace_against_finite_differences(cls):
    @given(case=case_strategy(cls), seed=st.integers(0, 2**31 - 1))
    def run(case, seed):
        check_grad_trace(case.op, np.random.default_rng(seed))

    run()


@given(seed=st.integers(0, 2**31 - 1), n=st.integers(2, 5), C=st.integers(1, 3))
def test_generic_defaults_of_the_base_class(seed, n, C):
    """An operator with only the required hooks works: diag, blocks, dense and grad_trace defaults."""
    op = DenseTestOperator.random(np.random.default_rng(seed), n, C)
    check_operator(op, np.random.default_rng(seed + 1), dense=op.reference_dense(), rtol=1e-9)
    check_grad_trace(op, np.random.default_rng(seed + 2), rtol=1e-4)
