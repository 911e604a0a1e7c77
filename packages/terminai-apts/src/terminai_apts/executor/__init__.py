"""Restricted executor: RestrictedPython in a hardened child forked from a warm zygote.

Layers (numbered in the code): 1 size checks, 2 AST validation (validate.py),
3 compile_restricted, 4 restricted globals and runtime guards, 5 import proxies by mode
(sandbox_globals.py, guards.py, module_proxies.py, api_object.py, child.py), 6 the OS
boundary of each run (isolation.py and the modules it names), 7 the host reading the run
as hostile (run.py, channel.py, frames.py), 8 hash-chained audit log (audit.py). Layers 1-5 are
defence in depth; 6 and 7 hold with them gone (the assume-breach tests).
"""

from terminai_apts.executor.policy import ApiSpec, SandboxConfig, thermal_spec
from terminai_apts.executor.run import ExecutionResult, ExecutorSession, execute
from terminai_apts.executor.validate import ValidationReport, Violation, validate_code

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
