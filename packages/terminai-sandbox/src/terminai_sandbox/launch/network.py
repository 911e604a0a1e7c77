"""The session's network policy knob: where it comes from, resolved once, and what the session sees.

Four places may name it, as the other launch knobs are named:

1. ``SANDBOX_NETWORK`` (``off`` | ``allow:HOST[:PORT],…,!HOST`` | ``proxy-command:ARGV``);
2. ``TERMINAI_SANDBOX_PROXY_COMMAND`` (legacy ``GEMINI_SANDBOX_PROXY_COMMAND``): the launcher we
   replace's knob, the same as ``SANDBOX_NETWORK=proxy-command:VALUE``;
3. ``run --network-policy VALUE``;
4. the settings file's ``network`` key (a string in the same grammar, or the dict form).

The environment wins over the option, the option over the settings file, as for the engine.
Two environment variables naming different policies, or the environment and the option
disagreeing, are refused: a project's environment must not quietly undo what the command
line asked (the runtime knob does the same).

``off`` (the default) never loads :mod:`terminai_apts.egress`: a session without a
policy starts as it did before the knob existed. Every other mode keeps the session in an
empty network namespace (``--network none``); its only way out is the proxy's Unix socket,
bind-mounted at :data:`SOCKET_DIR` and bridged to :data:`BRIDGE` by the image's entrypoint.
"""

from __future__ import annotations

from terminai_apts.records import frozen_record

from terminai_sandbox.errors import ConfigError, from_egress

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from terminai_apts.egress.policy import NetworkPolicy

ENV = "SANDBOX_NETWORK"
PROXY_COMMAND_ENV = ("TERMINAI_SANDBOX_PROXY_COMMAND", "GEMINI_SANDBOX_PROXY_COMMAND")
OPTION = "--network-policy"
SETTINGS_KEY = "network"
#: Operator-side test hook: a hosts file the proxy resolves names with (see docs/SECURITY.md).
#: Read from the launcher's own environment only; never from the project folder or the session.
TEST_HOSTS_ENV = "TERMINAI_EGRESS_TEST_HOSTS_FILE"

#: Where the proxy's socket directory is mounted inside the session, and the socket's name.
SOCKET_DIR = "/run/terminai/egress"
SOCKET_NAME = "proxy.sock"
#: The loopback port the in-image bridge listens on (the session's HTTP(S)_PROXY).
BRIDGE = "127.0.0.1:3128"
PROXY_URL = f"http://{BRIDGE}"
NO_PROXY = "localhost,127.0.0.1"
#: The engine network every mode keeps: loopback only.
SESSION_NETWORK = "none"


@frozen_record
class NetworkChoice:
    """The resolved policy, the text it was written as and where it came from."""

    mode: str  # off | allow | proxy-command
    source: str
    policy: NetworkPolicy | None = None  # None: off (egress is not loaded)

    def describe(self) -> str:
        text = "off (no network)" if self.policy is None else self.policy.describe()
        return f"{text} ({self.source})"

    def record(self) -> dict[str, object]:
        """What the audit ledger and ``--json`` keep of it."""
        if self.policy is None:
            return {"mode": "off", "source": self.source}
        return {"mode": self.mode, "source": self.source, "policy": self.policy.to_json()}


OFF = NetworkChoice(mode="off", source="the default")


def _env_value(env: Mapping[str, str]) -> tuple[str, str] | None:
    """The policy text the environment gives, and the variable(s) it came from."""
    found: list[tuple[str, str]] = []
    if ENV in env:
        found.append((env[ENV].strip(), ENV))
    for name in PROXY_COMMAND_ENV:
        if name in env and env[name].strip():
            found.append((f"proxy-command:{env[name].strip()}", name))
            break  # TERMINAI_ wins over the legacy GEMINI_ name, as for every legacy knob
    if len(found) == 2 and found[0][0] != found[1][0]:
        raise ConfigError(
            f"{found[0][1]}={found[0][0]!r} and {found[1][1]} name different network policies",
            hint=f"set only one of them (SANDBOX_NETWORK=proxy-command:ARGV is the same as {found[1][1]}=ARGV)",
        )
    return found[0] if found else None


def _parse(text: str, source: str) -> NetworkChoice:
    if text.strip().lower() in ("", "off"):
        return NetworkChoice(mode="off", source=source)
    from terminai_apts.egress.errors import EgressFault  # noqa: PLC0415  (only with a policy)
    from terminai_apts.egress.policy import parse_network_policy  # noqa: PLC0415  (only with a policy)

    try:
        policy = parse_network_policy(text, source=source)
    except EgressFault as exc:
        raise from_egress(exc) from None
    if policy.mode == "off":
        return NetworkChoice(mode="off", source=source)
    return NetworkChoice(mode=policy.mode, source=source, policy=policy)


def _from_settings(value: object, source: str) -> NetworkChoice:
    if isinstance(value, str):
        return _parse(value, source)
    from terminai_apts.egress.errors import EgressFault  # noqa: PLC0415  (only with a policy)
    from terminai_apts.egress.policy import policy_from_settings  # noqa: PLC0415  (only with a policy)

    try:
        policy = policy_from_settings(value, source=source)
    except EgressFault as exc:
        raise from_egress(exc) from None
    if policy.mode == "off":
        return NetworkChoice(mode="off", source=source)
    return NetworkChoice(mode=policy.mode, source=source, policy=policy)


def _unset() -> object:
    return None


def resolve(
    env: Mapping[str, str], *, option: str | None = None, settings: Callable[[], object] = _unset
) -> NetworkChoice:
    """The one network policy of a launch (see the module's docstring for the order)."""
    from_env = _env_value(env)
    if from_env is not None:
        chosen = _parse(*from_env)
        if option is not None:
            asked = _parse(option, OPTION)
            if asked.policy != chosen.policy:
                raise ConfigError(
                    f"{OPTION} {option!r} and {from_env[1]}={from_env[0]!r} disagree",
                    hint="drop one of them, or make them name the same policy",
                )
        return chosen
    if option is not None:
        return _parse(option, OPTION)
    value = settings()
    if value is None:
        return OFF
    return _from_settings(value, f"settings {SETTINGS_KEY}")


def session_env() -> tuple[str, ...]:
    """The ``--env`` values a session with a policy gets: every proxy variable tools read."""
    proxies = [f"{name}={PROXY_URL}" for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")]
    return (*proxies, f"NO_PROXY={NO_PROXY}", f"no_proxy={NO_PROXY}")


def test_hosts_file(env: Mapping[str, str], *, cwd: str) -> str | None:
    """The operator's test hosts file for the proxy, or ``None``.

    Refused inside the working directory: the project folder is untrusted input, and a
    hosts file there would let the agent point an allowed name at any address.
    """
    value = env.get(TEST_HOSTS_ENV, "").strip()
    if not value:
        return None
    import os  # noqa: PLC0415

    resolved = os.path.realpath(value)
    base = os.path.realpath(cwd)
    if resolved == base or resolved.startswith(base.rstrip("/") + "/"):
        raise ConfigError(
            f"{TEST_HOSTS_ENV}={value} lies in the project folder {base}, which the session writes",
            hint="the test hosts file is an operator's test hook: keep it outside the project folder",
        )
    if not os.path.isfile(resolved):
        raise ConfigError(f"{TEST_HOSTS_ENV}={value} is not a file", hint="point it at a hosts file, or unset it")
    return resolved
