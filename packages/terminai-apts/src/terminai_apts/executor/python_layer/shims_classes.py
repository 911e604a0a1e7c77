"""``enum`` and ``abc`` in the sandbox: plain base classes of the sandbox's own module.

The real ``Enum`` and ``ABC`` have metaclasses, which the class statement refuses (a
metaclass would choose the namespace a class body runs in). These are plain classes whose
module is the sandbox's, so a program may subclass them; their methods are dunders only,
which programs cannot read, and ``__init_subclass__`` turns an enum's class attributes
into its members.
"""

from __future__ import annotations

import contextlib
from typing import Any

from terminai_apts.executor.python_layer.wrappers import SANDBOX_MODULE, SafeCallable, stand_in


class _Auto:
    __slots__ = ()

    def __repr__(self) -> str:
        return "auto()"


def auto() -> _Auto:
    return _Auto()


def _is_member_value(name: str, value: object) -> bool:
    if name.startswith("_"):
        return False
    return not hasattr(type(value), "__get__")  # functions, properties: methods, not members


@stand_in
class Enum:
    """``class Color(Enum): RED = 1``: each public class attribute that is not a method
    becomes a member with ``name`` and ``value``; ``Color(1)`` looks a member up by value,
    ``Color["RED"]`` by name; ``for c in Color`` (and comprehensions) visit the members in
    definition order, aliases once (the loop's iteration guard asks :func:`enum_members`).
    ``list(Color)`` and ``len(Color)`` need a metaclass and are not supported."""

    __module__ = SANDBOX_MODULE

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        by_value: dict[object, object] = {}
        members: list[object] = []
        last = 0
        for key, declared in list(cls.__dict__.items()):
            if not _is_member_value(key, declared):
                continue
            value = last + 1 if isinstance(declared, _Auto) else declared
            if isinstance(value, int) and not isinstance(value, bool):
                last = value
            try:
                member = by_value.get(value)
            except TypeError:  # an unhashable value: a member of its own, no lookup
                member = None
            if member is None:
                member = int.__new__(cls, value) if issubclass(cls, int) else object.__new__(cls)
                object.__setattr__(member, "name", key)
                object.__setattr__(member, "value", value)
                with contextlib.suppress(TypeError):
                    by_value[value] = member
                members.append(member)
            type.__setattr__(cls, key, member)
        type.__setattr__(cls, "_value2member_", by_value)
        type.__setattr__(cls, "_members_", tuple(members))

    def __class_getitem__(cls, name: object) -> Any:
        """``Color["RED"]``: a member by name (only members: never another class attribute)."""
        member = cls.__dict__.get(name) if isinstance(name, str) else None
        if isinstance(member, cls):
            return member
        raise KeyError(name)

    def __new__(cls, value: object) -> Any:
        members: dict[object, object] = cls.__dict__.get("_value2member_", {})
        if value in members:
            return members[value]
        raise ValueError(f"{value!r} is not a valid {cls.__name__}")

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("enum members are read-only")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.__dict__['name']}: {self.__dict__['value']!r}>"

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.__dict__['name']}"

    def __hash__(self) -> int:
        return hash(self.__dict__["name"])

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("enum members cannot be pickled in the sandbox")

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: object) -> Any:
        return self


@stand_in
class IntEnum(int, Enum):
    """Members are ints too (``Priority.HIGH > 2``)."""

    __module__ = SANDBOX_MODULE
    __new__ = Enum.__new__  # type: ignore[assignment]  # look members up, never build ints

    def __str__(self) -> str:
        return str(int(self))

    def __hash__(self) -> int:
        return int.__hash__(self)

    def __eq__(self, other: object) -> bool:
        return int.__eq__(self, other)


def enum_members(obj: object) -> tuple[object, ...] | None:
    """The members of an enum class of the sandbox's, in definition order (None: not one)."""
    if isinstance(obj, type) and issubclass(obj, Enum):
        found = obj.__dict__.get("_members_")
        return found if isinstance(found, tuple) else None
    return None


ENUM: dict[str, object] = {"Enum": Enum, "IntEnum": IntEnum, "auto": SafeCallable(auto, "enum.auto")}


@stand_in
class ABC:
    """``class Base(ABC)``: a plain base class (abstract methods are not enforced)."""

    __module__ = SANDBOX_MODULE


def abstractmethod(fn: Any) -> Any:
    return fn


ABC_MODULE: dict[str, object] = {"ABC": ABC, "abstractmethod": SafeCallable(abstractmethod, "abc.abstractmethod")}

# The base classes above: never turned into dataclasses or written to by a decorator.
SHIM_BASES: tuple[type, ...] = (Enum, IntEnum, ABC)
