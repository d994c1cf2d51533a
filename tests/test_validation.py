"""The validator vocabulary of gpmodels.validation and its use by every options class.

(a) Unit tests of each validator and converter: bools are never integers or numbers, bounds with
open and closed ends, NaN and inf, optional, arrays, one message shape "<Class>.<field> must be ...".
(b) Completeness (as GPflow's test_no_missing_likelihoods): every attrs class of the package whose
name ends in "Options" or "Config", and the user-facing kernels and likelihoods, validates every
init field with a validator of the vocabulary, and refuses a bool for each integer / number field.
"""

import importlib
import inspect
import math
import pkgutil
from pathlib import Path

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpmodels
from gpmodels.errors import InputError
from gpmodels.hierarchy import ClassTree
from gpmodels.inference.map.newton_cg import NewtonOptions
from gpmodels.kernels import RBF
from gpmodels.kernels.device.backend import numpy_backend
from gpmodels.validation import (
    AnyOf,
    ArrayOf,
    InstanceOf,
    Integer,
    Number,
    OneOf,
    Optional,
    SequenceOf,
    any_of,
    array_of,
    boolean,
    describe_validator,
    instance_of,
    integer,
    nonnegative_int,
    nonnegative_number,
    number,
    one_of,
    optional,
    positive_int,
    positive_number,
    probability,
    sequence_of,
    to_float,
    to_float_array,
    to_int,
    to_path,
)


def _box(validator, converter=None):
    """A one-field attrs class ``Box(x)`` checked by ``validator``."""
    return attrs.make_class("Box", {"x": attrs.field(validator=validator, converter=converter)}, frozen=True)


def _accepts(validator, value, converter=None) -> bool:
    try:
        _box(validator, converter)(value)
    except InputError as exc:
        assert str(exc).startswith("Box.x must be "), str(exc)
        assert "; got " in str(exc)
        return False
    return True


# ------------------------------------------------------------------------------------------- (a) the vocabulary


@pytest.mark.parametrize(
    "v",
    [
        integer(),
        positive_int(),
        nonnegative_int(),
        number(),
        positive_number(),
        nonnegative_number(),
        probability(),
        number(finite=False),
    ],
)
@pytest.mark.parametrize("value", [True, False, np.bool_(True), np.bool_(False)])
def test_bools_are_neither_integers_nor_numbers(v, value):
    assert not _accepts(v, value)


def test_integer_bounds_are_closed_and_refuse_non_integers():
    v = integer(1, 3)
    assert [_accepts(v, x) for x in (0, 1, 2, 3, 4)] == [False, True, True, True, False]
    assert _accepts(v, np.int64(2)) and _accepts(v, np.uint8(3))
    for bad in (1.0, 2.5, np.float64(2.0), "2", None, [2], float("nan"), float("inf")):
        assert not _accepts(v, bad)
    assert _accepts(integer(), -(10**30)) and not _accepts(integer(high=0), 1)
    assert _accepts(positive_int(), 1) and not _accepts(positive_int(), 0)
    assert _accepts(nonnegative_int(), 0) and not _accepts(nonnegative_int(), -1)


def test_number_bounds_open_and_closed_ends():
    closed, opened = number(0, 1), number(0, 1, open_low=True, open_high=True)
    assert [_accepts(closed, x) for x in (-0.1, 0, 0.5, 1, 1.1)] == [False, True, True, True, False]
    assert [_accepts(opened, x) for x in (0, 0.0, 1e-300, 0.5, 1.0 - 1e-16, 1)] == [
        False,
        False,
        True,
        True,
        True,
        False,
    ]
    assert [_accepts(positive_number(), x) for x in (0, 0.0, -1, 1e-300, 3)] == [False, False, False, True, True]
    assert [_accepts(nonnegative_number(), x) for x in (-1e-300, 0, 0.0, 5)] == [False, True, True, True]
    assert [_accepts(probability(open_low=True), x) for x in (0, 0.3, 1)] == [False, True, True]
    assert [_accepts(number(high=0, open_high=True), x) for x in (-1, 0, 1)] == [True, False, False]
    assert _accepts(number(), np.float32(2.5)) and _accepts(number(), np.int32(3)) and _accepts(number(), 7)
    for bad in ("1.0", None, [1.0], np.array([1.0]), 1 + 2j, 10**400):
        assert not _accepts(number(), bad)


def test_nan_is_never_a_number_and_inf_only_when_asked():
    for v in (number(), positive_number(), nonnegative_number(), number(finite=False), positive_number(finite=False)):
        assert not _accepts(v, float("nan")) and not _accepts(v, np.float64("nan"))
    assert not _accepts(positive_number(), math.inf)
    assert _accepts(positive_number(finite=False), math.inf)
    assert not _accepts(positive_number(finite=False), -math.inf)
    assert _accepts(number(finite=False), -math.inf)
    assert not _accepts(number(0, 10, finite=False), math.inf)  # the bounds still apply
    assert "(inf allowed)" in positive_number(finite=False).describe()


def test_one_of_instance_of_boolean():
    v = one_of(("a", "b"))
    assert _accepts(v, "a") and not _accepts(v, "c") and not _accepts(v, ["a"]) and not _accepts(v, None)
    assert v.describe() == "one of 'a', 'b'"
    assert _accepts(instance_of(dict), {}) and not _accepts(instance_of(dict), [])
    assert not _accepts(instance_of(int), True)  # bool only where it is asked for
    assert _accepts(instance_of(int, bool), True)
    assert instance_of(Path, what="a path").describe() == "a path"
    assert _accepts(boolean(), True) and _accepts(boolean(), np.bool_(False))
    for bad in (0, 1, "true", None, 1.0):
        assert not _accepts(boolean(), bad)


def test_optional_admits_none_and_names_both_choices():
    v = optional(nonnegative_int())
    assert _accepts(v, None) and _accepts(v, 0) and not _accepts(v, -1) and not _accepts(v, True)
    with pytest.raises(InputError, match=r"^Box.x must be null or an integer >= 0; got -1$"):
        _box(v)(-1)


def test_array_of_checks_every_entry_dtype_and_dimension():
    v = array_of(positive_number())
    assert _accepts(v, np.array([1.0, 2.0])) and _accepts(v, np.array([3]))
    for bad in (
        np.array([1.0, 0.0]),
        np.array([1.0, np.nan]),
        np.array([np.inf]),
        np.array([True, True]),
        np.array([]),
        np.ones((2, 2)),
        [1.0, 2.0],
        1.0,
        np.array(["a"]),
    ):
        assert not _accepts(v, bad)
    assert _accepts(array_of(number(), ndim=None), np.ones((2, 2)))
    assert v.describe() == "a 1-D array of at least one entry, each entry a positive number"


def test_sequence_of_and_any_of():
    v = sequence_of(positive_number())
    assert _accepts(v, [1.0, 2]) and _accepts(v, (3.0,)) and _accepts(v, np.array([1.0, 2.0]))
    for bad in ([], [1.0, 0.0], [1.0, True], "ab", 1.0, np.array(2.0), {1.0: 1}):
        assert not _accepts(v, bad)
    groups = sequence_of(sequence_of(nonnegative_int()))
    assert _accepts(groups, [[0, 1], [2]]) and not _accepts(groups, [[0, 1], []]) and not _accepts(groups, [0, 1])
    assert _accepts(sequence_of(instance_of(str), min_len=0), [])
    w = any_of(positive_number(), v)
    assert _accepts(w, 2.0) and _accepts(w, [2.0, 3.0]) and not _accepts(w, -1.0) and not _accepts(w, [-1.0])
    assert w.describe() == "a positive number or a non-empty list, each entry a positive number"
    assert sequence_of(number(), min_len=2).describe() == "a list of at least 2 entries, each entry a number"


def test_converters_normalise_numbers_and_pass_everything_else_on():
    assert type(to_float(np.float32(2.5))) is float and type(to_float(3)) is float
    assert type(to_float(np.array(2.0))) is float and type(to_float(np.array(2))) is float
    assert to_float(True) is True and to_float("1") == "1" and to_float(None) is None
    assert to_float(np.array(True)).dtype == bool and to_float(np.ones(2)).shape == (2,)
    assert type(to_int(np.int64(4))) is int and to_int(4.0) == 4.0 and type(to_int(4.0)) is float
    assert to_int(True) is True
    assert to_path("a/b") == Path("a/b") and to_path(3) == 3
    a = to_float_array([1, 2])
    assert a.dtype == np.float64 and a.shape == (2,) and to_float_array(2.0).shape == (1,)
    assert to_float_array([True]) == [True] and to_float_array("x") == "x"
    # through a field: converted values are validated, refused ones keep the message shape
    assert _accepts(positive_number(), np.float32(1.0), converter=to_float)
    assert not _accepts(positive_number(), True, converter=to_float)
    assert not _accepts(positive_int(), 2.0, converter=to_int)


def test_describe_validator():
    assert describe_validator(None) is None
    assert describe_validator(positive_int()) == "a positive integer"
    assert describe_validator(integer(2, 5)) == "an integer in [2, 5]"
    assert describe_validator(number(1)) == "a number >= 1"
    assert describe_validator(number(1, open_low=True)) == "a number > 1"
    assert describe_validator(number(high=0, open_high=True)) == "a negative number"
    assert describe_validator(number(high=2)) == "a number <= 2"
    assert describe_validator(probability(open_high=True)) == "a number x with 0 <= x < 1"
    assert (
        describe_validator(attrs.validators.and_(positive_int(), nonnegative_int()))
        == "a positive integer and an integer >= 0"
    )
    assert describe_validator(attrs.validators.instance_of(int)) is None  # not of the vocabulary


@given(low=st.integers(-5, 5), width=st.integers(0, 5), value=st.integers(-20, 20))
def test_integer_accepts_exactly_the_closed_range(low, width, value):
    assert _accepts(integer(low, low + width), value) == (low <= value <= low + width)


@given(value=st.floats(allow_nan=True, allow_infinity=True))
def test_positive_number_accepts_exactly_the_finite_positive_floats(value):
    assert _accepts(positive_number(), value) == (math.isfinite(value) and value > 0)


# ------------------------------------------------------------------------------------------- (b) completeness

#: user-facing classes checked besides those whose names end in Options / Config.
EXTRA = {
    "gpmodels.optimize.checkpoint.Checkpointing",
    "gpmodels.kernels.rbf.RBF",
    "gpmodels.kernels.rbf.ARD",
    "gpmodels.kernels.linear.Polynomial",
    "gpmodels.likelihoods.gaussian.Gaussian",
    "gpmodels.likelihoods.robust.Laplace",
    "gpmodels.likelihoods.robust.StudentT",
    "gpmodels.likelihoods.hinge.SmoothedHinge",
    "gpmodels.likelihoods.softmax.Softmax",
    "gpmodels.priors.independent.IndependentGP",
    "gpmodels.priors.anova.ANOVAPrior",
    "gpmodels.priors.coupled.CoupledPrior",
}

#: values for fields without a default, so that a class can be built with one field changed.
REQUIRED = {
    "Checkpointing": {"path": "checkpoint.npz"},
    "RBF": {"w": 1.0},
    "ARD": {"w": [1.0, 2.0]},
    "IndependentGP": {"kernel": RBF(1.0)},
    "CoupledPrior": {"kernel": RBF(1.0)},
    "ANOVAPrior": {"kernel": RBF(1.0), "tree": ClassTree([("r", "a"), ("r", "b")])},
    "DeviceRepresentationConfig": {"backend": numpy_backend()},
}

#: classes the walk must find (it would otherwise pass on an empty list).
EXPECTED = {
    "NewtonOptions",
    "CVOptions",
    "OuterOptions",
    "LearnOptions",
    "Checkpointing",
    "EMOptions",
    "LaplaceOptions",
    "VBOptions",
    "MKLOptions",
    "CSOptions",
    "HM3Options",
    "RepresentationConfig",
    "RBF",
    "ARD",
    "Polynomial",
    "Gaussian",
    "Laplace",
    "StudentT",
    "SmoothedHinge",
    "Softmax",
    "IndependentGP",
    "ANOVAPrior",
    "CoupledPrior",
}


def _option_classes() -> list[type]:
    found = {}
    for info in pkgutil.walk_packages(gpmodels.__path__, "gpmodels."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if not (inspect.isclass(obj) and attrs.has(obj) and obj.__module__ == module.__name__):
                continue
            if name.endswith(("Options", "Config")) or f"{obj.__module__}.{name}" in EXTRA:
                found[f"{obj.__module__}.{name}"] = obj
    return [found[k] for k in sorted(found)]


OPTION_CLASSES = _option_classes()


def _fields(cls):
    return [f for f in attrs.fields(cls) if f.init]


def _numeric(validator) -> bool:
    inner = validator.inner if isinstance(validator, Optional) else validator
    return isinstance(inner, (Integer, Number))


def _build(cls, **changes):
    return cls(**{**REQUIRED.get(cls.__name__, {}), **changes})


def test_the_walk_finds_every_options_class():
    assert EXPECTED <= {cls.__name__ for cls in OPTION_CLASSES}


@pytest.mark.parametrize("cls", OPTION_CLASSES, ids=lambda c: c.__name__)
def test_every_field_has_a_validator_of_the_vocabulary(cls):
    missing = [f.name for f in _fields(cls) if describe_validator(f.validator) is None]
    assert not missing, f"{cls.__name__}: fields without a validator of gpmodels.validation: {missing}"
    required = {f.name for f in _fields(cls) if f.default is attrs.NOTHING}
    assert required <= set(REQUIRED.get(cls.__name__, {})), f"give REQUIRED[{cls.__name__!r}] values for {required}"
    _build(cls)  # the defaults pass their own validators


@pytest.mark.parametrize("cls", OPTION_CLASSES, ids=lambda c: c.__name__)
def test_bools_are_refused_for_every_number_field(cls):
    numeric = [f for f in _fields(cls) if _numeric(f.validator)]
    for f in numeric:
        with pytest.raises(InputError) as info:
            _build(cls, **{f.alias: True})
        assert str(info.value).startswith(f"{cls.__name__}.{f.alias} must be "), str(info.value)


@pytest.mark.parametrize("cls", OPTION_CLASSES, ids=lambda c: c.__name__)
def test_every_field_refuses_a_wrong_value_in_the_one_message_shape(cls):
    wrong = {
        Integer: 1.5,
        Number: "1",
        OneOf: "no-such-choice",
        InstanceOf: object(),
        ArrayOf: np.array([np.nan]),
        SequenceOf: "not a list",
        AnyOf: "1",
    }
    for f in _fields(cls):
        v = getattr(f.validator, "inner", f.validator)  # an Optional's or a width's ('auto' or a value) own check
        bad = next(value for kind, value in wrong.items() if isinstance(v, kind))
        with pytest.raises(InputError) as info:
            _build(cls, **{f.alias: bad})  # the constructor's name of the field (a private field's without "_")
        assert str(info.value).startswith(f"{cls.__name__}.{f.alias} must be "), str(info.value)
        assert str(info.value).count("; got ") == 1


def test_newton_options_refuse_what_used_to_fail_inside_the_fit():
    with pytest.raises(InputError, match=r"^NewtonOptions.max_stall_restarts must be an integer >= 0; got 1.5$"):
        NewtonOptions(max_stall_restarts=1.5)
    with pytest.raises(InputError, match=r"^NewtonOptions.max_iter must be a positive integer; got True$"):
        NewtonOptions(max_iter=True)
    assert NewtonOptions(max_iter=np.int64(5)).max_iter == 5


def test_cross_field_checks_keep_the_message_shape():
    from gpmodels.baselines.crammer_singer.solver import CSOptions
    from gpmodels.inference.cv.learn import LearnOptions
    from gpmodels.optimize.lbfgs import OuterOptions

    with pytest.raises(InputError, match=r"^LearnOptions.lower must be below upper"):
        LearnOptions(lower=2.0, upper=1.0)
    with pytest.raises(InputError, match=r"^OuterOptions.armijo must be below wolfe"):
        OuterOptions(armijo=0.5, wolfe=0.4)
    with pytest.raises(InputError, match=r"^CSOptions.selection"):
        CSOptions(selection="cyclic")
