"""The errors of the egress proxy and its policy, the same names and exit codes on both sides.

The proxy runs in two places: a hardened host process beside ``terminai-sandbox run``, and
a pod of the verified image on a cluster (``terminai-sandbox kube``). So it lives in the
toolset, which cannot import the host's hierarchy (``terminai_sandbox.errors``). These
classes mirror the four host classes it raises, with the same exit codes
(docs/EXIT_CODES.md); the host turns one into its own class where it calls the policy
(``terminai_sandbox.launch.network``, ``terminai_sandbox.kube.network``), and the proxy's
own ``python -m terminai_apts.egress`` prints it. This module imports nothing: the launch
kernel parses a policy on every session start.
"""

from __future__ import annotations


class EgressFault(Exception):
    """Root of every error the egress policy and proxy raise on purpose."""

    exit_code: int = 1
    default_hint: str = "see 'python -m terminai_apts.egress serve --help' and docs/SECURITY.md"
    # The host class this one becomes where the launcher or `kube` meets it.
    host_class: str = "SandboxError"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint or self.default_hint

    def __str__(self) -> str:
        return self.message

    def render(self) -> str:
        """The text shown to a user: the message, then the remedy on its own line."""
        return f"error: {self.message}\n  hint: {self.hint}"


class ConfigError(EgressFault):
    """A policy, flag or input file is malformed or refused (exit 3)."""

    exit_code = 3
    default_hint = "check the setting, flag or file the message names, then run the command again"
    host_class = "ConfigError"


class PathError(ConfigError):
    """A file cannot be used (exit 3); the message names the path."""

    default_hint = "check the path and its permissions"
    host_class = "PathError"

    @classmethod
    def from_os(cls, exc: OSError) -> PathError:
        """The error for a failed file operation: which path and why."""
        where = exc.filename if exc.filename is not None else "a file"
        if isinstance(where, bytes):
            where = where.decode("utf-8", "backslashreplace")
        return cls(f"{where}: {exc.strerror or type(exc).__name__}")


class LaunchError(EgressFault):
    """The proxy could not start as asked (exit 13, as a refused session start)."""

    exit_code = 13
    default_hint = "read the message above; the proxy refuses to serve unconfined"
    host_class = "LaunchError"


class AuditError(EgressFault):
    """The proxy's audit ledger is unreadable, its chain broken, or a write failed (exit 15)."""

    exit_code = 15
    default_hint = "check the ledger file named above; the proxy serves nothing it cannot record"
    host_class = "AuditError"
