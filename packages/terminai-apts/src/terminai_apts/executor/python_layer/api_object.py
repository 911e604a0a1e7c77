"""Layer 5: the wrapper around an injected API (``thermal``): argument checks, quotas,
plain results and generic errors, with nothing reachable behind it."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from terminai_apts.errors import AptsError
from terminai_apts.executor.policy import NOT_FOUND_METHODS, ApiSpec
from terminai_apts.executor.python_layer.values import ApiError, NotFound, check_plain, result_size, to_plain
from terminai_apts.executor.python_layer.wrappers import SandboxViolation, Sealed


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
            message = exc.message.removeprefix(f"{spec.name}.{name}: ")  # the memory API's seed calls name themselves
            raise ApiError(f"{spec.name}.{name}: {message}{hint}") from None
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
