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
from terminai_apts.executor.python_layer import wrappers
from terminai_apts.executor.python_layer.module_proxies import ModuleProxy
from terminai_apts.executor.python_layer.safe_classes import SAFE_CLASSES
from terminai_apts.executor.python_layer.sandbox_builtins import (
    SafeFormatter,
    SandboxClassMethod,
    SandboxProperty,
    SandboxStaticMethod,
    StandIn,
    StrFormat,
    SuperProxy,
    TypeStandIn,
    TypeView,
)
from terminai_apts.executor.python_layer.shims_classes import enum_members
from terminai_apts.executor.python_layer.transform import SUPER_METHODS
from terminai_apts.executor.python_layer.wrappers import (
    SANDBOX_MODULE,
    STAND_INS,
    ClassFactory,
    ClassSyntax,
    SafeCallable,
    SandboxViolation,
    Sealed,
    class_from_syntax,
    is_sandbox_function,
    refusal,
)
from terminai_apts.memory.seed import Memory as SeedMemory

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
# Containers whose items are checked by their exact types in one pass before iteration:
# only immutable ones. A list, dict or set can gain items while the loop runs, and not
# only items the program holds: `xs.extend(c)`, `xs[i:j] = c`, `xs += c` and `d.update(c)`
# copy another container's items in C, unchecked (a container's items are checked when
# read), so a one-pass scan of a mutable container let later items through.
_SCANNED = frozenset({tuple, frozenset})
# Iterating these yields only str, int or bytes: no per-item check needed.
_PLAIN_ITEMS = frozenset({str, bytes, bytearray, range})
_BUILTIN_METHOD = types.BuiltinMethodType
# The sandbox's own property/staticmethod/classmethod (they run only program functions and
# never answer themselves when read) and class views (a name and isinstance, nothing more).
_OWN_OBJECTS = frozenset({SandboxProperty, SandboxStaticMethod, SandboxClassMethod, TypeView})
_VIEWS: dict[type, TypeView] = {}
# Special methods `hasattr` answers for (a bool: whether the object has one).
_DUCK_TYPING = SUPER_METHODS | {"__call__"}
# Names that never take guarded_getattr's hot path.
_NOT_FAST = FORBIDDEN_ATTRS | FORMAT_ATTRS


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
    if kind in _OWN_OBJECTS:
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


def sandbox_type(obj: object, *rest: object) -> Any:
    """``type(x)`` and ``x.__class__``: the class itself when the program may hold it (the
    builtin types, the listed C classes, exception classes, the program's own classes),
    otherwise a :class:`TypeView` with its name. Creating classes is the class statement's."""
    if rest:
        raise SandboxViolation("type() with three arguments is not allowed; use a class statement")
    cls = type(obj)
    if cls is TypeStandIn:  # type(type): the view of `type`, as in CPython
        cls = type
    if refusal(cls, SAFE_CLASSES) is None:
        return cls
    view = _VIEWS.get(cls)
    if view is None:
        view = _VIEWS[cls] = TypeView(cls)
    return view


def safe_name(obj: object) -> str:
    """``x.__name__`` as a plain str: for classes (real or viewed), instance factories,
    functions of the program, C functions and module proxies; an instance has none."""
    if type(obj) is TypeView:
        name: object = object.__getattribute__(obj, "_cls").__name__
    elif type(obj) is StandIn or type(obj) is TypeStandIn:  # type.__name__, hasattr.__name__
        name = object.__getattribute__(obj, "_label")
    elif type(obj) is ClassFactory or type(obj) is SafeCallable or type(obj) is ModuleProxy:
        label = object.__getattribute__(obj, "_label" if type(obj) is not ModuleProxy else "_name")
        name = label.rsplit(".", 1)[-1] if type(obj) is not ModuleProxy else label
    elif isinstance(obj, type) or type(obj) in (types.BuiltinFunctionType, types.FunctionType):
        name = obj.__name__  # type: ignore[attr-defined]
    elif type(obj) is types.MethodType:
        name = obj.__func__.__name__
    else:
        raise AttributeError(f"'{type(obj).__name__}' object has no attribute '__name__'")
    if not isinstance(name, str):
        raise AttributeError("__name__ is not a string")
    return str.__getitem__(name, slice(None))


# Special attributes a program may read; each answers a sandbox-safe value of its own.
# The compile policy routes exactly these reads here (``policy.SAFE_SPECIAL_READS``; a test
# keeps the two equal).
_SAFE_SPECIALS: dict[str, Callable[[object], Any]] = {"__class__": sandbox_type, "__name__": safe_name}


def guarded_getattr(obj: object, name: object, default: object = None, /) -> Any:
    plain: str = name if type(name) is str else plain_name(name)
    if type(obj) in _PLAIN_OWNERS and not plain.startswith(FORBIDDEN_ATTR_PREFIXES) and plain not in _NOT_FAST:
        # the hot path (`out.append`, `line.split`): a plain name on a builtin data type,
        # whose public attributes are C methods of the instance and plain numbers, which
        # `admit` accepts (a test checks every one), so the check is skipped, not weakened
        return getattr(obj, plain)
    special = _SAFE_SPECIALS.get(plain)
    if special is not None:
        return special(obj)
    if type(obj) is SuperProxy and plain in SUPER_METHODS:  # super().__init__ and friends
        return admit(obj._lookup(plain), f"attribute '{plain}'")
    if plain in FORBIDDEN_ATTRS or plain.startswith(FORBIDDEN_ATTR_PREFIXES):
        raise SandboxViolation(f"attribute '{plain}' is not allowed")
    if plain in FORMAT_ATTRS:
        if type(obj) is not str:  # `str.format` itself, or any other object's format
            raise SandboxViolation(f"attribute '{plain}' is allowed only on a string")
        return StrFormat(obj, _FORMATTER, plain == "format_map")
    if isinstance(obj, types.ModuleType):
        raise SandboxViolation(f"attribute '{plain}' is not allowed")
    value = getattr(obj, plain)
    if type(value) in _PLAIN_VALUES:
        return value
    return admit(value, f"attribute '{plain}'")


def guarded_getitem(obj: Any, key: Any) -> Any:
    return admit(obj[key], "item")


def _checked_items(iterator: Iterator[Any]) -> Iterator[Any]:
    for value in iterator:
        if type(value) not in _PLAIN_VALUES:
            admit(value, "item")
        yield value


def guarded_iter(obj: Any) -> Iterator[Any]:
    """``_getiter_``: for loops, comprehensions and unpacking see only admitted items."""
    try:
        iterator: Iterator[Any] = iter(obj)
    except TypeError:
        members = enum_members(obj)  # `for color in Color`: an enum class (iterable by a metaclass in CPython)
        if members is None:
            raise
        return _checked_items(iter(members))
    kind = type(obj)
    if kind in _PLAIN_ITEMS:
        return iterator
    if kind in _SCANNED and _PLAIN_VALUES.issuperset(map(type, obj)):
        return iterator  # every item is of a plain type (one pass in C), and stays so
    return _checked_items(iterator)


def guarded_call(result: object, /) -> Any:
    """``_call_``: wraps every call in the program's code (``_call_(f(x))``); what the call
    returned is admitted."""
    if type(result) in _PLAIN_VALUES:
        return result
    return admit(result, "call result")


_FORMATTER = SafeFormatter(guarded_getattr, guarded_getitem)

# -- values C code hands to the program's own code -------------------------------------
# A callback (`sorted(key=f)`, `map(f, xs)`, `re.sub(p, f, s)`, json hooks, `__eq__` called
# by `in`, `__exit__` called by `with`) receives what C code passes: no attribute read,
# item read, iteration or call of the program's code is involved, so the compile policy
# checks every parameter at the function's entry (``_enter_``), the value a `yield`
# receives and a `yield from` returns (``_bind_``), and a `with ... as name` target, a
# `match` capture and a decorated `def`/`class` (``_capture_`` then ``_held_``).

# Kinds whose instances `admit` returns unchanged: the plain ones, and others learned per
# type: `refusal` looks at the value itself only for classes, functions, methods and C
# routines (refused by name or owner); for every other kind its answer depends on the type
# alone (a class's special methods cannot change after the class statement), so a
# program's own instances pass in one set lookup. The compiled code tests `type(a) in ADMITTED_KINDS` inline and
# calls the guard only when that fails.
ADMITTED_KINDS: set[type] = {kind for kind in _PLAIN_VALUES if isinstance(kind, type)}
_BY_VALUE = (type, types.FunctionType, types.MethodType, *wrappers._C_ROUTINES)
_MAX_KINDS = 4096
_PASSED = "a value passed to the program's code"


def _admit_passed(value: object) -> Any:
    kind = type(value)
    if kind in ADMITTED_KINDS:
        return value
    admitted = admit(value, _PASSED)
    if admitted is value and not issubclass(kind, _BY_VALUE) and len(ADMITTED_KINDS) < _MAX_KINDS:
        ADMITTED_KINDS.add(kind)
    return admitted


def guarded_bind(value: object, /) -> Any:
    """``_bind_``: one value C code handed over before anything bound it (what a `yield`
    received, what a `yield from` returned)."""
    if type(value) in ADMITTED_KINDS:
        return value
    return _admit_passed(value)


class Refused(metaclass=Sealed):
    """What a name holds once the check refused the value the interpreter had already
    bound to it: inert (no public attribute), and :func:`guarded_held` raises on it."""

    __slots__ = ("_reason",)

    def __init__(self, reason: str) -> None:
        object.__setattr__(self, "_reason", reason)

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("read-only")

    def __repr__(self) -> str:
        return "<refused value>"


def guarded_capture(value: object, call: bool = False, /) -> Any:
    """``_capture_``: a value the interpreter bound to a name before any check could run
    (a ``match`` capture, a ``with`` target, a decorated ``def``/``class``). The name is
    rebound to the answer *before* a refusal is raised (by :func:`guarded_held`): raised
    here, the refusal would leave the name holding the value for a program that catches
    it (``try: ... except Exception: pass``, then use the name). ``call``: the value is
    what a decorator returned, refused as a call result."""
    if type(value) in ADMITTED_KINDS:
        return value
    try:
        return admit(value, "call result") if call else _admit_passed(value)
    except SandboxViolation as refusal_:
        return Refused(str(refusal_))


def guarded_held(value: object, /) -> bool:
    """``_held_``: True, or the refusal :func:`guarded_capture` put in the name's place."""
    if type(value) is Refused:
        raise SandboxViolation(object.__getattribute__(value, "_reason"))
    return True


def guarded_enter(*params: object) -> tuple[object, ...]:
    """``_enter_``: the named parameters of a program function at its entry, admitted
    (``a, b = _enter_(a, b)``); the same values when every one is of an admitted kind."""
    for value in params:
        if type(value) not in ADMITTED_KINDS:
            return tuple([_admit_passed(v) for v in params])
    return params


def guarded_entered(*params: object) -> bool:
    """``_entered_``: a lambda's parameters (a lambda cannot rebind them): True when each
    is admitted as it is, else a refusal (a value the check would replace included: a
    method of a host object, which a ``def`` receives wrapped)."""
    for value in params:
        if type(value) not in ADMITTED_KINDS and _admit_passed(value) is not value:
            raise SandboxViolation(
                f"{_PASSED} is not allowed in a lambda (it is a method of a host object); take it in a def"
            )
    return True


def guarded_enter_star(args: tuple[object, ...], /) -> tuple[object, ...]:
    """``*args`` at a function's entry: every item admitted now (a callback's items come
    from C, never through the program's own reads)."""
    for value in args:
        if type(value) not in ADMITTED_KINDS:
            return tuple([_admit_passed(v) for v in args])
    return args


def guarded_enter_kw(kwargs: dict[str, object], /) -> dict[str, object]:
    """``**kwargs`` at a function's entry: every value admitted now."""
    for value in kwargs.values():
        if type(value) not in ADMITTED_KINDS:
            return {key: _admit_passed(item) for key, item in kwargs.items()}
    return kwargs


def guarded_hasattr(obj: object, name: object, /) -> bool:
    """``hasattr``: the attribute guard's answer (a refused name stays refused), except for
    the special methods programs test for duck typing (``hasattr(x, "__iter__")``): for
    those the answer is a bool and nothing else, so it is given."""
    plain = name if type(name) is str else plain_name(name)
    if plain in _DUCK_TYPING:
        return hasattr(obj, plain)
    try:
        guarded_getattr(obj, name)
    except AttributeError:
        return False
    return True


def guarded_setattr(obj: object, name: object, value: object, /) -> None:
    """``setattr``: the same rules as ``obj.name = value`` (a public name, an object the
    program may modify: its own instances and classes)."""
    plain = plain_name(name)
    _check_name(plain)
    setattr(guarded_write(obj), plain, value)


def guarded_delattr(obj: object, name: object, /) -> None:
    plain = plain_name(name)
    _check_name(plain)
    delattr(guarded_write(obj), plain)


def guarded_write(obj: Any) -> Any:
    """Allow writes only to containers and instances of sandbox-defined classes.

    Container instances (including Counter/defaultdict/OrderedDict) were created by the
    sandbox in this child, as was each seed ``Memory`` (a copy per call); classes, modules,
    proxies, wrappers and records are refused.
    """
    if isinstance(obj, _PLAIN_WRITABLE) and not isinstance(obj, type):
        return obj
    cls = type(obj)
    if isinstance(obj, type):  # a class: only the sandbox's own classes
        if obj.__module__ == SANDBOX_MODULE and type(obj) is type and obj not in STAND_INS:
            return obj
    elif getattr(cls, "__module__", None) == SANDBOX_MODULE or cls is SeedMemory:
        return obj  # a seed Memory is the program's own copy; its class refuses re-setting a field
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


def guarded_build_class(func: Callable[[], None], name: str, *bases: Any, **keywords: Any) -> Any:
    """The ``class`` statement. RestrictedPython rewrites every class to
    ``class C(..., metaclass=__metaclass__)``; the metaclass must be ``type`` itself, no
    other keyword is accepted, and every base must be a real class whose metaclass is
    exactly ``type``. So the class body always runs in the plain dict of
    ``type.__prepare__``: nothing can pre-load it with names (``_write_``, ``_getattr_``,
    ``__metaclass__``...) that would shadow the guards for the body's code."""
    metaclass = keywords.pop("metaclass", DEFAULT_METACLASS)
    if metaclass is not DEFAULT_METACLASS or keywords:
        raise SandboxViolation("class keywords (metaclass=...) are not allowed")
    if len(bases) == 1 and type(bases[0]) is ClassSyntax:  # class Row(NamedTuple): ...
        body: type = _REAL_BUILD_CLASS(func, name)
        if type(body) is not type:
            raise SandboxViolation("classes must use the default metaclass")
        return class_from_syntax(bases[0], body)
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
