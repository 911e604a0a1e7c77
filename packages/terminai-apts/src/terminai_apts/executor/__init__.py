"""Restricted executor: RestrictedPython in a hardened child forked from a warm zygote.

Layers (numbered in the code): 1 size checks, 2 AST validation (validate.py),
3 compile_restricted, 4 restricted globals and runtime guards, 5 import proxies by mode
(sandbox_globals.py, guards.py, module_proxies.py, api_object.py, child.py), 6 the OS
boundary of each run (isolation.py and the modules it names), 7 the host reading the run
as hostile (run.py, channel.py, frames.py), 8 hash-chained audit log (audit.py). Layers 1-5 are
defence in depth; 6 and 7 hold with them gone (the assume-breach tests).
"""

from __future__ import annotations

import importlib

# Not typing's: importing typing costs `terminai-apts exec` time before its zygote starts
# (type checkers read any name TYPE_CHECKING as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from terminai_apts.executor.host.run import ExecutionResult, ExecutorSession, execute
    from terminai_apts.executor.policy import ApiSpec, SandboxConfig, thermal_spec
    from terminai_apts.executor.python_layer.validate import ValidationReport, Violation, validate_code

# Imported on first use (PEP 562): the zygote, started as ``-m`` of a module in this
# package, then loads what a run needs and not the host side (validation, audit log).
_HOME = {
    "ApiSpec": "policy",
    "SandboxConfig": "policy",
    "thermal_spec": "policy",
    "ExecutionResult": "host.run",
    "ExecutorSession": "host.run",
    "execute": "host.run",
    "ValidationReport": "python_layer.validate",
    "Violation": "python_layer.validate",
    "validate_code": "python_layer.validate",
}

__all__ = [
    "ApiSpec",
    "ExecutionResult",
    "ExecutorSession",
    "SandboxConfig",
    "ValidationReport",
    "Violation",
    "execute",
    "thermal_spec",
    "validate_code",
]


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
