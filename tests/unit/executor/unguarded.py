"""The attack snippets with the Python layer switched off: plain CPython (real builtins,
real modules, ``compile`` instead of validation and ``compile_restricted``, no runtime
guards), each in a forked process of its own. A snippet that does not reach its
``ESCAPED`` line even here tests nothing about the layer (CPython itself refuses it).

Run as a module: reads a JSON list of ``{"code": ..., "thermal": bool}`` on stdin, the
memory database path as the first argument, and prints one JSON list: for each snippet,
whether it printed ``ESCAPED`` and what it printed (its first ``MAX_OUTPUT`` characters).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import signal
import sys
from typing import Any

MAX_OUTPUT = 4000


def _run_one(code: str, thermal: object | None) -> tuple[bool, str]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        out = io.StringIO()
        signal.alarm(5)
        limit = 1 << 30
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        scope: dict[str, Any] = {"__name__": "attack"}
        if thermal is not None:
            scope["thermal"] = thermal
        with contextlib.suppress(BaseException), contextlib.redirect_stdout(out):
            exec(compile(code, "<attack>", "exec"), scope)
        text = out.getvalue()
        head = b"1" if "ESCAPED" in text else b"0"
        os.write(write, head + text[:MAX_OUTPUT].encode("utf-8", "backslashreplace"))
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    return answer[:1] == b"1", answer[1:].decode("utf-8", "replace")


def main() -> int:
    snippets = json.loads(sys.stdin.read())
    thermal = None
    if len(sys.argv) > 1:
        from terminai_apts.memory.api import open_memory

        thermal = open_memory(sys.argv[1])
    print(json.dumps([_run_one(s["code"], thermal if s.get("thermal") else None) for s in snippets]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
