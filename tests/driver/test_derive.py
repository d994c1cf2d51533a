"""Spec sections derived from options classes: keys, defaults, bounds and docs come from the class."""

import attrs
import pytest

from gpmodels.driver.derive import Part, options_section
from gpmodels.driver.schema import option, reference_markdown
from gpmodels.driver.sections.objective import CVSpec, NewtonSpec, ObjectiveSpec
from gpmodels.errors import InputError, SpecError
from gpmodels.inference.cv.options import CVOptions
from gpmodels.inference.map.newton_cg import NewtonOptions
from gpmodels.validation import boolean, integer, number, one_of, optional, positive_number


def _plain(instance, attribute, value):
    if value == 13:
        raise InputError(f"Toy.{attribute.name} must not be 13; got {value!r}")


@attrs.frozen
class Inner:
    depth: int = attrs.field(default=2, validator=integer(1, 5))


@attrs.frozen
class Toy:
    """A toy options class.  ``rate``: the step size of the toy."""

    count: int = attrs.field(default=3, validator=integer(1), metadata={"doc": "how many"})
    rate: float = attrs.field(default=0.5, validator=number(0, 1, open_high=True))
    mode: str = attrs.field(default="a", validator=one_of(("a", "b")))
    limit: float = attrs.field(default=float("inf"), validator=positive_number(finite=False))
    cap: int | None = attrs.field(default=None, validator=optional(integer(0)))
    flag: bool = attrs.field(default=True, validator=boolean())
    both: float = attrs.field(default=1.0, validator=attrs.validators.and_(number(0), number(None, 10)))
    odd: int = attrs.field(default=1, validator=_plain)
    free: float = 2.0
    inner: Inner = attrs.field(factory=Inner)
    hook: object = attrs.field(default=len)


ToySpec = options_section("ToySpec", "The toy section.", [Part(Toy)], docs={"odd": "an odd setting"})


def test_keys_defaults_and_docs_come_from_the_class():
    fields = {f.name: f for f in ToySpec.spec_fields()}
    assert list(fields) == ["count", "rate", "mode", "limit", "cap", "flag", "both", "odd", "free"]  # no inner, hook
    assert ToySpec().options() == Toy()
    meta = {k: f.metadata["spec"] for k, f in fields.items()}
    assert meta["count"]["doc"] == "how many" and meta["rate"]["doc"] == "the step size of the toy"
    assert meta["odd"]["doc"] == "an odd setting" and meta["free"]["doc"] == "`Toy.free`"
    # the spec checks each key by the field's own validator (one vocabulary for options and specs)
    for name in ("count", "rate", "mode", "limit", "cap", "flag", "both"):
        assert meta[name]["check"] is attrs.fields_dict(Toy)[name].validator
    assert meta["cap"]["nullable"] and not meta["count"]["nullable"]
    assert meta["odd"]["check"] == integer() and meta["free"]["check"] == number()
    text = reference_markdown(ToySpec)
    assert "| `count` | a positive integer | 3 | how many |" in text
    assert "| `rate` | a number x with 0 <= x < 1 | 0.5 |" in text
    assert "| `both` | a number >= 0 and a number <= 10 | 1.0 |" in text
    assert "| `odd` | an integer; checked by `Toy` | 1 | an odd setting |" in text


@pytest.mark.parametrize(
    "data, path, message",
    [
        ({"count": 0}, "toy.count", "must be a positive integer; got 0"),
        ({"count": 2.5}, "toy.count", "integer"),
        ({"rate": 1.0}, "toy.rate", "< 1"),
        ({"mode": "c"}, "toy.mode", "one of 'a', 'b'"),
        ({"both": 11}, "toy.both", "<= 10"),
        ({"odd": 13}, "toy.odd", "must not be 13"),
        ({"inner": {}}, "toy.inner", "unknown key 'inner'"),
    ],
)
def test_values_are_checked_with_the_key_path(data, path, message):
    with pytest.raises(SpecError, match=message) as err:
        ToySpec.from_dict(data, "toy")
    assert err.value.path == path


def test_infinite_values_where_the_class_allows_them():
    assert ToySpec.from_dict({"limit": float("inf"), "cap": None}).options().limit == float("inf")
    with pytest.raises(SpecError, match="must be a number x with 0 <= x < 1; got inf"):
        ToySpec.from_dict({"rate": float("inf")}, "toy")
    with pytest.raises(SpecError, match="must be a number; got nan"):
        ToySpec.from_dict({"free": float("nan")}, "toy")


def test_defaults_from_an_instance_and_nested_sections():
    Outer = options_section(
        "Outer",
        "outer",
        [Part(Toy, defaults=Toy(count=7), skip=("odd",))],
        nested=(("inner", options_section("InnerSpec", "inner", [Part(Inner)]), "the inner"),),
        extra=(("folds", option(5, integer(2), doc="spec-only")),),
    )
    o = Outer.from_dict({"inner": {"depth": 4}})
    assert o.count == 7 and o.folds == 5 and o.options(odd=3) == Toy(count=7, odd=3, inner=Inner(depth=4))


def test_the_objective_sections_follow_their_classes():
    assert NewtonSpec().options() == NewtonOptions()
    assert CVSpec().newton.options() == CVOptions().newton
    assert CVSpec().options(CVOptions) == CVOptions()
    o = ObjectiveSpec.from_dict({"type": "cv", "cv": {"newton": {"grad_tol": 1e-5}}}, "objective")
    assert o.cv.options(CVOptions).newton.grad_tol == 1e-5


@pytest.mark.parametrize(
    "data, path, message",
    [
        ({"k1": 5}, "objective.k1", r"unknown key 'k1' \(allowed: type, solver, learn, newton, em, cv"),
        ({"solve": "exact"}, "objective.solve", "unknown key 'solve'; did you mean 'solver'"),
        ({"type": "mkl", "max_iter": 3}, "objective.max_iter", r"unknown key 'max_iter' \(allowed: type,"),
        ({"cv": {"fold": 3}}, "objective.cv.fold", "unknown key 'fold'; did you mean 'folds'"),
        ({"cv": {"memory": 4}}, "objective.cv.memory", r"unknown key 'memory' \(allowed: folds,"),
        (
            {"newton": {"max_iters": 3}},
            "objective.newton.max_iters",
            "unknown key 'max_iters'; did you mean 'max_iter'",
        ),
    ],
)
def test_unknown_objective_keys_name_the_allowed_ones_and_the_nearest(data, path, message):
    with pytest.raises(SpecError, match=message) as err:
        ObjectiveSpec.from_dict(data, "objective")
    assert err.value.path == path
