"""Layer 4: allowed stdlib modules as read-only proxies, and the guarded ``__import__``."""

from __future__ import annotations

import collections
import datetime
import enum
import importlib
import json
import random as _random
import sys
import types
from collections.abc import Callable, Iterable
from typing import Any

from terminai_apts.executor.policy import CLASS_HELPERS, Mode, allowed_imports_text, modules_for
from terminai_apts.executor.safe_classes import SAFE_CLASSES
from terminai_apts.executor.values import Record, ResultList
from terminai_apts.executor.wrappers import SANDBOX_MODULE, ClassFactory, SafeCallable, SandboxViolation, Sealed


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
