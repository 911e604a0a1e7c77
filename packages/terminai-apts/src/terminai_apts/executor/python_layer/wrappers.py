"""Layer 4/5 building blocks: what the sandbox may hold instead of stdlib functions and
classes, and the check every attribute value passes before user code receives it.

The invariant (tested by a reachability walk over the whole sandbox namespace): through
the names the runtime guards allow, user code never obtains a Python function (it carries
``__globals__``), a class outside a short allowlist (a class hands out ``type`` and the
unbound methods of Python code), a descriptor, a module, a frame, a code object or a
traceback. Python-level stdlib callables are held as :class:`SafeCallable`, Python-level
stdlib classes as :class:`ClassFactory`; both are slotted, their classes are sealed, and
neither has a public attribute.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any, TypeVar

SANDBOX_MODULE = "sandbox"
SANDBOX_FILENAME = "<sandbox>"

_DANGEROUS_TYPES = (types.ModuleType, types.FrameType, types.CodeType, types.TracebackType, types.GenericAlias)
# Callables implemented in C: their methods check the type of ``self``, so they cannot be
# turned against other objects, and their only links to modules are dunder attributes.
_C_ROUTINES = (
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.MethodWrapperType,
    types.ClassMethodDescriptorType,
)
# ... except `object`'s and `type`'s own attribute protocol, whose `self` is every object
# (or class): held unbound (`object.__setattr__`) or bound to a wrapper, it reads and
# writes the wrapper's private slots past its sealed `__setattr__`, and answers its state
# (`__reduce_ex__`). Programs never spell these names; this refuses them from C as well.
_GENERIC_PROTOCOL = frozenset(
    {"__getattribute__", "__setattr__", "__delattr__", "__reduce__", "__reduce_ex__", "__getstate__", "__dir__"}
)


class SandboxViolation(Exception):
    """Raised by a runtime guard; reported to the user as a refusal."""


def _not_copied(self: object, protocol: object = None) -> object:
    raise TypeError(f"'{type(self).__name__}' objects cannot be copied in the sandbox")


class Sealed(type):
    """Metaclass of the wrapper classes: their attributes cannot be replaced at runtime,
    and their instances answer the reduce protocol (``copy.copy``/``deepcopy``) with a
    refusal unless the class defines its own: the default answer is the instance's slots
    (``{'_fn': <the host function>}``, the memory API's real method), which ``deepcopy``
    walked and copied before the copy failed."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> Sealed:
        namespace.setdefault("__reduce_ex__", _not_copied)
        return super().__new__(mcs, name, bases, namespace, **kwargs)

    def __setattr__(cls, name: str, value: object) -> None:
        raise SandboxViolation(f"'{cls.__name__}' is read-only")

    def __delattr__(cls, name: str) -> None:
        raise SandboxViolation(f"'{cls.__name__}' is read-only")


class SafeCallable(metaclass=Sealed):
    """A stdlib function as user code sees it: callable, and nothing else.

    Unlike the function itself it has no ``__globals__``/``__code__``/``__defaults__``, and
    unlike ``functools.partial`` or a closure no public attribute leads back to it.
    """

    __slots__ = ("_fn", "_label")

    def __init__(self, fn: Any, label: str) -> None:
        object.__setattr__(self, "_fn", fn)
        object.__setattr__(self, "_label", label)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return object.__getattribute__(self, "_fn")(*args, **kwargs)

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("functions are read-only")

    def __delattr__(self, key: str) -> None:
        raise SandboxViolation("functions are read-only")

    def __dir__(self) -> list[str]:
        return []

    def __repr__(self) -> str:
        return f"<function {object.__getattribute__(self, '_label')}>"


class ClassSyntax(SafeCallable):
    """A typing name a class statement may take as its only base (``class Row(NamedTuple):``):
    called, it is the function form; as a base, :func:`class_from_syntax` makes the class
    from the plain class the statement's body built."""

    __slots__ = ("_build",)

    def __init__(self, fn: Any, label: str, build: Callable[[type], Any]) -> None:
        super().__init__(fn, label)
        object.__setattr__(self, "_build", build)


def class_from_syntax(base: ClassSyntax, body: type) -> Any:
    """What ``class Name(base): ...`` makes of ``body`` (a plain class of the statement's body)."""
    return object.__getattribute__(base, "_build")(body)


class ClassFactory(metaclass=Sealed):
    """A Python-level stdlib class as user code sees it: an instance factory.

    ``Counter("abc")`` builds a real ``Counter`` and ``isinstance(x, Counter)`` works, but the
    class itself (whose unbound methods accept any ``self`` and whose metaclass is ``type``)
    is never handed out. Listed class-level helpers (``Fraction.from_float``) are exposed as
    :class:`SafeCallable`. It cannot be subclassed (the class statement refuses it).
    """

    __slots__ = ("_cls", "_helpers", "_label")

    def __init__(self, cls: type, label: str, helpers: tuple[str, ...] = ()) -> None:
        object.__setattr__(self, "_cls", cls)
        object.__setattr__(self, "_label", label)
        object.__setattr__(
            self, "_helpers", {name: SafeCallable(getattr(cls, name), f"{label}.{name}") for name in helpers}
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return object.__getattribute__(self, "_cls")(*args, **kwargs)

    def __instancecheck__(self, obj: object) -> bool:
        return isinstance(obj, object.__getattribute__(self, "_cls"))

    def __subclasscheck__(self, cls: type) -> bool:
        return issubclass(cls, object.__getattribute__(self, "_cls"))

    def __getattr__(self, item: str) -> Any:
        helpers: dict[str, SafeCallable] = object.__getattribute__(self, "_helpers")
        if item in helpers:
            return helpers[item]
        raise AttributeError(f"'{object.__getattribute__(self, '_label')}' exposes only: {', '.join(helpers)}")

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("classes are read-only")

    def __delattr__(self, key: str) -> None:
        raise SandboxViolation("classes are read-only")

    def __dir__(self) -> list[str]:
        return sorted(object.__getattribute__(self, "_helpers"))

    def __repr__(self) -> str:
        return f"<class {object.__getattribute__(self, '_label')}>"


def is_sandbox_function(fn: types.FunctionType) -> bool:
    """True for functions compiled from the user's own source (never for stdlib code)."""
    return fn.__code__.co_filename == SANDBOX_FILENAME


# Classes the host makes for programs to use or subclass (the shim bases, ``CacheInfo``).
# They carry the sandbox's module name so that programs may subclass them, but every cell
# of a session shares them: no program may modify them.
STAND_INS: set[type] = set()
_C = TypeVar("_C", bound=type)


def stand_in(cls: _C) -> _C:
    STAND_INS.add(cls)
    return cls


def is_sandbox_class(cls: type) -> bool:
    """A class made by user code (class statements and ``namedtuple`` set this module)."""
    return type(cls) is type and cls.__dict__.get("__module__") == SANDBOX_MODULE


def is_descriptor(value: object) -> bool:
    """property, classmethod, staticmethod, slot/getset descriptors and the like."""
    if isinstance(value, (type, types.FunctionType, types.MethodType, *_C_ROUTINES)):
        return False
    if type(value) is functools.partial:
        # Python 3.13 gave partial a __get__ (it binds like a function from 3.14 on); what
        # it leads to (func, args) passes the same checks when read, as on 3.11 and 3.12.
        return False
    return hasattr(type(value), "__get__")


def refusal(value: object, allowed_classes: frozenset[type]) -> str | None:
    """Why ``value`` may not be handed to user code, or None when it may."""
    if isinstance(value, _DANGEROUS_TYPES):
        return type(value).__name__
    if isinstance(value, type):
        if value in allowed_classes or is_sandbox_class(value) or issubclass(value, BaseException):
            return None
        return "class"
    if isinstance(value, types.FunctionType):
        return None if is_sandbox_function(value) else "function"
    if isinstance(value, types.MethodType):
        owner = value.__self__
        if isinstance(owner, (type, types.ModuleType)) and not (
            isinstance(value.__func__, types.FunctionType) and is_sandbox_function(value.__func__)
        ):
            return "method bound to a class"
        return None
    if isinstance(value, _C_ROUTINES):
        if getattr(value, "__name__", None) in _GENERIC_PROTOCOL:
            return "routine of the generic attribute protocol"
        owner = getattr(value, "__self__", None)  # bound: builtin methods, method-wrappers
        if isinstance(owner, type) and refusal(owner, allowed_classes) is not None:
            return "method bound to a class"  # `Cls.__call__` would build its instances
        objclass = getattr(value, "__objclass__", None)  # unbound: `type.__call__` builds any class
        if owner is None and isinstance(objclass, type) and refusal(objclass, allowed_classes) is not None:
            return "routine of a class"
        return None
    if is_descriptor(value):
        return "descriptor"
    return None
