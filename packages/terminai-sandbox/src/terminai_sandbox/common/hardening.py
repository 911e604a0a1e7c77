"""The hardening of a session as data: who it runs as, what it may keep, what it may use.

``terminai-sandbox run`` turns these values into engine flags (:mod:`~terminai_sandbox.launch.run`)
and ``terminai-sandbox kube`` into a Pod's security context
(:mod:`~terminai_sandbox.kube.hardening`); both read them here, so a session and a Pod are
hardened alike and neither room imports the other. Standard library only.
"""

from __future__ import annotations

import re

from terminai_apts.records import frozen_record

from terminai_sandbox.errors import ConfigError

# Capabilities dropped (every one) and engine security options; a Pod sets the same as
# `capabilities.drop` and `allowPrivilegeEscalation: false`.
DROPPED_CAPABILITIES = ("ALL",)
SECURITY_OPTIONS = ("no-new-privileges",)
HOME_IN_IMAGE = "/home/sandbox"
IMAGE_UID = 10001
# The image's own user, and the tmpfs sizes (engine units) of /tmp and the home.
TMP_SIZE = "512m"
HOME_SIZE = "256m"


@frozen_record
class Limits:
    """Resource limits and network of a session (the defaults are the hardened ones).

    Checked when made: a limit of 0 is no limit at all to the engines, and ``host``,
    ``container:ID`` or ``ns:PATH`` would join a network namespace the session must not
    share; ``SANDBOX_FLAGS`` refuses the same through its allowlist.
    """

    memory: str = "2g"
    cpus: str = "2"
    pids: int = 512
    network: str = "none"

    def __post_init__(self) -> None:
        size = _SIZE.match(self.memory)
        if size is None or float(size.group(1)) <= 0:
            raise ConfigError(
                f"--memory {self.memory!r} is not a positive size",
                hint="for example 2g or 512m (0 would mean no limit at all)",
            )
        if _CPUS.match(self.cpus) is None or float(self.cpus) <= 0:
            raise ConfigError(
                f"--cpus {self.cpus!r} is not a positive number of CPUs",
                hint="for example 2 or 0.5 (0 would mean no limit at all)",
            )
        if self.network.lower() == "host" or _NETWORK.match(self.network) is None:
            raise ConfigError(
                f"--network {self.network!r} would share a network namespace the session must not share",
                hint="use none (the default), bridge, or the name of a network you created",
            )


# The common spellings of docker's sizes (go-units RAMInBytes reads each of them; a test holds
# this against the docker CLI): a decimal, an optional space, k/m/g/t/p, an optional i and b.
_SIZE = re.compile(r"^(\d+(?:\.\d*)?|\.\d+) ?[kmgtp]?i?b?$", re.IGNORECASE | re.ASCII)
_CPUS = re.compile(r"^(?:\d+(?:\.\d*)?|\.\d+)$", re.ASCII)
# A network's name (docker: [a-zA-Z0-9][a-zA-Z0-9_.-]*): never `host`, `container:ID`, `ns:PATH`.
_NETWORK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


HARDENED_LIMITS = Limits()
