"""The forked child: hardening (layer 6), restricted compile (3), globals (4/5) and
JSON results (7). Runs only in a process forked from the zygote."""

from __future__ import annotations

import importlib
import json
import os
import random
import re
import struct
import traceback
from typing import Any, NoReturn

from RestrictedPython.compile import compile_restricted

from terminai_apts.executor import guards
from terminai_apts.executor.limits import close_inherited, harden_child
from terminai_apts.executor.policy import ApiSpec, Mode, modules_for

_HOST_PATH = re.compile(r"(/[\w.+-]+)+\.py\b|(/[\w.+-]+){2,}")
MAX_ERROR_CHARS = 4_000


def read_frame(fd: int) -> bytes | None:
    head = _read_exact(fd, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    return _read_exact(fd, size)


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks: list[bytes] = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def write_frame(fd: int, payload: bytes) -> None:
    data = struct.pack(">I", len(payload)) + payload
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _sanitize(text: str) -> str:
    """Strip host paths from messages (layer 7)."""
    return _HOST_PATH.sub("<host>", text)[:MAX_ERROR_CHARS]


def _user_line(exc: BaseException) -> int:
    line = 0
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == "<sandbox>":
            line = lineno
    return line


def run_cell(code: str, glb: dict[str, Any], buffer: guards.OutputBuffer) -> dict[str, Any]:
    """Compile (layer 3) and run one cell in ``glb``; returns the JSON-able result."""
    result: dict[str, Any] = {
        "success": False, "error": None, "error_type": None, "memory_exceeded": False,
        "violations": [], "refused_by": None, "line": 0,
    }  # fmt: skip
    # Layer 3: compile_restricted; anything raised while compiling is a clean refusal.
    try:
        byte_code = compile_restricted(code, filename="<sandbox>", mode="exec")
    except SyntaxError as exc:
        found = re.search(r"Line (\d+)", str(exc.msg))
        result.update(
            error=_sanitize(f"refused: {exc.msg}"),
            error_type="SyntaxError",
            refused_by="L3-compile_restricted",
            line=exc.lineno or (int(found.group(1)) if found else 0),
        )
        return result
    except BaseException as exc:
        result.update(
            error=f"refused: code could not be compiled ({type(exc).__name__})",
            error_type=type(exc).__name__,
            refused_by="L3-compile_restricted",
        )
        return result
    try:
        exec(byte_code, glb)  # noqa: S102 - restricted byte code in the hardened child
        result["success"] = True
    except MemoryError:
        result.update(
            error="memory limit exceeded", error_type="MemoryError", memory_exceeded=True, refused_by="L6-limits"
        )
    except guards.SandboxViolation as exc:
        result.update(
            error=_sanitize(f"refused: {exc}"),
            error_type="SandboxViolation",
            refused_by="L4-runtime-guard",
            line=_user_line(exc),
        )
    except BaseException as exc:
        result.update(
            error=_sanitize(f"{type(exc).__name__}: {exc}"), error_type=type(exc).__name__, line=_user_line(exc)
        )
    return result


def _build_api(spec_json: dict[str, object] | None) -> dict[str, object]:
    if not spec_json:
        return {}
    spec = ApiSpec.from_json(spec_json)
    module_name, _, attr = spec.factory.partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    return {spec.name: guards.wrap_api(spec, factory(*spec.args))}


def serve(
    cmd_fd: int,
    res_fd: int,
    config: dict[str, Any],
    api: dict[str, object] | None,
    proxies: dict[str, guards.ModuleProxy],
) -> NoReturn:
    """Child main loop: harden once, then run cells until the command pipe closes."""
    code = 0
    try:
        close_inherited({cmd_fd, res_fd})
        try:
            injected = _build_api(api)
        except Exception as exc:
            injected = {}
            setup_error: str | None = f"injected API unavailable ({type(exc).__name__})"
        else:
            setup_error = None
        harden_child(config, {cmd_fd, res_fd})
        mode: Mode = config["security_mode"]
        own = dict(proxies)
        if "random" in own:  # per-run random state, never the zygote's
            rng = random.Random(  # noqa: S311 - data work, not cryptography
                int.from_bytes(os.urandom(16), "big")
            )
            own["random"] = guards.ModuleProxy("random", {a: getattr(rng, a) for a in modules_for(mode)["random"]})
        buffer = guards.OutputBuffer(int(config["max_output_bytes"]))
        glb = guards.build_globals(mode, own, buffer, injected)
        while True:
            frame = read_frame(cmd_fd)
            if frame is None:
                break
            request = json.loads(frame)
            buffer.parts.clear()
            buffer.size = 0
            buffer.truncated = False
            if setup_error:
                result = {
                    "success": False,
                    "error": setup_error,
                    "error_type": "ApiError",
                    "memory_exceeded": False,
                    "violations": [],
                    "refused_by": "api-setup",
                    "line": 0,
                }
            else:
                result = run_cell(str(request["code"]), glb, buffer)
            result["stdout"] = buffer.text()
            result["output_truncated"] = buffer.truncated
            write_frame(res_fd, _encode(result, int(config["max_output_bytes"])))
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _encode(result: dict[str, Any], max_output: int) -> bytes:
    try:
        payload = json.dumps(result, ensure_ascii=False, default=str).encode()
    except (MemoryError, ValueError):
        result = {k: v for k, v in result.items() if k != "stdout"}
        result.update(stdout="", output_truncated=True)
        payload = json.dumps(result, default=str).encode()
    if len(payload) > max_output + 65_536:
        result["stdout"] = result["stdout"][: max_output // 2]
        result["output_truncated"] = True
        payload = json.dumps(result, default=str).encode()
    return payload
