"""Layer 4 (child side): the sandbox's own ``str.format``, ``getattr``, ``super`` and
``property``, which ordinary programs need and whose real versions reach too far.

* ``str.format``/``format_map`` run through :class:`SafeFormatter`: a field's attribute
  and item lookups (``{0.title}``, ``{m[date]}``) go through the runtime guards, so
  ``"{0.__class__}"`` is refused like ``x.__class__`` is.
* ``getattr(obj, name[, default])`` is the attribute guard with a default.
* ``super()`` (no arguments, inside a method of a sandbox class) answers a
  :class:`SuperProxy`; the guards let it, and only it, read listed special methods.
* ``property`` makes a :class:`SandboxProperty`: it calls only functions compiled from
  the program's own source, and read on a class it refuses instead of handing itself out.

All of them are slotted instances of sealed classes: no public attribute leads to a
class, a function with ``__globals__``, a frame or a real descriptor.
"""

from __future__ import annotations

import _string  # type: ignore[import-not-found]  # the C helper behind string.Formatter
import string
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from terminai_apts.executor.python_layer.wrappers import (
    SANDBOX_FILENAME,
    ClassFactory,
    SandboxViolation,
    Sealed,
    is_sandbox_function,
)

Guard = Callable[..., Any]


class SafeFormatter(string.Formatter):
    """``str.format`` whose field lookups pass the sandbox's attribute and item guards."""

    def __init__(self, getattr_guard: Guard, getitem_guard: Guard) -> None:
        self._getattr = getattr_guard
        self._getitem = getitem_guard

    def get_field(self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attr, key in rest:
            obj = self._getattr(obj, key) if is_attr else self._getitem(obj, key)
        return obj, first


class StrFormat(metaclass=Sealed):
    """``"template".format`` / ``.format_map`` as the sandbox sees it."""

    __slots__ = ("_formatter", "_map", "_template")

    def __init__(self, template: str, formatter: SafeFormatter, mapping: bool) -> None:
        object.__setattr__(self, "_template", template)
        object.__setattr__(self, "_formatter", formatter)
        object.__setattr__(self, "_map", mapping)

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        formatter: SafeFormatter = object.__getattribute__(self, "_formatter")
        template: str = object.__getattribute__(self, "_template")
        if object.__getattribute__(self, "_map"):
            if len(args) != 1 or kwargs:
                raise TypeError("format_map() takes exactly one mapping")
            return formatter.vformat(template, (), args[0])
        return formatter.vformat(template, args, kwargs)

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("functions are read-only")

    def __dir__(self) -> list[str]:
        return []

    def __repr__(self) -> str:
        return "<built-in method format of str object>"


class SandboxGetattr(metaclass=Sealed):
    """``getattr(obj, name[, default])``: the attribute guard, with a default for a
    missing attribute (a refused name is refused, never defaulted)."""

    __slots__ = ("_guard",)

    def __init__(self, guard: Guard) -> None:
        object.__setattr__(self, "_guard", guard)

    def __call__(self, obj: object, name: object, *default: object) -> Any:
        if len(default) > 1:
            raise TypeError(f"getattr expected at most 3 arguments, got {2 + len(default)}")
        try:  # the guard decides about the name (its exact type, then its characters)
            return object.__getattribute__(self, "_guard")(obj, name)
        except AttributeError:
            if default:
                return default[0]
            raise

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("functions are read-only")

    def __dir__(self) -> list[str]:
        return []

    def __repr__(self) -> str:
        return "<built-in function getattr>"


class SuperProxy(metaclass=Sealed):
    """What ``super()`` answers in the sandbox: attribute reads on the real ``super``
    object, each checked by the guard (which also decides which special methods)."""

    __slots__ = ("_super",)

    def __init__(self, real: super) -> None:
        object.__setattr__(self, "_super", real)

    def _lookup(self, name: str) -> Any:
        """For the guard only (a `_` name user code cannot reach): any name, unchecked."""
        return getattr(object.__getattribute__(self, "_super"), name)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_super"), name)

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("super() is read-only")

    def __dir__(self) -> list[str]:
        return []

    def __repr__(self) -> str:
        return "<super>"


class SandboxSuper(metaclass=Sealed):
    """Zero-argument ``super()`` for methods of the program's own classes.

    The class comes from the method's ``__class__`` cell (set by the compiler, a name the
    program cannot spell) and the instance from the method's first argument, read from
    the calling frame, which is never handed out.
    """

    __slots__ = ()

    def __call__(self, *args: object) -> SuperProxy:
        if args:
            raise SandboxViolation("super() takes no arguments in the sandbox")
        caller = sys._getframe(1)
        code = caller.f_code
        if code.co_filename != SANDBOX_FILENAME or code.co_argcount < 1:
            raise RuntimeError("super(): no arguments (use it inside a method)")
        cls = caller.f_locals.get("__class__")
        first = caller.f_locals.get(code.co_varnames[0])
        if not isinstance(cls, type) or cls.__dict__.get("__module__") != "sandbox":
            raise RuntimeError("super(): use it inside a method of a class defined in the program")
        if isinstance(first, type) or not isinstance(first, cls):
            raise RuntimeError("super(): the method's first argument is not an instance of its class")
        return SuperProxy(super(cls, first))

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("super is read-only")

    def __dir__(self) -> list[str]:
        return []

    def __repr__(self) -> str:
        return "<class 'super'>"


class SandboxProperty(metaclass=Sealed):
    """``@property`` for the program's own classes.

    Getter, setter and deleter must be functions compiled from the program's source, so a
    property can only run the program's own code with the instance it was read on; read
    on the class, it raises instead of handing out a descriptor.
    """

    __slots__ = ("_fdel", "_fget", "_fset")

    def __init__(self, fget: object = None, fset: object = None, fdel: object = None) -> None:
        for fn in (fget, fset, fdel):
            if fn is not None and not (isinstance(fn, types.FunctionType) and is_sandbox_function(fn)):
                raise SandboxViolation("property() accepts only functions defined in the program")
        object.__setattr__(self, "_fget", fget)
        object.__setattr__(self, "_fset", fset)
        object.__setattr__(self, "_fdel", fdel)

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            raise AttributeError("a property is read on an instance, not on its class")
        fget = object.__getattribute__(self, "_fget")
        if fget is None:
            raise AttributeError("property has no getter")
        return fget(obj)

    def __set__(self, obj: object, value: object) -> None:
        fset = object.__getattribute__(self, "_fset")
        if fset is None:
            raise AttributeError("can't set attribute (property has no setter)")
        fset(obj, value)

    def __delete__(self, obj: object) -> None:
        fdel = object.__getattribute__(self, "_fdel")
        if fdel is None:
            raise AttributeError("can't delete attribute (property has no deleter)")
        fdel(obj)

    def getter(self, fget: object) -> SandboxProperty:
        return SandboxProperty(fget, object.__getattribute__(self, "_fset"), object.__getattribute__(self, "_fdel"))

    def setter(self, fset: object) -> SandboxProperty:
        return SandboxProperty(object.__getattribute__(self, "_fget"), fset, object.__getattribute__(self, "_fdel"))

    def deleter(self, fdel: object) -> SandboxProperty:
        return SandboxProperty(object.__getattribute__(self, "_fget"), object.__getattribute__(self, "_fset"), fdel)

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("properties are read-only")

    def __delattr__(self, key: str) -> None:
        raise SandboxViolation("properties are read-only")

    def __dir__(self) -> list[str]:
        return ["deleter", "getter", "setter"]

    def __repr__(self) -> str:
        return "<property>"


class PropertyFactory(metaclass=Sealed):
    """The ``property`` name: builds :class:`SandboxProperty` objects (the real
    ``property`` class is never reachable)."""

    __slots__ = ()

    def __call__(self, fget: object = None, fset: object = None, fdel: object = None, doc: object = None) -> Any:
        return SandboxProperty(fget, fset, fdel)

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("property is read-only")

    def __dir__(self) -> list[str]:
        return []

    def __repr__(self) -> str:
        return "<class 'property'>"


class TypeView(metaclass=Sealed):
    """What ``type(x)`` and ``x.__class__`` answer for a class the program may not hold
    (a wrapper of ours, a host class behind an instance factory, a function's type): its
    name, ``isinstance``, equality and hashing, and nothing else. One view per class, so
    ``type(a) is type(b)`` holds as it does for real classes."""

    __slots__ = ("_cls",)

    def __init__(self, cls: type) -> None:
        object.__setattr__(self, "_cls", cls)

    def __instancecheck__(self, obj: object) -> bool:
        return isinstance(obj, object.__getattribute__(self, "_cls"))

    def __subclasscheck__(self, cls: type) -> bool:
        return isinstance(cls, type) and issubclass(cls, object.__getattribute__(self, "_cls"))

    def __eq__(self, other: object) -> bool:
        mine = object.__getattribute__(self, "_cls")
        if type(other) is TypeView:
            return bool(mine is object.__getattribute__(other, "_cls"))
        if type(other) is TypeStandIn:  # type(C) == type
            return bool(mine is type)
        if type(other) is ClassFactory:  # type(Counter()) == collections.Counter
            return bool(mine is object.__getattribute__(other, "_cls"))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(object.__getattribute__(self, "_cls"))

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("classes are read-only")

    def __delattr__(self, key: str) -> None:
        raise SandboxViolation("classes are read-only")

    def __dir__(self) -> list[str]:
        return []

    def __repr__(self) -> str:
        return f"<class '{object.__getattribute__(self, '_cls').__name__}'>"


class _SandboxMethodKind(metaclass=Sealed):
    """``staticmethod``/``classmethod`` for the program's own classes: they wrap only
    functions compiled from the program's source, and reading them through a class or an
    instance answers the function (or the function bound to the program's class), never
    the descriptor itself."""

    __slots__ = ("_fn",)
    _kind = "staticmethod"

    def __init__(self, fn: object) -> None:
        if not (isinstance(fn, types.FunctionType) and is_sandbox_function(fn)):
            raise SandboxViolation(f"{self._kind}() accepts only functions defined in the program")
        object.__setattr__(self, "_fn", fn)

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation(f"{self._kind} objects are read-only")

    def __delattr__(self, key: str) -> None:
        raise SandboxViolation(f"{self._kind} objects are read-only")

    def __dir__(self) -> list[str]:
        return []

    def __repr__(self) -> str:
        return f"<{self._kind}>"


class SandboxStaticMethod(_SandboxMethodKind):
    __slots__ = ()
    _kind = "staticmethod"

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        return object.__getattribute__(self, "_fn")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return object.__getattribute__(self, "_fn")(*args, **kwargs)


class SandboxClassMethod(_SandboxMethodKind):
    __slots__ = ()
    _kind = "classmethod"

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        cls = owner if owner is not None else type(obj)
        if not (type(cls) is type and cls.__dict__.get("__module__") == "sandbox"):
            raise SandboxViolation("classmethod works only in classes defined in the program")
        return types.MethodType(object.__getattribute__(self, "_fn"), cls)


class StandIn(metaclass=Sealed):
    """A builtin name whose real object reaches too far (``staticmethod``, ``classmethod``,
    ``hasattr``, ``setattr``, ``delattr``, ``type``): a sealed callable with no attributes."""

    __slots__ = ("_fn", "_label")

    def __init__(self, fn: Callable[..., Any], label: str) -> None:
        object.__setattr__(self, "_fn", fn)
        object.__setattr__(self, "_label", label)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return object.__getattribute__(self, "_fn")(*args, **kwargs)

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation(f"{object.__getattribute__(self, '_label')} is read-only")

    def __delattr__(self, key: str) -> None:
        raise SandboxViolation(f"{object.__getattribute__(self, '_label')} is read-only")

    def __dir__(self) -> list[str]:
        return []

    def __repr__(self) -> str:
        return f"<built-in function {object.__getattribute__(self, '_label')}>"


class TypeStandIn(StandIn):
    """The ``type`` name: :func:`guards.sandbox_type` when called, and usable where code
    tests for a class (``isinstance(x, type)``, ``type(C) == type``), which answer bools
    only; the real ``type`` is never reachable."""

    __slots__ = ()

    def __instancecheck__(self, obj: object) -> bool:
        return isinstance(obj, type) or type(obj) is TypeView or type(obj) is TypeStandIn

    def __subclasscheck__(self, cls: object) -> bool:
        return isinstance(cls, type) and issubclass(cls, type)

    def __eq__(self, other: object) -> bool:
        if type(other) is TypeView:
            return bool(object.__getattribute__(other, "_cls") is type)
        return other is self

    def __hash__(self) -> int:
        return hash(type)  # equal to the view of `type`, so it hashes alike


STATICMETHOD = StandIn(SandboxStaticMethod, "staticmethod")
CLASSMETHOD = StandIn(SandboxClassMethod, "classmethod")
