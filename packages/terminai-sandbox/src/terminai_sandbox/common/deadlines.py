"""How long the host waits on a server: the total deadlines of registry and engine calls.

A deadline here bounds a whole exchange (connect, the answer's head and its whole body),
never one socket read: a per-read timeout restarts with every byte, so a server that sends
one byte every half second would hold a command for ever. The table of these bounds per
command is in ``docs/DEADLINES.md``; each is settable by an environment variable so that a
slow link (or a test) can choose another value.

Part of the launch kernel's floor: standard library only, nothing imported.
"""

from __future__ import annotations

import time

from terminai_sandbox.errors import ConfigError

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from collections.abc import Mapping

#: One registry request, retries included: connect, the answer's head and its whole body.
REGISTRY_VARIABLE = "TERMINAI_REGISTRY_TIMEOUT"
#: ... for the commands that write to a registry, mostly in CI: ``push``, ``sign``,
#: ``attest``, ``release``.
REGISTRY_SECONDS = 60.0
#: ... where a person waits for a yes or no: ``verify``, ``kube``, ``preflight``, ``run``
#: (they read manifests and signatures of KB; a blob still gets its per-MiB allowance).
REGISTRY_INTERACTIVE_SECONDS = 30.0
#: Of that, at most this long to open the connection (a registry that is up accepts at once).
REGISTRY_CONNECT_SECONDS = 10.0
#: A blob sent or fetched gets this much more per MiB it carries (a floor of 1 MiB/s).
SECONDS_PER_MIB = 1.0
#: The largest registry answer that is not a blob: manifests, indexes, tokens, errors
#: (the distribution spec lets a registry refuse manifests over 4 MiB; 16 is generous).
MAX_DOCUMENT = 16 << 20
#: The largest blob answer read into memory (signatures and attestations are KB-MB).
MAX_BLOB = 512 << 20

#: Reaching the engine and reading its first answer (``/_ping``, else ``/version``).
ENGINE_VARIABLE = "TERMINAI_ENGINE_TIMEOUT"
#: ... where a person waits for the answer: ``engine status``, ``preflight``, ``run``.
ENGINE_PROBE_SECONDS = 5.0
#: ... for the long commands that then work for minutes: ``build``, ``contracts``, ``release``.
ENGINE_BATCH_PROBE_SECONDS = 15.0
#: Every other engine request (inspect, tag, create, logs, ...): the whole answer.
ENGINE_REQUEST_SECONDS = 120.0
#: A pull or an image load: the whole progress stream (it arrives for as long as the
#: transfer lasts, so only this bounds it; a silent engine still fails after the request's
#: idle limit, :data:`ENGINE_REQUEST_SECONDS`).
ENGINE_STREAM_SECONDS = 3600.0

#: The whole of one command's registry requests and keyless signing (Fulcio, Rekor, the
#: OIDC token, the TUF refresh): however many requests it makes, each just inside its own
#: bound, the command ends by then. Per request bounds stay as above; this caps their sum.
COMMAND_VARIABLE = "TERMINAI_COMMAND_TIMEOUT"
#: By command (the first word; ``release`` covers its steps): lower where a person waits.
COMMAND_SECONDS = {
    "verify": 120.0,
    "kube": 120.0,
    "preflight": 120.0,
    "run": 120.0,
    "sign": 600.0,
    "attest": 600.0,
    "push": 1800.0,
    "release": 7200.0,  # the whole release runs its build first, minutes of it
}
#: Every other command (`contracts` resolves a tag through the engine; a new one is bounded anyway).
COMMAND_DEFAULT_SECONDS = 3600.0

_MAX_SECONDS = 86400.0
_DIGITS = frozenset("0123456789.")


def seconds_from(env: Mapping[str, str], variable: str, default: float) -> float:
    """The number of seconds ``variable`` sets in ``env``, else ``default``.

    Strict, as every knob is: ASCII digits with an optional fraction, more than 0 and at
    most a day. Anything else is a :class:`ConfigError` (exit 3), never a silent default.
    """
    raw = env.get(variable)
    if raw is None or raw == "":
        return default
    text = raw.strip()
    value = float(text) if text and set(text) <= _DIGITS and text.count(".") <= 1 and text != "." else -1.0
    if not 0 < value <= _MAX_SECONDS:
        raise ConfigError(
            f"{variable}={raw[:40]!r} is not a number of seconds between 0 and {_MAX_SECONDS:g}",
            hint=f"set {variable} to a positive number of seconds such as 30, or unset it for {default:g} s",
        )
    return value


def registry_seconds(env: Mapping[str, str], default: float = REGISTRY_SECONDS) -> float:
    """The total deadline of one registry request (:data:`REGISTRY_VARIABLE`, else ``default``)."""
    return seconds_from(env, REGISTRY_VARIABLE, default)


def engine_probe_seconds(env: Mapping[str, str], default: float = ENGINE_PROBE_SECONDS) -> float:
    """How long reaching the engine may take (:data:`ENGINE_VARIABLE`, else ``default``)."""
    return seconds_from(env, ENGINE_VARIABLE, default)


def command_seconds(env: Mapping[str, str], command: str) -> float:
    """The total deadline of ``command`` (:data:`COMMAND_VARIABLE`, else its row of :data:`COMMAND_SECONDS`)."""
    return seconds_from(env, COMMAND_VARIABLE, COMMAND_SECONDS.get(command, COMMAND_DEFAULT_SECONDS))


class CommandDeadline:
    """When the running command's network work must be over: one instant, set as it starts.

    The registry client ends each request at the earlier of its own deadline and this one,
    and keyless signing waits for sigstore-python no longer than this (see
    :func:`begin`). It is the process's: a console script runs one command.
    """

    __slots__ = ("command", "ends", "seconds")

    def __init__(self, command: str, seconds: float) -> None:
        self.command = command
        self.seconds = seconds
        self.ends = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds until the deadline (0 or less once it has passed)."""
        return self.ends - time.monotonic()

    def describe(self) -> str:
        return f"the {self.command} command's total deadline of {round(self.seconds, 1):g} s"

    def hint(self, server: str) -> str:
        """What to do, for a deadline that ``server``'s slowness used up."""
        return (
            f"{server} answers too slowly for all the requests this command makes: check it and the network, "
            f"or allow more time with {COMMAND_VARIABLE}=SECONDS (now {self.seconds:g})"
        )


_active: list[CommandDeadline] = []


def begin(command: str, seconds: float) -> CommandDeadline:
    """Start ``command``'s total deadline now (replacing any earlier one); return it."""
    _active[:] = [CommandDeadline(command, seconds)]
    return _active[0]


def active() -> CommandDeadline | None:
    """The running command's deadline, if one was begun."""
    return _active[0] if _active else None


def end() -> None:
    """Forget the command's deadline (an in-process caller running several commands)."""
    _active.clear()
