"""The ``terminai-apts`` console script: for ``exec`` it starts the run's
zygote before anything else is imported, then hands over to :func:`terminai_apts.cli.main`.

The zygote (a second interpreter, ``process/zygote.py``) takes longer to start than all of
this process's own work (importing the command line, parsing, reading the program and
validating it). Started here, it begins about as soon as this interpreter has; started
from ``cli.main``, it waited for the command line's modules (argparse, pathlib, the error
boundary), which delayed every one-shot run by that long. Only what spawning needs
(``zygote_start``: ``os``, ``signal``, ``socket``) is imported first; the zygote's client
(``subprocess``, ``threading``, ``json``) takes the started process over afterwards.

Nothing else moves here: arguments are parsed, the program read and validated, and
errors reported exactly as before, by ``cli.main`` (a usage error only ends the zygote
unused). For ``exec`` the process also skips what costs time and serves nothing: the
collector's passes while modules load, and the interpreter's teardown once the result is
written. At load time this module imports only ``gc``, ``os`` and ``sys`` (``cli`` imports
``command_word`` from here).
"""

from __future__ import annotations

import gc
import os
import sys

TYPE_CHECKING = False  # typing's would load typing before the zygote starts
if TYPE_CHECKING:
    import socket

    from terminai_apts.executor.host.zygote_start import Spawned

# ``-q``/``-v`` may come before the command word (``terminai-apts -q exec``).
GLOBAL_FLAGS = frozenset({"-q", "--quiet", "-v", "--verbose"})


def command_word(argv: list[str] | tuple[str, ...]) -> str | None:
    """The sub-command ``argv`` names, if its first word after the global flags is one."""
    for word in argv:
        if word not in GLOBAL_FLAGS:
            return None if word.startswith("-") else word
    return None


def start_zygote() -> tuple[Spawned, socket.socket] | None:
    """Start the production zygote now, with nothing loaded for it but ``os``, ``signal``
    and ``socket`` (``zygote_start.start``; this process has one thread yet). None if it
    cannot start: the command's own attempt then fails the usual way (its exit code)."""
    from terminai_apts.executor.host import zygote_start  # noqa: PLC0415 - only `exec` pays for it

    try:
        return zygote_start.start()
    except OSError:
        return None


def main() -> int:
    """``terminai-apts ARGS`` (from ``sys.argv``): its exit code."""
    if command_word(sys.argv[1:]) != "exec":
        from terminai_apts import cli  # noqa: PLC0415

        return cli.main()
    # A one-shot run: the collector is off while the modules load (their objects live as
    # long as the process, so its passes would find nothing to free; about a tenth of
    # the import time), and on again before any command code runs.
    gc.disable()
    started = start_zygote()
    from terminai_apts import cli  # noqa: PLC0415 - imported after the zygote has started
    from terminai_apts.executor.host import cli as executor_cli  # noqa: F401, PLC0415 - what `exec` loads anyway
    from terminai_apts.executor.host import zygote_client  # noqa: PLC0415

    if started is not None:
        zygote_client.adopt_shared(*started)  # the run's zygote, for `execute`
        # Its run, handed over once it is ready; one that entered its root ahead suits a
        # program without the memory API (a wrong guess only costs a second spawn).
        no_api = not any(arg == "--db" or arg.startswith("--db=") for arg in sys.argv[1:])
        zygote_client.shared().ask_ahead(sealed_ok=no_api)
    gc.enable()
    code = cli.main()
    # The result is out; what remains is the interpreter tearing down several hundred
    # modules (about 10 ms), which nothing needs: no exit handler of ours is registered,
    # the run is already killed, and the zygote ends on the closed socket by itself. If
    # the output cannot be flushed, the usual exit reports it as before.
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: the descriptor was closed when the process started
                stream.flush()
    except (OSError, ValueError):
        return code
    os._exit(code)
