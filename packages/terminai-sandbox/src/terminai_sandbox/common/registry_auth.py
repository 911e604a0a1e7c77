"""Who may talk to a registry and how, without the HTTP stack: loopback hosts and Docker-config credentials.

The registry client (:mod:`terminai_sandbox.registry`) and the launcher both need these;
the launcher resolves tags through the engine and must not pay for importing requests.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from terminai_apts.records import frozen_record

from terminai_sandbox.errors import RegistryUnauthorized

# Every docker launch of a `REPO:TAG` reads the Docker config, and most find no credentials:
# what only credentials need (base64, subprocess for helpers, Secret and with it typing) is
# imported when they are found.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from terminai_sandbox.secret import Secret


def is_loopback(registry: str) -> bool:
    host = registry.rsplit(":", 1)[0] if registry.count(":") == 1 or registry.startswith("[") else registry
    host = host.strip("[]")
    if host == "localhost":
        return True
    import ipaddress  # noqa: PLC0415

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@frozen_record
class Credentials:
    username: str
    password: Secret[str]


def docker_config_credentials(registry: str, env: Mapping[str, str] | None = None) -> Credentials | None:
    """Credentials for ``registry`` from the Docker config (``auths``, ``credHelpers``, ``credsStore``)."""
    env = os.environ if env is None else env
    config_dir = Path(env.get("DOCKER_CONFIG") or Path(env.get("HOME", "~")).expanduser() / ".docker")
    try:
        config = json.loads((config_dir / "config.json").read_text())
    except (OSError, ValueError):
        return None
    helper = config.get("credHelpers", {}).get(registry) or config.get("credsStore")
    if helper:
        import subprocess  # noqa: PLC0415

        try:
            proc = subprocess.run(
                [f"docker-credential-{helper}", "get"],
                input=registry,
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except OSError as exc:
            raise RegistryUnauthorized(f"credential helper docker-credential-{helper} cannot run: {exc}") from None
        if proc.returncode == 0:
            data = json.loads(proc.stdout)
            return _credentials(data["Username"], data["Secret"])
    entry = config.get("auths", {}).get(registry) or config.get("auths", {}).get(f"https://{registry}")
    if entry and entry.get("auth"):
        import base64  # noqa: PLC0415

        user, _, password = base64.b64decode(entry["auth"]).decode().partition(":")
        return _credentials(user, password)
    return None


def _credentials(username: str, password: str) -> Credentials:
    from terminai_sandbox.secret import Secret  # noqa: PLC0415

    return Credentials(username=username, password=Secret(password))


def engine_auth(credentials: Credentials | None, registry: str) -> dict[str, str] | None:
    """The auth document the Docker API takes for ``registry`` (None: anonymous)."""
    if credentials is None:
        return None
    return {"username": credentials.username, "password": credentials.password.reveal(), "serveraddress": registry}
