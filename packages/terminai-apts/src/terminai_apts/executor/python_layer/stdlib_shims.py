"""Sandbox versions of the parts of seed 001's allowlist whose real objects reach too far.

Each entry of :data:`SHIM_ATTRS` replaces the real attribute of a module proxy; for the
modules that have no safe real object at all, :data:`SHIM_MODULES` is the whole module
(``enum``/``abc`` in ``shims_classes``, ``pprint``/``logging``/``warnings`` in
``shims_output``). Why each one exists:

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
* ``copy.deepcopy`` takes no ``memo``: the real one fills the caller's memo dict with
  the reduce state of what it copies (``{'_cls': <class>}`` of a class view,
  ``{'_fn': <function>}`` of a callable stand-in) before the copy fails, and the
  program would hold that dict.

Everything here is host code, so every callable is handed out as a ``SafeCallable`` and
every class as a ``ClassFactory`` (or, for the two base classes above, as a class of the
sandbox's own module whose methods are only dunders).
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import functools
import io
import operator
from collections.abc import Callable, Iterable
from typing import Any

from terminai_apts.executor.python_layer.shims_classes import ABC_MODULE, ENUM
from terminai_apts.executor.python_layer.shims_output import LOGGING, PPRINT, WARNINGS
from terminai_apts.executor.python_layer.wrappers import (
    SANDBOX_MODULE,
    STAND_INS,
    ClassSyntax,
    SafeCallable,
    SandboxViolation,
    Sealed,
    is_sandbox_class,
    stand_in,
)

# -- collections ------------------------------------------------------------------------


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
stand_in(CACHE_INFO)


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
    # the host's stand-ins (the shim bases, `CacheInfo`) are shared by every cell: the
    # decorator would add methods to them (a `CacheInfo.__init__` taking no argument
    # broke every later `cache_info()` of the session)
    if not is_sandbox_class(cls) or cls in STAND_INS:
        raise SandboxViolation("@dataclass applies to the program's own classes only")
    return dataclasses.dataclass(cls, **options)


def dataclass(cls: Any = None, /, **options: Any) -> Any:
    """``@dataclass`` and ``@dataclass(frozen=True, order=True, ...)`` on the program's own
    classes (the real decorator with options returns a closure of ``dataclasses``)."""
    if cls is not None:
        return _dataclass_of(cls, options)
    return SafeCallable(lambda c: _dataclass_of(c, options), "dataclasses.dataclass(...)")


DATACLASSES: dict[str, object] = {"dataclass": SafeCallable(dataclass, "dataclasses.dataclass")}


# -- copy --------------------------------------------------------------------------------


def deepcopy(x: object, memo: object = None) -> Any:
    """``copy.deepcopy(x)``: the memo stays inside the copy (see the module docstring)."""
    if memo is not None:
        raise SandboxViolation("copy.deepcopy(x, memo) is not allowed; call copy.deepcopy(x)")
    return copy.deepcopy(x)


COPY: dict[str, object] = {
    "copy": copy.copy,
    "deepcopy": SafeCallable(deepcopy, "copy.deepcopy"),
    "Error": copy.Error,
}

# -- operator ----------------------------------------------------------------------------


def _guards() -> tuple[Callable[..., Any], Callable[..., Any]]:
    # Imported when a getter runs: `guards` imports the module proxies, which import this
    # module, so a module-level import would be circular.
    from terminai_apts.executor.python_layer import guards  # noqa: PLC0415 - see above

    return guards.guarded_getattr, guards.guarded_getitem


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
        # what the method returns is admitted here too: applied as a decorator
        # (`@methodcaller(...)`), the call is not one the program's code wraps
        return _admit(getattr_(obj, name)(*args, **kwargs))

    return SafeCallable(call, "operator.methodcaller(...)")


def _admit(value: object) -> Any:
    from terminai_apts.executor.python_layer import guards  # noqa: PLC0415 - see _guards

    return guards.guarded_call(value)


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


# What a class body holds besides its own fields and methods.
_BODY_NAMES = frozenset({"__module__", "__qualname__", "__annotations__", "__dict__", "__weakref__", "__doc__"})
# What CPython's NamedTuple class syntax refuses to let a body define.
_NAMED_TUPLE_OWN = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__"})


def _named_tuple_class(body: type) -> type:
    """``class Row(NamedTuple): x: int; y: str = ""`` (plus methods): the namedtuple class
    CPython's ``typing`` makes, with the body's methods set on it."""
    namespace = dict(body.__dict__)
    fields = list(namespace.get("__annotations__", {}))
    defaults: list[str] = []
    for name in fields:
        if name in namespace:
            defaults.append(name)
        elif defaults:
            plural = "s" if len(defaults) > 1 else ""
            listed = ", ".join(defaults)
            raise TypeError(f"Non-default namedtuple field {name} cannot follow default field{plural} {listed}")
    cls = sandbox_namedtuple(body.__name__, fields, defaults=[namespace[name] for name in defaults] or None)
    cls.__qualname__ = body.__qualname__
    if namespace.get("__doc__") is not None:
        cls.__doc__ = namespace["__doc__"]
    for name, value in namespace.items():
        if name in fields or name in _BODY_NAMES:
            continue
        if name in _NAMED_TUPLE_OWN:
            raise AttributeError(f"Cannot overwrite NamedTuple attribute {name}")
        setattr(cls, name, value)
    return cls


def _plain_dict(*args: Any, **kwargs: Any) -> dict[Any, Any]:
    return dict(*args, **kwargs)


def _typed_dict_class(body: type) -> ClassSyntax:
    """``class Row(TypedDict): x: int``: as at run time in CPython, calling it makes a plain
    dict; it can be a base of another such class."""
    return ClassSyntax(_plain_dict, body.__name__, _typed_dict_class)


TYPING: dict[str, object] = {name: TypingMarker(name) for name in _TYPING_NAMES}
TYPING.update(
    TYPE_CHECKING=False,
    cast=SafeCallable(_cast, "typing.cast"),
    TypeVar=SafeCallable(_type_var, "typing.TypeVar"),
    NamedTuple=ClassSyntax(_named_tuple, "typing.NamedTuple", _named_tuple_class),
    TypedDict=ClassSyntax(_typed_dict, "typing.TypedDict", _typed_dict_class),
)

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
SHIM_ATTRS: dict[str, dict[str, object]] = {
    "functools": FUNCTOOLS,
    "operator": OPERATOR,
    "dataclasses": DATACLASSES,
    "copy": COPY,
}
