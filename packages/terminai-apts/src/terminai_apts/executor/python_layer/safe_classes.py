"""The real classes user code may hold (layer 4): everything else a guard meets is
wrapped or refused (``wrappers.refusal``)."""

from __future__ import annotations

import importlib
from typing import Any

from RestrictedPython.Guards import safe_builtins

from terminai_apts.executor.policy import SAFE_MODULE_CLASSES

EXTRA_BUILTINS: dict[str, Any] = {
    "list": list, "dict": dict, "set": set, "frozenset": frozenset, "tuple": tuple,
    "sum": sum, "min": min, "max": max, "enumerate": enumerate, "map": map,
    "filter": filter, "any": any, "all": all, "reversed": reversed, "iter": iter,
    "next": next, "sorted": sorted, "zip": zip, "isinstance": isinstance,
    "bin": bin, "ascii": ascii, "bytearray": bytearray,
    "Exception": Exception, "StopIteration": StopIteration, "LookupError": LookupError,
    "RuntimeError": RuntimeError, "StopAsyncIteration": StopAsyncIteration,
    # Plain values and classes CPython programs expect (`bytes(3)`, `format(x, ".2f")`,
    # `return NotImplemented`, `except RecursionError`): none of them reaches anything.
    "bytes": bytes, "format": format, "NotImplemented": NotImplemented,
    "RecursionError": RecursionError, "ExceptionGroup": ExceptionGroup,
    "BaseExceptionGroup": BaseExceptionGroup, "ModuleNotFoundError": ModuleNotFoundError,
    "TimeoutError": TimeoutError, "ConnectionError": ConnectionError,
    "BlockingIOError": BlockingIOError, "BrokenPipeError": BrokenPipeError,
    "ChildProcessError": ChildProcessError, "ConnectionAbortedError": ConnectionAbortedError,
    "ConnectionRefusedError": ConnectionRefusedError, "ConnectionResetError": ConnectionResetError,
    "FileExistsError": FileExistsError, "FileNotFoundError": FileNotFoundError,
    "InterruptedError": InterruptedError, "IsADirectoryError": IsADirectoryError,
    "NotADirectoryError": NotADirectoryError, "PermissionError": PermissionError,
    "ProcessLookupError": ProcessLookupError, "EncodingWarning": EncodingWarning,
    "ResourceWarning": ResourceWarning,
}  # fmt: skip


def _safe_classes() -> frozenset[type]:
    """Real classes user code may hold: the builtin types of the restricted builtins and
    the C-implemented classes listed in ``policy.SAFE_MODULE_CLASSES`` (their methods check
    the type of ``self``; they are walked like everything else)."""
    found: set[type] = {v for v in (*safe_builtins.values(), *EXTRA_BUILTINS.values()) if isinstance(v, type)}
    found.add(bytes)  # not a builtin name here, but `b"..."` literals are everywhere
    for module_name, names in SAFE_MODULE_CLASSES.items():
        module = importlib.import_module(module_name)
        found.update(getattr(module, n) for n in names)
    return frozenset(found)


SAFE_CLASSES: frozenset[type] = _safe_classes()
