"""OCI platform names of machines: what this host runs natively, and Debian's names for it.

Standard library only (the floor every room shares): the build picks the host's platform
by default, the contract runner tells an emulated image from a native one.
"""

from __future__ import annotations

import platform

#: ``uname -m`` of a host -> the OCI (and Debian) architecture name.
MACHINES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def architecture_of_machine(machine: str) -> str:
    """``x86_64`` -> ``amd64``; an unknown machine name is returned lowercased as it is."""
    return MACHINES.get(machine.lower(), machine.lower())


def native_platform() -> str:
    """The platform this host runs without emulation, e.g. ``linux/amd64``."""
    return f"linux/{architecture_of_machine(platform.machine())}"
