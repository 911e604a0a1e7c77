"""Reports the hardened child's state (an injected API used only by the tests)."""

from __future__ import annotations

import os
import resource
import socket


class Probe:
    def state(self) -> dict[str, object]:
        with open("/proc/self/status") as fh:
            lines = fh.read().splitlines()
        status = dict(line.split(":\t", 1) for line in lines if ":\t" in line)
        try:
            socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock = "allowed"
        except OSError:
            sock = "denied"
        try:
            os.execv("/bin/true", ["true"])
        except OSError:
            exe = "denied"
        return {
            "euid": os.geteuid(),
            "env": dict(os.environ),
            "cwd": os.getcwd(),
            "no_new_privs": status.get("NoNewPrivs", "").strip(),
            "seccomp": status.get("Seccomp", "").strip(),
            "fsize": resource.getrlimit(resource.RLIMIT_FSIZE)[0],
            "nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0],
            "core": resource.getrlimit(resource.RLIMIT_CORE)[0],
            "fds": len(os.listdir("/proc/self/fd")),
            "socket": sock,
            "exec": exe,
        }
