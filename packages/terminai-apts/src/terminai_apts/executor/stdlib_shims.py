"""Sandbox versions of the parts of seed 001's allowlist whose real objects reach too far.

Each entry of :data:`SHIMS` replaces the real attribute of a module proxy (or, for the
modules that have no safe real object at all, is the whole module). Why each one exists:

* ``functools.lru_cache``/``cache``/``wraps`` return Python closures of ``functools``
  (``__globals__``); ``wraps`` writes ``__wrapped__`` onto the program's function.
* ``operator.attrgetter``/``methodcaller``/``itemgetter`` read attributes and items in C,
  past the attribute guard: here every step goes through the runtime guards.
* ``string.Formatter`` formats ``{0.__class__}``: only the constants, ``capwords`` and
  ``Template`` (which reads mapping items, never attributes) are exposed.
* ``typing`` objects are classes and aliases with Python methods; annotations are never
  evaluated in the sandbox (they are kept as strings), so inert markers are enough.
* ``enum.Enum`` and ``abc.ABC`` have metaclasses, which the class statement refuses:
  here they are plain classes of the sandbox's module (``__init_subclass__`` turns an
  enum's class attributes into its members).
* ``pprint``/``logging``/``warnings`` write to ``sys.stderr``/``sys.stdout`` of the run,
  which nobody reads: here they write to the run's captured output.
* ``io``: only ``StringIO`` and ``BytesIO`` (without ``getbuffer``, which hands out a
  ``memoryview``).

Everything here is host code, so every callable is handed out as a ``SafeCallable`` and
every class as a ``ClassFactory`` (or, for the two base classes above, as a class of the
sandbox's own module whose methods are only dunders).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import io
import operator
import pprint as _pprint
from collections.abc import Callable, Iterable
from typing import Any

from terminai_apts.executor import output
from terminai_apts.executor.guards import guarded_getattr, guarded_getitem
from terminai_apts.executor.wrappers import SANDBOX_MODULE, SafeCallable, SandboxViolation, Sealed, is_sandbox_class

# -- collections -----


def sandbox_namedtuple(
    typename: str, field_names: Any, *, rename: bool = False, defaults: Iterable[Any] | None = None
) -> type:
    """``collections.namedtuple`` whose class belongs to the sandbox (as a class statement's
    would): its only public class attributes are tuple's methods and field descriptors."""
    return collections.namedtuple(typename, field_names, rename=rename, defaults=defaults, module=SANDBOX_MODULE)


# -- functools ---------------------------------------------------------------------------


# `cache_info()`'s result, as a class of the sandbox's module (the real one is functools').
CACHE_INFO = collections.namedtuple(  # type: ignore[name-match]
    "CacheInfo", "hits misses maxsize currsize", module=SANDBOX_MODULE
)


class CachedFunction(metaclass=Sealed):
    """What ``functools.lru_cache`` returns: callable, with ``cache_info``/``cache_clear``.
    (The C wrapper itself is a descriptor; this one is not, so it caches functions, not
    methods.)"""

    __slots__ = ("_cached",)

    def __init__(self, fn: Callable[..., Any], maxsize: int | None, typed: bool) -> None:
        object.__setattr__(self, "_cached", functools.lru_cache(maxsize=maxsize, typed=typed)(fn))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return object.__getattribute__(self, "_cached")(*args, **kwargs)

    def cache_info(self) -> Any:
        info = object.__getattribute__(self, "_cached").cache_info()
        return CACHE_INFO(info.hits, info.misses, info.maxsize, info.currsize)

    def cache_clear(self) -> None:
        object.__getattribute__(self, "_cached").cache_clear()

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("cached functions are read-only")

    def __repr__(self) -> str:
        return "<cached function>"


def _check_callable(fn: object, what: str) -> None:
    if not callable(fn):
        raise TypeError(f"{what} expects a function")


def lru_cache(maxsize: Any = 128, typed: bool = False) -> Any:
    """``@lru_cache``, ``@lru_cache()`` and ``@lru_cache(maxsize=N)``."""
    if callable(maxsize) and not isinstance(maxsize, bool):
        return CachedFunction(maxsize, 128, bool(typed))
    if maxsize is not None and not isinstance(maxsize, int):
        raise TypeError("maxsize must be an integer or None")

    def decorate(fn: Callable[..., Any]) -> CachedFunction:
        _check_callable(fn, "lru_cache")
        return CachedFunction(fn, maxsize, bool(typed))

    return SafeCallable(decorate, "functools.lru_cache(...)")


def cache(fn: Callable[..., Any]) -> CachedFunction:
    _check_callable(fn, "cache")
    return CachedFunction(fn, None, False)


def wraps(wrapped: object, assigned: object = None, updated: object = None) -> SafeCallable:
    """A decorator that copies the plain-text name and docstring only (never
    ``__wrapped__``, ``__dict__`` or ``__module__``)."""
    name = getattr(wrapped, "__name__", None)
    doc = getattr(wrapped, "__doc__", None)

    def decorate(wrapper: Any) -> Any:
        if isinstance(wrapper, type(decorate)) and wrapper.__code__.co_filename == "<sandbox>":
            if type(name) is str:
                wrapper.__name__ = wrapper.__qualname__ = name
            if doc is None or type(doc) is str:
                wrapper.__doc__ = doc
        return wrapper

    return SafeCallable(decorate, "functools.wraps(...)")


FUNCTOOLS: dict[str, object] = {
    "reduce": functools.reduce,
    "partial": functools.partial,
    "cmp_to_key": functools.cmp_to_key,
    "lru_cache": SafeCallable(lru_cache, "functools.lru_cache"),
    "cache": SafeCallable(cache, "functools.cache"),
    "wraps": SafeCallable(wraps, "functools.wraps"),
}

# -- dataclasses -------------------------------------------------------------------------


def _dataclass_of(cls: Any, options: dict[str, Any]) -> Any:
    if not is_sandbox_class(cls) or cls in _SHIM_BASES:
        raise SandboxViolation("@dataclass applies to the program's own classes only")
    return dataclasses.dataclass(cls, **options)


def dataclass(cls: Any = None, /, **options: Any) -> Any:
    """``@dataclass`` and ``@dataclass(frozen=True, order=True, ...)`` on the program's own
    classes (the real decorator with options returns a closure of ``dataclasses``)."""
    if cls is not None:
        return _dataclass_of(cls, options)
    return SafeCallable(lambda c: _dataclass_of(c, options), "dataclasses.dataclass(...)")


DATACLASSES: dict[str, object] = {"dataclass": SafeCallable(dataclass, "dataclasses.dataclass")}


# -- operator ----------------------------------------------------------------------------


def _guards() -> tuple[Callable[..., Any], Callable[..., Any]]:
    return guarded_getattr, guarded_getitem


def _dotted(obj: object, name: str) -> Any:
    getattr_, _ = _guards()
    for part in name.split("."):
        obj = getattr_(obj, part)
    return obj


def attrgetter(*names: str) -> SafeCallable:
    for name in names:
        if type(name) is not str:
            raise TypeError("attribute name must be a string")

    def get(obj: object) -> Any:
        if len(names) == 1:
            return _dotted(obj, names[0])
        return tuple(_dotted(obj, n) for n in names)

    return SafeCallable(get, "operator.attrgetter(...)")


def itemgetter(*keys: object) -> SafeCallable:
    def get(obj: object) -> Any:
        _, getitem = _guards()
        if len(keys) == 1:
            return getitem(obj, keys[0])
        return tuple(getitem(obj, k) for k in keys)

    return SafeCallable(get, "operator.itemgetter(...)")


def methodcaller(name: str, *args: Any, **kwargs: Any) -> SafeCallable:
    if type(name) is not str:
        raise TypeError("method name must be a string")

    def call(obj: object) -> Any:
        getattr_, _ = _guards()
        return getattr_(obj, name)(*args, **kwargs)

    return SafeCallable(call, "operator.methodcaller(...)")


def _getitem(obj: object, key: object) -> Any:
    return _guards()[1](obj, key)


# C functions that only compute with their arguments (no attribute access, no writes).
_OPERATOR_PLAIN = (
    "abs", "add", "and_", "concat", "contains", "countOf", "eq", "floordiv", "ge", "gt",
    "index", "indexOf", "inv", "invert", "is_", "is_not", "le", "lshift", "lt", "matmul",
    "mod", "mul", "ne", "neg", "not_", "or_", "pos", "pow", "rshift", "sub", "truediv",
    "truth", "xor",
)  # fmt: skip
OPERATOR: dict[str, object] = {name: getattr(operator, name) for name in _OPERATOR_PLAIN}
OPERATOR.update(
    attrgetter=SafeCallable(attrgetter, "operator.attrgetter"),
    itemgetter=SafeCallable(itemgetter, "operator.itemgetter"),
    methodcaller=SafeCallable(methodcaller, "operator.methodcaller"),
    getitem=SafeCallable(_getitem, "operator.getitem"),
)

# -- typing ------------------------------------------------------------------------------


class TypingMarker(metaclass=Sealed):
    """A typing name at run time: subscriptable (``Dict[str, int]``), combinable
    (``int | None``) and inert. Annotations are never evaluated in the sandbox."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def __getitem__(self, item: object) -> TypingMarker:
        return self

    def __or__(self, other: object) -> TypingMarker:
        return self

    def __ror__(self, other: object) -> TypingMarker:
        return self

    def __call__(self, *args: object, **kwargs: object) -> Any:
        raise TypeError(f"typing.{object.__getattribute__(self, '_name')} cannot be called in the sandbox")

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("typing names are read-only")

    def __repr__(self) -> str:
        return f"typing.{object.__getattribute__(self, '_name')}"


_TYPING_NAMES = (
    "Any", "Callable", "ClassVar", "Counter", "DefaultDict", "Deque", "Dict", "Final",
    "FrozenSet", "Generator", "Generic", "Iterable", "Iterator", "List", "Literal",
    "Mapping", "MutableMapping", "MutableSequence", "NoReturn", "Optional", "Protocol",
    "Sequence", "Set", "Tuple", "Type", "TypeAlias", "Union",
)  # fmt: skip


def _cast(kind: object, value: object) -> object:
    return value


def _type_var(name: str, *constraints: object, **kwargs: object) -> TypingMarker:
    return TypingMarker(str(name))


def _named_tuple(typename: str, fields: Iterable[tuple[str, object]] | None = None, **kwargs: object) -> type:
    names = [str(name) for name, _ in (fields or ())] + [str(k) for k in kwargs]
    return sandbox_namedtuple(typename, names)


def _typed_dict(typename: str, fields: object = None, /, *, total: bool = True, **kwargs: object) -> type:
    """``TypedDict('Row', {...})``: at run time a ``TypedDict`` is a plain dict."""
    return dict


TYPING: dict[str, object] = {name: TypingMarker(name) for name in _TYPING_NAMES}
TYPING.update(
    TYPE_CHECKING=False,
    cast=SafeCallable(_cast, "typing.cast"),
    TypeVar=SafeCallable(_type_var, "typing.TypeVar"),
    NamedTuple=SafeCallable(_named_tuple, "typing.NamedTuple"),
    TypedDict=SafeCallable(_typed_dict, "typing.TypedDict"),
)

# -- enum and abc --------------------------------------------------------------------------


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


class Enum:
    """``class Color(Enum): RED = 1``: each public class attribute that is not a method
    becomes a member with ``name`` and ``value``; ``Color(1)`` looks a member up by value,
    ``Color["RED"]`` by name. Iterating over the class needs a metaclass and is not
    supported: list the members."""

    __module__ = SANDBOX_MODULE

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        by_value: dict[object, object] = {}
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
            type.__setattr__(cls, key, member)
        type.__setattr__(cls, "_value2member_", by_value)

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


ENUM: dict[str, object] = {"Enum": Enum, "IntEnum": IntEnum, "auto": SafeCallable(auto, "enum.auto")}


class ABC:
    """``class Base(ABC)``: a plain base class (abstract methods are not enforced)."""

    __module__ = SANDBOX_MODULE


def abstractmethod(fn: Any) -> Any:
    return fn


ABC_MODULE: dict[str, object] = {"ABC": ABC, "abstractmethod": SafeCallable(abstractmethod, "abc.abstractmethod")}

# -- output: pprint, logging, warnings ------------------------------------------------------


def _pformat(obj: object, indent: int = 1, width: int = 80, depth: int | None = None, **kwargs: Any) -> str:
    return _pprint.pformat(
        obj,
        indent=indent,
        width=width,
        depth=depth,
        compact=bool(kwargs.get("compact", False)),
        sort_dicts=bool(kwargs.get("sort_dicts", True)),
        underscore_numbers=bool(kwargs.get("underscore_numbers", False)),
    )


def _pprint_fn(obj: object, stream: object = None, **kwargs: Any) -> None:
    if stream is not None:
        raise SandboxViolation("pprint(stream=...) is not allowed; it prints to the output")
    output.active_write(_pformat(obj, **kwargs) + "\n")


PPRINT: dict[str, object] = {
    "pprint": SafeCallable(_pprint_fn, "pprint.pprint"),
    "pp": SafeCallable(_pprint_fn, "pprint.pp"),
    "pformat": SafeCallable(_pformat, "pprint.pformat"),
}

LEVELS = {"CRITICAL": 50, "ERROR": 40, "WARNING": 30, "INFO": 20, "DEBUG": 10, "NOTSET": 0}
_LOG_STATE: dict[str, object] = {"level": 30, "format": "%(levelname)s:%(name)s:%(message)s"}


def _log(name: str, level: int, message: object, args: tuple[object, ...]) -> None:
    threshold = _LOG_STATE["level"]
    assert isinstance(threshold, int)
    if level < threshold:
        return
    text = str(message) % args if args else str(message)
    levelname = next((k for k, v in LEVELS.items() if v == level), f"Level {level}")
    fmt = str(_LOG_STATE["format"])
    fields = {"levelname": levelname, "name": name, "message": text, "levelno": level}
    try:
        line = fmt % fields
    except (KeyError, ValueError, TypeError):
        line = f"{levelname}:{name}:{text}"
    output.active_write(line + "\n")


class Logger(metaclass=Sealed):
    """``logging.getLogger(name)``: records at or above the configured level are written
    to the run's output (the only stream a caller reads)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def _at(self, level: int, message: object, args: tuple[object, ...]) -> None:
        _log(object.__getattribute__(self, "_name"), level, message, args)

    def debug(self, message: object, *args: object, **kwargs: object) -> None:
        self._at(10, message, args)

    def info(self, message: object, *args: object, **kwargs: object) -> None:
        self._at(20, message, args)

    def warning(self, message: object, *args: object, **kwargs: object) -> None:
        self._at(30, message, args)

    def error(self, message: object, *args: object, **kwargs: object) -> None:
        self._at(40, message, args)

    def exception(self, message: object, *args: object, **kwargs: object) -> None:
        self._at(40, message, args)

    def critical(self, message: object, *args: object, **kwargs: object) -> None:
        self._at(50, message, args)

    def log(self, level: int, message: object, *args: object, **kwargs: object) -> None:
        self._at(int(level), message, args)

    def setLevel(self, level: object) -> None:  # noqa: N802 - logging's name
        _basic_config(level=level)

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("loggers are read-only")

    def __repr__(self) -> str:
        return f"<Logger {object.__getattribute__(self, '_name')}>"


def _basic_config(**kwargs: object) -> None:
    level = kwargs.get("level")
    if isinstance(level, str):
        level = LEVELS.get(level.upper(), 30)
    if isinstance(level, int):
        _LOG_STATE["level"] = level
    fmt = kwargs.get("format")
    if isinstance(fmt, str):
        _LOG_STATE["format"] = fmt


_LOGGERS: dict[str, Logger] = {}


def _get_logger(name: object = None) -> Logger:
    key = "root" if name is None else str(name)
    if key not in _LOGGERS:
        _LOGGERS[key] = Logger(key)
    return _LOGGERS[key]


_ROOT = _get_logger()
LOGGING: dict[str, object] = {
    **LEVELS,
    "basicConfig": SafeCallable(_basic_config, "logging.basicConfig"),
    "getLogger": SafeCallable(_get_logger, "logging.getLogger"),
    "debug": _ROOT.debug,
    "info": _ROOT.info,
    "warning": _ROOT.warning,
    "error": _ROOT.error,
    "exception": _ROOT.exception,
    "critical": _ROOT.critical,
    "log": _ROOT.log,
}


_WARN_STATE: dict[str, bool] = {"ignore": False}


def _warn(message: object, category: object = None, stacklevel: int = 1, **kwargs: object) -> None:
    if _WARN_STATE["ignore"]:
        return
    kind = getattr(category, "__name__", "UserWarning") if category is not None else "UserWarning"
    output.active_write(f"{kind}: {message}\n")


def _filter(action: object = "default", *args: object, **kwargs: object) -> None:
    """Only the action counts: ``"ignore"`` silences every warning, anything else shows them."""
    _WARN_STATE["ignore"] = action == "ignore"


class _CatchWarnings(metaclass=Sealed):
    """``with warnings.catch_warnings():`` restores the filter on exit."""

    __slots__ = ("_saved",)

    def __init__(self) -> None:
        object.__setattr__(self, "_saved", _WARN_STATE["ignore"])

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        _WARN_STATE["ignore"] = object.__getattribute__(self, "_saved")

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("read-only")


def _catch_warnings(**kwargs: object) -> _CatchWarnings:
    return _CatchWarnings()


WARNINGS: dict[str, object] = {
    "warn": SafeCallable(_warn, "warnings.warn"),
    "filterwarnings": SafeCallable(_filter, "warnings.filterwarnings"),
    "simplefilter": SafeCallable(_filter, "warnings.simplefilter"),
    "catch_warnings": SafeCallable(_catch_warnings, "warnings.catch_warnings"),
    "UserWarning": UserWarning,
    "DeprecationWarning": DeprecationWarning,
    "RuntimeWarning": RuntimeWarning,
    "Warning": Warning,
}

# -- io ---------------------------------------------------------------------------------


class BytesIO(io.BytesIO):
    """``io.BytesIO`` without ``getbuffer`` (a ``memoryview`` of its buffer)."""

    def getbuffer(self) -> memoryview:
        raise SandboxViolation("BytesIO.getbuffer is not allowed; use getvalue()")


IO: dict[str, object] = {"StringIO": io.StringIO, "BytesIO": BytesIO}

# Modules with no real counterpart in the proxy: every attribute comes from here.
SHIM_MODULES: dict[str, dict[str, object]] = {
    "typing": TYPING,
    "enum": ENUM,
    "abc": ABC_MODULE,
    "pprint": PPRINT,
    "logging": LOGGING,
    "warnings": WARNINGS,
    "io": IO,
}
# Attributes replaced in a real module's proxy.
SHIM_ATTRS: dict[str, dict[str, object]] = {"functools": FUNCTOOLS, "operator": OPERATOR, "dataclasses": DATACLASSES}
# The base classes above: never turned into dataclasses or written to by a decorator.
_SHIM_BASES: tuple[type, ...] = (Enum, IntEnum, ABC)
