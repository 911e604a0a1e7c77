"""Frozen keyword-only records for the launch path, without importing :mod:`dataclasses`.

``@frozen_record`` gives a class what ``@dataclass(frozen=True, slots=True, kw_only=True)``
gives it, and only that: ``__slots__``, a keyword-only ``__init__`` (defaults, ``field``
default factories, ``__post_init__``), ``__eq__``/``__hash__`` over the compared fields,
``__repr__``, copy and pickle support, and assignment or deletion refused with
:class:`FrozenRecordError`. Type checkers see it as a dataclass through
``dataclass_transform`` (PEP 681).

Why not dataclasses itself: importing it pulls in ``inspect``, ``ast``, ``dis`` and
``tokenize``, and each class it builds compiles generated source. On the session-start path
(``terminai-sandbox run``) that was ~13 ms of a ~50 ms launcher overhead (measured in
``docs/BENCHMARKS.md``). Code off that path keeps using dataclasses.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform

    _T = TypeVar("_T")
else:

    def dataclass_transform(**_options: object) -> Callable[[_T], _T]:
        return lambda decorated: decorated


_MISSING = object()


class FrozenRecordError(AttributeError):
    """A field of a frozen record was assigned or deleted."""


class _Field:
    __slots__ = ("compare", "default", "default_factory", "repr")

    def __init__(self, default: object, factory: Callable[[], object] | None, shown: bool, compared: bool) -> None:
        self.default, self.default_factory, self.repr, self.compare = default, factory, shown, compared


def field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] | None = None,
    repr: bool = True,
    compare: bool = True,
) -> Any:
    """A field with a default factory, or one left out of ``repr`` or comparisons."""
    if default is not _MISSING and default_factory is not None:
        raise ValueError("a field takes default or default_factory, not both")
    return _Field(default, default_factory, repr, compare)


def _init(self: Any, **values: object) -> None:
    cls = type(self)
    specs: dict[str, _Field] = cls.__record_specs__
    unknown = values.keys() - specs.keys()
    if unknown:
        raise TypeError(f"{cls.__qualname__}() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    for name, spec in specs.items():
        value = values.get(name, spec.default)
        if value is _MISSING:
            if spec.default_factory is None:
                raise TypeError(f"{cls.__qualname__}() missing required keyword-only argument: {name!r}")
            value = spec.default_factory()
        object.__setattr__(self, name, value)
    post_init = getattr(self, "__post_init__", None)
    if post_init is not None:
        post_init()


def _setattr(self: object, name: str, value: object) -> None:
    raise FrozenRecordError(f"cannot assign to field {name!r} of a frozen {type(self).__qualname__}")


def _delattr(self: object, name: str) -> None:
    raise FrozenRecordError(f"cannot delete field {name!r} of a frozen {type(self).__qualname__}")


def _key(self: Any) -> tuple[object, ...]:
    return tuple(getattr(self, name) for name in type(self).__record_compared__)


def _eq(self: object, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented  # type: ignore[no-any-return]  # typeshed types NotImplemented as Any
    return _key(self) == _key(other)


def _hash(self: object) -> int:
    return hash(_key(self))


def _repr(self: Any) -> str:
    cls = type(self)
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in cls.__record_shown__)
    return f"{cls.__qualname__}({shown})"


def _getstate(self: Any) -> tuple[object, ...]:
    return tuple(getattr(self, name) for name in type(self).__slots__)


def _setstate(self: Any, state: tuple[object, ...]) -> None:
    # copy and pickle restore state through here; __setattr__ would refuse them
    for name, value in zip(type(self).__slots__, state, strict=True):
        object.__setattr__(self, name, value)


_METHODS = {
    "__init__": _init,
    "__setattr__": _setattr,
    "__delattr__": _delattr,
    "__eq__": _eq,
    "__hash__": _hash,
    "__repr__": _repr,
    "__getstate__": _getstate,
    "__setstate__": _setstate,
}


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(field,))
def frozen_record(cls: type[_T]) -> type[_T]:
    """Make ``cls`` a frozen, slotted record whose fields are its annotations, in order."""
    if any("__record_specs__" in vars(base) for base in cls.__mro__[1:]):
        raise TypeError(f"{cls.__name__}: records do not inherit from records")
    namespace = dict(vars(cls))
    names = [
        name
        for name, annotation in namespace.get("__annotations__", {}).items()
        if not str(annotation).startswith(("ClassVar", "typing.ClassVar"))
    ]
    specs: dict[str, _Field] = {}
    for name in names:
        value = namespace.pop(name, _MISSING)
        if isinstance(value, (list, dict, set)):
            raise ValueError(f"{cls.__name__}.{name}: mutable default {type(value).__name__}; use default_factory")
        specs[name] = value if isinstance(value, _Field) else _Field(value, None, shown=True, compared=True)
    namespace.pop("__dict__", None)
    namespace.pop("__weakref__", None)
    namespace.update(
        _METHODS,
        __qualname__=cls.__qualname__,
        __slots__=tuple(names),
        __record_specs__=specs,
        __record_compared__=tuple(name for name in names if specs[name].compare),
        __record_shown__=tuple(name for name in names if specs[name].repr),
    )
    metaclass: Any = type(cls)
    return metaclass(cls.__name__, cls.__bases__, namespace)  # type: ignore[no-any-return]
