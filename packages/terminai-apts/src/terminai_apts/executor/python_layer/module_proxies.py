"""Layer 4: allowed stdlib modules as read-only proxies, and the guarded ``__import__``."""

from __future__ import annotations

import datetime
import decimal
import enum
import importlib
import json
import random as _random
import sys
import types
from collections.abc import Callable, Iterable
from typing import Any

from terminai_apts.executor.policy import CLASS_HELPERS, FUTURE_FEATURES, Mode, allowed_imports_text, modules_for
from terminai_apts.executor.python_layer.safe_classes import SAFE_CLASSES
from terminai_apts.executor.python_layer.stdlib_shims import SHIM_ATTRS, SHIM_MODULES, sandbox_namedtuple
from terminai_apts.executor.python_layer.values import Record, ResultList
from terminai_apts.executor.python_layer.wrappers import (
    ClassFactory,
    SafeCallable,
    SandboxViolation,
    Sealed,
    is_sandbox_class,
)


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
            value = attrs[item]
            # decimal's DefaultContext, BasicContext, ExtendedContext: the module's shared
            # templates (every Context() copies DefaultContext), so each read is a copy
            return value.copy() if type(value) is decimal.Context else value
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


class JsonDefault(metaclass=Sealed):
    """The ``default=`` the sandbox's ``json.dumps`` passes on: writes memories and result
    sets as their plain data, then asks the program's own ``default`` (if any).

    ``json.dumps(obj, cls=C)`` hands every keyword, this one included, to ``C(...)``, a
    class the program may have written: so this is a sealed, slotted object with no public
    attribute, never a function of this module (whose ``__globals__`` lead everywhere).
    """

    __slots__ = ("_user",)

    def __init__(self, user: object = None) -> None:
        object.__setattr__(self, "_user", user)

    def __call__(self, value: object) -> Any:
        if isinstance(value, ResultList):
            return value.to_list()
        if isinstance(value, Record):
            return value.to_dict()
        user = object.__getattribute__(self, "_user")
        if user is not None:
            return user(value)
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("functions are read-only")

    def __repr__(self) -> str:
        return "<json default>"


_PLAIN_DEFAULT = JsonDefault()


def _with_default(kwargs: dict[str, Any]) -> dict[str, Any]:
    user = kwargs.get("default")
    kwargs["default"] = _PLAIN_DEFAULT if user is None else JsonDefault(user)
    return kwargs


def _sandbox_json_dumps(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` that also writes memories and result sets (as ``to_dict()`` would)."""
    return json.dumps(obj, **_with_default(kwargs))


def _sandbox_json_dump(obj: Any, fp: Any, **kwargs: Any) -> None:
    json.dump(obj, fp, **_with_default(kwargs))


_SPECIAL: dict[tuple[str, str], Callable[..., Any]] = {
    ("collections", "namedtuple"): sandbox_namedtuple,
    ("json", "dumps"): _sandbox_json_dumps,
    ("json", "dump"): _sandbox_json_dump,
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
        if value in SAFE_CLASSES or issubclass(value, BaseException) or is_sandbox_class(value):
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
        if name in SHIM_MODULES:
            proxies[name] = ModuleProxy(name, {a: SHIM_MODULES[name][a] for a in attrs})
            continue
        module = importlib.import_module(name)
        shims = SHIM_ATTRS.get(name, {})
        proxies[name] = ModuleProxy(name, {a: shims[a] if a in shims else getattr(module, a) for a in attrs})
    # `from __future__ import annotations` runs an import of `__future__` too (every mode).
    proxies["__future__"] = ModuleProxy("__future__", dict.fromkeys(FUTURE_FEATURES, True))
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
