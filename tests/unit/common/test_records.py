"""``frozen_record`` behaves as ``dataclass(frozen=True, slots=True, kw_only=True)`` does.

Each test builds the same class body both ways and checks that the two agree.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from terminai_apts.records import FrozenRecordError, field, frozen_record
from terminai_sandbox.common.hardening import Limits

STRICT = dataclasses.dataclass(frozen=True, slots=True, kw_only=True)


def _both(make: Callable[[Callable[[type], type], Any], type]) -> list[tuple[type, Any]]:
    """``make(decorator, field)`` once per implementation."""
    return [
        (make(STRICT, dataclasses.field), dataclasses.FrozenInstanceError),
        (make(frozen_record, field), FrozenRecordError),
    ]


def _session(decorate: Callable[[type], type], field_: Any) -> type:
    class Session:
        """A record with every kind of field."""

        kind: ClassVar[str] = "session"
        name: str
        limit: int = 3
        tags: tuple[str, ...] = ()
        notes: list[str] = field_(default_factory=list, compare=False)
        token: object = field_(default=None, repr=False, compare=False)

    return decorate(Session)


@pytest.mark.parametrize(("cls", "frozen_error"), _both(_session))
def test_construction_defaults_and_factories(cls: Any, frozen_error: type[Exception]) -> None:
    one, two = cls(name="a"), cls(name="a")
    assert (one.name, one.limit, one.tags, one.notes, one.token) == ("a", 3, (), [], None)
    assert one.notes is not two.notes  # a fresh value from the factory each time
    assert cls.kind == "session" and "kind" not in cls.__slots__
    assert issubclass(frozen_error, AttributeError)


@pytest.mark.parametrize(("cls", "frozen_error"), _both(_session))
def test_bad_arguments_are_type_errors(cls: Any, frozen_error: type[Exception]) -> None:
    with pytest.raises(TypeError, match="name"):
        cls()
    with pytest.raises(TypeError, match="colour"):
        cls(name="a", colour="red")
    with pytest.raises(TypeError):
        cls("a")  # keyword-only


@pytest.mark.parametrize(("cls", "frozen_error"), _both(_session))
def test_frozen_and_slotted(cls: Any, frozen_error: type[Exception]) -> None:
    record = cls(name="a")
    with pytest.raises(frozen_error):
        record.name = "b"
    with pytest.raises(frozen_error):
        del record.name
    assert not hasattr(record, "__dict__")
    assert record.name == "a"


def test_equality_hash_and_repr_match_dataclasses() -> None:
    (strict, _), (ours, _) = _both(_session)
    for cls in (strict, ours):
        a, b = cls(name="a", token=1, notes=["x"]), cls(name="a", token=2)
        assert a == b and hash(a) == hash(b)  # token and notes take no part in comparisons
        assert a != cls(name="a", limit=4)
        assert a != strict(name="a") if cls is ours else a != ours(name="a")  # other class: never equal
    value = {"name": "x", "limit": 5, "tags": ("t",), "notes": ["n"], "token": object()}
    assert repr(strict(**value)) == repr(ours(**value)) and "token" not in repr(ours(**value))


def test_new_attributes_are_refused() -> None:
    # (dataclasses' own slotted frozen classes fail here with a TypeError from super())
    (_, _), (ours, _) = _both(_session)
    with pytest.raises(FrozenRecordError, match="other"):
        ours(name="a").other = 1


@pytest.mark.parametrize(("cls", "frozen_error"), _both(_session))
def test_copies_are_equal_and_still_frozen(cls: Any, frozen_error: type[Exception]) -> None:
    record = cls(name="a", tags=("t",), notes=["n"])
    for copied in (copy.copy(record), copy.deepcopy(record)):
        assert copied == record and copied.notes == ["n"]
        with pytest.raises(frozen_error):
            copied.name = "b"


def test_launch_records_survive_pickling() -> None:
    limits = Limits(memory="1g", cpus="1", pids=64, network="bridge")
    assert pickle.loads(pickle.dumps(limits)) == limits


def _checked(decorate: Callable[[type], type], field_: Any) -> type:
    class Checked:
        """__post_init__ runs after the fields are set."""

        value: int

        def __post_init__(self) -> None:
            if self.value < 0:
                raise ValueError("negative")

    return decorate(Checked)


@pytest.mark.parametrize(("cls", "frozen_error"), _both(_checked))
def test_post_init_runs(cls: Any, frozen_error: type[Exception]) -> None:
    assert cls(value=1).value == 1
    with pytest.raises(ValueError, match="negative"):
        cls(value=-1)


@pytest.mark.parametrize("decorate", [STRICT, frozen_record])
def test_mutable_defaults_are_refused(decorate: Callable[[type], type]) -> None:
    class Bad:
        items: list[str] = []  # noqa: RUF012

    with pytest.raises(ValueError, match="mutable default"):
        decorate(Bad)


def test_a_field_takes_one_kind_of_default() -> None:
    with pytest.raises(ValueError, match="not both"):
        field(default=1, default_factory=int)


def test_records_do_not_inherit_from_records() -> None:
    @frozen_record
    class Base:
        a: int

    with pytest.raises(TypeError, match="do not inherit"):

        @frozen_record
        class Child(Base):
            b: int
