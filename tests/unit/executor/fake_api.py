"""A small API used to test injection (the child imports and builds it itself)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Note:
    uid: str
    title: str


class NotesApi:
    """Read-only notes; keeps internal state the sandbox must never reach."""

    def __init__(self, prefix: str) -> None:
        self._secret = "host-secret-value"
        self._rows = [Note(uid=f"{prefix}{i}", title=f"note {i}") for i in range(5)]

    def search(self, text: str, limit: int = 10) -> list[Note]:
        if type(limit) is not int:
            raise TypeError("limit")
        return [n for n in self._rows if text in n.title][:limit]

    def internal_rows(self) -> list[Note]:
        return self._rows

    def boom(self) -> None:
        raise RuntimeError("/srv/secret/path.py leaked detail")
