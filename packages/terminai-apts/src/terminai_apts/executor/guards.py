"""Layer 4 (child side): the runtime guards RestrictedPython's generated code calls:
attribute and item reads, writes, in-place operators, calls and class statements.

What the guards hand out is checked by ``wrappers.refusal``; what the namespace exposes
is proven safe by a reachability walk in the tests (``tests/unit/executor/reachability.py``).
"""

from __future__ import annotations

import builtins as _builtins
import collections
import decimal
import operator
import types
from collections.abc import Callable
from typing import Any

from terminai_apts.executor.policy import FORBIDDEN_ATTR_PREFIXES, FORBIDDEN_ATTRS, FORMAT_ATTRS
from terminai_apts.executor.safe_classes import SAFE_CLASSES
from terminai_apts.executor.sandbox_builtins import SafeFormatter, StrFormat, SuperProxy
from terminai_apts.executor.transform import SUPER_METHODS
from terminai_apts.executor.wrappers import SANDBOX_MODULE, ClassFactory, SandboxViolation, Sealed, refusal

# decimal.Context: `localcontext()` / `getcontext()` hand one out to be configured
# (`ctx.prec = 5`); its attributes are plain numbers and flags of this run's own context.
_PLAIN_WRITABLE = (list, dict, set, bytearray, collections.deque, decimal.Context)
# Builtin types whose public attributes are all plain methods: no post-check needed.
_FAST_TYPES = frozenset({dict, list, str, set, tuple, int, float, bytes, frozenset})
# Values that need no check on the way out of a guard.
_PLAIN_VALUES = frozenset({str, int, float, bool, type(None), bytes, tuple, list, dict, set, frozenset})


def _refuse_value(value: object, what: str) -> None:
    reason = refusal(value, SAFE_CLASSES)
    if reason is not None:
        raise SandboxViolation(f"{what} is not allowed (it is a {reason})")


def guarded_getattr(obj: object, name: str, default: object = None, /) -> Any:
    if type(obj) is SuperProxy and name in SUPER_METHODS:  # super().__init__ and friends
        value = obj._lookup(name)
        _refuse_value(value, f"attribute '{name}'")
        return value
    if not isinstance(name, str) or name in FORBIDDEN_ATTRS or name.startswith(FORBIDDEN_ATTR_PREFIXES):
        raise SandboxViolation(f"attribute '{name}' is not allowed")
    if name in FORMAT_ATTRS:
        if type(obj) is not str:  # `str.format` itself, or any other object's format
            raise SandboxViolation(f"attribute '{name}' is allowed only on a string")
        return StrFormat(obj, _FORMATTER, name == "format_map")
    if type(obj) in _FAST_TYPES:
        return getattr(obj, name)
    if isinstance(obj, types.ModuleType):
        raise SandboxViolation(f"attribute '{name}' is not allowed")
    value = getattr(obj, name)
    if type(value) not in _PLAIN_VALUES:
        _refuse_value(value, f"attribute '{name}'")
    return value


def guarded_getitem(obj: Any, key: Any) -> Any:
    value = obj[key]
    if type(value) not in _PLAIN_VALUES:
        _refuse_value(value, "item")
    return value


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


def guarded_apply(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


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
