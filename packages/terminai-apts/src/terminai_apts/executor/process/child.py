"""A run's processes: the keeper and the sandboxed process (layer 6), restricted compile
(3), globals (4/5) and JSON results (7). Runs only in processes forked from the zygote.

The run reads its setup and code from the host directly (never through the zygote, which
therefore holds no caller's data); it answers with one "ready" frame once hardened, then
one result frame per cell.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import os
import random
import re
import resource
import signal
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

from RestrictedPython.compile import compile_restricted

from terminai_apts.executor import frames
from terminai_apts.executor.os_layer import isolation, namespaces, rootfs
from terminai_apts.executor.os_layer.limits import die_with_parent
from terminai_apts.executor.policy import ApiSpec, Mode, SandboxConfig
from terminai_apts.executor.python_layer import api_object, module_proxies, output, sandbox_globals, wrappers
from terminai_apts.executor.python_layer.transform import SandboxTransformer

_HOST_PATH = re.compile(r"(/[\w.+-]+)+\.py\b|(/[\w.+-]+){2,}")


def _sanitize(text: str) -> str:
    """Strip host paths from messages (layer 7)."""
    return _HOST_PATH.sub("<host>", text)[: frames.MAX_ERROR_CHARS]


def _user_line(exc: BaseException) -> int:
    line = 0
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == "<sandbox>":
            line = lineno
    return line


def run_cell(code: str, glb: dict[str, Any], buffer: output.OutputBuffer) -> dict[str, Any]:
    """Compile (layer 3) and run one cell in ``glb``; returns the JSON-able result."""
    result: dict[str, Any] = {
        "success": False, "error": None, "error_type": None, "memory_exceeded": False,
        "violations": [], "refused_by": None, "line": 0,
    }  # fmt: skip
    # Layer 3: compile_restricted; anything raised while compiling is a clean refusal.
    try:
        byte_code = compile_restricted(code, filename="<sandbox>", mode="exec", policy=SandboxTransformer)
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
    except wrappers.SandboxViolation as exc:
        result.update(
            error=_sanitize(f"refused: {exc}"),
            error_type="SandboxViolation",
            refused_by="L4-runtime-guard",
            line=_user_line(exc),
        )
    except BaseException as exc:
        result.update(error=_sanitize(_describe(exc)), error_type=type(exc).__name__, line=_user_line(exc))
    return result


def _describe(exc: BaseException) -> str:
    """``Type: message``; a program's own exception class may define ``__str__``, which
    may itself fail: the type name alone is reported then."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except BaseException:
        return f"{name}: <message could not be rendered>"
    return f"{name}: {text}" if isinstance(text, str) else name


# Where the injected API's files appear in a run that has a root of its own: the host's
# path of an index names its user and project, so the run sees a neutral one instead.
NEUTRAL_API = "/run/api"


def _api_places(
    spec_json: dict[str, object] | None, *, neutral: bool
) -> tuple[ApiSpec | None, tuple[tuple[str, str], ...]]:
    """The injected API's spec with its path arguments as the run will see them, and its
    files as (path on the host, path in the run) pairs: ``NEUTRAL_API/N/index`` for the
    N-th argument (its ``-wal``, ``-shm`` and ``-journal`` siblings beside it) when
    ``neutral``, else the host's own path."""
    if not spec_json:
        return None, ()
    spec = ApiSpec.from_json(spec_json)
    args: list[str] = []
    places: list[tuple[str, str]] = []
    for number, arg in enumerate(spec.args):
        if not os.path.isabs(arg):
            args.append(arg)
            continue
        target = f"{NEUTRAL_API}/{number}/index" if neutral else arg
        places += [(arg + s, target + s) for s in ("", "-wal", "-shm", "-journal") if os.path.exists(arg + s)]
        args.append(target)
    return dataclasses.replace(spec, args=tuple(args)), tuple(places)


def _factory(spec: ApiSpec | None) -> Callable[..., object] | None:
    """The injected API's factory, imported from where the host names it (before the run
    enters its root: the factory's own module may live outside the read set)."""
    if spec is None:
        return None
    module_name, _, attr = spec.factory.partition(":")
    factory: Callable[..., object] = getattr(importlib.import_module(module_name), attr)
    return factory


def _build_api(spec: ApiSpec | None, factory: Callable[..., object] | None) -> dict[str, object]:
    """The injected API, built before hardening (from the paths the run sees)."""
    if spec is None or factory is None:
        return {}
    return {spec.name: api_object.wrap_api(spec, factory(*spec.args))}


Runner = Callable[[str, dict[str, Any], output.OutputBuffer], dict[str, Any]]
# The mode a run builds its globals for before its caller comes: the default one.
AHEAD_MODE: Mode = SandboxConfig().security_mode
SETUP_LIMIT = 1 << 20
CELL_LIMIT = 1 << 24


def keeper(
    cmd_fd: int,
    res_fd: int,
    hardening: isolation.Hardening,
    base: str,
    proxies: dict[Mode, dict[str, module_proxies.ModuleProxy]],
    runner: Runner,
    *,
    entered: bool = False,
    sealed: bool = False,
    zygote: int | None = None,
) -> NoReturn:
    """The run's first process: enters the run's namespaces and forks the sandboxed
    process into them (or becomes it when namespaces are unavailable). ``entered``: the
    zygote forked this process into the run's namespaces already (as their PID 1), so it
    is the sandboxed process itself. ``sealed``: for a caller without an injected API,
    so the run enters its root before the setup comes. ``zygote``: a pidfd of the zygote
    (this process's parent), kept until the parent-death signal is set for good. The
    zygote forks keepers ahead of demand, so nothing here may depend on the caller's setup."""
    code = 70
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        die_with_parent(zygote)
        # Only a process forked straight into its PID namespace needs the pidfd again (at
        # each later parent-death request); anywhere else getppid() tells.
        parent = zygote if entered else None
        if zygote is not None and parent is None:
            os.close(zygote)
        report = isolation.Isolation()
        if entered:
            report.namespaces = True
        elif isolation.enter_namespaces(hardening, report):
            pid = os.fork()
            if pid:
                os.close(cmd_fd)
                os.close(res_fd)
                _, status = os.waitpid(pid, 0)
                if os.WIFSIGNALED(status):
                    _end_by_signal(os.WTERMSIG(status))
                os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)
        _sandboxed(cmd_fd, res_fd, hardening, report, base, proxies, runner, sealed=sealed, parent=parent)
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _end_by_signal(sig: int) -> None:
    """End the keeper by the signal that ended the sandboxed process: the host reads the
    cause from the wait status, and an exit code (``128 + N``) is the run's to choose."""
    with contextlib.suppress(OSError, ValueError):
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
    os.kill(os.getpid(), sig)  # no core: RLIMIT_CORE is 0 here


def _warm_up(proxies: dict[Mode, dict[str, module_proxies.ModuleProxy]]) -> None:
    """Touch, while no caller waits, the memory a first cell would copy on write."""
    buffer = output.OutputBuffer(64)
    run_cell("print(len([1]))", sandbox_globals.build_globals("high", dict(proxies["high"]), buffer, {}), buffer)
    # The caller's path reads its setup and writes the ready frame as JSON, then takes
    # the steps ``harden`` takes: their code and data are touched now, read only.
    json.loads(json.dumps({"isolation": ["seccomp"], "notes": [], "config": {"max_output_bytes": 1}}))
    SandboxConfig.from_json(SandboxConfig().to_json())
    isolation.warm_harden()


def _make_scratch(base: str, config: SandboxConfig, report: isolation.Isolation, root: rootfs.RunRoot | None) -> str:
    """The run's private working directory. In the run's namespaces it is a tmpfs of its
    own, capped (bytes and inodes) at the run's memory budget, since tmpfs pages are
    memory (inside the run's own root when it has one); without them its total rests on
    the file system below (in the image, the container's size-limited /tmp)."""
    path = os.path.join(base, "scratch")
    uid, gid = os.getuid(), os.getgid()
    if uid == 0:
        uid, gid = config.unprivileged_uid, config.unprivileged_gid
    size = config.max_memory_mb * 1024 * 1024
    inodes = max(64, size // 4096)
    if root is not None:
        root.scratch(path, size_bytes=size, inodes=inodes, uid=uid, gid=gid)
        return path
    os.mkdir(path, 0o700)
    if os.getuid() == 0:
        os.chown(path, uid, gid)
    if report.namespaces:
        namespaces.private_tmpfs(path, size_bytes=size, inodes=inodes, uid=uid, gid=gid)
    return path


def _sandboxed(
    cmd_fd: int,
    res_fd: int,
    hardening: isolation.Hardening,
    report: isolation.Isolation,
    base: str,
    proxies: dict[Mode, dict[str, module_proxies.ModuleProxy]],
    runner: Runner,
    *,
    sealed: bool = False,
    parent: int | None = None,
) -> NoReturn:
    """Wait for the caller's setup, harden once (layer 6), then run cells until the
    command pipe closes. ``sealed``: the run's root is entered before the setup comes
    (its caller binds no host path: no injected API). ``parent``: a pidfd of this
    process's parent when that is outside its PID namespace (closed once hardened)."""
    code = 0
    try:
        if "parent-death" not in hardening.skip:
            die_with_parent(parent)
        root = isolation.build_root(hardening, report, base)
        sealed = sealed and root is not None
        if sealed and root is not None:
            root.mount_point(os.path.join(base, "scratch"))
            isolation.enter_root(root, report, ())
        keep = {cmd_fd, res_fd} if parent is None else {cmd_fd, res_fd, parent}
        ruleset = isolation.harden_early(hardening, keep=keep, rooted=root is not None)
        _warm_up(proxies)
        # The default mode's globals, built (and their pages copied) while no caller
        # waits: a caller in that mode without an injected API takes them as they are.
        ahead_buffer = output.OutputBuffer(0)
        ahead = sandbox_globals.build_globals(AHEAD_MODE, _own_proxies(proxies, AHEAD_MODE), ahead_buffer, {})
        frame = frames.read_frame(cmd_fd, SETUP_LIMIT)
        if frame is None:
            os._exit(0)
        setup = json.loads(frame)
        config = SandboxConfig.from_json(setup["config"])
        scratch = _make_scratch(base, config, report, root) if config.scratch else None
        if sealed and setup.get("api"):
            # Its root holds no host path to bind the API's files from: never run half set up.
            raise OSError("a run sealed ahead of its caller cannot take an injected API")
        spec, places = _api_places(setup.get("api"), neutral=root is not None)
        try:
            factory = _factory(spec)
        except Exception:
            factory = None
        if not sealed:
            isolation.enter_root(root, report, places)
        try:
            if spec is not None and factory is None:
                raise ImportError(spec.factory)
            injected = _build_api(spec, factory)
        except Exception as exc:
            injected = {}
            setup_error: str | None = f"injected API unavailable ({type(exc).__name__})"
        else:
            setup_error = None
        api_paths = tuple(inside for _, inside in places)
        isolation.harden(
            hardening, report, ruleset=ruleset, config=config, api_paths=api_paths, scratch=scratch, parent=parent
        )
        if parent is not None:
            os.close(parent)  # the parent-death signal is set for good: no user code holds it
        # Sent before any user code runs, so the host may trust this one frame.
        ready = {"isolation": report.layers(), "notes": report.notes}
        frames.write_frame(res_fd, json.dumps(ready).encode())
        mode = config.security_mode
        max_output = config.max_output_bytes
        if mode == AHEAD_MODE and not injected:
            buffer, glb = ahead_buffer, ahead  # the newest buffer: the one output goes to
            buffer.limit = max_output
        else:
            buffer = output.OutputBuffer(max_output)
            glb = sandbox_globals.build_globals(mode, _own_proxies(proxies, mode), buffer, injected)
        while True:
            frame = frames.read_frame(cmd_fd, CELL_LIMIT)
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
                result = runner(str(request["code"]), glb, buffer)
            result["stdout"] = buffer.text()
            result["output_truncated"] = buffer.truncated
            result["seq"] = int(request["seq"])
            frames.write_frame(res_fd, _encode(result, max_output))
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _own_proxies(
    proxies: dict[Mode, dict[str, module_proxies.ModuleProxy]], mode: Mode
) -> dict[str, module_proxies.ModuleProxy]:
    """``mode``'s module proxies for this run, with random state of its own (never the
    zygote's: each run seeds its own from the kernel)."""
    own = dict(proxies[mode])
    if "random" in own:
        rng = random.Random(  # noqa: S311 - data work, not cryptography
            int.from_bytes(os.urandom(16), "big")
        )
        own["random"] = module_proxies.random_proxy(mode, rng)
    return own


def _encode(result: dict[str, Any], max_output: int) -> bytes:
    return output.encode_result(result, max_output)
