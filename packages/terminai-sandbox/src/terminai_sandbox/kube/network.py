"""The network policy of a cluster session: ``off`` (the default-deny ``NetworkPolicy``) only, for now.

A launch's policy (``SANDBOX_NETWORK``, the legacy proxy-command variables, ``--network-policy``)
is read here with the same grammar, so that one asking for egress is refused rather than
quietly rendered as no network: the allowlisting proxy is part of the host package, not of
the image, and a proxy beside the session in its pod would share its network namespace,
which a pod-level ``NetworkPolicy`` cannot split (docs/KUBERNETES.md says what would hold).
"""

from __future__ import annotations

from collections.abc import Mapping

from terminai_apts.egress.policy import parse_network_policy

from terminai_sandbox.errors import ConfigError

SOURCES = ("SANDBOX_NETWORK", "TERMINAI_SANDBOX_PROXY_COMMAND", "GEMINI_SANDBOX_PROXY_COMMAND")


def require_off(env: Mapping[str, str], option: str | None) -> None:
    """Refuse every policy but ``off``, naming where it came from (exit 3)."""
    asked = [("--network-policy", option)] if option is not None else []
    for name in SOURCES:
        value = env.get(name, "").strip()
        if value:
            asked.append((name, value if name == "SANDBOX_NETWORK" else f"proxy-command:{value}"))
    for source, text in asked:
        policy = parse_network_policy(text, source=source)
        if policy.mode != "off":
            raise ConfigError(
                f"{source} asks for the network policy {policy.to_spec()!r}, which 'kube' cannot render yet: "
                "a cluster session gets the default-deny NetworkPolicy (no network)",
                hint=f"unset {source} (or pass --network-policy off) to render a session without network, "
                "or run the session with 'terminai-sandbox run' (see docs/KUBERNETES.md)",
            )
