"""The network policy of a cluster session, read with the launcher's grammar.

``off`` (the default) renders the default-deny ``NetworkPolicy`` alone; ``allow:…``
renders the template's egress proxy as well (:mod:`.egress`). The legacy proxy command
is refused: it is an argv the launcher runs beside a host session, and a cluster has no
place to run it that a NetworkPolicy could fence (exit 3, naming the source).

The sources are ``run``'s (``SANDBOX_NETWORK``, the legacy proxy-command variables,
``--network-policy``); two that name different policies are refused, as ``run`` does.
"""

from __future__ import annotations

from collections.abc import Mapping

from terminai_apts.egress.errors import EgressFault
from terminai_apts.egress.policy import NetworkPolicy, parse_network_policy

from terminai_sandbox.errors import ConfigError, from_egress

SOURCES = ("SANDBOX_NETWORK", "TERMINAI_SANDBOX_PROXY_COMMAND", "GEMINI_SANDBOX_PROXY_COMMAND")


def cluster_policy(env: Mapping[str, str], option: str | None) -> NetworkPolicy | None:
    """The ``allow`` policy to render, None for ``off``; a proxy command or a disagreement is refused."""
    asked = [("--network-policy", option)] if option is not None else []
    for name in SOURCES:
        value = env.get(name, "").strip()
        if value:
            asked.append((name, value if name == "SANDBOX_NETWORK" else f"proxy-command:{value}"))
            if name != "SANDBOX_NETWORK":
                break  # TERMINAI_ wins over the legacy GEMINI_ name, as in `run`
    chosen: tuple[str, NetworkPolicy] | None = None
    for source, text in asked:
        try:
            policy = parse_network_policy(text, source=source)
        except EgressFault as exc:
            raise from_egress(exc) from None
        if policy.mode == "proxy-command":
            raise ConfigError(
                f"{source} asks for the proxy command {policy.to_spec()!r}, which 'kube' cannot render: "
                "it runs beside a host session, not in a cluster",
                hint="render the policy as allow:HOST[,HOST...] (the cluster gets its own allowlisting proxy), "
                "or run the session with 'terminai-sandbox run' (see docs/KUBERNETES.md)",
            )
        if chosen is not None and chosen[1] != policy:
            raise ConfigError(
                f"{chosen[0]} and {source} name different network policies",
                hint="set only one of them, or make them name the same policy",
            )
        chosen = (source, policy)
    if chosen is None or chosen[1].mode == "off":
        return None
    return chosen[1]
