"""A value that never shows itself: passwords, private keys, registry tokens.

``str()``, ``repr()`` and formatting print ``'********'``; only :meth:`reveal` returns
the value, so a secret cannot leak into logs, exceptions or audit records by accident.
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T", str, bytes)


class Secret(Generic[T]):
    __slots__ = ("_value",)

    def __init__(self, value: T) -> None:
        self._value: T = value

    def reveal(self) -> T:
        value: T = self._value
        return value

    def __repr__(self) -> str:
        return "Secret('********')"

    def __str__(self) -> str:
        return "********"

    def __format__(self, spec: str) -> str:
        return "********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("secrets are not picklable")
