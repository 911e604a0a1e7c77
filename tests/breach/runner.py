"""The raw runner: plain ``exec`` with the real builtins (ctypes, os, socket included)."""

from __future__ import annotations

import builtins
import contextlib
import io
import traceback
from typing import Any

from terminai_apts.executor.python_layer import output


def run_raw(code: str, glb: dict[str, Any], buffer: output.OutputBuffer) -> dict[str, Any]:
    namespace = glb.setdefault("__breach__", {"__name__": "__breach__", "__builtins__": builtins})
    out = io.StringIO()
    result: dict[str, Any] = {
        "success": True, "error": None, "error_type": None, "memory_exceeded": False,
        "violations": [], "refused_by": None, "line": 0,
    }  # fmt: skip
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "<breach>", "exec"), namespace)
    except BaseException as exc:
        result.update(success=False, error_type=type(exc).__name__, error=traceback.format_exc()[-2000:])
    buffer.write(out.getvalue())
    return result
