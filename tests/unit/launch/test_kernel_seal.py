"""The launch kernel's seal: the one place that says what a session start may import.

``terminai_sandbox.launch`` runs on every session start, so it imports the standard library
(less the modules named in FORBIDDEN), its own modules, the shared floor
``terminai_sandbox.common`` and the engine room ``terminai_sandbox.engine`` (both held to the
same seal) and the few leaves in MAY_IMPORT,
nothing else. The registry and crypto stacks load inside functions on the cold path only
(a first verification, a tag on podman, ``--deep``). Both checks run in a
fresh interpreter and compare ``sys.modules`` before and after.
"""

from __future__ import annotations

import ast
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import terminai_sandbox.common
import terminai_sandbox.engine
import terminai_sandbox.launch

KERNEL = "terminai_sandbox.launch"
# The standard-library-only floor the kernel shares with the rest of the package.
COMMON = "terminai_sandbox.common"
# The engine room: protocol, docker and podman, client, transport, sockets; sealed the same way.
ENGINE = "terminai_sandbox.engine"
SEALED = (KERNEL, COMMON, ENGINE)
# Outside the standard library and the kernel, a session start may load only these leaves.
MAY_IMPORT = frozenset(
    {
        "terminai_sandbox",
        "terminai_sandbox._version",
        "terminai_sandbox.errors",
        "terminai_sandbox.console",  # the console script itself: it hands `run` to the kernel
        "terminai_apts",
        "terminai_apts._version",
        "terminai_apts.ledger",  # the one hash chain, shared with the in-image ledgers
        # the contract this launcher supports, from the one manifest shipped as package data
        "terminai_sandbox.artifacts",
        "terminai_sandbox.artifacts.contract",
        "terminai_sandbox.resources",
        # the network policy, parsed on every start (standard library only, like the kernel)
        "terminai_apts.egress",
        "terminai_apts.egress.policy",
        "terminai_apts.egress.errors",
        # frozen keyword-only records without dataclasses (shared with the in-image proxy)
        "terminai_apts.records",
    }
)
# Standard-library and third-party modules whose import a session start must not pay for.
FORBIDDEN = frozenset(
    {
        "click",
        "typing",
        "dataclasses",
        "inspect",
        "ast",
        "dis",
        "tokenize",
        "docker",
        "requests",
        "urllib3",
        "cryptography",
        "sigstore",
        "subprocess",
        "ssl",
        "http",
        "email",
        "socket",  # its enum conversion costs ~5 ms; the engine client opens sockets with _socket
        "hashlib",  # loads OpenSSL (~3 ms); the ledger and the trust cache use the built-in SHA-256
        "_hashlib",
        "shutil",  # bz2, lzma, zlib and fnmatch for its archives (~2.5 ms); PATH lookups use common.which
        "signal",  # its enums (~0.5 ms); the session's signal forwarding uses _signal
        "shlex",  # SANDBOX_FLAGS only
        "resource",  # podman's ulimits only
    }
)
PINNED = "127.0.0.1:5000/terminai/sandbox:0.1.0@sha256:" + "a" * 64


def outside_the_seal(modules: set[str]) -> set[str]:
    """The modules that are neither standard library, nor the kernel, nor allowed."""
    return {
        m
        for m in modules
        if m.split(".")[0] not in sys.stdlib_module_names
        and m not in SEALED
        and not m.startswith(tuple(f"{package}." for package in SEALED))
        and m not in MAY_IMPORT
    }


def forbidden(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in FORBIDDEN}


def importtime_modules(stderr: str) -> set[str]:
    """The modules a ``PYTHONPROFILEIMPORTTIME=1`` process reported, less the interpreter's own start."""

    def listed(text: str) -> set[str]:
        return {line.split("|")[-1].strip() for line in text.splitlines() if line.startswith("import time:")}

    start = subprocess.run(
        [sys.executable, "-c", "pass"],
        env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    return listed(stderr) - listed(start.stderr) - {"imported package"}


def loaded_by(code: str, env: dict[str, str]) -> tuple[int, set[str], str]:
    """Exit code, the modules ``code`` loaded beyond the interpreter's start, and the rest of stderr.

    The report is written at the lowest level (``os.write``) from a patched ``os._exit``, which
    is how a launch ends (without the interpreter's teardown), and from ``atexit`` otherwise.
    """
    probe = (
        "import os, sys\n"
        "before = set(sys.modules)\n"
        "def report():\n"
        "    loaded = sorted(set(sys.modules) - before)\n"
        "    os.write(2, ('\\nMODULES ' + repr(loaded) + '\\n').encode())\n"
        "real_exit = os._exit\n"
        "def exiting(code):\n"
        "    report()\n"
        "    real_exit(code)\n"
        "os._exit = exiting\n"
        "import atexit\n"
        "atexit.register(report)\n" + code
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    lines = done.stderr.splitlines()
    reports = [line.removeprefix("MODULES ") for line in lines if line.startswith("MODULES ")]
    assert reports, done.stderr
    loaded = set(ast.literal_eval(reports[0]))
    rest = "\n".join(line for line in lines if line and not line.startswith("MODULES "))
    return done.returncode, loaded, rest


def test_importing_every_kernel_module_stays_inside_the_seal() -> None:
    names = [KERNEL] + [f"{KERNEL}.{m.name}" for m in pkgutil.iter_modules(terminai_sandbox.launch.__path__)]
    names += [COMMON] + [f"{COMMON}.{m.name}" for m in pkgutil.iter_modules(terminai_sandbox.common.__path__)]
    names += [ENGINE] + [f"{ENGINE}.{m.name}" for m in pkgutil.iter_modules(terminai_sandbox.engine.__path__)]
    code, loaded, err = loaded_by(
        f"import importlib\nfor name in {names!r}:\n    importlib.import_module(name)\n",
        {"PATH": os.environ["PATH"]},
    )
    assert code == 0, err
    assert {f"{KERNEL}.entry", f"{KERNEL}.preflight", f"{ENGINE}.client", f"{ENGINE}.podman", f"{KERNEL}.run"} <= loaded
    assert not outside_the_seal(loaded), outside_the_seal(loaded)
    assert not forbidden(loaded), forbidden(loaded)


def test_a_session_start_through_the_console_script_stays_inside_the_seal(tmp_path: Path) -> None:
    # The engine is down (no socket), so the launch is refused at step 1, after configuration,
    # settings, the default image, the trust source and the ledger have been read; the
    # integration test of a warm launch checks the rest of the path against the same seal.
    key = tmp_path / "k.pub"
    key.write_text("not a key: the warm path never reads it before step 3\n")
    argv = ["terminai-sandbox", "run", "--image", PINNED, "--key", str(key), "--", "true"]
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "TERMINAI_SANDBOX": "docker",
        "DOCKER_HOST": f"unix://{tmp_path}/absent.sock",
    }
    code, loaded, err = loaded_by(
        f"import sys\nsys.argv = {argv!r}\nfrom terminai_sandbox.console import main\nmain()\n", env
    )
    assert code == 4, err
    assert "error: preflight step 1 (engine) refused:" in err, err
    assert {f"{KERNEL}.entry", f"{KERNEL}.preflight", f"{KERNEL}.audit", "terminai_apts.ledger"} <= loaded
    assert not outside_the_seal(loaded), outside_the_seal(loaded)
    assert not forbidden(loaded), forbidden(loaded)


def test_the_seal_test_sees_a_forbidden_import() -> None:
    # The probe itself works: a module that imports typing is caught.
    code, loaded, err = loaded_by("import typing, terminai_sandbox.launch.config\n", {"PATH": os.environ["PATH"]})
    assert code == 0, err
    assert {m.split(".")[0] for m in forbidden(loaded)} == {"typing"}
    assert f"{KERNEL}.config" in loaded
