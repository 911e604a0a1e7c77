"""Layers 4 and 5 (child side): restricted globals, runtime guards, import proxies,
bounded print capture and the wrapper around injected APIs.

What the guards hand out is checked by ``wrappers.refusal``; what the namespace exposes
is proven safe by a reachability walk in the tests (``tests/unit/executor/reachability.py``).
"""

from __future__ import annotations

import builtins as _builtins
import collections
import datetime
import decimal
import enum
import importlib
import json
import operator
import random as _random
import sys
import types
from collections.abc import Callable, Iterable
from typing import Any

from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence, safe_builtins

from terminai_apts.errors import AptsError
from terminai_apts.executor.policy import (
    CLASS_HELPERS,
    FORBIDDEN_ATTR_PREFIXES,
    FORBIDDEN_ATTRS,
    FORBIDDEN_NAMES,
    FORMAT_ATTRS,
    NOT_FOUND_METHODS,
    SAFE_MODULE_CLASSES,
    ApiSpec,
    Mode,
    allowed_imports_text,
    modules_for,
)
from terminai_apts.executor.sandbox_builtins import (
    PropertyFactory,
    SafeFormatter,
    SandboxGetattr,
    SandboxSuper,
    StrFormat,
    SuperProxy,
)
from terminai_apts.executor.transform import SUPER_METHODS
from terminai_apts.executor.values import ApiError, NotFound, Record, ResultList, check_plain, result_size, to_plain
from terminai_apts.executor.wrappers import (
    SANDBOX_MODULE,
    ClassFactory,
    SafeCallable,
    SandboxViolation,
    Sealed,
    refusal,
)

__all__ = ["SANDBOX_MODULE", "ApiError", "NotFound", "Record", "ResultList", "SandboxViolation"]

# decimal.Context: `localcontext()` / `getcontext()` hand one out to be configured
# (`ctx.prec = 5`); its attributes are plain numbers and flags of this run's own context.
_PLAIN_WRITABLE = (list, dict, set, bytearray, collections.deque, decimal.Context)
# Builtin types whose public attributes are all plain methods: no post-check needed.
_FAST_TYPES = frozenset({dict, list, str, set, tuple, int, float, bytes, frozenset})
# Values that need no check on the way out of a guard.
_PLAIN_VALUES = frozenset({str, int, float, bool, type(None), bytes, tuple, list, dict, set, frozenset})


def _safe_classes() -> frozenset[type]:
    """Real classes user code may hold: the builtin types of the restricted builtins and
    the C-implemented classes listed in ``policy.SAFE_MODULE_CLASSES`` (their methods check
    the type of ``self``; they are walked like everything else)."""
    found: set[type] = {v for v in (*safe_builtins.values(), *_EXTRA_BUILTINS.values()) if isinstance(v, type)}
    found.add(bytes)  # not a builtin name here, but `b"..."` literals are everywhere
    for module_name, names in SAFE_MODULE_CLASSES.items():
        module = importlib.import_module(module_name)
        found.update(getattr(module, n) for n in names)
    return frozenset(found)


class OutputBuffer:
    """Bounded capture shared by every `print` in one cell (layer 4)."""

    __slots__ = ("limit", "parts", "size", "truncated")

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit
        self.truncated = False

    def write(self, text: str) -> None:
        room = self.limit - self.size
        if room <= 0:
            self.truncated = self.truncated or bool(text)
            return
        encoded = text.encode("utf-8", "replace")
        if len(encoded) > room:
            text = encoded[:room].decode("utf-8", "ignore")
            self.truncated = True
            encoded = text.encode("utf-8")
        self.parts.append(text)
        self.size += len(encoded)

    def text(self) -> str:
        return "".join(self.parts)


class _Printer(metaclass=Sealed):
    """What RestrictedPython's ``_print_(_getattr_)`` returns for one scope."""

    __slots__ = ("_buffer",)

    def __init__(self, buffer: OutputBuffer) -> None:
        object.__setattr__(self, "_buffer", buffer)

    def _call_print(
        self, *objects: object, sep: object = " ", end: object = "\n", file: object = None, flush: bool = False
    ) -> None:
        if file is not None:
            raise SandboxViolation("print(file=...) is not allowed")
        if not isinstance(sep, str) or not isinstance(end, str):
            raise TypeError("sep and end must be strings")
        object.__getattribute__(self, "_buffer").write(sep.join(str(o) for o in objects) + end)

    def __call__(self) -> str:  # the `printed` name
        text: str = object.__getattribute__(self, "_buffer").text()
        return text

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("print is read-only")


class _PrintFactory(metaclass=Sealed):
    """The ``_print_`` global: a slotted callable (no class, no closure is handed out)."""

    __slots__ = ("_buffer",)

    def __init__(self, buffer: OutputBuffer) -> None:
        object.__setattr__(self, "_buffer", buffer)

    def __call__(self, _getattr_: object = None) -> _Printer:
        return _Printer(object.__getattribute__(self, "_buffer"))

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("print is read-only")


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


class ModuleProxy(metaclass=Sealed):
    """A read-only stand-in for a stdlib module exposing only listed attributes.

    Every value goes through :func:`expose` here, whoever builds the proxy: `from m import
    name` reads a proxy without the attribute guard, so what it holds must be safe as is.
    """

    __slots__ = ("_attrs", "_name")

    def __init__(self, name: str, attrs: dict[str, Any]) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_attrs", types.MappingProxyType({k: expose(name, k, v) for k, v in attrs.items()}))

    def __getattr__(self, item: str) -> Any:
        attrs: types.MappingProxyType[str, Any] = object.__getattribute__(self, "_attrs")
        if item in attrs:
            return attrs[item]
        name = object.__getattribute__(self, "_name")
        raise AttributeError(f"module '{name}' exposes only: {', '.join(sorted(attrs))}")

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("modules are read-only")

    def __delattr__(self, key: str) -> None:
        raise SandboxViolation("modules are read-only")

    def __dir__(self) -> list[str]:
        return sorted(object.__getattribute__(self, "_attrs"))

    def __repr__(self) -> str:
        return f"<module {object.__getattribute__(self, '_name')}>"


def _sandbox_namedtuple(
    typename: str, field_names: Any, *, rename: bool = False, defaults: Iterable[Any] | None = None
) -> type:
    """``collections.namedtuple`` whose class belongs to the sandbox (as a class statement's
    would): its only public class attributes are tuple's methods and field descriptors."""
    return collections.namedtuple(typename, field_names, rename=rename, defaults=defaults, module=SANDBOX_MODULE)


def _plain_default(value: object) -> Any:
    """What ``json.dumps`` writes for the injected API's values: their plain data."""
    if isinstance(value, ResultList):
        return value.to_list()
    if isinstance(value, Record):
        return value.to_dict()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _sandbox_json_dumps(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` that also writes memories and result sets (as ``to_dict()`` would)."""
    kwargs.setdefault("default", _plain_default)
    return json.dumps(obj, **kwargs)


_SPECIAL: dict[tuple[str, str], Callable[..., Any]] = {
    ("collections", "namedtuple"): _sandbox_namedtuple,
    ("json", "dumps"): _sandbox_json_dumps,
}


def expose(module: str, name: str, value: Any) -> Any:
    """What a proxy holds for ``module.name``: C functions and data as they are, Python
    functions as SafeCallable, Python classes as ClassFactory, enum members as plain ints."""
    label = f"{module}.{name}"
    if isinstance(value, (SafeCallable, ClassFactory, ModuleProxy)):
        return value
    special = _SPECIAL.get((module, name))
    if special is not None:
        return SafeCallable(special, label)
    if isinstance(value, type):
        if value in SAFE_CLASSES or issubclass(value, BaseException):
            return value
        return ClassFactory(value, label, CLASS_HELPERS.get(label, ()))
    if isinstance(value, (types.FunctionType, types.MethodType, types.BuiltinMethodType)):
        if isinstance(value, types.BuiltinMethodType) and isinstance(value.__self__, types.ModuleType):
            return value  # a C function of the module itself
        return SafeCallable(value, label)
    if isinstance(value, enum.Enum) and isinstance(value, int):
        return int(value)
    return value


def build_proxies(mode: Mode, seed: int | None = None) -> dict[str, ModuleProxy]:
    """Pre-import the allowed modules (done in the zygote so forks start warm)."""
    _warm_lazy_imports()
    proxies: dict[str, ModuleProxy] = {}
    for name, attrs in modules_for(mode).items():
        if name == "random":
            proxies[name] = random_proxy(mode, _random.Random(seed))  # noqa: S311 - data work
            continue
        module = importlib.import_module(name)
        proxies[name] = ModuleProxy(name, {a: getattr(module, a) for a in attrs})
    return proxies


def random_proxy(mode: Mode, rng: _random.Random) -> ModuleProxy:
    """`random` backed by one per-run ``Random`` instance (never the module-level state)."""
    return ModuleProxy("random", {a: getattr(rng, a) for a in modules_for(mode)["random"]})


# Modules C code of the allowed modules imports while it runs (`datetime.strptime` imports
# `_strptime`, `strftime` imports `time`). CPython's PyImport_Import passes an empty *list*
# as fromlist; an import statement passes None or a tuple, and user code cannot call
# `__import__` itself (validation refuses the name, and no allowed path leads to it).
_C_INTERNAL_IMPORTS = frozenset({"_strptime", "time"})


# Codecs `str.encode`/`bytes.decode` find through the `encodings` package, which imports
# each one on first use: loaded in the zygote, since a hardened run cannot import from disk.
PRELOADED_CODECS: tuple[str, ...] = (
    "utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "latin-1", "ascii",
    "cp1252", "cp1251", "cp1250", "cp437", "cp850", "iso-8859-2", "iso-8859-15", "mac-roman",
    "koi8-r", "shift_jis", "euc-jp", "gb2312", "gbk", "gb18030", "big5", "euc-kr", "idna",
    "unicode-escape", "raw-unicode-escape",
)  # fmt: skip


def _warm_lazy_imports() -> None:
    """Import (in the zygote) what allowed modules otherwise import on first use."""
    stamp = datetime.datetime.strptime("2000-01-02", "%Y-%m-%d")
    stamp.strftime("%Y %b %a")
    datetime.datetime.fromisoformat("2000-01-02T03:04:05+00:00")
    for codec in PRELOADED_CODECS:
        "abc".encode(codec).decode(codec)


def make_import(mode: Mode, proxies: dict[str, ModuleProxy]) -> Callable[..., Any]:
    def guarded_import(
        name: str, globals: object = None, locals: object = None, fromlist: Iterable[str] | None = (), level: int = 0
    ) -> Any:
        if type(fromlist) is list and not fromlist and not level and name in _C_INTERNAL_IMPORTS:
            module = sys.modules.get(name)
            if module is not None:
                return module
        if level or name not in proxies:
            raise ImportError(
                f"import of '{name}' is not allowed in {mode} mode; allowed: {allowed_imports_text(mode)}"
            )
        return proxies[name]

    return SafeCallable(guarded_import, "__import__")


# ---- injected API wrapper -----------------------------------------------------------


class ApiMethod(metaclass=Sealed):
    """One method of an injected API: argument checks, quotas, plain results, generic errors.

    A slotted callable rather than a closure: nothing reachable from it leads to the real
    object behind it (a closure's cells or a bound method's ``__self__`` would).
    """

    __slots__ = ("_api", "_bound", "_name", "_usage")

    def __init__(self, spec: ApiSpec, name: str, bound: Callable[..., Any], usage: dict[str, int]) -> None:
        object.__setattr__(self, "_api", spec)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_bound", bound)
        object.__setattr__(self, "_usage", usage)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        spec: ApiSpec = object.__getattribute__(self, "_api")
        name: str = object.__getattribute__(self, "_name")
        usage: dict[str, int] = object.__getattribute__(self, "_usage")
        usage["calls"] += 1
        if usage["calls"] > spec.max_calls:
            raise ApiError(f"{spec.name}: call quota ({spec.max_calls}) exhausted")
        check_plain(list(args))
        check_plain(kwargs)
        try:
            result = to_plain(object.__getattribute__(self, "_bound")(*args, **kwargs))
        except AptsError as exc:  # written for users: message and hint, no internals
            hint = f" (hint: {exc.hint})" if exc.hint else ""
            if isinstance(exc, LookupError) and name in NOT_FOUND_METHODS.get(spec.factory, ()):
                raise NotFound(f"{spec.name}.{name}: {exc.message}{hint}") from None
            raise ApiError(f"{spec.name}.{name}: {exc.message}{hint}") from None
        except (TypeError, ValueError, KeyError, LookupError) as exc:
            raise ApiError(f"{spec.name}.{name}: invalid arguments ({type(exc).__name__})") from None
        except ApiError:
            raise
        except Exception as exc:
            raise ApiError(f"{spec.name}.{name} failed ({type(exc).__name__})") from None
        if result is None and name in NOT_FOUND_METHODS.get(spec.factory, ()):
            shown = ", ".join(repr(a) for a in args[:1]) or ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
            raise NotFound(f"{spec.name}.{name}: nothing found for {shown[:80]}")
        usage["rows"] += result_size(result)
        usage["bytes"] += len(repr(result))
        if usage["rows"] > spec.max_rows or usage["bytes"] > spec.max_bytes:
            raise ApiError(f"{spec.name}: row/byte quota exhausted")
        return result

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("the injected API is read-only")

    def __delattr__(self, key: str) -> None:
        raise SandboxViolation("the injected API is read-only")

    def __dir__(self) -> list[str]:
        return []

    def __repr__(self) -> str:
        spec: ApiSpec = object.__getattribute__(self, "_api")
        return f"<method {spec.name}.{object.__getattribute__(self, '_name')}>"


class ApiObject(metaclass=Sealed):
    """The injected API (``thermal``): only the spec's methods, nothing writable.

    Its class is shared and sealed, its methods live in a read-only mapping, and neither
    attribute assignment, deletion nor ``_write_`` accepts it, in this cell or later ones.
    """

    __slots__ = ("_api_name", "_methods")

    def __init__(self, name: str, methods: dict[str, ApiMethod]) -> None:
        object.__setattr__(self, "_api_name", name)
        object.__setattr__(self, "_methods", types.MappingProxyType(dict(methods)))

    def __getattr__(self, item: str) -> ApiMethod:
        methods: types.MappingProxyType[str, ApiMethod] = object.__getattribute__(self, "_methods")
        if item in methods:
            return methods[item]
        raise AttributeError(f"{object.__getattribute__(self, '_api_name')} has no method '{item}'")

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("the injected API is read-only")

    def __delattr__(self, key: str) -> None:
        raise SandboxViolation("the injected API is read-only")

    def __dir__(self) -> list[str]:
        return sorted(object.__getattribute__(self, "_methods"))

    def __repr__(self) -> str:
        names = ", ".join(object.__getattribute__(self, "_methods"))
        return f"<api {object.__getattribute__(self, '_api_name')}: {names}>"


def wrap_api(spec: ApiSpec, real: object) -> ApiObject:
    """An ApiObject exposing the spec's public methods (all public callables when empty)."""
    names = spec.methods or tuple(n for n in dir(real) if not n.startswith("_") and callable(getattr(real, n)))
    usage = {"calls": 0, "rows": 0, "bytes": 0}
    return ApiObject(spec.name, {n: ApiMethod(spec, n, getattr(real, n), usage) for n in names})


# ---- globals -------------------------------------------------------------------------
_EXTRA_BUILTINS: dict[str, Any] = {
    "list": list, "dict": dict, "set": set, "frozenset": frozenset, "tuple": tuple,
    "sum": sum, "min": min, "max": max, "enumerate": enumerate, "map": map,
    "filter": filter, "any": any, "all": all, "reversed": reversed, "iter": iter,
    "next": next, "sorted": sorted, "zip": zip, "isinstance": isinstance,
    "bin": bin, "ascii": ascii, "bytearray": bytearray,
    "Exception": Exception, "StopIteration": StopIteration, "LookupError": LookupError,
    "RuntimeError": RuntimeError, "StopAsyncIteration": StopAsyncIteration,
}  # fmt: skip
# The sandbox's own versions of builtins whose real ones reach too far (see
# ``executor.sandbox_builtins``); installed in every mode.
_SANDBOX_OWN: dict[str, Any] = {
    "getattr": SandboxGetattr(guarded_getattr),
    "super": SandboxSuper(),
    "property": PropertyFactory(),
}

SAFE_CLASSES: frozenset[type] = _safe_classes()

_STRICT_BUILTINS = frozenset(
    {"None", "True", "False", "abs", "bool", "divmod", "float", "int", "len", "max", "min",
     "pow", "range", "round", "sorted", "str", "sum", "list", "dict", "tuple", "set",
     "enumerate", "zip", "isinstance", "any", "all", "map", "filter", "repr", "reversed",
     "ValueError", "TypeError", "KeyError", "IndexError", "ZeroDivisionError",
     "Exception", "ArithmeticError", "__build_class__",
     # ordinary code catches and raises these; none of them reaches anything
     "LookupError", "AttributeError", "RuntimeError", "StopIteration", "AssertionError",
     "NotImplementedError", "OverflowError", "UnicodeError", "UnicodeDecodeError",
     "UnicodeEncodeError", "NameError", "RecursionError",
     # iteration over results (`next(iter(results), None)`)
     "iter", "next"}
)  # fmt: skip


def build_builtins(mode: Mode, proxies: dict[str, ModuleProxy]) -> dict[str, Any]:
    builtins = dict(safe_builtins)
    builtins.update(_EXTRA_BUILTINS)
    for name in list(builtins):
        if name in FORBIDDEN_NAMES or name == "_getattr_":
            del builtins[name]
    if mode == "strict":
        builtins = {k: v for k, v in builtins.items() if k in _STRICT_BUILTINS}
    builtins.update(_SANDBOX_OWN)
    builtins["__build_class__"] = guarded_build_class
    builtins["__import__"] = make_import(mode, proxies)
    return builtins


# The names RestrictedPython's generated code calls; user code can never spell them
# (names starting with "_" are refused by validation and by compile_restricted).
GUARD_NAMES: tuple[str, ...] = (
    "_getattr_", "_getitem_", "_getiter_", "_write_", "_inplacevar_",
    "_iter_unpack_sequence_", "_unpack_sequence_", "_print_", "_apply_",
)  # fmt: skip


def build_globals(
    mode: Mode, proxies: dict[str, ModuleProxy], buffer: OutputBuffer, injected: dict[str, object]
) -> dict[str, Any]:
    """Fresh restricted globals for one child (layer 4)."""
    glb: dict[str, Any] = {
        "__builtins__": build_builtins(mode, proxies),
        "__name__": SANDBOX_MODULE,
        "__metaclass__": DEFAULT_METACLASS,  # RestrictedPython passes it to every class statement
        "_getattr_": guarded_getattr,
        "_getitem_": guarded_getitem,
        "_getiter_": iter,
        "_write_": guarded_write,
        "_inplacevar_": guarded_inplacevar,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_print_": _PrintFactory(buffer),
        "_apply_": guarded_apply,
    }
    glb.update(injected)
    return glb
