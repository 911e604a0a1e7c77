"""Layers 4 and 5 (child side): restricted globals, runtime guards, import proxies,
bounded print capture and the wrapper around injected APIs."""

from __future__ import annotations

import collections
import dataclasses
import importlib
import operator
import random as _random
import types
from collections.abc import Callable, Iterable
from typing import Any

from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence, safe_builtins

from terminai_apts.executor.policy import (
    FORBIDDEN_ATTR_PREFIXES,
    FORBIDDEN_ATTRS,
    FORBIDDEN_NAMES,
    ApiSpec,
    Mode,
    allowed_imports_text,
    modules_for,
)

SANDBOX_MODULE = "sandbox"
_DANGEROUS_TYPES = (types.ModuleType, types.FrameType, types.CodeType, types.TracebackType)
_PLAIN_WRITABLE = (list, dict, set, bytearray, collections.deque)
# Builtin types whose public attributes are all plain methods: no post-check needed.
_FAST_TYPES = frozenset({dict, list, str, set, tuple, int, float, bytes, frozenset})


class SandboxViolation(Exception):
    """Raised by a runtime guard; reported to the user as a refusal."""


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


def _print_factory(buffer: OutputBuffer) -> Callable[..., Any]:
    class _Print:
        __slots__ = ()

        def __init__(self, _getattr_: object = None) -> None:
            pass

        def _call_print(
            self, *objects: object, sep: object = " ", end: object = "\n", file: object = None, flush: bool = False
        ) -> None:
            if file is not None:
                raise SandboxViolation("print(file=...) is not allowed")
            if not isinstance(sep, str) or not isinstance(end, str):
                raise TypeError("sep and end must be strings")
            buffer.write(sep.join(str(o) for o in objects) + end)

        def __call__(self) -> str:
            return buffer.text()

    return _Print


def guarded_getattr(obj: object, name: str, default: object = None, /) -> Any:
    if not isinstance(name, str) or name in FORBIDDEN_ATTRS or name.startswith(FORBIDDEN_ATTR_PREFIXES):
        raise SandboxViolation(f"attribute '{name}' is not allowed")
    if type(obj) in _FAST_TYPES:
        return getattr(obj, name)
    value = getattr(obj, name)
    if isinstance(value, _DANGEROUS_TYPES) or isinstance(obj, types.ModuleType):
        raise SandboxViolation(f"attribute '{name}' is not allowed")
    return value


def guarded_getitem(obj: Any, key: Any) -> Any:
    value = obj[key]
    if isinstance(value, _DANGEROUS_TYPES):
        raise SandboxViolation("item is not allowed")
    return value


def guarded_write(obj: Any) -> Any:
    """Allow writes only to containers and instances of sandbox-defined classes.

    Container instances (including Counter/defaultdict/OrderedDict) were created by the
    sandbox in this child; classes, modules, proxies and records are refused.
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


class ModuleProxy:
    """A read-only stand-in for a stdlib module exposing only listed attributes."""

    __slots__ = ("_attrs", "_name")

    def __init__(self, name: str, attrs: dict[str, Any]) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_attrs", attrs)

    def __getattr__(self, item: str) -> Any:
        attrs: dict[str, Any] = object.__getattribute__(self, "_attrs")
        if item in attrs:
            return attrs[item]
        name = object.__getattribute__(self, "_name")
        raise AttributeError(f"module '{name}' exposes only: {', '.join(sorted(attrs))}")

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("modules are read-only")

    def __repr__(self) -> str:
        return f"<module {object.__getattribute__(self, '_name')}>"


def build_proxies(mode: Mode, seed: int | None = None) -> dict[str, ModuleProxy]:
    """Pre-import the allowed modules (done in the zygote so forks start warm)."""
    proxies: dict[str, ModuleProxy] = {}
    for name, attrs in modules_for(mode).items():
        if name == "random":
            rng = _random.Random(seed)  # noqa: S311 - data work, not cryptography
            proxies[name] = ModuleProxy(name, {a: getattr(rng, a) for a in attrs})
            continue
        module = importlib.import_module(name)
        proxies[name] = ModuleProxy(name, {a: getattr(module, a) for a in attrs})
    return proxies


def make_import(mode: Mode, proxies: dict[str, ModuleProxy]) -> Callable[..., Any]:
    def guarded_import(
        name: str, globals: object = None, locals: object = None, fromlist: Iterable[str] | None = (), level: int = 0
    ) -> Any:
        if level or name not in proxies:
            raise ImportError(
                f"import of '{name}' is not allowed in {mode} mode; allowed: {allowed_imports_text(mode)}"
            )
        return proxies[name]

    return guarded_import


# ---- injected API wrapper -----------------------------------------------------------
_PLAIN_SCALARS = (str, int, float, bool, type(None))


class ApiError(Exception):
    """Generic failure of an injected API call (no internal detail is exposed)."""


class Record:
    """An immutable record handed to sandboxed code (attribute and key access)."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        object.__setattr__(self, "_data", data)

    def __getattr__(self, item: str) -> Any:
        data = object.__getattribute__(self, "_data")
        if item in data:
            return data[item]
        raise AttributeError(item)

    def __getitem__(self, key: str) -> Any:
        return object.__getattribute__(self, "_data")[key]

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("records are read-only")

    def keys(self) -> list[str]:
        return list(object.__getattribute__(self, "_data"))

    def to_dict(self) -> dict[str, Any]:
        return dict(object.__getattribute__(self, "_data"))

    def __repr__(self) -> str:
        return f"Record({object.__getattribute__(self, '_data')!r})"


def _check_plain(value: object, depth: int = 0) -> None:
    if depth > 10:
        raise TypeError("argument nested too deeply")
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return
    if kind in (list, tuple):
        for item in value:  # type: ignore[attr-defined]
            _check_plain(item, depth + 1)
        return
    if kind is dict:
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str:
                raise TypeError("dict keys must be str")
            _check_plain(item, depth + 1)
        return
    raise TypeError(f"argument of type '{kind.__name__}' is not allowed")


def to_plain(value: object, depth: int = 0) -> Any:
    """Fresh plain data (or immutable Records) from whatever the real API returned."""
    if depth > 20:
        raise ApiError("result nested too deeply")
    if isinstance(value, _PLAIN_SCALARS):
        return value
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return Record({k: to_plain(v, depth + 1) for k, v in value._asdict().items()})
    if isinstance(value, (list, tuple, set, frozenset)) or (hasattr(value, "__iter__") and hasattr(value, "__next__")):
        return [to_plain(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): to_plain(v, depth + 1) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return Record({f.name: to_plain(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)})
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    raise ApiError(f"result of type '{type(value).__name__}' cannot be returned")


def wrap_api(spec: ApiSpec, real: object) -> object:
    """A slotted object whose only attributes are the spec's public methods."""
    names = spec.methods or tuple(n for n in dir(real) if not n.startswith("_") and callable(getattr(real, n)))
    usage = {"calls": 0, "rows": 0, "bytes": 0}

    def make(method_name: str) -> Callable[..., Any]:
        bound = getattr(real, method_name)

        def call(*args: Any, **kwargs: Any) -> Any:
            usage["calls"] += 1
            if usage["calls"] > spec.max_calls:
                raise ApiError(f"{spec.name}: call quota ({spec.max_calls}) exhausted")
            _check_plain(list(args))
            _check_plain(kwargs)
            try:
                result = to_plain(bound(*args, **kwargs))
            except (TypeError, ValueError, KeyError, LookupError) as exc:
                raise ApiError(f"{spec.name}.{method_name}: invalid arguments ({type(exc).__name__})") from None
            except ApiError:
                raise
            except Exception as exc:
                raise ApiError(f"{spec.name}.{method_name} failed ({type(exc).__name__})") from None
            usage["rows"] += len(result) if isinstance(result, list) else 1
            usage["bytes"] += len(repr(result))
            if usage["rows"] > spec.max_rows or usage["bytes"] > spec.max_bytes:
                raise ApiError(f"{spec.name}: row/byte quota exhausted")
            return result

        call.__name__ = method_name
        return call

    namespace: dict[str, Any] = {"__slots__": ()}
    for n in names:
        namespace[n] = staticmethod(make(n))
    namespace["__repr__"] = lambda self: f"<api {spec.name}: {', '.join(names)}>"
    namespace["__setattr__"] = _readonly_setattr
    return type(f"{spec.name}_api", (), namespace)()


def _readonly_setattr(self: object, key: str, value: object) -> None:
    raise SandboxViolation("the injected API is read-only")


# ---- globals -------------------------------------------------------------------------
_EXTRA_BUILTINS: dict[str, Any] = {
    "list": list, "dict": dict, "set": set, "frozenset": frozenset, "tuple": tuple,
    "sum": sum, "min": min, "max": max, "enumerate": enumerate, "map": map,
    "filter": filter, "any": any, "all": all, "reversed": reversed, "iter": iter,
    "next": next, "sorted": sorted, "zip": zip, "isinstance": isinstance,
    "bin": bin, "ascii": ascii, "bytearray": bytearray,
    "Exception": Exception, "StopIteration": StopIteration,
}  # fmt: skip

_STRICT_BUILTINS = frozenset(
    {"None", "True", "False", "abs", "bool", "divmod", "float", "int", "len", "max", "min",
     "pow", "range", "round", "sorted", "str", "sum", "list", "dict", "tuple", "set",
     "enumerate", "zip", "isinstance", "any", "all", "map", "filter", "repr", "reversed",
     "ValueError", "TypeError", "KeyError", "IndexError", "ZeroDivisionError",
     "Exception", "ArithmeticError", "__build_class__"}
)  # fmt: skip


def build_builtins(mode: Mode, proxies: dict[str, ModuleProxy]) -> dict[str, Any]:
    builtins = dict(safe_builtins)
    builtins.update(_EXTRA_BUILTINS)
    for name in list(builtins):
        if name in FORBIDDEN_NAMES or name == "_getattr_":
            del builtins[name]
    if mode == "strict":
        builtins = {k: v for k, v in builtins.items() if k in _STRICT_BUILTINS}
    builtins["__import__"] = make_import(mode, proxies)
    return builtins


def build_globals(
    mode: Mode, proxies: dict[str, ModuleProxy], buffer: OutputBuffer, injected: dict[str, object]
) -> dict[str, Any]:
    """Fresh restricted globals for one child (layer 4)."""
    glb: dict[str, Any] = {
        "__builtins__": build_builtins(mode, proxies),
        "__name__": SANDBOX_MODULE,
        "__metaclass__": type,
        "_getattr_": guarded_getattr,
        "_getitem_": guarded_getitem,
        "_getiter_": iter,
        "_write_": guarded_write,
        "_inplacevar_": guarded_inplacevar,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_print_": _print_factory(buffer),
        "_apply_": lambda f, *a, **k: f(*a, **k),
    }
    glb.update(injected)
    return glb
