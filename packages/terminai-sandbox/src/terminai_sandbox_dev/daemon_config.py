"""Register gVisor's ``runsc`` with dockerd without disturbing the rest of its configuration.

dockerd reads its runtimes from ``/etc/docker/daemon.json``; the file may already hold an
administrator's settings (registry mirrors, log drivers, other runtimes), so it is merged,
never rewritten: :func:`with_runsc` adds ``runtimes.runsc`` and changes nothing else, and
an existing ``runsc`` entry is kept as it is (its owner chose those arguments). A file that
is not a JSON object is refused and left untouched: dockerd would not start with it either.

``runtimes`` is one of the options dockerd reloads on ``SIGHUP``, so a running daemon picks
the entry up without a restart (a restart would stop every container on a shared engine);
:func:`reload_dockerd` sends the signal and waits until ``GET /info`` lists the runtime.

Where ``scripts/ensure-host-tools`` placed Debian trixie's newer runsc (20240729) under
``$TERMINAI_HOST_TOOLS/runsc-trixie``, it is registered beside the host's as the runtime
``runsc-trixie``, with the same arguments: ``runsc`` stays the distribution's package (the
one its security updates reach), and the newer release can be run and checked side by side
(``docker run --runtime runsc-trixie``; docs/SECURITY.md says what holds under each).

``runsc-egress`` is the host's runsc with ``--host-uds=open`` as well: a session with a
network policy runs under it, so that it may connect to the one host Unix socket mounted
into it (its proxy's); sessions without a policy keep ``runsc``, which connects to none.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from terminai_sandbox.engine.runtime import EGRESS_RUNSC_ARGS, EGRESS_SUFFIX, RUNSC_ARGS
from terminai_sandbox.errors import EngineError

DAEMON_JSON = Path("/etc/docker/daemon.json")
RUNTIME_NAME = "runsc"
NEWER_RUNTIME = "runsc-trixie"  # its binary: $TERMINAI_HOST_TOOLS/runsc-trixie/bin/runsc
EGRESS_RUNTIME = RUNTIME_NAME + EGRESS_SUFFIX  # runsc, and --host-uds=open for the proxy's socket
HOST_TOOLS = "/opt/terminai-host-tools"  # scripts/ensure-host-tools' default prefix


def newer_runsc(env: Mapping[str, str]) -> str | None:
    """The trixie runsc ``scripts/ensure-host-tools`` placed, if it is there and executable."""
    binary = Path(env.get("TERMINAI_HOST_TOOLS") or HOST_TOOLS) / NEWER_RUNTIME / "bin" / "runsc"
    return str(binary) if os.access(binary, os.X_OK) and binary.is_file() else None


def runsc_entry(runsc: str, args: tuple[str, ...] = RUNSC_ARGS) -> dict[str, object]:
    """The ``runtimes.runsc`` value: the binary, and no gVisor network (sessions have none)."""
    return {"path": runsc, "runtimeArgs": list(args)}


def with_runsc(
    document: Mapping[str, object],
    runsc: str,
    *,
    source: str = "daemon.json",
    name: str = RUNTIME_NAME,
    args: tuple[str, ...] = RUNSC_ARGS,
) -> tuple[dict[str, object], str]:
    """``document`` with ``runtimes.<name>`` (default ``runsc``) registered, and what was done
    (pure; the input is not changed).

    Every other key, including other runtimes and ``default-runtime``, is carried over as
    is. An existing entry of that name is kept. Raises :class:`EngineError` when ``runtimes``
    is not an object (the file is then left for its owner to fix).
    """
    merged = dict(document)
    runtimes = merged.get("runtimes", {})
    if not isinstance(runtimes, dict):
        raise EngineError(
            f"{source}: 'runtimes' is not a JSON object, so {name} cannot be added to it",
            hint=f"fix 'runtimes' in {source} (an object of name -> {{\"path\": ...}}), "
            "then run scripts/ensure-engine again",
        )
    existing = runtimes.get(name)
    if existing is not None:
        if existing == runsc_entry(runsc, args):
            return merged, f"{name} already registered in {source}"
        return merged, f"kept the existing {name} entry in {source}: {json.dumps(existing, sort_keys=True)}"
    merged["runtimes"] = {**runtimes, name: runsc_entry(runsc, args)}
    return merged, f"registered {name} ({runsc}, {' '.join(args)}) in {source}"


def register_runsc(
    runsc: str, path: Path = DAEMON_JSON, *, name: str = RUNTIME_NAME, args: tuple[str, ...] = RUNSC_ARGS
) -> tuple[bool, str]:
    """Merge ``runtimes.<name>`` (default ``runsc``) into the daemon configuration file;
    (whether the file changed, what was done).

    A missing file is created. The new content replaces the old atomically (a half-written
    daemon.json would keep dockerd from starting) with the old file's mode.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise EngineError(
            f"cannot read {path}: {exc}", hint=f"check {path}, then run scripts/ensure-engine again"
        ) from None
    try:
        document = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise EngineError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); it was left untouched",
            hint=f"fix {path} (dockerd cannot start with it either), then run scripts/ensure-engine again",
        ) from None
    if not isinstance(document, dict):
        raise EngineError(f"{path} holds no JSON object; it was left untouched", hint=f"fix {path}")
    merged, action = with_runsc(document, runsc, source=str(path), name=name, args=args)
    if merged == document:
        return False, action
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    staging.write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
    staging.chmod(mode)
    os.replace(staging, path)
    return True, action


def ensure_runsc(
    env: Mapping[str, str],
    start: Callable[[], list[str]],
    runtimes: Callable[[], list[str]],
    *,
    dockerd_pid: Callable[[], int | None],
    path: Path = DAEMON_JSON,
) -> list[str]:
    """The engine bootstrap with gVisor: register runsc (and ``runsc-trixie`` where
    :func:`newer_runsc` finds it), start (or reload) dockerd; what was done.

    ``start`` makes sure dockerd answers (``scripts/ensure-engine``), ``runtimes`` lists the
    runtimes the answering engine has, ``dockerd_pid`` finds the local dockerd to reload.
    The file is merged before ``start``, so a daemon started now reads it; a daemon already
    running is sent ``SIGHUP``. Without ``runsc`` installed, as a non-root user, or with
    ``DOCKER_HOST`` naming another engine, nothing is registered and the line says so:
    gVisor sessions then fail in preflight with this remedy, runc sessions are unaffected.
    """
    runsc = shutil.which("runsc", path=env.get("PATH"))
    why_not = None
    if runsc is None:
        why_not = "runsc is not installed (scripts/ensure-host-tools installs it)"
    elif env.get("DOCKER_HOST"):
        why_not = f"DOCKER_HOST={env['DOCKER_HOST']} names another engine; register runsc in its daemon.json there"
    elif os.geteuid() != 0:
        why_not = f"only root can edit {path}"
    done: list[str] = []
    names = [RUNTIME_NAME]
    if why_not is None:
        assert runsc is not None
        _, action = register_runsc(runsc, path)
        done.append(action)
        # The variant a session with a network policy runs under (its proxy's socket is a host UDS).
        _, action = register_runsc(runsc, path, name=EGRESS_RUNTIME, args=EGRESS_RUNSC_ARGS)
        done.append(action)
        names.append(EGRESS_RUNTIME)
        newer = newer_runsc(env)
        if newer is not None:
            _, action = register_runsc(newer, path, name=NEWER_RUNTIME)
            done.append(action)
            names.append(NEWER_RUNTIME)
    done += start()
    if why_not is not None:
        return [*done, f"gVisor not registered: {why_not}"]
    missing = [name for name in names if name not in runtimes()]
    if missing:
        pid = dockerd_pid()
        if pid is None:
            raise EngineError(
                f"dockerd answers but does not list {', '.join(missing)}, and its pid is unknown, "
                "so it cannot be reloaded",
                hint=f"send dockerd SIGHUP yourself (kill -HUP PID) so it reads {path}",
            )
        done.append(reload_dockerd(pid, runtimes, names=tuple(names)))
    return done


def reload_dockerd(
    pid: int,
    listed: Callable[[], list[str]],
    *,
    names: tuple[str, ...] = (RUNTIME_NAME,),
    wait_seconds: float = 30,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """SIGHUP dockerd ``pid`` and wait until ``listed()`` (its runtimes) names every runtime of ``names``."""
    os.kill(pid, signal.SIGHUP)
    deadline = time.monotonic() + wait_seconds
    while missing := [name for name in names if name not in listed()]:
        if time.monotonic() > deadline:
            raise EngineError(
                f"dockerd (pid {pid}) reloaded its configuration but does not list {', '.join(missing)} "
                f"after {wait_seconds:.0f} s",
                hint="read dockerd's log: the runtimes entry in daemon.json may be refused",
            )
        sleep(0.2)
    return f"reloaded dockerd (pid {pid}, SIGHUP): {', '.join(names)} available"
