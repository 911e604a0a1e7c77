"""Layer 5 (child side): the values an injected API hands to sandboxed code.

Whatever the real API returns is rebuilt here as fresh data: scalars, lists, dicts, a
copy of the seed's ``Memory`` dataclass, and the immutable :class:`Record` (attribute and
key access, ``to_dict()``) and :class:`ResultList` (an extension's result set, list-like,
keeping ``total``, ``truncated``, ``plan`` and ``elapsed_ms`` as attributes). No object of the real API, and
no class or function behind these wrappers, is reachable from them.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Iterator
from typing import Any

from terminai_apts.executor.python_layer.wrappers import SandboxViolation, Sealed
from terminai_apts.memory.seed import Memory as SeedMemory

_PLAIN_SCALARS = (str, int, float, bool, type(None))
MAX_NESTING = 20
_LIST_MUTATORS = frozenset({"sort", "append", "extend", "insert", "pop", "remove", "reverse", "clear"})


class ApiError(Exception):
    """Generic failure of an injected API call (no internal detail is exposed)."""


class NotFound(LookupError):
    """An injected API found nothing under the id it was given (``thermal.get(999)``)."""


class Record(metaclass=Sealed):
    """An immutable record handed to sandboxed code (attribute and key access).

    Values are frozen when the record is built (lists become tuples, mappings Records), so
    neither the record nor anything inside it can be changed; ``to_dict()`` is a fresh copy
    of plain data (what ``json.dumps`` accepts).
    """

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        object.__setattr__(self, "_data", types.MappingProxyType({k: _freeze(v) for k, v in data.items()}))

    def __getattr__(self, item: str) -> Any:
        data = object.__getattribute__(self, "_data")
        if item in data:
            return _out(data[item])
        raise AttributeError(f"record has no field '{item}'; fields: {', '.join(data)}")

    def __getitem__(self, key: str) -> Any:
        return _out(object.__getattribute__(self, "_data")[key])

    def __contains__(self, key: object) -> bool:
        return key in object.__getattribute__(self, "_data")

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("records are read-only")

    def __delattr__(self, key: str) -> None:
        raise SandboxViolation("records are read-only")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        data = object.__getattribute__(self, "_data")
        return hash((data.get("id"), data.get("date"), data.get("title")))

    def __dir__(self) -> list[str]:
        return sorted({"get", "keys", "to_dict", *object.__getattribute__(self, "_data")})

    def keys(self) -> list[str]:
        return list(object.__getattribute__(self, "_data"))

    def get(self, key: str, default: Any = None) -> Any:
        return _out(object.__getattribute__(self, "_data").get(key, default))

    def to_dict(self) -> dict[str, Any]:
        return {k: _thaw(v) for k, v in object.__getattribute__(self, "_data").items()}

    def __repr__(self) -> str:
        data = object.__getattribute__(self, "_data")
        if "id" in data and "title" in data and "date" in data:
            return f"Memory(id={data['id']}, date={str(data['date'])[:10]}, title={str(data['title'])[:60]!r})"
        return f"Record({self.to_dict()!r})"


class ResultList(metaclass=Sealed):
    """A result set as the seed returned it: a list of memories (iteration, ``len``,
    indexing, slicing, truthiness, ``sorted``) whose metadata stays readable as attributes
    (``total``, ``truncated``, ``plan``, ``elapsed_ms``, ``hits``). ``results["total"]``
    and ``results["hits"]`` keep working for programs written against the record form."""

    __slots__ = ("_items", "_meta")

    def __init__(self, items: tuple[Record, ...], meta: dict[str, Any]) -> None:
        object.__setattr__(self, "_items", items)
        object.__setattr__(self, "_meta", types.MappingProxyType({k: _freeze(v) for k, v in meta.items()}))

    def __len__(self) -> int:
        return len(object.__getattribute__(self, "_items"))

    def __bool__(self) -> bool:
        return bool(object.__getattribute__(self, "_items"))

    def __iter__(self) -> Iterator[Record]:
        return iter(object.__getattribute__(self, "_items"))

    def __reversed__(self) -> Iterator[Record]:
        items: tuple[Record, ...] = object.__getattribute__(self, "_items")
        return reversed(items)

    def __contains__(self, item: object) -> bool:
        return item in object.__getattribute__(self, "_items")

    def __getitem__(self, key: int | slice | str) -> Any:
        items: tuple[Record, ...] = object.__getattribute__(self, "_items")
        if isinstance(key, str):
            return self.__getattr__(key)
        if isinstance(key, slice):
            return list(items[key])
        return items[key]

    def __getattr__(self, item: str) -> Any:
        if item == "hits":
            return object.__getattribute__(self, "_items")
        meta = object.__getattribute__(self, "_meta")
        if item in meta:
            return meta[item]
        if item in _LIST_MUTATORS:
            raise AttributeError(
                f"results are read-only (no '{item}'); list(results) is a list you can change,"
                " sorted(results, key=...) a sorted copy"
            )
        raise AttributeError(f"results have no attribute '{item}'; attributes: hits, {', '.join(meta)}")

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("results are read-only")

    def __delattr__(self, key: str) -> None:
        raise SandboxViolation("results are read-only")

    def __dir__(self) -> list[str]:
        return sorted({"hits", "ids", "keys", "to_dict", "to_list", *object.__getattribute__(self, "_meta")})

    @property
    def ids(self) -> list[int]:
        return [r.get("id") for r in object.__getattribute__(self, "_items")]

    def keys(self) -> list[str]:
        return ["hits", *object.__getattribute__(self, "_meta")]

    def to_list(self) -> list[dict[str, Any]]:
        """The memories as plain dicts (for ``json.dumps``)."""
        return [r.to_dict() for r in object.__getattribute__(self, "_items")]

    def to_dict(self) -> dict[str, Any]:
        """The whole result as plain data: ``{"hits": [...], "total": ..., ...}``."""
        meta = object.__getattribute__(self, "_meta")
        return {"hits": self.to_list(), **{k: _thaw(v) for k, v in meta.items()}}

    def __repr__(self) -> str:
        items: tuple[Record, ...] = object.__getattribute__(self, "_items")
        meta = object.__getattribute__(self, "_meta")
        head = f"Results(total={meta.get('total')}, shown={len(items)}, truncated={meta.get('truncated')})"
        return "\n".join([head, *(f"  {r!r}" for r in items[:20])])


def _out(value: Any) -> Any:
    """A stored sequence leaves a record as a fresh list (the seed's ``tags`` is a list);
    changing that list changes nothing inside the record."""
    return list(value) if isinstance(value, tuple) else value


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return Record(value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    if isinstance(value, (Record, ResultList)):
        return value.to_dict()
    return value


def check_plain(value: object, depth: int = 0) -> None:
    """Arguments to an injected API must be plain data (nothing of the sandbox's own)."""
    if depth > 10:
        raise TypeError("argument nested too deeply")
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return
    if kind in (list, tuple):
        for item in value:  # type: ignore[attr-defined]
            check_plain(item, depth + 1)
        return
    if kind is dict:
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str:
                raise TypeError("dict keys must be str")
            check_plain(item, depth + 1)
        return
    raise TypeError(f"argument of type '{kind.__name__}' is not allowed")


def _fields(value: Any, depth: int) -> dict[str, Any]:
    return {f.name: to_plain(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)}


def _is_result_set(value: object) -> bool:
    return dataclasses.is_dataclass(value) and hasattr(value, "hits") and hasattr(value, "total")


def _memory_of(hit: Any, depth: int) -> Record:
    """A hit (memory + score + snippet) as one flat memory record, as the seed had it."""
    if dataclasses.is_dataclass(hit) and hasattr(hit, "memory"):
        fields = _fields(hit.memory, depth)
        extra = {
            f.name: to_plain(getattr(hit, f.name), depth + 1) for f in dataclasses.fields(hit) if f.name != "memory"
        }
        return Record({**fields, **extra, "memory": fields})
    plain = to_plain(hit, depth)
    return plain if isinstance(plain, Record) else Record({"value": plain})


def to_plain(value: object, depth: int = 0) -> Any:
    """Fresh plain data (or immutable Records) from whatever the real API returned."""
    if depth > MAX_NESTING:
        raise ApiError("result nested too deeply")
    if isinstance(value, _PLAIN_SCALARS):
        return value
    if type(value) is SeedMemory:  # the seed's own record type, as its programs use it (asdict, ==, repr)
        return dataclasses.replace(value, **_fields(value, depth))
    if _is_result_set(value):
        items = tuple(_memory_of(h, depth + 1) for h in value.hits)  # type: ignore[attr-defined]
        meta = {f.name: to_plain(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)}  # type: ignore[arg-type]
        meta.pop("hits", None)
        return ResultList(items, meta)
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return Record({k: to_plain(v, depth + 1) for k, v in value._asdict().items()})
    if isinstance(value, (list, tuple, set, frozenset)) or (hasattr(value, "__iter__") and hasattr(value, "__next__")):
        return [to_plain(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): to_plain(v, depth + 1) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return Record(_fields(value, depth))
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    raise ApiError(f"result of type '{type(value).__name__}' cannot be returned")


def result_size(value: object) -> int:
    """Rows a result counts against the quota."""
    if isinstance(value, (list, ResultList)):
        return len(value)
    return 1
