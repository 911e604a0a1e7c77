"""Layer 4 (child side): the runtime guards RestrictedPython's generated code calls:
attribute and item reads, iteration, calls, writes, in-place operators and class
statements.

Two rules, each applied in exactly one place:

* **names** (:func:`plain_name`): an attribute name is a ``str`` of exactly that type, or a
  fresh plain copy of a ``str`` subclass's characters; every decision about it is made on
  that plain copy, never by asking the program's object (a subclass may answer
  ``startswith``, ``__eq__`` and ``__hash__`` as it likes, while ``getattr`` uses its
  characters);
* **values** (:func:`admit`): every value handed to the program by an attribute read, an
  item read, iteration or unpacking, a call (``_call_``/``_apply_``) or ``super()`` passes
  ``wrappers.refusal``: no host function, class outside the allowlist, module, frame,
  code object, traceback, descriptor or method bound to a class crosses.

What the namespace exposes is proven safe by a reachability walk and an attack generator
in the tests (``tests/unit/executor/reachability.py``, ``attack_generator.py``).
"""

from __future__ import annotations

import builtins as _builtins
import collections
import decimal
import operator
import types
from collections.abc import Callable, Iterator
from typing import Any

from terminai_apts.executor.policy import FORBIDDEN_ATTR_PREFIXES, FORBIDDEN_ATTRS, FORMAT_ATTRS
from terminai_apts.executor.safe_classes import SAFE_CLASSES
from terminai_apts.executor.sandbox_builtins import SafeFormatter, SandboxProperty, StrFormat, SuperProxy
from terminai_apts.executor.transform import SUPER_METHODS
from terminai_apts.executor.wrappers import (
    SANDBOX_MODULE,
    ClassFactory,
    SafeCallable,
    SandboxViolation,
    Sealed,
    is_sandbox_function,
    refusal,
)

# decimal.Context: `localcontext()` / `getcontext()` hand one out to be configured
# (`ctx.prec = 5`); its attributes are plain numbers and flags of this run's own context.
_PLAIN_WRITABLE = (list, dict, set, bytearray, collections.deque, decimal.Context)
# Values admitted by their exact type alone (a container's items are checked when they
# are read, iterated or unpacked, so a plain container is admitted as it is).
_PLAIN_VALUES = frozenset(
    {str, int, float, bool, complex, type(None), bytes, bytearray, tuple, list, dict, set, frozenset, range, slice}
)
# Builtin methods bound to an instance of these are admitted without the full check.
_PLAIN_OWNERS = frozenset({str, int, float, bytes, bytearray, tuple, list, dict, set, frozenset})
# Iterating these yields only str, int or bytes: no per-item check needed.
_PLAIN_ITEMS = frozenset({str, bytes, bytearray, range})
_BUILTIN_METHOD = types.BuiltinMethodType


def plain_name(name: object) -> str:
    """``name`` as a plain ``str`` the guard can trust, or a refusal.

    A ``str`` subclass is copied character by character through ``str``'s own slot (not
    the subclass's), so what is checked is exactly what ``getattr`` will look up.
    """
    if type(name) is str:
        return name
    if not isinstance(name, str):
        raise SandboxViolation(f"attribute names must be strings, not '{type(name).__name__}'")
    plain = str.__getitem__(name, slice(None))
    if type(plain) is not str:  # pragma: no cover - CPython copies a subclass to an exact str
        raise SandboxViolation("attribute names must be plain strings")
    return plain


def admit(value: object, what: str) -> Any:
    """The one value check: ``value`` if the program may hold it, else a refusal."""
    kind = type(value)
    if kind in _PLAIN_VALUES:
        return value
    if kind is _BUILTIN_METHOD and type(value.__self__) in _PLAIN_OWNERS:  # type: ignore[attr-defined]
        return value  # 'abc'.upper, [].append: C methods of a plain instance
    if kind is SandboxProperty:  # the sandbox's own property: runs only program functions
        return value
    reason = refusal(value, SAFE_CLASSES)
    if reason is not None:
        raise SandboxViolation(f"{what} is not allowed (it is a {reason})")
    if kind is types.MethodType:
        func = value.__func__  # type: ignore[attr-defined]
        if not (type(func) is types.FunctionType and is_sandbox_function(func)):
            # a Python method of a host object (`Record.to_dict`, `Counter.most_common`):
            # callable as it is, but its function's `__globals__` does not cross
            return SafeCallable(value, getattr(func, "__qualname__", "method"))
    return value


def _check_name(name: str) -> None:
    if name in FORBIDDEN_ATTRS or name.startswith(FORBIDDEN_ATTR_PREFIXES):
        raise SandboxViolation(f"attribute '{name}' is not allowed")


def guarded_getattr(obj: object, name: object, default: object = None, /) -> Any:
    plain = plain_name(name)
    if type(obj) is SuperProxy and plain in SUPER_METHODS:  # super().__init__ and friends
        return admit(obj._lookup(plain), f"attribute '{plain}'")
    _check_name(plain)
    if plain in FORMAT_ATTRS:
        if type(obj) is not str:  # `str.format` itself, or any other object's format
            raise SandboxViolation(f"attribute '{plain}' is allowed only on a string")
        return StrFormat(obj, _FORMATTER, plain == "format_map")
    if isinstance(obj, types.ModuleType):
        raise SandboxViolation(f"attribute '{plain}' is not allowed")
    return admit(getattr(obj, plain), f"attribute '{plain}'")


def guarded_getitem(obj: Any, key: Any) -> Any:
    return admit(obj[key], "item")


def _checked_items(iterator: Iterator[Any]) -> Iterator[Any]:
    for value in iterator:
        if type(value) not in _PLAIN_VALUES:
            admit(value, "item")
        yield value


def guarded_iter(obj: Any) -> Iterator[Any]:
    """``_getiter_``: for loops, comprehensions and unpacking see only admitted items."""
    iterator: Iterator[Any] = iter(obj)
    if type(obj) in _PLAIN_ITEMS:
        return iterator
    return _checked_items(iterator)


def guarded_call(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``_call_``: every call in the program's code; what it returns is admitted."""
    result = fn(*args, **kwargs)
    if type(result) in _PLAIN_VALUES:
        return result
    return admit(result, "call result")


_FORMATTER = SafeFormatter(guarded_getattr, guarded_getitem)


def guarded_write(obj: Any) -> Any:
    """Allow writes only to containers and instances of sandbox-defined classes.

    Container instances (including Counter/defaultdict/OrderedDict) were created by the
    sandbox in this child; classes, modules, proxies, wrappers and records are refused.
    """
    if isinstance(obj, _PLAIN_WRITABLE) and not isinstance(obj, type):
        return obj
    cls = type(obj)
    if isinstance(obj, type):  # a class: only the sandbox's own classes
        if obj.__module__ == SANDBOX_MODULE and type(obj) is type:
            return obj
    elif getattr(cls, "__module__", None) == SANDBOX_MODULE:
        return obj
    raise SandboxViolation(f"cannot modify objects of type '{cls.__name__}'")


_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow,
    "<<=": operator.ilshift, ">>=": operator.irshift, "|=": operator.ior,
    "&=": operator.iand, "^=": operator.ixor, "@=": operator.imatmul,
}  # fmt: skip


def guarded_inplacevar(op: str, x: Any, y: Any) -> Any:
    """`x op= y` on names; in-place only mutates plain containers (or sandbox objects)."""
    fn = _INPLACE.get(op)
    if fn is None:
        raise SandboxViolation(f"operator {op} is not allowed")
    kind = type(x)
    if kind is int or kind is float or kind is str or isinstance(x, _PLAIN_WRITABLE):
        return fn(x, y)
    if hasattr(kind, f"__i{fn.__name__[1:]}__"):  # would mutate x in place
        guarded_write(x)
    return fn(x, y)


def guarded_apply(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``_apply_``: calls with ``*args``/``**kwargs``. The unpacked items are admitted
    (they become the parameters of whatever is called) and so is the result."""
    for arg in args:
        if type(arg) not in _PLAIN_VALUES:
            admit(arg, "argument")
    for arg in kwargs.values():
        if type(arg) not in _PLAIN_VALUES:
            admit(arg, "argument")
    return admit(fn(*args, **kwargs), "call result")


_REAL_BUILD_CLASS = _builtins.__build_class__


class _DefaultMetaclass(metaclass=Sealed):
    """The ``__metaclass__`` global: a marker meaning "type", so ``type`` itself is never
    stored in the sandbox namespace."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<default metaclass>"


DEFAULT_METACLASS = _DefaultMetaclass()


def guarded_build_class(func: Callable[[], None], name: str, *bases: Any, **keywords: Any) -> type:
    """The ``class`` statement. RestrictedPython rewrites every class to
    ``class C(..., metaclass=__metaclass__)``; the metaclass must be ``type`` itself, no
    other keyword is accepted, and every base must be a real class whose metaclass is
    exactly ``type``. So the class body always runs in the plain dict of
    ``type.__prepare__``: nothing can pre-load it with names (``_write_``, ``_getattr_``,
    ``__metaclass__``...) that would shadow the guards for the body's code."""
    metaclass = keywords.pop("metaclass", DEFAULT_METACLASS)
    if metaclass is not DEFAULT_METACLASS or keywords:
        raise SandboxViolation("class keywords (metaclass=...) are not allowed")
    for base in bases:
        if isinstance(base, ClassFactory):
            raise SandboxViolation(f"{base!r} cannot be subclassed in the sandbox; wrap an instance instead")
        if not isinstance(base, type) or type(base) is not type:
            raise SandboxViolation("base classes must be plain classes")
        if refusal(base, SAFE_CLASSES) is not None:
            raise SandboxViolation(f"class '{base.__name__}' cannot be subclassed")
    cls: type = _REAL_BUILD_CLASS(func, name, *bases)
    if type(cls) is not type:  # defence in depth: the metaclass must still be `type`
        raise SandboxViolation("classes must use the default metaclass")
    return cls
