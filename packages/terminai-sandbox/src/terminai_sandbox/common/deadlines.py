"""How long the host waits on a server: the total deadlines of registry and engine calls.

A deadline here bounds a whole exchange (connect, the answer's head and its whole body),
never one socket read: a per-read timeout restarts with every byte, so a server that sends
one byte every half second would hold a command for ever. The table of these bounds per
command is in ``docs/DEADLINES.md``; each is settable by an environment variable so that a
slow link (or a test) can choose another value.

Part of the launch kernel's floor: standard library only, nothing imported.
"""

from __future__ import annotations

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
